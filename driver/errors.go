package driver

import (
	"errors"

	"github.com/shaledb/shale/internal/errclass"
)

// Error classes. Test them with errors.Is: the façade and drivers return
// errors that carry their own messages and match one of these. The first
// five are ioctx's values, which shale's engine and its internal packages
// use too, so one errors.Is check works at every layer; another driver
// translates its engine's classes into them.
var (
	// ErrNotFound is returned by Get (of DB, Conn and Tx) when the key has
	// no value. MultiGet reports a missing key as a nil entry instead.
	ErrNotFound = errclass.ErrNotFound

	// ErrInvalidArgument matches errors caused by a misused API: a read
	// whose ReadOptions carry another API's activity (the message is
	// RocksDB's "Can only call Get with `ReadOptions::io_activity` is …"),
	// a write in a read-only transaction, a nil *Batch, an unknown driver
	// name, a malformed DSN, size or boolean. It is errclass.ErrInvalidArgument,
	// the same value, so one errors.Is check works at every layer.
	ErrInvalidArgument = errclass.ErrInvalidArgument

	// ErrCorruption matches errors caused by data that fails a checksum or
	// cannot be decoded. Drivers return it; the façade never does.
	ErrCorruption = errclass.ErrCorruption

	// ErrClosed matches errors from calls on a closed DB (every call after
	// DB.Close, and a second Close), a closed Conn or Snapshot, and an
	// Iterator closed by the user or by DB.Close. A Tx rolled back by
	// DB.Close reports it too; a Tx the user ended reports ErrTxDone
	// instead.
	ErrClosed = errclass.ErrClosed

	// ErrConflict is returned by Tx.Commit when another transaction
	// committed a write to a key this one wrote after this one began. The
	// transaction is over (rolled back) either way.
	ErrConflict = errclass.ErrConflict

	// ErrNotSupported matches errors from a call that needs an optional
	// capability the driver lacks (Flush, Compact, VerifyChecksum,
	// VerifyFileChecksums, BeginTx, DeleteRange and a Write of a batch
	// holding a range deletion, Tx.DeleteRange, SyncWAL, NewSnapshot,
	// Checkpoint, Metrics, Check, Resume, ApproximateSize, DiskUsage,
	// Property). The message names the capability.
	ErrNotSupported = errors.New("driver: not supported")

	// ErrTimedOut matches errors caused by a deadline — the context's, or
	// ReadOptions.Deadline or IOTimeout — that expired while the call ran
	// (RocksDB's IOStatus::TimedOut). Such errors also match
	// context.DeadlineExceeded, so errors.Is(err, ctx.Err()) holds for a
	// caller whose context expired. A driver builds one with [TimeoutError].
	ErrTimedOut = errclass.ErrTimedOut

	// ErrTxDone is returned by every call on a Tx after its Commit or
	// Rollback. It does not match ErrClosed: the database is still open,
	// and code that reopens a database on ErrClosed must not do so because
	// of a transaction-handling bug.
	ErrTxDone = errors.New("driver: transaction has already been committed or rolled back")
)

// The façade's fixed errors are built once (errclass.New, shale's one
// marker), so returning one does not allocate.
var (
	errDBClosed   error = errclass.New("driver: database is closed", ErrClosed, nil)
	errConnClosed error = errclass.New("driver: connection is closed", ErrClosed, nil)
	errIterClosed error = errclass.New("driver: iterator is closed", ErrClosed, nil)

	errNilBatch    error = errclass.New("driver: Write of a nil *Batch", ErrInvalidArgument, nil)
	errReadOnlyPut error = errclass.New("driver: Put in a read-only transaction", ErrInvalidArgument, nil)
	errReadOnlyDel error = errclass.New("driver: Delete in a read-only transaction", ErrInvalidArgument, nil)

	errReadOnlyDelRange   error = errclass.New("driver: DeleteRange in a read-only transaction", ErrInvalidArgument, nil)
	errEmptyCheckpointDir error = errclass.New("driver: Checkpoint into an empty directory name", ErrInvalidArgument, nil)
	errSnapshotClosed     error = errclass.New("driver: snapshot is closed", ErrClosed, nil)

	errNoFlush       error = notSupported("Flush", "Flusher")
	errNoCompact     error = notSupported("Compact", "Compacter")
	errNoVerify      error = notSupported("VerifyChecksum", "Verifier")
	errNoVerifyFiles error = notSupported("VerifyFileChecksums", "Verifier")
	errNoTx          error = notSupported("BeginTx", "TxBeginner")
	errNoRangeDel    error = notSupported("DeleteRange", "RangeDeleter")
	errNoSyncWAL     error = notSupported("SyncWAL", "WALSyncer")
	errNoSnapshot    error = notSupported("NewSnapshot", "Snapshotter")
	errNoCheckpoint  error = notSupported("Checkpoint", "Checkpointer")
	errNoCheck       error = notSupported("Check", "Checker")
	errNoResume      error = notSupported("Resume", "Resumer")
	errNoTxRangeDel  error = errclass.New("driver: Tx.DeleteRange is not supported by this driver "+
		"(its transaction does not implement driver.TxRangeDeleter)", ErrNotSupported, nil)

	errNoRangeDelBatch error = errclass.New("driver: Write of a batch holding a range deletion is not supported by this driver "+
		"(its connection does not implement driver.RangeDeleter); nothing was written", ErrNotSupported, nil)
)

func notSupported(method, iface string) error {
	return errclass.New("driver: "+method+" is not supported by this driver (its connection does not implement driver."+iface+")",
		ErrNotSupported, nil)
}

// TimeoutError returns an error matching ErrTimedOut and
// context.DeadlineExceeded, with RocksDB's "Operation timed out: " prefix
// before detail. It is for drivers, whose deadlines expire inside their own
// calls; the façade and the engine build theirs the same way.
func TimeoutError(detail string) error { return errclass.Timeout(detail) }

// invalidArgument returns an error with message msg matching
// ErrInvalidArgument.
func invalidArgument(msg string) error {
	return errclass.New(msg, ErrInvalidArgument, nil)
}

// openError is the remembered failure of a DB's connect. Every call returns
// the same value, so it is built once; errors.Is sees the cause.
type openError struct {
	cause error
}

func (e *openError) Error() string { return "driver: open failed: " + e.cause.Error() }
func (e *openError) Unwrap() error { return e.cause }
