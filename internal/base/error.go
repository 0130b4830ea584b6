package base

import (
	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/errclass"
	"github.com/shaledb/shale/internal/invariants"
)

// Error classes. Errors are marked with one of these (Mark) and keep their
// own message; test with errors.Is. They are ioctx's values, shared with the
// driver and engine packages, so one errors.Is check works at every layer.
var (
	// ErrCorruption marks data that fails a checksum or cannot be decoded.
	// Corruption is never returned as data.
	ErrCorruption = errclass.ErrCorruption
	// ErrNotFound is returned by a point lookup of a key that has no value.
	ErrNotFound = errclass.ErrNotFound
	// ErrInvalidArgument marks a misused API.
	ErrInvalidArgument = errclass.ErrInvalidArgument
	// ErrClosed is returned by calls on a closed database, iterator or
	// transaction.
	ErrClosed = errclass.ErrClosed
	// ErrConflict is returned by a transaction's Commit when another write
	// to a key it wrote committed after the transaction began.
	ErrConflict = errclass.ErrConflict
	// ErrTimedOut marks a request that ran past its deadline or IO
	// timeout; such errors also match context.DeadlineExceeded.
	ErrTimedOut = errclass.ErrTimedOut
)

// Timeout returns an error marked ErrTimedOut and context.DeadlineExceeded,
// with RocksDB's message ("Operation timed out: " and detail).
func Timeout(detail string) error { return errclass.Timeout(detail) }

// Mark returns err marked with the class mark (errclass.Mark, shale's one
// marker): errors.Is(result, mark) holds, with the standard library's
// errors.Is as with cockroachdb/errors', and errors.Is(result, c) still holds
// for every cause c of err. Use it instead of cockroachdb/errors.Mark, whose
// marks the standard errors.Is does not see.
func Mark(err, mark error) error { return errclass.Mark(err, mark) }

// CorruptionErrorf formats an error marked ErrCorruption.
func CorruptionErrorf(format string, args ...any) error {
	return Mark(errors.Newf(format, args...), ErrCorruption)
}

// MarkCorruption marks err as corruption, keeping its message and causes.
func MarkCorruption(err error) error { return Mark(err, ErrCorruption) }

// IsCorruption reports whether err is marked ErrCorruption.
func IsCorruption(err error) bool { return errors.Is(err, ErrCorruption) }

// InvalidArgumentf formats an error marked ErrInvalidArgument.
func InvalidArgumentf(format string, args ...any) error {
	return Mark(errors.Newf(format, args...), ErrInvalidArgument)
}

// AssertionFailedf reports a bug: it panics in invariants builds and returns
// an assertion-failure error otherwise.
func AssertionFailedf(format string, args ...any) error {
	err := errors.AssertionFailedf(format, args...)
	if invariants.Enabled {
		panic(err)
	}
	return err
}
