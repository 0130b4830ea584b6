package driver

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
)

// DB is a database opened through a driver. It is safe for concurrent use by
// many goroutines, and meant to be opened once and shared, as *sql.DB is.
//
// Every method takes a context first: when it is done before or during the
// call, the call returns an error for which errors.Is(err, ctx.Err())
// holds. A read also takes its [ioctx.ReadOptions] from the context (see the
// package doc, "The read path").
//
// The database is connected on first use (see [OpenDB]); after [DB.Close]
// every call returns an error matching ErrClosed.
type DB struct {
	// state counts the calls in flight in its low bits; closedBit marks
	// the DB closed. One atomic add on entry and one on exit is all the
	// bookkeeping a call pays: no mutex, no allocation.
	state atomic.Int64
	// The counter is written by every call; keep the read-mostly fields
	// below off its cache line.
	_ [56]byte

	// cs is the outcome of the last connect, nil until one finishes. A
	// successful one never changes; a failed one is replaced by the next
	// call's attempt.
	cs atomic.Pointer[connState]

	connector Connector

	// drained is closed by the exit that leaves a closed DB with no calls
	// in flight; Close waits on it.
	drained   chan struct{}
	drainOnce sync.Once

	mu struct {
		sync.Mutex
		// connecting is the connect in progress, nil when none is.
		connecting *connectAttempt
		// The open iterators and transactions, which Close closes and
		// rolls back.
		iters map[*Iterator]struct{}
		txs   map[*Tx]struct{}
		// The snapshots whose driver snapshot is not yet released,
		// which Close releases.
		snaps map[*Snapshot]struct{}
	}
}

// closedBit marks a closed DB in DB.state, far above any count of calls.
const closedBit = 1 << 62

// connState is a DB's connection and its capabilities, found once by type
// assertion so that calls do not repeat the assertions.
type connState struct {
	err  error // non-nil (an *openError) when the connect failed
	conn DriverConn

	multiGetter  MultiGetter
	flusher      Flusher
	compacter    Compacter
	verifier     Verifier
	txBeginner   TxBeginner
	rangeDeleter RangeDeleter
	merger       Merger
	walSyncer    WALSyncer
	snapshotter  Snapshotter
	checkpointer Checkpointer
	haser        Haser
	valueSizer   ValueSizer
	pinnedGetter PinnedGetter
	checker      Checker
	resumer      Resumer
	stats        *statistics.Statistics
}

// OpenDB returns a DB that uses c. It returns at once, as sql.OpenDB does:
// the database is connected on first use, or by [DB.Ping], which a program
// calls right after OpenDB (or [Open]) to learn at once whether the database
// can be opened. Concurrent first calls share one connect and wait for it
// (each gives up when its own context is done, without cancelling the
// connect for the others). A failed connect is not final, as in
// database/sql: the call that waited for it returns its error, whose message
// says the open failed and which matches its cause with errors.Is, and the
// next call tries again — so a database that was in use by another process,
// or on a disk that was full, is opened once the cause is gone. (A failed
// open of shale's engine changes nothing on disk, so trying again is safe.)
//
// OpenDB panics if c is nil.
func OpenDB(c Connector) *DB {
	if c == nil {
		panic("driver: OpenDB called with a nil Connector")
	}
	return &DB{connector: c, drained: make(chan struct{})}
}

// connectAttempt is one connect: done is closed once cs, its outcome, is
// set.
type connectAttempt struct {
	done chan struct{}
	cs   *connState
}

// enter registers a call in flight, or returns errDBClosed. A successful
// enter must be paired with exit.
func (db *DB) enter() error {
	if db.state.Add(1)&closedBit != 0 {
		db.exit()
		return errDBClosed
	}
	return nil
}

// exit ends a call registered by enter (or undoes a refused one).
func (db *DB) exit() {
	if db.state.Add(-1) == closedBit {
		db.signalDrained()
	}
}

// signalDrained wakes Close. Refused calls also reach a count of zero after
// the drain, hence the Once. It is kept out of exit so that exit inlines.
func (db *DB) signalDrained() {
	db.drainOnce.Do(func() { close(db.drained) })
}

// isClosed reports whether Close has begun.
func (db *DB) isClosed() bool { return db.state.Load()&closedBit != 0 }

// connect returns the DB's connection, connecting on first use and after a
// failed connect. The caller must have entered.
func (db *DB) connect(ctx context.Context) (*connState, error) {
	if cs := db.cs.Load(); cs != nil && cs.err == nil {
		return cs, nil
	}
	return db.connectSlow(ctx)
}

func (db *DB) connectSlow(ctx context.Context) (*connState, error) {
	db.mu.Lock()
	if cs := db.cs.Load(); cs != nil && cs.err == nil {
		// Another call connected meanwhile.
		db.mu.Unlock()
		return cs, nil
	}
	a := db.mu.connecting
	if a == nil {
		a = &connectAttempt{done: make(chan struct{})}
		db.mu.connecting = a
		// The connect runs on its own goroutine so that every waiter,
		// the first included, can give up when its context is done
		// without cancelling (and so failing) the connect for the
		// others.
		go db.runConnect(context.WithoutCancel(ctx), a)
	}
	db.mu.Unlock()
	select {
	case <-a.done:
		return a.cs, a.cs.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (db *DB) runConnect(ctx context.Context, a *connectAttempt) {
	cs := new(connState)
	c, err := db.connector.Connect(ctx)
	switch {
	case err != nil:
		if c != nil {
			_ = c.Close()
		}
		cs.err = &openError{cause: err}
	case c == nil:
		cs.err = &openError{cause: errors.New("driver: Connect returned a nil connection and no error")}
	default:
		cs.conn = c
		cs.multiGetter, _ = c.(MultiGetter)
		cs.flusher, _ = c.(Flusher)
		cs.compacter, _ = c.(Compacter)
		cs.verifier, _ = c.(Verifier)
		cs.txBeginner, _ = c.(TxBeginner)
		cs.rangeDeleter, _ = c.(RangeDeleter)
		cs.merger, _ = c.(Merger)
		cs.walSyncer, _ = c.(WALSyncer)
		cs.snapshotter, _ = c.(Snapshotter)
		cs.checkpointer, _ = c.(Checkpointer)
		cs.haser, _ = c.(Haser)
		cs.valueSizer, _ = c.(ValueSizer)
		cs.pinnedGetter, _ = c.(PinnedGetter)
		cs.checker, _ = c.(Checker)
		cs.resumer, _ = c.(Resumer)
		if sr, ok := c.(StatsReporter); ok {
			cs.stats = sr.Statistics()
		}
	}
	a.cs = cs
	db.mu.Lock()
	db.cs.Store(cs)
	db.mu.connecting = nil
	db.mu.Unlock()
	close(a.done)
}

// start is the prologue of every call on the DB or a session of it (sess,
// nil for the DB itself): the session's closed check, enter, the context's
// check, and the connect. On success the caller must call db.exit; on
// failure start has already exited.
func (db *DB) start(ctx context.Context, sess *Conn) (*connState, error) {
	if sess != nil && sess.closed.Load() {
		return nil, errConnClosed
	}
	if err := db.enter(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		db.exit()
		return nil, err
	}
	cs, err := db.connect(ctx)
	if err != nil {
		db.exit()
		return nil, err
	}
	return cs, nil
}

// startRead is start for a read of the public API api, whose own activity
// is want: the read's options are resolved once, here (steps 1 to 3 of the
// read path, see the package doc), with the session's defaults, and the
// returned request is all the driver receives of them. On success the caller
// must call db.exit; on failure startRead has already exited.
func (db *DB) startRead(ctx context.Context, sess *Conn, api string, want ioctx.Activity) (*connState, ioctx.ReadRequest, error) {
	var defaults *ioctx.ReadOptions
	if sess != nil {
		if sess.closed.Load() {
			return nil, ioctx.ReadRequest{}, errConnClosed
		}
		defaults = sess.defaults.Load()
	}
	return db.startReadWith(ctx, defaults, api, want)
}

// startReadWith is startRead after the session's check, with the defaults
// the read merges over (nil: none). Snapshots share it.
func (db *DB) startReadWith(ctx context.Context, defaults *ioctx.ReadOptions, api string, want ioctx.Activity) (*connState, ioctx.ReadRequest, error) {
	if err := db.enter(); err != nil {
		return nil, ioctx.ReadRequest{}, err
	}
	req, err := ioctx.ResolveRead(ctx, defaults, api, want)
	if err != nil {
		db.exit()
		return nil, ioctx.ReadRequest{}, err
	}
	cs, err := db.connect(ctx)
	if err != nil {
		db.exit()
		return nil, ioctx.ReadRequest{}, err
	}
	return cs, req, nil
}

// Driver returns the DB's driver.
func (db *DB) Driver() Driver { return db.connector.Driver() }

// Ping connects the database if it is not yet connected, and returns the
// connect's error, if any: call it right after [Open] or [OpenDB] to learn
// at once whether the database can be opened. After a failed connect, Ping
// (like any call) tries again.
func (db *DB) Ping(ctx context.Context) error {
	if _, err := db.start(ctx, nil); err != nil {
		return err
	}
	db.exit()
	return nil
}

// Statistics returns the driver's statistics (see [StatsReporter]), or nil
// when they are disabled or the driver does not report any. It connects the
// database if needed. The same pointer is returned for the DB's life and
// stays readable after Close.
func (db *DB) Statistics() *statistics.Statistics {
	cs := db.cs.Load()
	if cs == nil || cs.err != nil {
		if db.enter() != nil {
			return nil
		}
		defer db.exit()
		cs, _ = db.connect(context.Background())
		if cs == nil {
			return nil
		}
	}
	return cs.stats
}

// Get returns the value of key, or an error matching ErrNotFound. The
// returned slice is the caller's. key is not retained.
func (db *DB) Get(ctx context.Context, key []byte) ([]byte, error) {
	return db.get(ctx, nil, key)
}

// MultiGet returns the values of keys, in order: a nil entry for a key that
// is not found, a non-nil (possibly empty) slice for a found one. The
// returned slices are the caller's; keys are not retained. Every read is
// tagged ActivityMultiGet, also when the driver has no batched lookup and
// the façade loops its Get.
func (db *DB) MultiGet(ctx context.Context, keys [][]byte) ([][]byte, error) {
	return db.multiGet(ctx, nil, keys)
}

// NewIterator returns an iterator over the database, limited to opts'
// bounds (nil: no bounds), positioned nowhere: call First, Last, SeekGE or
// SeekLT. ctx bounds the iterator's whole life: once it is done, moves
// return false and Error reports ctx.Err(). Close the iterator when done;
// DB.Close closes the ones left open.
func (db *DB) NewIterator(ctx context.Context, opts *IterOptions) (*Iterator, error) {
	return db.newIterator(ctx, nil, opts)
}

// Put sets key to value. Both slices are the caller's and not retained.
func (db *DB) Put(ctx context.Context, key, value []byte) error {
	return db.put(ctx, nil, key, value)
}

// Delete removes key; removing an absent key is not an error. key is not
// retained.
func (db *DB) Delete(ctx context.Context, key []byte) error {
	return db.delete(ctx, nil, key)
}

// Write applies the batch's operations atomically and in order. The batch
// is not modified nor retained and may be reused or written again. A nil
// batch is an error matching ErrInvalidArgument; an empty one writes
// nothing.
func (db *DB) Write(ctx context.Context, b *Batch) error {
	return db.write(ctx, nil, b)
}

// DeleteRange deletes every key k with start <= k < end, in bytewise order,
// atomically (RocksDB's DeleteRange): one write, whatever the number of
// keys. A nil end means "after every key", and a nil start "before every
// key", as for iterator bounds and Compact: DeleteRange(ctx, prefix, nil)
// deletes every key from prefix on, DeleteRange(ctx, nil, nil) every key. An
// empty or inverted range (start >= end in the driver's key order, end not
// nil) deletes nothing and returns nil. Mind that an empty end is not a nil one: []byte{} is the
// smallest key, so DeleteRange(ctx, start, []byte{}) deletes nothing (code
// computing the end of a prefix whose every byte is 0xff must pass nil). The slices are not retained. Write options as for Put. An
// error matching ErrNotSupported when the driver has no range deletions
// (see [RangeDeleter]).
func (db *DB) DeleteRange(ctx context.Context, start, end []byte) error {
	return db.deleteRange(ctx, nil, start, end)
}

// SyncWAL makes every write acknowledged before the call durable, as if it
// had been made with Sync (RocksDB's DB::SyncWAL): after it returns nil, a
// crash, even of the machine, loses none of them. Writes made with
// DisableWAL are not covered (only a flush makes them durable). An error
// matching ErrNotSupported when the driver cannot (see [WALSyncer]).
func (db *DB) SyncWAL(ctx context.Context) error {
	return db.syncWAL(ctx, nil)
}

// Checkpoint writes a consistent, openable copy of the database into dir
// (RocksDB's Checkpoint::CreateCheckpoint): it holds every write
// acknowledged before the call, DisableWAL writes included, and nothing
// written after Checkpoint returns; opening dir with the same driver gives
// that state. dir must not exist, or be an empty directory; an engine
// hard-links its immutable files where the filesystem allows, so a
// checkpoint on the same filesystem costs little space. On failure nothing
// is left at dir and the database is untouched. An empty dir is an error
// matching ErrInvalidArgument; a driver without checkpoints returns one
// matching ErrNotSupported (see [Checkpointer]).
func (db *DB) Checkpoint(ctx context.Context, dir string) error {
	return db.checkpoint(ctx, nil, dir)
}

// Flush writes the database's in-memory state to durable files (see
// [Flusher]); ErrNotSupported when the driver cannot.
func (db *DB) Flush(ctx context.Context) error {
	cs, err := db.start(ctx, nil)
	if err != nil {
		return err
	}
	defer db.exit()
	if cs.flusher == nil {
		return errNoFlush
	}
	return cs.flusher.Flush(ctx)
}

// Compact compacts the keys in [start, end]; a nil bound is open, so
// Compact(ctx, nil, nil) compacts everything (see [Compacter]);
// ErrNotSupported when the driver cannot. The slices are not retained.
func (db *DB) Compact(ctx context.Context, start, end []byte) error {
	cs, err := db.start(ctx, nil)
	if err != nil {
		return err
	}
	defer db.exit()
	if cs.compacter == nil {
		return errNoCompact
	}
	return cs.compacter.Compact(ctx, start, end)
}

// VerifyChecksum reads every live block and checks its checksum (RocksDB's
// DB::VerifyChecksum), with activity ActivityVerifyDBChecksum. A mismatch
// is an error matching ErrCorruption; ErrNotSupported when the driver
// cannot verify.
func (db *DB) VerifyChecksum(ctx context.Context) error {
	return db.verify(ctx, nil, false)
}

// VerifyFileChecksums checks every live file against its recorded
// whole-file checksum (RocksDB's DB::VerifyFileChecksums), with activity
// ActivityVerifyFileChecksums; errors as for VerifyChecksum.
func (db *DB) VerifyFileChecksums(ctx context.Context) error {
	return db.verify(ctx, nil, true)
}

// Check verifies the database's consistency as deeply as the driver can
// (see [Checker]): for shale's engine, the structure of its tables and
// levels as well as every block's checksum. A damaged database is an error
// matching ErrCorruption that names where; ErrNotSupported when the driver
// cannot check.
func (db *DB) Check(ctx context.Context) error {
	cs, err := db.start(ctx, nil)
	if err != nil {
		return err
	}
	defer db.exit()
	if cs.checker == nil {
		return errNoCheck
	}
	return cs.checker.Check(ctx)
}

// Resume retries now the background work whose failure stopped writes — a
// flush or WAL write that ran out of disk space, say — instead of waiting
// for the driver's next automatic retry (RocksDB's DB::Resume): nil once the
// database is writable again, else the error that keeps it from being so
// (free the space and call it again; an error a retry cannot cure means the
// database must be reopened). Nil at once when nothing is stopped;
// ErrNotSupported when the driver cannot (see [Resumer]).
func (db *DB) Resume(ctx context.Context) error {
	cs, err := db.start(ctx, nil)
	if err != nil {
		return err
	}
	defer db.exit()
	if cs.resumer == nil {
		return errNoResume
	}
	return cs.resumer.Resume(ctx)
}

// Conn returns a session on the database whose default ReadOptions are the
// ones ctx carries, if any (see [Conn]). It connects the database if
// needed.
func (db *DB) Conn(ctx context.Context) (*Conn, error) {
	if _, err := db.start(ctx, nil); err != nil {
		return nil, err
	}
	defer db.exit()
	c := &Conn{db: db}
	ro := ioctx.ReadOptionsFrom(ctx)
	c.defaults.Store(&ro)
	wo := ioctx.WriteOptionsFrom(ctx)
	c.writeDefaults.Store(&wo)
	return c, nil
}

// BeginTx starts a transaction (nil opts: read-write); ErrNotSupported when
// the driver has no transactions. ctx is for the begin only; each of the
// Tx's calls takes its own. Commit or roll back the Tx; DB.Close rolls back
// the ones left open.
func (db *DB) BeginTx(ctx context.Context, opts *TxOptions) (*Tx, error) {
	return db.beginTx(ctx, nil, opts)
}

// Close closes the database. It marks the DB closed, so every later call
// (on the DB, its Conns, Iterators and Txs) returns an error matching
// ErrClosed; waits for the calls in flight to return; waits for a connect in
// progress; closes the Iterators and rolls back the Txs still open
// (discarding their errors, which belong to them); then closes the driver's
// connection and, if it implements io.Closer, the Connector. It returns the
// errors of those two closes, joined. A second Close returns an error
// matching ErrClosed.
//
// Close may be called concurrently with any other call.
func (db *DB) Close() error {
	old := db.state.Or(closedBit)
	if old&closedBit != 0 {
		return errDBClosed
	}
	if old != 0 {
		<-db.drained
	}
	// No call is in flight and none can start, so nothing below races
	// with a user of the iterators or transactions.
	db.mu.Lock()
	connecting := db.mu.connecting
	iters, txs, snaps := db.mu.iters, db.mu.txs, db.mu.snaps
	db.mu.iters, db.mu.txs, db.mu.snaps = nil, nil, nil
	db.mu.Unlock()
	if connecting != nil {
		// A connect started by a call that has given up waiting for it;
		// no call is left to start another.
		<-connecting.done
	}
	for it := range iters {
		// A move holds guard, not a DB call: wait for the one in
		// flight, if any, and make the next ones fail.
		it.guard.Lock()
		it.dbClosed = true
		_ = it.iter.Close()
		it.guard.Unlock()
	}
	for tx := range txs {
		_ = tx.tx.Rollback()
	}
	for s := range snaps {
		// The snapshot's iterators were closed above, before it, as
		// DriverSnapshot's contract asks.
		s.closed.Store(true)
		s.mu.Lock()
		release := !s.mu.released
		s.mu.released = true
		s.mu.Unlock()
		if release {
			_ = s.snap.Close()
		}
	}
	var errs []error
	if cs := db.cs.Load(); cs != nil && cs.conn != nil {
		if err := cs.conn.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if c, ok := db.connector.(io.Closer); ok {
		if err := c.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// The methods below are shared by DB and Conn: sess is the session, nil for
// the DB itself.

func (db *DB) get(ctx context.Context, sess *Conn, key []byte) ([]byte, error) {
	cs, req, err := db.startRead(ctx, sess, "Get", ioctx.ActivityGet)
	if err != nil {
		return nil, err
	}
	defer db.exit()
	return cs.conn.Get(ctx, req, key)
}

func (db *DB) multiGet(ctx context.Context, sess *Conn, keys [][]byte) ([][]byte, error) {
	cs, req, err := db.startRead(ctx, sess, "MultiGet", ioctx.ActivityMultiGet)
	if err != nil {
		return nil, err
	}
	defer db.exit()
	return multiGet(ctx, cs.multiGetter, cs.conn, req, keys)
}

// writeOptions resolves a write's options once: the context's, merged over
// the session's defaults (sess nil: none). It does not allocate.
func writeOptions(ctx context.Context, sess *Conn) ioctx.WriteOptions {
	wo := ioctx.WriteOptionsFrom(ctx)
	if sess != nil {
		if d := sess.writeDefaults.Load(); d != nil {
			wo = ioctx.MergeWrite(*d, wo)
		}
	}
	return wo
}

func (db *DB) put(ctx context.Context, sess *Conn, key, value []byte) error {
	cs, err := db.start(ctx, sess)
	if err != nil {
		return err
	}
	defer db.exit()
	return cs.conn.Put(ctx, writeOptions(ctx, sess), key, value)
}

func (db *DB) delete(ctx context.Context, sess *Conn, key []byte) error {
	cs, err := db.start(ctx, sess)
	if err != nil {
		return err
	}
	defer db.exit()
	return cs.conn.Delete(ctx, writeOptions(ctx, sess), key)
}

func (db *DB) write(ctx context.Context, sess *Conn, b *Batch) error {
	if b == nil {
		return errNilBatch
	}
	cs, err := db.start(ctx, sess)
	if err != nil {
		return err
	}
	defer db.exit()
	if b.Len() == 0 {
		return nil
	}
	if b.hasRangeDeletes() && cs.rangeDeleter == nil {
		return errNoRangeDelBatch
	}
	if b.merges > 0 && cs.merger == nil {
		return errNoMergeBatch
	}
	return cs.conn.Write(ctx, writeOptions(ctx, sess), b)
}

func (db *DB) deleteRange(ctx context.Context, sess *Conn, start, end []byte) error {
	cs, err := db.start(ctx, sess)
	if err != nil {
		return err
	}
	defer db.exit()
	if cs.rangeDeleter == nil {
		return errNoRangeDel
	}
	start, ok := rangeEnds(start, end)
	if !ok {
		return nil
	}
	return cs.rangeDeleter.DeleteRange(ctx, writeOptions(ctx, sess), start, end)
}

// rangeEnds checks the ends of a range deletion as the façade promises
// drivers (see [RangeDeleter]): it returns start, made non-nil, and whether
// the range may hold a key. A nil end is unbounded. Only an empty range
// is answered here (see emptyRange): whether start is below end is the
// driver's order to say.
func rangeEnds(start, end []byte) ([]byte, bool) {
	if emptyRange(start, end) {
		return nil, false
	}
	if start == nil {
		start = []byte{}
	}
	return start, true
}

// emptyRange reports whether [start, end) is empty in every key order:
// start equals end, or end is the empty key, which every driver's order
// sorts first. A nil end is unbounded.
func emptyRange(start, end []byte) bool {
	return end != nil && (len(end) == 0 || bytes.Equal(start, end))
}

func (db *DB) syncWAL(ctx context.Context, sess *Conn) error {
	cs, err := db.start(ctx, sess)
	if err != nil {
		return err
	}
	defer db.exit()
	if cs.walSyncer == nil {
		return errNoSyncWAL
	}
	return cs.walSyncer.SyncWAL(ctx)
}

func (db *DB) checkpoint(ctx context.Context, sess *Conn, dir string) error {
	if dir == "" {
		return errEmptyCheckpointDir
	}
	cs, err := db.start(ctx, sess)
	if err != nil {
		return err
	}
	defer db.exit()
	if cs.checkpointer == nil {
		return errNoCheckpoint
	}
	return cs.checkpointer.Checkpoint(ctx, dir)
}

// multiGet is the MultiGet of a session or a transaction: mg's when the
// driver has one (nil when not) and it does not answer ErrSkip, else a loop
// of g's Get.
func multiGet(ctx context.Context, mg MultiGetter, g getter, req ioctx.ReadRequest, keys [][]byte) ([][]byte, error) {
	if mg != nil {
		vals, err := mg.MultiGet(ctx, req, keys)
		if !errors.Is(err, ErrSkip) {
			return checkMultiGet(vals, err, len(keys))
		}
	}
	return multiGetLoop(ctx, g, req, keys)
}

// getter is the Get of a DriverConn or a DriverTx.
type getter interface {
	Get(ctx context.Context, req ioctx.ReadRequest, key []byte) ([]byte, error)
}

// multiGetLoop is MultiGet's fallback: g.Get for each key with the same
// MultiGet-tagged request, so the reads keep their activity.
func multiGetLoop(ctx context.Context, g getter, req ioctx.ReadRequest, keys [][]byte) ([][]byte, error) {
	vals := make([][]byte, len(keys))
	for i, k := range keys {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		v, err := g.Get(ctx, req, k)
		switch {
		case err == nil:
			if v == nil {
				// Found: MultiGet's nil means "not found", so a
				// found value must not be nil even if Get said so.
				v = []byte{}
			}
			vals[i] = v
		case errors.Is(err, ErrNotFound):
		default:
			return nil, err
		}
	}
	return vals, nil
}

// checkMultiGet guards users against a driver's MultiGet returning the
// wrong number of values: they index the result by key.
func checkMultiGet(vals [][]byte, err error, n int) ([][]byte, error) {
	if err != nil {
		return nil, err
	}
	if len(vals) != n {
		return nil, errors.New("driver: the driver's MultiGet returned " + strconv.Itoa(len(vals)) + " values for " + strconv.Itoa(n) + " keys")
	}
	return vals, nil
}

func (db *DB) newIterator(ctx context.Context, sess *Conn, opts *IterOptions) (*Iterator, error) {
	cs, req, err := db.startRead(ctx, sess, "NewIterator", ioctx.ActivityDBIterator)
	if err != nil {
		return nil, err
	}
	defer db.exit()
	iter, err := cs.conn.NewIterator(ctx, req, copyIterOptions(opts))
	if err != nil {
		return nil, err
	}
	return db.trackIter(ctx, req, iter, nil), nil
}

// trackIter wraps iter and records it for Close. The caller has entered,
// so Close has not swept the registry yet and will see it.
func (db *DB) trackIter(ctx context.Context, req ioctx.ReadRequest, iter Iter, tx *Tx) *Iterator {
	it := &Iterator{db: db, tx: tx, iter: iter, ctx: ctx, done: ctx.Done(), deadline: req.Deadline}
	db.mu.Lock()
	if db.mu.iters == nil {
		db.mu.iters = make(map[*Iterator]struct{})
	}
	db.mu.iters[it] = struct{}{}
	db.mu.Unlock()
	return it
}

func (db *DB) untrackIter(it *Iterator) {
	db.mu.Lock()
	delete(db.mu.iters, it)
	db.mu.Unlock()
}

func (db *DB) verify(ctx context.Context, sess *Conn, files bool) error {
	api, activity, unsupported := "VerifyChecksum", ioctx.ActivityVerifyDBChecksum, errNoVerify
	if files {
		api, activity, unsupported = "VerifyFileChecksums", ioctx.ActivityVerifyFileChecksums, errNoVerifyFiles
	}
	cs, req, err := db.startRead(ctx, sess, api, activity)
	if err != nil {
		return err
	}
	defer db.exit()
	switch {
	case cs.verifier == nil:
		return unsupported
	case files:
		return cs.verifier.VerifyFileChecksums(ctx, req)
	default:
		return cs.verifier.VerifyChecksum(ctx, req)
	}
}

func (db *DB) beginTx(ctx context.Context, sess *Conn, opts *TxOptions) (*Tx, error) {
	cs, err := db.start(ctx, sess)
	if err != nil {
		return nil, err
	}
	defer db.exit()
	if cs.txBeginner == nil {
		return nil, errNoTx
	}
	var o TxOptions
	if opts != nil {
		o = *opts
	}
	o.WriteOptions = ioctx.MergeWrite(o.WriteOptions, writeOptions(ctx, sess))
	dtx, err := cs.txBeginner.BeginTx(ctx, o)
	if err != nil {
		return nil, err
	}
	tx := &Tx{db: db, tx: dtx, opts: o}
	if sess != nil {
		tx.defaults = sess.defaults.Load()
	}
	tx.multiGetter, _ = dtx.(TxMultiGetter)
	tx.haser, _ = dtx.(Haser)
	tx.valueSizer, _ = dtx.(ValueSizer)
	tx.pinnedGetter, _ = dtx.(PinnedGetter)
	tx.rangeDeleter, _ = dtx.(TxRangeDeleter)
	db.mu.Lock()
	if db.mu.txs == nil {
		db.mu.txs = make(map[*Tx]struct{})
	}
	db.mu.txs[tx] = struct{}{}
	db.mu.Unlock()
	return tx, nil
}

func (db *DB) untrackTx(tx *Tx) {
	db.mu.Lock()
	delete(db.mu.txs, tx)
	db.mu.Unlock()
}
