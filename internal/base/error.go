package base

import (
	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/ioctx"
)

// Error classes. Errors are marked with one of these (errors.Mark) and keep
// their own message; test with errors.Is.
var (
	// ErrCorruption marks data that fails a checksum or cannot be decoded.
	// Corruption is never returned as data.
	ErrCorruption = errors.New("shale: corruption")
	// ErrNotFound is returned by a point lookup of a key that has no value.
	ErrNotFound = errors.New("shale: not found")
	// ErrInvalidArgument marks a misused API. It is ioctx.ErrInvalidArgument,
	// so one errors.Is check works at every layer.
	ErrInvalidArgument = ioctx.ErrInvalidArgument
	// ErrClosed is returned by calls on a closed database, iterator or
	// transaction.
	ErrClosed = errors.New("shale: closed")
	// ErrConflict is returned by a transaction's Commit when another write
	// to a key it wrote committed after the transaction began.
	ErrConflict = errors.New("shale: transaction conflict")
)

// CorruptionErrorf formats an error marked ErrCorruption.
func CorruptionErrorf(format string, args ...any) error {
	return errors.Mark(errors.Newf(format, args...), ErrCorruption)
}

// MarkCorruption marks err as corruption, keeping its message and causes.
func MarkCorruption(err error) error {
	if err == nil {
		return nil
	}
	return errors.Mark(err, ErrCorruption)
}

// IsCorruption reports whether err is marked ErrCorruption.
func IsCorruption(err error) bool { return errors.Is(err, ErrCorruption) }

// InvalidArgumentf formats an error marked ErrInvalidArgument.
func InvalidArgumentf(format string, args ...any) error {
	return errors.Mark(errors.Newf(format, args...), ErrInvalidArgument)
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
