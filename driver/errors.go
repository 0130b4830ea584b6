package driver

import (
	"errors"

	"github.com/shaledb/shale/ioctx"
)

// Error classes. Test them with errors.Is: the façade and drivers return
// errors that carry their own messages and match one of these. The first
// five are ioctx's values, which shale's engine and its internal packages
// use too, so one errors.Is check works at every layer; another driver
// translates its engine's classes into them.
var (
	// ErrNotFound is returned by Get (of DB, Conn and Tx) when the key has
	// no value. MultiGet reports a missing key as a nil entry instead.
	ErrNotFound = ioctx.ErrNotFound

	// ErrInvalidArgument matches errors caused by a misused API: a read
	// whose ReadOptions carry another API's activity (the message is
	// RocksDB's "Can only call Get with `ReadOptions::io_activity` is …"),
	// a write in a read-only transaction, a nil *Batch, an unknown driver
	// name, a malformed DSN, size or boolean. It is ioctx.ErrInvalidArgument,
	// the same value, so one errors.Is check works at every layer.
	ErrInvalidArgument = ioctx.ErrInvalidArgument

	// ErrCorruption matches errors caused by data that fails a checksum or
	// cannot be decoded. Drivers return it; the façade never does.
	ErrCorruption = ioctx.ErrCorruption

	// ErrClosed matches errors from calls on a closed DB (every call after
	// DB.Close, and a second Close), a closed Conn or Snapshot, and an
	// Iterator closed by the user or by DB.Close. A Tx rolled back by
	// DB.Close reports it too; a Tx the user ended reports ErrTxDone
	// instead.
	ErrClosed = ioctx.ErrClosed

	// ErrConflict is returned by Tx.Commit when another transaction
	// committed a write to a key this one wrote after this one began. The
	// transaction is over (rolled back) either way.
	ErrConflict = ioctx.ErrConflict

	// ErrNotSupported matches errors from a call that needs an optional
	// capability the driver lacks (Flush, Compact, VerifyChecksum,
	// VerifyFileChecksums, BeginTx, DeleteRange and a Write of a batch
	// holding a range deletion, Tx.DeleteRange, SyncWAL, NewSnapshot,
	// Checkpoint). The message names the capability.
	ErrNotSupported = errors.New("driver: not supported")

	// ErrTxDone is returned by every call on a Tx after its Commit or
	// Rollback. It does not match ErrClosed: the database is still open,
	// and code that reopens a database on ErrClosed must not do so because
	// of a transaction-handling bug.
	ErrTxDone = errors.New("driver: transaction has already been committed or rolled back")
)

// The façade's fixed errors are built once (ioctx.ClassError, shale's one
// marker), so returning one does not allocate.
var (
	errDBClosed   error = ioctx.ClassError("driver: database is closed", ErrClosed, nil)
	errConnClosed error = ioctx.ClassError("driver: connection is closed", ErrClosed, nil)
	errIterClosed error = ioctx.ClassError("driver: iterator is closed", ErrClosed, nil)

	errNilBatch    error = ioctx.ClassError("driver: Write of a nil *Batch", ErrInvalidArgument, nil)
	errReadOnlyPut error = ioctx.ClassError("driver: Put in a read-only transaction", ErrInvalidArgument, nil)
	errReadOnlyDel error = ioctx.ClassError("driver: Delete in a read-only transaction", ErrInvalidArgument, nil)

	errReadOnlyDelRange   error = ioctx.ClassError("driver: DeleteRange in a read-only transaction", ErrInvalidArgument, nil)
	errEmptyCheckpointDir error = ioctx.ClassError("driver: Checkpoint into an empty directory name", ErrInvalidArgument, nil)
	errSnapshotClosed     error = ioctx.ClassError("driver: snapshot is closed", ErrClosed, nil)

	errNoFlush       error = notSupported("Flush", "Flusher")
	errNoCompact     error = notSupported("Compact", "Compacter")
	errNoVerify      error = notSupported("VerifyChecksum", "Verifier")
	errNoVerifyFiles error = notSupported("VerifyFileChecksums", "Verifier")
	errNoTx          error = notSupported("BeginTx", "TxBeginner")
	errNoRangeDel    error = notSupported("DeleteRange", "RangeDeleter")
	errNoSyncWAL     error = notSupported("SyncWAL", "WALSyncer")
	errNoSnapshot    error = notSupported("NewSnapshot", "Snapshotter")
	errNoCheckpoint  error = notSupported("Checkpoint", "Checkpointer")
	errNoTxRangeDel  error = ioctx.ClassError("driver: Tx.DeleteRange is not supported by this driver "+
		"(its transaction does not implement driver.TxRangeDeleter)", ErrNotSupported, nil)

	errNoRangeDelBatch error = ioctx.ClassError("driver: Write of a batch holding a range deletion is not supported by this driver "+
		"(its connection does not implement driver.RangeDeleter); nothing was written", ErrNotSupported, nil)
)

func notSupported(method, iface string) error {
	return ioctx.ClassError("driver: "+method+" is not supported by this driver (its connection does not implement driver."+iface+")",
		ErrNotSupported, nil)
}

// invalidArgument returns an error with message msg matching
// ErrInvalidArgument.
func invalidArgument(msg string) error {
	return ioctx.ClassError(msg, ErrInvalidArgument, nil)
}

// openError is the remembered failure of a DB's connect. Every call returns
// the same value, so it is built once; errors.Is sees the cause.
type openError struct {
	cause error
}

func (e *openError) Error() string { return "driver: open failed: " + e.cause.Error() }
func (e *openError) Unwrap() error { return e.cause }
