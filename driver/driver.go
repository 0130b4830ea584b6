package driver

import (
	"context"
	"errors"
	"io"

	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
)

// This file holds the interfaces a driver implements. Users never call them:
// they hold the concrete types of this package (DB, Conn, Tx, Iterator), which
// check, tag and count every call before it reaches a driver.
//
// The user-facing session type is named Conn (DESIGN.md's public surface), so
// the driver's connection and transaction interfaces are DriverConn and
// DriverTx; database/sql can call both Conn because it has two packages.

// Driver is the interface a storage engine registers with [Register].
//
// A Driver must be safe for concurrent use. Drivers should also implement
// [DriverContext], which parses the data source name once.
type Driver interface {
	// Open opens the database named by dsn, a driver-specific data source
	// name (see [ParseDSN] for the generic form). The returned DriverConn
	// is shared by every goroutine of the DB that owns it.
	Open(dsn string) (DriverConn, error)
}

// DriverContext is an optional interface of a [Driver]. If a Driver
// implements it, [Open] calls OpenConnector once and returns its error, so a
// malformed data source name fails Open rather than the first call.
type DriverContext interface {
	// OpenConnector parses dsn and returns a Connector that opens the
	// database it names.
	OpenConnector(dsn string) (Connector, error)
}

// Connector opens a database with fixed, already-parsed settings. Engines
// offer one for typed configuration (engine.NewConnector) and users pass it
// to [OpenDB].
//
// If a Connector implements io.Closer, [DB.Close] calls Close after closing
// the DriverConn: an embedded engine that owns the database files (a lock,
// a cache shared by connections) releases them there.
//
// A Connector must be safe for concurrent use.
type Connector interface {
	// Connect opens the database. A DB calls it at most once, on first
	// use. ctx carries the values of the call that triggered the connect
	// but never its cancellation: a caller that gives up waiting must not
	// leave the DB permanently failed (see [OpenDB]). Connect must not keep
	// ctx.
	Connect(ctx context.Context) (DriverConn, error)

	// Driver returns the Connector's Driver.
	Driver() Driver
}

// DriverConn is an open database as the driver sees it. Unlike
// database/sql/driver's Conn it is shared by every goroutine of a DB and
// must be safe for concurrent use: an embedded engine has no connection
// pool.
//
// The façade calls DriverConn only between a successful connect and
// DB.Close, and never after Close; Close is called once, after every other
// call has returned, every Iter and DriverSnapshot of the connection has been
// closed and every DriverTx committed or rolled back.
//
// Read methods receive an [ioctx.ReadRequest], the call's read options
// resolved once by the façade with [ioctx.ResolveRead]: merged over the
// session's defaults, checked and tagged with the API's activity, the
// context's deadline folded into the IO timeout. They are "impl" entry points
// (RocksDB's GetImpl) and must not re-check the activity nor look in ctx for
// read options. ctx is for cancellation: when it is done, a method returns an
// error for which errors.Is(err, ctx.Err()) holds. A request whose Deadline
// is set must also stop at it (the context does not carry it).
//
// Slices passed in (keys, values, Op contents) belong to the caller and are
// valid only until the method returns: a driver copies what it keeps.
type DriverConn interface {
	// Get returns the value of key, or an error matching ErrNotFound when
	// key has none. The returned slice is the caller's (the driver must not
	// modify or reuse it); a found empty value is a non-nil empty slice.
	Get(ctx context.Context, req ioctx.ReadRequest, key []byte) ([]byte, error)

	// Put sets key to value. wo are the call's write options, resolved
	// once by the façade (the session's defaults merged with the
	// context's, see [ioctx.MergeWrite]); a driver honours what it can and
	// must not look in ctx for write options.
	Put(ctx context.Context, wo ioctx.WriteOptions, key, value []byte) error

	// Delete removes key; deleting an absent key is not an error. wo as
	// for Put.
	Delete(ctx context.Context, wo ioctx.WriteOptions, key []byte) error

	// Write applies the batch's writes atomically, in order: after it
	// returns nil every write is visible, and after it returns an error
	// none is. b is the caller's batch, read-only and valid only until
	// Write returns: the driver reads it with b.Len and b.Reader (which do
	// not allocate) and copies what it keeps. b is never empty. It holds
	// OpDeleteRange writes only when the driver implements [RangeDeleter].
	// wo as for Put.
	Write(ctx context.Context, wo ioctx.WriteOptions, b *Batch) error

	// NewIterator returns an iterator over the database at a consistent
	// point in time, limited to opts' bounds. opts' slices stay valid and
	// unchanged until the Iter is closed, so the driver may keep them. ctx
	// bounds the iterator's whole life, not only this call. When
	// opts.Prefix is set the façade has already narrowed the bounds to it
	// (see [IterOptions.Prefix]): a driver honours it by honouring the
	// bounds, and may use it further (prefix filters).
	NewIterator(ctx context.Context, req ioctx.ReadRequest, opts IterOptions) (Iter, error)

	// Close closes the database. It is called exactly once.
	Close() error
}

// Iter is a driver's iterator. It is [Iterator] minus Valid, which the
// façade tracks from the results of the moves.
//
// The façade calls an Iter from one goroutine at a time, and calls Next and
// Prev only when the previous move returned true (it answers them itself on
// an unpositioned or exhausted iterator), so a driver need not define them
// there.
type Iter interface {
	// First moves to the first key within the bounds and reports whether
	// there is one.
	First() bool
	// Last moves to the last key within the bounds.
	Last() bool
	// SeekGE moves to the first key >= key. key is valid only during the
	// call.
	SeekGE(key []byte) bool
	// SeekLT moves to the last key < key. key is valid only during the
	// call.
	SeekLT(key []byte) bool
	// Next moves to the next key.
	Next() bool
	// Prev moves to the previous key.
	Prev() bool
	// Key returns the current key. The slice belongs to the Iter and is
	// valid until the next move or Close; the façade never modifies it.
	Key() []byte
	// Value returns the current value, with the same lifetime as Key.
	Value() []byte
	// Error returns the error that made the last move return false, or
	// nil when the iterator simply ran out of keys. A move of the absolute
	// kind (First, Last, SeekGE, SeekLT) clears it. If the iterator's
	// context is done, moves return false and Error returns an error
	// matching ctx.Err().
	Error() error
	// Close releases the iterator and returns the driver's close error.
	// It is called exactly once.
	Close() error
}

// MultiGetter is an optional interface of a [DriverConn]: a batched point
// lookup (RocksDB's MultiGet). The returned slice has one entry per key, nil
// for a key that is not found and a non-nil (possibly empty) slice for a
// found one; the slices are the caller's.
//
// Without it, or when it returns [ErrSkip], the façade loops
// DriverConn.Get with the same MultiGet-tagged request, so reads keep
// their MultiGet activity (RocksDB #11444). Each of those Gets reads the
// latest state, so the fallback's results are not one consistent snapshot: a
// driver whose MultiGet must see a batch whole (the conformance suite's
// BatchAtomicity case) implements MultiGetter.
type MultiGetter interface {
	MultiGet(ctx context.Context, req ioctx.ReadRequest, keys [][]byte) ([][]byte, error)
}

// Flusher is an optional interface of a [DriverConn]: Flush writes the
// in-memory state to durable table files. Without it, DB.Flush returns an
// error matching ErrNotSupported.
type Flusher interface {
	Flush(ctx context.Context) error
}

// Compacter is an optional interface of a [DriverConn]: Compact compacts
// the key range [start, end], nil meaning unbounded on that side. The slices
// are valid only during the call. Without it, DB.Compact returns an error
// matching ErrNotSupported.
type Compacter interface {
	Compact(ctx context.Context, start, end []byte) error
}

// Verifier is an optional interface of a [DriverConn]: VerifyChecksum reads
// every live block and checks its checksum; VerifyFileChecksums checks each
// live file's whole-file checksum. req is tagged ActivityVerifyDBChecksum or
// ActivityVerifyFileChecksums. A mismatch is an error matching
// ErrCorruption. Without it, both DB methods return an error matching
// ErrNotSupported.
type Verifier interface {
	VerifyChecksum(ctx context.Context, req ioctx.ReadRequest) error
	VerifyFileChecksums(ctx context.Context, req ioctx.ReadRequest) error
}

// TxBeginner is an optional interface of a [DriverConn]: BeginTx starts a
// transaction. A driver that cannot honour opts (for example ReadOnly) must
// return an error rather than ignore it. Without it, DB.BeginTx returns an
// error matching ErrNotSupported. ctx is for the begin only.
type TxBeginner interface {
	BeginTx(ctx context.Context, opts TxOptions) (DriverTx, error)
}

// DriverTx is a driver's transaction: reads see a snapshot taken at begin
// plus the transaction's own writes; Commit fails with an error matching
// ErrConflict when another transaction committed a write to a key this one
// wrote after this one began.
//
// The façade calls a DriverTx from one goroutine at a time, never after
// Commit or Rollback, and closes the transaction's iterators before either.
// Read methods follow DriverConn's rules: req arrives resolved.
//
// Put and Delete buffer writes in the transaction; Commit writes them with
// the WriteOptions of opts.WriteOptions given to BeginTx (the façade
// resolves them at begin).
type DriverTx interface {
	Get(ctx context.Context, req ioctx.ReadRequest, key []byte) ([]byte, error)
	NewIterator(ctx context.Context, req ioctx.ReadRequest, opts IterOptions) (Iter, error)
	Put(ctx context.Context, key, value []byte) error
	Delete(ctx context.Context, key []byte) error
	Commit() error
	Rollback() error
}

// TxMultiGetter is an optional interface of a [DriverTx], with
// [MultiGetter]'s contract. Without it, or when it returns [ErrSkip], the
// façade loops DriverTx.Get with the MultiGet-tagged request.
type TxMultiGetter interface {
	MultiGet(ctx context.Context, req ioctx.ReadRequest, keys [][]byte) ([][]byte, error)
}

// StatsReporter is an optional interface of a [DriverConn]: Statistics
// returns the database's statistics, or nil when they are disabled. The
// façade asks once, at connect, and DB.Statistics returns the same pointer
// for the DB's life. Without it, DB.Statistics returns nil.
type StatsReporter interface {
	Statistics() *statistics.Statistics
}

// RangeDeleter is an optional interface of a [DriverConn]: DeleteRange
// removes every key k with start <= k < end (in the driver's key order,
// bytewise unless its database has another comparer), atomically, with the
// resolved write options wo. A nil end means "after every key": the
// deletion removes every key >= start. start is never nil (the façade passes
// an empty slice, the smallest key, for a caller's nil), and when end is
// not nil, start differs from end and end is not empty (an empty range is
// a no-op the façade answers itself); a range inverted in the driver's
// order (start > end) is
// the driver's to treat as a no-op, in DeleteRange and in a batch's
// OpDeleteRange writes alike. Implementing it also promises that DriverConn.Write accepts
// OpDeleteRange writes, whose Value may be nil in the same sense.
// Without it, DB.DeleteRange, and DB.Write of a batch holding a range
// deletion, return an error matching ErrNotSupported and write nothing.
type RangeDeleter interface {
	DeleteRange(ctx context.Context, wo ioctx.WriteOptions, start, end []byte) error
}

// TxRangeDeleter is an optional interface of a [DriverTx]: DeleteRange
// removes the keys in [start, end) within the transaction, with
// [RangeDeleter]'s rules for start and end (a nil end is unbounded).
// Without it, Tx.DeleteRange returns an error matching ErrNotSupported.
type TxRangeDeleter interface {
	DeleteRange(ctx context.Context, start, end []byte) error
}

// WALSyncer is an optional interface of a [DriverConn]: SyncWAL makes every
// write acknowledged before the call durable (RocksDB's DB::SyncWAL),
// whether or not it asked for Sync. Writes made with DisableWAL are not
// covered. Without it, DB.SyncWAL returns an error matching
// ErrNotSupported.
type WALSyncer interface {
	SyncWAL(ctx context.Context) error
}

// Snapshotter is an optional interface of a [DriverConn]: NewSnapshot
// returns a consistent point-in-time view, which sees exactly the writes
// acknowledged before the call. ctx is for this call only. Without it,
// DB.NewSnapshot returns an error matching ErrNotSupported.
type Snapshotter interface {
	NewSnapshot(ctx context.Context) (DriverSnapshot, error)
}

// DriverSnapshot is a driver's snapshot. Its reads follow DriverConn's
// rules (req arrives resolved and tagged) and must be safe for concurrent
// use. The façade closes a snapshot's iterators before its Close, which it
// calls exactly once, and calls nothing on it after Close.
type DriverSnapshot interface {
	Get(ctx context.Context, req ioctx.ReadRequest, key []byte) ([]byte, error)
	NewIterator(ctx context.Context, req ioctx.ReadRequest, opts IterOptions) (Iter, error)
	Close() error
}

// SnapshotMultiGetter is an optional interface of a [DriverSnapshot], with
// [MultiGetter]'s contract. Without it, or when it returns [ErrSkip], the
// façade loops DriverSnapshot.Get with the MultiGet-tagged request (all
// reads see the snapshot, so the result is consistent either way).
type SnapshotMultiGetter interface {
	MultiGet(ctx context.Context, req ioctx.ReadRequest, keys [][]byte) ([][]byte, error)
}

// Checkpointer is an optional interface of a [DriverConn]: Checkpoint
// writes a consistent, openable copy of the database into dir, which does
// not exist or is an empty directory. The copy holds every write
// acknowledged before the call (DisableWAL writes included) and none made
// after it returns. On failure the driver removes what it created. Without
// it, DB.Checkpoint returns an error matching ErrNotSupported.
type Checkpointer interface {
	Checkpoint(ctx context.Context, dir string) error
}

// ErrSkip may be returned by an optional fast path (MultiGetter.MultiGet,
// TxMultiGetter.MultiGet, SnapshotMultiGetter.MultiGet, Haser.Has,
// ValueSizer.ValueSize, PinnedGetter.GetPinned) to ask the façade to continue as if the interface
// were not implemented. It is never returned to users.
var ErrSkip = errors.New("driver: skip fast-path; continue as if unimplemented")

// Haser is an optional interface of a [DriverConn], a [DriverTx] or a
// [DriverSnapshot]: Has reports whether key has a value, for a driver that
// can tell without reading the value or its size (a count-only query). req
// is tagged ActivityGet. [DB.Has] uses it first, then [ValueSizer], then
// Get; ErrSkip falls through to the next.
type Haser interface {
	Has(ctx context.Context, req ioctx.ReadRequest, key []byte) (bool, error)
}

// ValueSizer is an optional interface of a [DriverConn], a [DriverTx] or a
// [DriverSnapshot]: ValueSize returns the size in bytes of key's value
// without copying it, or an error matching ErrNotFound when key has none.
// req is tagged ActivityGet: the read is a Get that does not hand the value
// out. [DB.Has] and [DB.ValueSize] use it; without it, or when it returns
// [ErrSkip], the façade calls Get and measures the copy.
type ValueSizer interface {
	ValueSize(ctx context.Context, req ioctx.ReadRequest, key []byte) (int, error)
}

// PinnedGetter is an optional interface of a [DriverConn], a [DriverTx] or
// a [DriverSnapshot]: GetPinned returns key's value without copying it, and
// a Closer that releases it (Pebble's Get). req is tagged ActivityGet.
//
// The value must stay valid and unchanged until the Closer's Close, also
// after the DriverConn is closed: a driver that keeps values in memory it
// unmaps (a memory-mapped file, memory outside the Go heap) copies them, or
// delays the unmapping until every value is released. Close must be safe to
// call more than once: the calls after the first return an error matching
// ErrClosed and release nothing (so a driver must not recycle a Closer that
// a caller may still hold). A nil Closer with a nil error means there is
// nothing to release; the façade then hands the caller a Closer that does
// nothing, whose every Close returns nil. Without the interface, or when it returns [ErrSkip],
// the façade calls Get and returns the copy with a Closer that does nothing.
type PinnedGetter interface {
	GetPinned(ctx context.Context, req ioctx.ReadRequest, key []byte) ([]byte, io.Closer, error)
}

// Checker is an optional interface of a [DriverConn]: Check verifies the
// database's consistency as deeply as the engine can — for shale's engine,
// the structure of the tree of tables (levels, key order within and across
// tables, metadata that agrees with the files) as well as every block's
// checksum, more than VerifyChecksum's checksums alone. It returns the
// first problem found, naming where it is; a damaged database is an error
// matching ErrCorruption. Without it, DB.Check returns an error matching
// ErrNotSupported.
type Checker interface {
	Check(ctx context.Context) error
}

// Resumer is an optional interface of a [DriverConn]: Resume retries now the
// background work whose failure stopped writes (RocksDB's DB::Resume), and
// returns nil once the database is writable again, or the error that keeps
// it from being so. It returns nil at once when nothing is stopped. Without
// it, DB.Resume returns an error matching ErrNotSupported.
type Resumer interface {
	Resume(ctx context.Context) error
}
