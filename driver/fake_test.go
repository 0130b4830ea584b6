package driver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
)

// This file is a small in-memory map driver that records what the façade
// asks of it and flags every call the façade promised never to make (after
// Close, Next on an unpositioned iterator, ...).

// call is one read the fake driver received.
type call struct {
	method string // "Get", "MultiGet", "NewIterator", "VerifyChecksum", ... ; "Tx." prefix for a DriverTx
	req    ioctx.ReadRequest
	key    string
}

// fakeConn implements only the required DriverConn methods.
type fakeConn struct {
	mu         sync.Mutex
	data       map[string][]byte
	version    map[string]uint64 // seq of each key's last committed write
	seq        uint64
	calls      []call
	snapCloses int                  // DriverSnapshot.Close calls
	writeOpts  []ioctx.WriteOptions // the options of each write, in order
	violations []string
	closed     bool
	closes     int
	openIters  int
	openTxs    int
	openSnaps  int
	pins       atomic.Int32 // pinned values not yet released

	// getHook, when set, runs at the start of Get (outside mu); tests
	// use it to block a Get.
	getHook func(ctx context.Context, key []byte) error
	// seekHook, when set, runs at the start of an iterator's SeekGE;
	// tests use it to block a move.
	seekHook func(key []byte)
	// closeErr is returned by Close.
	closeErr error
	// iterIgnoresCtx makes iterators ignore their context, so only the
	// façade can stop them.
	iterIgnoresCtx bool
}

func newFakeConn() *fakeConn {
	return &fakeConn{data: make(map[string][]byte), version: make(map[string]uint64)}
}

var _ DriverConn = (*fakeConn)(nil)

// check records a violation if the connection is closed; callers hold mu.
func (c *fakeConn) checkLocked(method string) {
	if c.closed {
		c.violations = append(c.violations, method+" after Close")
	}
}

func (c *fakeConn) record(method string, req ioctx.ReadRequest, key []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checkLocked(method)
	c.calls = append(c.calls, call{method: method, req: req, key: string(key)})
}

func (c *fakeConn) recorded() []call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls)
}

func (c *fakeConn) violationList() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.violations)
}

func notFound(key []byte) error { return fmt.Errorf("fake: key %q: %w", key, ErrNotFound) }

func (c *fakeConn) Get(ctx context.Context, req ioctx.ReadRequest, key []byte) ([]byte, error) {
	if c.getHook != nil {
		if err := c.getHook(ctx, key); err != nil {
			return nil, err
		}
	}
	c.record("Get", req, key)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return c.lookup(key)
}

func (c *fakeConn) lookup(key []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.data[string(key)]
	if !ok {
		return nil, notFound(key)
	}
	return append([]byte{}, v...), nil
}

func (c *fakeConn) Put(ctx context.Context, wo ioctx.WriteOptions, key, value []byte) error {
	return c.write(ctx, "Put", wo, []Op{{Kind: OpPut, Key: key, Value: value}})
}

func (c *fakeConn) Delete(ctx context.Context, wo ioctx.WriteOptions, key []byte) error {
	return c.write(ctx, "Delete", wo, []Op{{Kind: OpDelete, Key: key}})
}

func (c *fakeConn) Write(ctx context.Context, wo ioctx.WriteOptions, b *Batch) error {
	ops := make([]Op, 0, b.Len())
	r := b.Reader()
	for op, ok := r.Next(); ok; op, ok = r.Next() {
		ops = append(ops, op)
	}
	return c.write(ctx, "Write", wo, ops)
}

func (c *fakeConn) write(ctx context.Context, method string, wo ioctx.WriteOptions, ops []Op) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checkLocked(method)
	c.writeOpts = append(c.writeOpts, wo)
	c.applyLocked(ops)
	return nil
}

func (c *fakeConn) applyLocked(ops []Op) {
	c.seq++
	for _, op := range ops {
		switch op.Kind {
		case OpDelete:
			delete(c.data, string(op.Key))
		case OpDeleteRange:
			for k := range c.data {
				if inRange(k, op.Key, op.Value) {
					delete(c.data, k)
					c.version[k] = c.seq
				}
			}
			continue
		default:
			c.data[string(op.Key)] = append([]byte{}, op.Value...)
		}
		c.version[string(op.Key)] = c.seq
	}
}

// inRange reports whether k is in [start, end), a nil end being unbounded
// (RangeDeleter's rule).
func inRange(k string, start, end []byte) bool {
	return k >= string(start) && (end == nil || k < string(end))
}

func (c *fakeConn) NewIterator(ctx context.Context, req ioctx.ReadRequest, opts IterOptions) (Iter, error) {
	c.record("NewIterator", req, nil)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.openIters++
	return newFakeIter(ctx, c, c.data, nil, opts), nil
}

func (c *fakeConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closes++
	if c.closed {
		c.violations = append(c.violations, "second Close")
	}
	if c.openIters != 0 || c.openTxs != 0 || c.openSnaps != 0 {
		c.violations = append(c.violations, fmt.Sprintf("Close with %d iterators, %d transactions and %d snapshots open",
			c.openIters, c.openTxs, c.openSnaps))
	}
	c.closed = true
	return c.closeErr
}

// fullConn adds every optional interface to a fakeConn.
type fullConn struct {
	*fakeConn
	skipMultiGet atomic.Bool // MultiGet returns ErrSkip
	stats        *statistics.Statistics
	txMultiGet   bool // transactions implement TxMultiGetter
	snapMultiGet bool // snapshots implement SnapshotMultiGetter
	txRangeDel   bool // transactions implement TxRangeDeleter
	// txZeroCopy and snapZeroCopy make transactions and snapshots
	// implement ValueSizer and PinnedGetter (see zeroCopy); zcSkip makes
	// theirs return ErrSkip.
	txZeroCopy, snapZeroCopy bool
	zcSkip                   atomic.Bool
	// ranges are the range deletions the driver received (DeleteRange, or
	// a transaction's), as they came: a nil slice stays nil.
	ranges []rangeCall
}

// rangeCall is one range deletion a driver received.
type rangeCall struct {
	method     string // "DeleteRange" or "Tx.DeleteRange"
	start, end []byte
}

// cloneKeepNil copies b, keeping a nil slice nil and an empty one empty.
func cloneKeepNil(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

func (c *fullConn) recordRange(method string, start, end []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ranges = append(c.ranges, rangeCall{method, cloneKeepNil(start), cloneKeepNil(end)})
}

func (c *fullConn) rangeCalls() []rangeCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.ranges)
}

var (
	_ MultiGetter   = (*fullConn)(nil)
	_ Flusher       = (*fullConn)(nil)
	_ Compacter     = (*fullConn)(nil)
	_ Verifier      = (*fullConn)(nil)
	_ TxBeginner    = (*fullConn)(nil)
	_ StatsReporter = (*fullConn)(nil)
	_ RangeDeleter  = (*fullConn)(nil)
	_ WALSyncer     = (*fullConn)(nil)
	_ Snapshotter   = (*fullConn)(nil)
	_ Checkpointer  = (*fullConn)(nil)
)

func (c *fullConn) DeleteRange(ctx context.Context, wo ioctx.WriteOptions, start, end []byte) error {
	if ctx.Err() == nil {
		c.recordRange("DeleteRange", start, end)
	}
	return c.write(ctx, "DeleteRange", wo, []Op{{Kind: OpDeleteRange, Key: start, Value: end}})
}

func (c *fullConn) SyncWAL(ctx context.Context) error {
	c.record("SyncWAL", ioctx.ReadRequest{}, nil)
	return ctx.Err()
}

func (c *fullConn) Checkpoint(ctx context.Context, dir string) error {
	c.record("Checkpoint", ioctx.ReadRequest{}, []byte(dir))
	return ctx.Err()
}

func (c *fullConn) NewSnapshot(ctx context.Context) (DriverSnapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checkLocked("NewSnapshot")
	c.openSnaps++
	s := &fakeSnapshot{c: c.fakeConn, data: make(map[string][]byte, len(c.data))}
	for k, v := range c.data {
		s.data[k] = v
	}
	switch {
	case c.snapMultiGet:
		return &fullSnapshot{s}, nil
	case c.snapZeroCopy:
		return &zeroCopySnapshot{s, zeroCopy{zc: c.fakeConn, prefix: "Snapshot.", skip: &c.zcSkip, lookup: func(k []byte) ([]byte, bool) {
			v, ok := s.data[string(k)]
			return v, ok
		}}}, nil
	}
	return s, nil
}

// fakeSnapshot is a copy of the data at NewSnapshot. It flags reads after
// its Close and a Close while its iterators are open.
type fakeSnapshot struct {
	c      *fakeConn
	data   map[string][]byte
	iters  atomic.Int32
	closed atomic.Bool
}

func (s *fakeSnapshot) check(method string) {
	if s.closed.Load() {
		s.c.mu.Lock()
		s.c.violations = append(s.c.violations, "Snapshot."+method+" after its Close")
		s.c.mu.Unlock()
	}
}

func (s *fakeSnapshot) Get(ctx context.Context, req ioctx.ReadRequest, key []byte) ([]byte, error) {
	s.check("Get")
	s.c.record("Snapshot.Get", req, key)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v, ok := s.data[string(key)]
	if !ok {
		return nil, notFound(key)
	}
	return append([]byte{}, v...), nil
}

func (s *fakeSnapshot) NewIterator(ctx context.Context, req ioctx.ReadRequest, opts IterOptions) (Iter, error) {
	s.check("NewIterator")
	s.c.record("Snapshot.NewIterator", req, nil)
	s.c.mu.Lock()
	s.c.openIters++
	s.c.mu.Unlock()
	s.iters.Add(1)
	it := newFakeIter(ctx, s.c, s.data, nil, opts)
	it.snap = s
	return it, nil
}

func (s *fakeSnapshot) Close() error {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	s.c.checkLocked("Snapshot.Close")
	if s.closed.Swap(true) {
		s.c.violations = append(s.c.violations, "second Snapshot.Close")
	}
	if n := s.iters.Load(); n != 0 {
		s.c.violations = append(s.c.violations, fmt.Sprintf("Snapshot.Close with %d iterators open", n))
	}
	s.c.openSnaps--
	s.c.snapCloses++
	return nil
}

// fullSnapshot adds SnapshotMultiGetter.
type fullSnapshot struct{ *fakeSnapshot }

var _ SnapshotMultiGetter = (*fullSnapshot)(nil)

func (s *fullSnapshot) MultiGet(ctx context.Context, req ioctx.ReadRequest, keys [][]byte) ([][]byte, error) {
	s.check("MultiGet")
	s.c.record("Snapshot.MultiGet", req, nil)
	vals := make([][]byte, len(keys))
	for i, k := range keys {
		if v, ok := s.data[string(k)]; ok {
			vals[i] = append([]byte{}, v...)
		}
	}
	return vals, nil
}

func newFullConn() *fullConn { return &fullConn{fakeConn: newFakeConn()} }

func (c *fullConn) MultiGet(ctx context.Context, req ioctx.ReadRequest, keys [][]byte) ([][]byte, error) {
	if c.skipMultiGet.Load() {
		return nil, ErrSkip
	}
	c.record("MultiGet", req, nil)
	vals := make([][]byte, len(keys))
	for i, k := range keys {
		v, err := c.lookup(k)
		if err == nil {
			vals[i] = v
		}
	}
	return vals, nil
}

func (c *fullConn) Flush(ctx context.Context) error {
	c.record("Flush", ioctx.ReadRequest{}, nil)
	return ctx.Err()
}

func (c *fullConn) Compact(ctx context.Context, start, end []byte) error {
	c.record("Compact", ioctx.ReadRequest{}, append(append([]byte{}, start...), end...))
	return ctx.Err()
}

func (c *fullConn) VerifyChecksum(ctx context.Context, req ioctx.ReadRequest) error {
	c.record("VerifyChecksum", req, nil)
	return ctx.Err()
}

func (c *fullConn) VerifyFileChecksums(ctx context.Context, req ioctx.ReadRequest) error {
	c.record("VerifyFileChecksums", req, nil)
	return ctx.Err()
}

func (c *fullConn) Statistics() *statistics.Statistics { return c.stats }

func (c *fullConn) BeginTx(ctx context.Context, opts TxOptions) (DriverTx, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checkLocked("BeginTx")
	c.openTxs++
	tx := &fakeTx{c: c.fakeConn, snap: make(map[string][]byte, len(c.data)), begin: c.seq, writes: map[string][]byte{}, opts: opts}
	for k, v := range c.data {
		tx.snap[k] = v
	}
	switch {
	case c.txMultiGet:
		return &fullTx{tx}, nil
	case c.txRangeDel:
		return &rangeTx{tx, c}, nil
	case c.txZeroCopy:
		return &zeroCopyTx{tx, zeroCopy{zc: c.fakeConn, prefix: "Tx.", skip: &c.zcSkip, lookup: func(k []byte) ([]byte, bool) {
			if v, ok := tx.writes[string(k)]; ok {
				return v, v != nil
			}
			v, ok := tx.snap[string(k)]
			return v, ok
		}}}, nil
	}
	return tx, nil
}

// fakeTx is a snapshot plus a write set; Commit fails with ErrConflict when
// a written key was committed by someone else after begin.
type fakeTx struct {
	c      *fakeConn
	snap   map[string][]byte
	writes map[string][]byte // nil value = deletion
	begin  uint64
	opts   TxOptions
	done   bool
	busy   atomic.Bool // detects concurrent calls, which the façade promises not to make
}

func (tx *fakeTx) enter(method string) func() {
	if !tx.busy.CompareAndSwap(false, true) {
		tx.c.mu.Lock()
		tx.c.violations = append(tx.c.violations, "concurrent Tx."+method)
		tx.c.mu.Unlock()
		return func() {}
	}
	if tx.done {
		tx.c.mu.Lock()
		tx.c.violations = append(tx.c.violations, "Tx."+method+" after Commit/Rollback")
		tx.c.mu.Unlock()
	}
	return func() { tx.busy.Store(false) }
}

func (tx *fakeTx) view() map[string][]byte {
	m := make(map[string][]byte, len(tx.snap))
	for k, v := range tx.snap {
		m[k] = v
	}
	for k, v := range tx.writes {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return m
}

func (tx *fakeTx) Get(ctx context.Context, req ioctx.ReadRequest, key []byte) ([]byte, error) {
	defer tx.enter("Get")()
	tx.c.record("Tx.Get", req, key)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if v, ok := tx.writes[string(key)]; ok {
		if v == nil {
			return nil, notFound(key)
		}
		return append([]byte{}, v...), nil
	}
	if v, ok := tx.snap[string(key)]; ok {
		return append([]byte{}, v...), nil
	}
	return nil, notFound(key)
}

func (tx *fakeTx) NewIterator(ctx context.Context, req ioctx.ReadRequest, opts IterOptions) (Iter, error) {
	defer tx.enter("NewIterator")()
	tx.c.record("Tx.NewIterator", req, nil)
	tx.c.mu.Lock()
	tx.c.openIters++
	tx.c.mu.Unlock()
	return newFakeIter(ctx, tx.c, tx.view(), tx, opts), nil
}

func (tx *fakeTx) Put(_ context.Context, key, value []byte) error {
	defer tx.enter("Put")()
	tx.writes[string(key)] = append([]byte{}, value...)
	return nil
}

func (tx *fakeTx) Delete(_ context.Context, key []byte) error {
	defer tx.enter("Delete")()
	tx.writes[string(key)] = nil
	return nil
}

func (tx *fakeTx) Commit() error {
	defer tx.enter("Commit")()
	tx.done = true
	c := tx.c
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checkLocked("Tx.Commit")
	c.openTxs--
	for k := range tx.writes {
		if c.version[k] > tx.begin {
			return fmt.Errorf("fake: key %q written after the transaction began: %w", k, ErrConflict)
		}
	}
	ops := make([]Op, 0, len(tx.writes))
	for k, v := range tx.writes {
		kind := OpPut
		if v == nil {
			kind = OpDelete
		}
		ops = append(ops, Op{Kind: kind, Key: []byte(k), Value: v})
	}
	c.applyLocked(ops)
	return nil
}

func (tx *fakeTx) Rollback() error {
	defer tx.enter("Rollback")()
	tx.done = true
	tx.c.mu.Lock()
	defer tx.c.mu.Unlock()
	tx.c.checkLocked("Tx.Rollback")
	tx.c.openTxs--
	return nil
}

// fullTx adds TxMultiGetter.
type fullTx struct{ *fakeTx }

var _ TxMultiGetter = (*fullTx)(nil)

func (tx *fullTx) MultiGet(ctx context.Context, req ioctx.ReadRequest, keys [][]byte) ([][]byte, error) {
	defer tx.enter("MultiGet")()
	tx.c.record("Tx.MultiGet", req, nil)
	view := tx.view()
	vals := make([][]byte, len(keys))
	for i, k := range keys {
		if v, ok := view[string(k)]; ok {
			vals[i] = append([]byte{}, v...)
		}
	}
	return vals, nil
}

// fakeIter iterates a sorted copy of a map, within bounds.
type fakeIter struct {
	ctx  context.Context
	c    *fakeConn
	tx   *fakeTx
	snap *fakeSnapshot // the snapshot read, if any
	keys []string
	vals map[string][]byte
	pos  int // -1 before the first, len(keys) after the last
	opts IterOptions
	// bounds as they were at NewIterator: the façade promises they do not
	// change while the iterator is open.
	lower, upper []byte
	err          error
	closed       bool
	// kbuf and vbuf are overwritten on every move, like a real engine's
	// reused buffers, so a caller keeping Key past a move sees garbage.
	kbuf, vbuf []byte
}

func newFakeIter(ctx context.Context, c *fakeConn, m map[string][]byte, tx *fakeTx, opts IterOptions) *fakeIter {
	it := &fakeIter{ctx: ctx, c: c, tx: tx, vals: make(map[string][]byte, len(m)), pos: -1, opts: opts,
		lower: slices.Clone(opts.LowerBound), upper: slices.Clone(opts.UpperBound)}
	for k, v := range m {
		if opts.LowerBound != nil && k < string(opts.LowerBound) {
			continue
		}
		if opts.UpperBound != nil && k >= string(opts.UpperBound) {
			continue
		}
		it.keys = append(it.keys, k)
		it.vals[k] = v
	}
	sort.Strings(it.keys)
	return it
}

func (it *fakeIter) violate(msg string) {
	it.c.mu.Lock()
	it.c.violations = append(it.c.violations, msg)
	it.c.mu.Unlock()
}

func (it *fakeIter) at(pos int) bool {
	if it.closed {
		it.violate("Iter move after Close")
	}
	if it.tx != nil && it.tx.done {
		it.violate("Iter move after its Tx ended")
	}
	if !bytes.Equal(it.lower, it.opts.LowerBound) || !bytes.Equal(it.upper, it.opts.UpperBound) {
		it.violate("Iter bounds changed while the iterator was open")
	}
	if err := it.ctx.Err(); err != nil && !it.c.iterIgnoresCtx {
		it.err = err
		it.pos = -1
		return false
	}
	it.pos = pos
	if pos < 0 || pos >= len(it.keys) {
		it.kbuf, it.vbuf = it.kbuf[:0], it.vbuf[:0]
		return false
	}
	k := it.keys[pos]
	it.kbuf = append(it.kbuf[:0], k...)
	it.vbuf = append(it.vbuf[:0], it.vals[k]...)
	return true
}

func (it *fakeIter) First() bool { it.err = nil; return it.at(0) }
func (it *fakeIter) Last() bool  { it.err = nil; return it.at(len(it.keys) - 1) }
func (it *fakeIter) SeekGE(key []byte) bool {
	if it.c.seekHook != nil {
		it.c.seekHook(key)
	}
	it.err = nil
	return it.at(sort.SearchStrings(it.keys, string(key)))
}
func (it *fakeIter) SeekLT(key []byte) bool {
	it.err = nil
	return it.at(sort.SearchStrings(it.keys, string(key)) - 1)
}
func (it *fakeIter) Next() bool {
	if it.pos < 0 || it.pos >= len(it.keys) {
		it.violate("Iter.Next on an unpositioned iterator")
	}
	return it.at(it.pos + 1)
}
func (it *fakeIter) Prev() bool {
	if it.pos < 0 || it.pos >= len(it.keys) {
		it.violate("Iter.Prev on an unpositioned iterator")
	}
	return it.at(it.pos - 1)
}
func (it *fakeIter) Key() []byte   { return it.kbuf }
func (it *fakeIter) Value() []byte { return it.vbuf }
func (it *fakeIter) Error() error  { return it.err }
func (it *fakeIter) Close() error {
	if it.closed {
		it.violate("Iter second Close")
	}
	it.closed = true
	it.c.mu.Lock()
	it.c.openIters--
	it.c.mu.Unlock()
	if it.snap != nil {
		it.snap.iters.Add(-1)
	}
	return nil
}

// fakeConnector hands out one connection.
type fakeConnector struct {
	conn DriverConn
	err  error
	// failures, when positive, is how many connects fail with err before
	// one succeeds; zero means every connect fails when err is set.
	failures atomic.Int32
	gate     chan struct{} // when non-nil, Connect waits for it to close
	connects atomic.Int32
	closes   atomic.Int32
	ctxErr   atomic.Value // the error of the ctx Connect saw, after the gate
	closeErr error
}

func (c *fakeConnector) Connect(ctx context.Context) (DriverConn, error) {
	c.connects.Add(1)
	if c.gate != nil {
		<-c.gate
	}
	c.ctxErr.Store(fmt.Sprint(ctx.Err()))
	if n := c.failures.Load(); c.err != nil && (n == 0 || c.connects.Load() <= n) {
		return nil, c.err
	}
	return c.conn, nil
}

func (c *fakeConnector) Driver() Driver { return fakeDriver{} }

func (c *fakeConnector) Close() error {
	c.closes.Add(1)
	return c.closeErr
}

// fakeDriver opens a fresh fullConn for any DSN, or fails when the DSN
// starts with "fail".
type fakeDriver struct{}

func (fakeDriver) Open(dsn string) (DriverConn, error) {
	if strings.HasPrefix(dsn, "fail") {
		return nil, errors.New("fake: cannot open " + dsn)
	}
	return newFullConn(), nil
}

// fakeContextDriver implements DriverContext.
type fakeContextDriver struct{ fakeDriver }

func (d fakeContextDriver) OpenConnector(dsn string) (Connector, error) {
	if _, err := ParseDSN(dsn); err != nil {
		return nil, err
	}
	c, err := d.Open(dsn)
	if err != nil {
		return nil, err
	}
	return &fakeConnector{conn: c}, nil
}

// fixedConn returns one preallocated value from Get and does nothing else:
// it isolates the façade's own cost for allocation tests and benchmarks.
type fixedConn struct{ value []byte }

func (c *fixedConn) Get(context.Context, ioctx.ReadRequest, []byte) ([]byte, error) {
	return c.value, nil
}
func (c *fixedConn) Put(context.Context, ioctx.WriteOptions, []byte, []byte) error { return nil }
func (c *fixedConn) Delete(context.Context, ioctx.WriteOptions, []byte) error      { return nil }
func (c *fixedConn) Write(context.Context, ioctx.WriteOptions, *Batch) error       { return nil }
func (c *fixedConn) NewIterator(context.Context, ioctx.ReadRequest, IterOptions) (Iter, error) {
	return nil, errors.New("fixedConn: no iterators")
}
func (c *fixedConn) Close() error { return nil }

// openFake returns a DB over conn, closed at the end of the test, and fails
// the test if the façade broke one of its promises to the driver.
func openFake(t testing.TB, conn DriverConn) *DB {
	t.Helper()
	db := OpenDB(&fakeConnector{conn: conn})
	t.Cleanup(func() {
		_ = db.Close()
		var fc *fakeConn
		switch c := conn.(type) {
		case *fakeConn:
			fc = c
		case *fullConn:
			fc = c.fakeConn
		case *zeroCopyConn:
			fc = c.fakeConn
		}
		if fc != nil {
			if v := fc.violationList(); len(v) != 0 {
				t.Errorf("the façade broke its promises to the driver: %q", v)
			}
		}
	})
	return db
}

// rangeTx adds TxRangeDeleter to a fakeTx: a range deletion records its
// ends and deletes, in the write set, every key of the range the
// transaction sees.
type rangeTx struct {
	*fakeTx
	full *fullConn
}

var _ TxRangeDeleter = (*rangeTx)(nil)

func (tx *rangeTx) DeleteRange(ctx context.Context, start, end []byte) error {
	defer tx.enter("DeleteRange")()
	if err := ctx.Err(); err != nil {
		return err
	}
	tx.full.recordRange("Tx.DeleteRange", start, end)
	for k := range tx.view() {
		if inRange(k, start, end) {
			tx.writes[k] = nil
		}
	}
	return nil
}

// zeroCopy implements ValueSizer and PinnedGetter over lookup, which returns
// a value without copying it. It records its calls on zc as prefix+method,
// and returns ErrSkip without recording when skip is set. Its pins are
// counted on zc.pins until their Close.
type zeroCopy struct {
	zc     *fakeConn
	prefix string
	skip   *atomic.Bool
	lookup func(key []byte) ([]byte, bool)
	// nilCloser makes GetPinned return a nil Closer (nothing to release).
	nilCloser bool
}

func (z zeroCopy) ValueSize(ctx context.Context, req ioctx.ReadRequest, key []byte) (int, error) {
	if z.skip.Load() {
		return 0, ErrSkip
	}
	z.zc.record(z.prefix+"ValueSize", req, key)
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	v, ok := z.lookup(key)
	if !ok {
		return 0, notFound(key)
	}
	return len(v), nil
}

func (z zeroCopy) GetPinned(ctx context.Context, req ioctx.ReadRequest, key []byte) ([]byte, io.Closer, error) {
	if z.skip.Load() {
		return nil, nil, ErrSkip
	}
	z.zc.record(z.prefix+"GetPinned", req, key)
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	v, ok := z.lookup(key)
	if !ok {
		return nil, nil, notFound(key)
	}
	if z.nilCloser {
		return v, nil, nil
	}
	z.zc.pins.Add(1)
	return v, &pinCloser{c: z.zc}, nil
}

// pinCloser releases one pin: its first Close returns nil, later ones an
// error matching ErrClosed, as PinnedGetter requires.
type pinCloser struct {
	c      *fakeConn
	closed atomic.Bool
}

func (p *pinCloser) Close() error {
	if p.closed.Swap(true) {
		return fmt.Errorf("fake: pinned value already released: %w", ErrClosed)
	}
	p.c.pins.Add(-1)
	return nil
}

// zeroCopyConn is a fullConn with ValueSizer and PinnedGetter.
type zeroCopyConn struct {
	*fullConn
	zeroCopy
}

var (
	_ ValueSizer   = (*zeroCopyConn)(nil)
	_ PinnedGetter = (*zeroCopyConn)(nil)
)

func newZeroCopyConn() *zeroCopyConn {
	full := newFullConn()
	return &zeroCopyConn{full, zeroCopy{zc: full.fakeConn, skip: &full.zcSkip, lookup: func(k []byte) ([]byte, bool) {
		full.mu.Lock()
		defer full.mu.Unlock()
		v, ok := full.data[string(k)]
		return v, ok
	}}}
}

// zeroCopyTx and zeroCopySnapshot are a fakeTx and a fakeSnapshot with
// ValueSizer and PinnedGetter.
type zeroCopyTx struct {
	*fakeTx
	zeroCopy
}

type zeroCopySnapshot struct {
	*fakeSnapshot
	zeroCopy
}

var (
	_ ValueSizer   = (*zeroCopyTx)(nil)
	_ PinnedGetter = (*zeroCopySnapshot)(nil)
)

// fixedZeroCopyConn is a fixedConn with ValueSizer and PinnedGetter that do
// not allocate: the façade's own cost of Has, ValueSize and GetPinned.
type fixedZeroCopyConn struct {
	fixedConn
	closer io.Closer
}

func (c *fixedZeroCopyConn) ValueSize(context.Context, ioctx.ReadRequest, []byte) (int, error) {
	return len(c.value), nil
}

func (c *fixedZeroCopyConn) GetPinned(context.Context, ioctx.ReadRequest, []byte) ([]byte, io.Closer, error) {
	return c.value, c.closer, nil
}
