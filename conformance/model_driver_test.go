package conformance

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
)

// This file is the suite's model driver: a small, obviously correct
// in-memory database that passes the suite, skipping only what it cannot
// do (it has no files to corrupt). It implements every optional interface
// of a DriverConn, but not DriverContext, nor TxMultiGetter on its
// transactions, nor SnapshotMultiGetter on its snapshots: a Tx's or a
// snapshot's MultiGet takes the façade's fallback, a loop of Get with the
// MultiGet tag, which the statistics and snapshot cases then check. The suite's own tests run against it, and the broken
// drivers of broken_test.go wrap it.
//
// The model keeps every version of every key, so snapshots, iterators and
// transactions read by sequence number. To give the statistics cases
// something to check it pretends to have table files: Flush moves the
// writes made so far "into a table" (one more table), Compact merges the
// tables into one, and a read that a real engine would serve from tables
// records one file read per table touched, in SSTReadMicros and in the
// histogram of the read's activity, as shale's file reader does. Writes
// not yet flushed are "in the memtable" and read for free. With rate_limit
// set, pretend reads at a priority other than Total are charged: counted in
// the rate-limiter tickers and slowed to the rate by sleeping.

const modelDriverName = "conformance-model"

func init() { driver.Register(modelDriverName, newModelDriver()) }

// modelDriver opens model databases. Databases are kept by path for the
// life of the process, so a Close and a reopen find the data again (as on
// disk); ":memory:" gives a fresh one every time. It is safe for
// concurrent use.
type modelDriver struct {
	mu     sync.Mutex
	stores map[string]*modelStore
}

func newModelDriver() *modelDriver { return &modelDriver{stores: make(map[string]*modelStore)} }

var (
	_ driver.Driver         = (*modelDriver)(nil)
	_ driver.DriverConn     = (*modelConn)(nil)
	_ driver.MultiGetter    = (*modelConn)(nil)
	_ driver.Flusher        = (*modelConn)(nil)
	_ driver.Compacter      = (*modelConn)(nil)
	_ driver.Verifier       = (*modelConn)(nil)
	_ driver.TxBeginner     = (*modelConn)(nil)
	_ driver.StatsReporter  = (*modelConn)(nil)
	_ driver.RangeDeleter   = (*modelConn)(nil)
	_ driver.WALSyncer      = (*modelConn)(nil)
	_ driver.Snapshotter    = (*modelConn)(nil)
	_ driver.Checkpointer   = (*modelConn)(nil)
	_ driver.DriverTx       = (*modelTx)(nil)
	_ driver.TxRangeDeleter = (*modelTx)(nil)
	_ driver.DriverSnapshot = (*modelSnapshot)(nil)
	_ driver.Iter           = (*modelIter)(nil)
)

// Open opens the model database at the DSN's path. Keys: statistics
// (bool), stats_level, rate_limit (bytes per second), rate_limit_mode
// (reads, writes or all; writes are never charged), and, accepted for the
// suite's sake, block_cache_size (the model has no cache: every read of a
// table is a "file read", as with 0), write_buffer_size and
// disable_auto_compactions (the model flushes and compacts only when
// asked). Any other key is an error naming it.
func (d *modelDriver) Open(dsn string) (driver.DriverConn, error) {
	p, err := driver.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	level := statistics.DefaultLevel
	if v, ok := p.Lookup("stats_level"); ok {
		if level, err = statistics.ParseLevel(v); err != nil {
			return nil, fmt.Errorf("model: DSN key stats_level: %w", err)
		}
	}
	enabled, set, err := p.LookupBool("statistics")
	if err != nil {
		return nil, err
	}
	if _, _, err := p.LookupSize("block_cache_size"); err != nil {
		return nil, err
	}
	if _, _, err := p.LookupSize("write_buffer_size"); err != nil {
		return nil, err
	}
	if _, _, err := p.LookupBool("disable_auto_compactions"); err != nil {
		return nil, err
	}
	rate, _, err := p.LookupSize("rate_limit")
	if err != nil {
		return nil, err
	}
	limitReads := true
	if mode, ok := p.Lookup("rate_limit_mode"); ok {
		switch mode {
		case "reads", "all":
		case "writes":
			limitReads = false
		default:
			return nil, fmt.Errorf("model: DSN key rate_limit_mode: %q is not reads, writes or all: %w",
				mode, driver.ErrInvalidArgument)
		}
	}
	if unused := p.Unused(); len(unused) > 0 {
		return nil, fmt.Errorf("model: unknown DSN key %q: %w", unused[0], driver.ErrInvalidArgument)
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.stores[p.Path]
	switch {
	case p.Path == memoryPath:
		st = &modelStore{keys: make(map[string][]version)}
	case st == nil:
		st = &modelStore{keys: make(map[string][]version)}
		d.stores[p.Path] = st
	case st.open:
		return nil, fmt.Errorf("model: %s is already open", p.Path)
	}
	st.open = true
	c := &modelConn{driver: d, store: st, rate: rate, limitReads: limitReads && rate > 0}
	if !set || enabled {
		c.stats = statistics.New(level)
	}
	// Opening reads each table's metadata.
	c.fileReads(ioctx.ReadRequest{IO: ioctx.IOOptions{Activity: ioctx.ActivityDBOpen}}, st.tables, blockSize, time.Now())
	return c, nil
}

// version is one write of a key.
type version struct {
	seq     uint64
	value   string
	deleted bool
}

// modelStore is a model database's data, which outlives its connections.
type modelStore struct {
	mu sync.RWMutex
	// seq is the sequence number of the last write.
	seq uint64
	// keys holds each key's versions in ascending seq.
	keys map[string][]version
	// tables is the number of pretend table files; the writes up to
	// flushedSeq are in them.
	tables     int
	flushedSeq uint64
	// open is guarded by the driver's mu.
	open bool
}

// getAt returns k's value at snapshot seq, and whether a real engine
// would have read a table for it: the value was flushed, or the key was
// not found in the memtable.
func (s *modelStore) getAt(k string, seq uint64) (v string, found, fromTable bool) {
	vs := s.keys[k]
	for i := len(vs) - 1; i >= 0; i-- {
		if vs[i].seq <= seq {
			return vs[i].value, !vs[i].deleted, vs[i].seq <= s.flushedSeq && s.tables > 0
		}
	}
	return "", false, s.tables > 0
}

// scanAt returns the live pairs at seq within the bounds.
func (s *modelStore) scanAt(seq uint64, lower, upper []byte) []kv {
	var kvs []kv
	for k := range s.keys {
		if lower != nil && k < string(lower) || upper != nil && k >= string(upper) {
			continue
		}
		if v, found, _ := s.getAt(k, seq); found {
			kvs = append(kvs, kv{k, v})
		}
	}
	slices.SortFunc(kvs, func(a, b kv) int { return strings.Compare(a.k, b.k) })
	return kvs
}

// applyLocked writes ops at one new sequence number, so they become
// visible together, in order: a range deletion writes a deletion of every
// key in its range, which a later write of the batch replaces. s.mu must
// be held.
func (s *modelStore) applyLocked(ops []driver.Op) {
	s.seq++
	for _, o := range ops {
		if o.Kind == driver.OpDeleteRange {
			for k := range s.keys {
				if k >= string(o.Key) && (o.Value == nil || k < string(o.Value)) {
					s.writeLocked(k, version{seq: s.seq, deleted: true})
				}
			}
			continue
		}
		s.writeLocked(string(o.Key), version{seq: s.seq, value: string(o.Value), deleted: o.Kind == driver.OpDelete})
	}
}

// writeLocked appends v to k's versions, replacing one of the same batch.
func (s *modelStore) writeLocked(k string, v version) {
	vs := s.keys[k]
	if n := len(vs); n > 0 && vs[n-1].seq == v.seq {
		vs = vs[:n-1] // an earlier write of the same batch: the later one wins
	}
	s.keys[k] = append(vs, v)
}

// tableBytes returns the size of the pretend tables: the bytes of every
// flushed version. s.mu must be held.
func (s *modelStore) tableBytes() int64 {
	var n int64
	for k, vs := range s.keys {
		for _, v := range vs {
			if v.seq <= s.flushedSeq {
				n += int64(len(k) + len(v.value))
			}
		}
	}
	return n
}

// lastWrite returns the sequence number of k's last write, 0 if none.
func (s *modelStore) lastWrite(k string) uint64 {
	if vs := s.keys[k]; len(vs) > 0 {
		return vs[len(vs)-1].seq
	}
	return 0
}

// modelConn is a connection to a model database. It is safe for
// concurrent use.
type modelConn struct {
	driver *modelDriver
	store  *modelStore
	stats  *statistics.Statistics
	// rate is the rate limit in bytes per second, and limitReads whether
	// reads are charged to it.
	rate       int64
	limitReads bool
}

// blockSize is the size of a pretend point read.
const blockSize = 4096

// fileReads records n pretend table-file reads of bytes in all, made with
// ro and begun at start, as shale's file reader records real ones, and
// charges them to the rate limiter when ro's priority is charged.
func (c *modelConn) fileReads(req ioctx.ReadRequest, n int, bytes int64, start time.Time) {
	if n == 0 {
		return
	}
	if c.limitReads && req.IO.RateLimiterPriority.Charged() {
		c.stats.RecordTick(statistics.RateLimiterRequestsRead, uint64(n))
		c.stats.RecordTick(statistics.RateLimiterBytesRead, uint64(bytes))
		time.Sleep(time.Duration(float64(bytes) / float64(c.rate) * float64(time.Second)))
	}
	micros := uint64(time.Since(start).Microseconds())
	h := statistics.FileReadHistogram(req.IO.Activity.RocksDBValue())
	for range n {
		c.stats.ReportTimeToHistogram(statistics.SSTReadMicros, micros)
		c.stats.ReportTimeToHistogram(h, micros)
	}
	c.stats.RecordTick(statistics.BytesRead, uint64(bytes))
}

// beginRead is the prologue of a read: the context, and a deadline of the
// request that the context does not carry (the façade already refused one
// that had passed when the call began).
func beginRead(ctx context.Context, req ioctx.ReadRequest) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := ioctx.ReadOptions{Deadline: req.Deadline}.IOOptions()
	return err
}

func (c *modelConn) Get(ctx context.Context, req ioctx.ReadRequest, key []byte) ([]byte, error) {
	if err := beginRead(ctx, req); err != nil {
		return nil, err
	}
	start := time.Now()
	c.store.mu.RLock()
	v, found, fromTable := c.store.getAt(string(key), c.store.seq)
	c.store.mu.RUnlock()
	if fromTable {
		c.fileReads(req, 1, blockSize, start)
	}
	if !found {
		return nil, fmt.Errorf("model: key %q: %w", key, driver.ErrNotFound)
	}
	return []byte(v), nil
}

// ValueSize and GetPinned make the model a driver.ValueSizer and a
// driver.PinnedGetter, so the suite's Lookup case runs through a driver's
// own implementations here (and through the façade's fallback for shale's
// engine, until it has them). The model's values are immutable strings, so
// a pin needs no release; its Closer still counts its Close calls as
// PinnedGetter requires.
func (c *modelConn) ValueSize(ctx context.Context, req ioctx.ReadRequest, key []byte) (int, error) {
	v, err := c.Get(ctx, req, key)
	return len(v), err
}

func (c *modelConn) GetPinned(ctx context.Context, req ioctx.ReadRequest, key []byte) ([]byte, io.Closer, error) {
	v, err := c.Get(ctx, req, key)
	if err != nil {
		return nil, nil, err
	}
	return v, new(modelPin), nil
}

// modelPin is a pinned value's Closer: Close after the first returns an
// error matching driver.ErrClosed.
type modelPin struct{ closed atomic.Bool }

func (p *modelPin) Close() error {
	if p.closed.Swap(true) {
		return fmt.Errorf("model: pinned value already released: %w", driver.ErrClosed)
	}
	return nil
}

func (c *modelConn) MultiGet(ctx context.Context, req ioctx.ReadRequest, keys [][]byte) ([][]byte, error) {
	if err := beginRead(ctx, req); err != nil {
		return nil, err
	}
	start := time.Now()
	vals := make([][]byte, len(keys))
	reads := 0
	c.store.mu.RLock()
	for i, k := range keys {
		v, found, fromTable := c.store.getAt(string(k), c.store.seq)
		if found {
			vals[i] = []byte(v)
		}
		if fromTable {
			reads++
		}
	}
	c.store.mu.RUnlock()
	c.fileReads(req, reads, int64(reads)*blockSize, start)
	return vals, nil
}

func (c *modelConn) Put(ctx context.Context, _ ioctx.WriteOptions, key, value []byte) error {
	return c.apply(ctx, []driver.Op{{Kind: driver.OpPut, Key: key, Value: value}})
}

func (c *modelConn) Delete(ctx context.Context, _ ioctx.WriteOptions, key []byte) error {
	return c.apply(ctx, []driver.Op{{Kind: driver.OpDelete, Key: key}})
}

// Write reads the batch with its Reader.
func (c *modelConn) Write(ctx context.Context, _ ioctx.WriteOptions, b *driver.Batch) error {
	ops := make([]driver.Op, 0, b.Len())
	r := b.Reader()
	for op, ok := r.Next(); ok; op, ok = r.Next() {
		ops = append(ops, op)
	}
	return c.apply(ctx, ops)
}

func (c *modelConn) DeleteRange(ctx context.Context, _ ioctx.WriteOptions, start, end []byte) error {
	return c.apply(ctx, []driver.Op{{Kind: driver.OpDeleteRange, Key: start, Value: end}})
}

// SyncWAL has nothing to sync: the model keeps everything in memory, for
// the life of the process.
func (c *modelConn) SyncWAL(ctx context.Context) error { return ctx.Err() }

// NewSnapshot remembers the current sequence number.
func (c *modelConn) NewSnapshot(ctx context.Context) (driver.DriverSnapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.store.mu.RLock()
	defer c.store.mu.RUnlock()
	return &modelSnapshot{c: c, seq: c.store.seq}, nil
}

// Checkpoint copies the database as of now to a store kept under dir, which
// it creates (so a DSN naming dir opens the copy), and which must not exist
// or be empty.
func (c *modelConn) Checkpoint(ctx context.Context, dir string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("model: checkpoint directory %s is not empty: %w", dir, driver.ErrInvalidArgument)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	c.store.mu.RLock()
	cp := &modelStore{seq: c.store.seq, keys: make(map[string][]version, len(c.store.keys)),
		tables: c.store.tables, flushedSeq: c.store.flushedSeq}
	for k, vs := range c.store.keys {
		cp.keys[k] = slices.Clone(vs)
	}
	c.store.mu.RUnlock()
	c.driver.mu.Lock()
	defer c.driver.mu.Unlock()
	if _, ok := c.driver.stores[dir]; ok {
		return fmt.Errorf("model: a database exists at %s: %w", dir, driver.ErrInvalidArgument)
	}
	c.driver.stores[dir] = cp
	return nil
}

func (c *modelConn) apply(ctx context.Context, ops []driver.Op) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.store.mu.Lock()
	c.store.applyLocked(ops)
	c.store.mu.Unlock()
	return nil
}

func (c *modelConn) NewIterator(ctx context.Context, req ioctx.ReadRequest, opts driver.IterOptions) (driver.Iter, error) {
	if err := beginRead(ctx, req); err != nil {
		return nil, err
	}
	start := time.Now()
	c.store.mu.RLock()
	kvs := c.store.scanAt(c.store.seq, opts.LowerBound, opts.UpperBound)
	tables, size := c.store.tables, c.store.tableBytes()
	c.store.mu.RUnlock()
	c.fileReads(req, tables, size, start)
	return &modelIter{ctx: ctx, kvs: kvs, pos: -1}, nil
}

func (c *modelConn) Flush(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	start := time.Now()
	c.store.mu.Lock()
	flushed := c.store.seq > c.store.flushedSeq
	if flushed {
		c.store.flushedSeq = c.store.seq
		c.store.tables++
	}
	c.store.mu.Unlock()
	if flushed {
		// The new table is read back to check it.
		c.fileReads(ioctx.ReadRequest{IO: ioctx.IOOptions{Activity: ioctx.ActivityFlush}}, 1, blockSize, start)
	}
	return nil
}

func (c *modelConn) Compact(ctx context.Context, start, end []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	began := time.Now()
	c.store.mu.Lock()
	inputs, size := c.store.tables, c.store.tableBytes()
	if inputs > 1 {
		c.store.tables = 1
	}
	c.store.mu.Unlock()
	if inputs > 1 {
		c.fileReads(ioctx.ReadRequest{IO: ioctx.IOOptions{Activity: ioctx.ActivityCompaction}}, inputs, size, began)
	}
	return nil
}

// verify reads every table, as verification does.
func (c *modelConn) verify(ctx context.Context, req ioctx.ReadRequest) error {
	if err := beginRead(ctx, req); err != nil {
		return err
	}
	start := time.Now()
	c.store.mu.RLock()
	tables, size := c.store.tables, c.store.tableBytes()
	c.store.mu.RUnlock()
	c.fileReads(req, tables, size, start)
	return nil
}

func (c *modelConn) VerifyChecksum(ctx context.Context, req ioctx.ReadRequest) error {
	return c.verify(ctx, req)
}

func (c *modelConn) VerifyFileChecksums(ctx context.Context, req ioctx.ReadRequest) error {
	return c.verify(ctx, req)
}

func (c *modelConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.DriverTx, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.store.mu.RLock()
	snap := c.store.seq
	c.store.mu.RUnlock()
	return &modelTx{c: c, snap: snap, writes: make(map[string]driver.Op)}, nil
}

func (c *modelConn) Statistics() *statistics.Statistics { return c.stats }

func (c *modelConn) Close() error {
	c.driver.mu.Lock()
	c.store.open = false
	c.driver.mu.Unlock()
	return nil
}

// modelTx is an optimistic transaction: it reads the snapshot taken at
// begin merged with its buffered writes, and Commit fails if a key it
// wrote was written by anyone after the snapshot. Like every DriverTx it
// is used by one goroutine at a time.
type modelTx struct {
	c      *modelConn
	snap   uint64
	writes map[string]driver.Op
	// ranges are the transaction's range deletions, [start, end) each
	// (a nil end: every key from start on);
	// its writes in a range are those made after the range's deletion.
	ranges []txRange
}

// inRanges reports whether one of the transaction's range deletions covers
// k.
func (tx *modelTx) inRanges(k string) bool {
	return slices.ContainsFunc(tx.ranges, func(r txRange) bool { return r.contains(k) })
}

// txRange is a transaction's range deletion.
type txRange struct {
	start, end []byte // end nil: unbounded
}

func (r txRange) contains(k string) bool {
	return k >= string(r.start) && (r.end == nil || k < string(r.end))
}

func (tx *modelTx) Get(ctx context.Context, req ioctx.ReadRequest, key []byte) ([]byte, error) {
	if err := beginRead(ctx, req); err != nil {
		return nil, err
	}
	if w, ok := tx.writes[string(key)]; ok {
		if w.Kind == driver.OpDelete {
			return nil, fmt.Errorf("model: key %q (deleted in the transaction): %w", key, driver.ErrNotFound)
		}
		return append([]byte{}, w.Value...), nil
	}
	if tx.inRanges(string(key)) {
		return nil, fmt.Errorf("model: key %q (in a range the transaction deleted): %w", key, driver.ErrNotFound)
	}
	start := time.Now()
	tx.c.store.mu.RLock()
	v, found, fromTable := tx.c.store.getAt(string(key), tx.snap)
	tx.c.store.mu.RUnlock()
	if fromTable {
		tx.c.fileReads(req, 1, blockSize, start)
	}
	if !found {
		return nil, fmt.Errorf("model: key %q: %w", key, driver.ErrNotFound)
	}
	return []byte(v), nil
}

func (tx *modelTx) NewIterator(ctx context.Context, req ioctx.ReadRequest, opts driver.IterOptions) (driver.Iter, error) {
	if err := beginRead(ctx, req); err != nil {
		return nil, err
	}
	start := time.Now()
	tx.c.store.mu.RLock()
	base := tx.c.store.scanAt(tx.snap, opts.LowerBound, opts.UpperBound)
	tables, size := tx.c.store.tables, tx.c.store.tableBytes()
	tx.c.store.mu.RUnlock()
	tx.c.fileReads(req, tables, size, start)
	merged := make(map[string]string, len(base))
	for _, p := range base {
		if !tx.inRanges(p.k) {
			merged[p.k] = p.v
		}
	}
	for k, w := range tx.writes {
		if opts.LowerBound != nil && k < string(opts.LowerBound) || opts.UpperBound != nil && k >= string(opts.UpperBound) {
			continue
		}
		if w.Kind == driver.OpDelete {
			delete(merged, k)
		} else {
			merged[k] = string(w.Value)
		}
	}
	kvs := make([]kv, 0, len(merged))
	for k, v := range merged {
		kvs = append(kvs, kv{k, v})
	}
	slices.SortFunc(kvs, func(a, b kv) int { return strings.Compare(a.k, b.k) })
	return &modelIter{ctx: ctx, kvs: kvs, pos: -1}, nil
}

func (tx *modelTx) Put(ctx context.Context, key, value []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	tx.writes[string(key)] = driver.Op{Kind: driver.OpPut, Key: []byte(string(key)), Value: append([]byte{}, value...)}
	return nil
}

func (tx *modelTx) Delete(ctx context.Context, key []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	tx.writes[string(key)] = driver.Op{Kind: driver.OpDelete, Key: []byte(string(key))}
	return nil
}

// DeleteRange erases the transaction's writes in the range, and hides the
// snapshot's keys there from its reads.
func (tx *modelTx) DeleteRange(ctx context.Context, start, end []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for k := range tx.writes {
		if (txRange{start, end}).contains(k) {
			delete(tx.writes, k)
		}
	}
	r := txRange{start: slices.Clone(start), end: slices.Clone(end)}
	if end != nil && r.end == nil {
		r.end = []byte{}
	}
	tx.ranges = append(tx.ranges, r)
	return nil
}

// Commit fails if a key the transaction wrote, or any key in a range it
// deleted, was written by anyone after its snapshot; otherwise it applies
// the range deletions, then the writes (each made after the deletions
// covering its key), at one sequence number.
func (tx *modelTx) Commit() error {
	s := tx.c.store
	s.mu.Lock()
	defer s.mu.Unlock()
	ops := make([]driver.Op, 0, len(tx.ranges)+len(tx.writes))
	for _, r := range tx.ranges {
		for k := range s.keys {
			if r.contains(k) {
				if seq := s.lastWrite(k); seq > tx.snap {
					return fmt.Errorf("model: key %q, in the range [%q, %q) the transaction deleted, was written at "+
						"sequence %d, after the transaction's snapshot at %d: %w", k, r.start, r.end, seq, tx.snap, driver.ErrConflict)
				}
			}
		}
		ops = append(ops, driver.Op{Kind: driver.OpDeleteRange, Key: r.start, Value: r.end})
	}
	for k, w := range tx.writes {
		if seq := s.lastWrite(k); seq > tx.snap {
			return fmt.Errorf("model: key %q was written at sequence %d, after the transaction's snapshot at %d: %w",
				k, seq, tx.snap, driver.ErrConflict)
		}
		ops = append(ops, w)
	}
	if len(ops) > 0 {
		s.applyLocked(ops)
	}
	return nil
}

func (tx *modelTx) Rollback() error { return nil }

// modelIter iterates over pairs materialized when it was created: the
// snapshot the contract asks for, trivially.
type modelIter struct {
	ctx context.Context
	kvs []kv
	pos int
	err error
}

// at moves to position i, unless the context is done.
func (it *modelIter) at(i int) bool {
	if err := it.ctx.Err(); err != nil {
		it.err, it.pos = err, -1
		return false
	}
	it.pos = i
	return i >= 0 && i < len(it.kvs)
}

func (it *modelIter) search(k []byte) int {
	i, _ := slices.BinarySearchFunc(it.kvs, string(k), func(p kv, t string) int { return strings.Compare(p.k, t) })
	return i
}

func (it *modelIter) First() bool            { it.err = nil; return it.at(0) }
func (it *modelIter) Last() bool             { it.err = nil; return it.at(len(it.kvs) - 1) }
func (it *modelIter) SeekGE(key []byte) bool { it.err = nil; return it.at(it.search(key)) }
func (it *modelIter) SeekLT(key []byte) bool { it.err = nil; return it.at(it.search(key) - 1) }
func (it *modelIter) Next() bool             { return it.at(it.pos + 1) }
func (it *modelIter) Prev() bool             { return it.at(it.pos - 1) }
func (it *modelIter) Key() []byte            { return []byte(it.kvs[it.pos].k) }
func (it *modelIter) Value() []byte          { return []byte(it.kvs[it.pos].v) }
func (it *modelIter) Error() error           { return it.err }
func (it *modelIter) Close() error           { return nil }

// modelSnapshot reads the store at a sequence number. The model keeps every
// version, so it holds nothing.
type modelSnapshot struct {
	c   *modelConn
	seq uint64
}

func (sn *modelSnapshot) Get(ctx context.Context, req ioctx.ReadRequest, key []byte) ([]byte, error) {
	if err := beginRead(ctx, req); err != nil {
		return nil, err
	}
	start := time.Now()
	sn.c.store.mu.RLock()
	v, found, fromTable := sn.c.store.getAt(string(key), sn.seq)
	sn.c.store.mu.RUnlock()
	if fromTable {
		sn.c.fileReads(req, 1, blockSize, start)
	}
	if !found {
		return nil, fmt.Errorf("model: key %q: %w", key, driver.ErrNotFound)
	}
	return []byte(v), nil
}

func (sn *modelSnapshot) NewIterator(ctx context.Context, req ioctx.ReadRequest, opts driver.IterOptions) (driver.Iter, error) {
	if err := beginRead(ctx, req); err != nil {
		return nil, err
	}
	start := time.Now()
	sn.c.store.mu.RLock()
	kvs := sn.c.store.scanAt(sn.seq, opts.LowerBound, opts.UpperBound)
	tables, size := sn.c.store.tables, sn.c.store.tableBytes()
	sn.c.store.mu.RUnlock()
	sn.c.fileReads(req, tables, size, start)
	return &modelIter{ctx: ctx, kvs: kvs, pos: -1}, nil
}

func (sn *modelSnapshot) Close() error { return nil }
