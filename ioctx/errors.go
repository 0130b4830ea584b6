package ioctx

import (
	"github.com/shaledb/shale/internal/errclass"
)

// The error classes under their old names. Each is the very value of the
// driver package's class of the same name (errors.Is matches either), kept
// so that code written against these names goes on compiling and matching
// until they are removed.
var (
	// Deprecated: use driver.ErrInvalidArgument, the same value.
	ErrInvalidArgument = errclass.ErrInvalidArgument
	// Deprecated: use driver.ErrNotFound, the same value.
	ErrNotFound = errclass.ErrNotFound
	// Deprecated: use driver.ErrCorruption, the same value.
	ErrCorruption = errclass.ErrCorruption
	// Deprecated: use driver.ErrClosed, the same value.
	ErrClosed = errclass.ErrClosed
	// Deprecated: use driver.ErrConflict, the same value.
	ErrConflict = errclass.ErrConflict
	// Deprecated: use driver.ErrTimedOut, the same value.
	ErrTimedOut = errclass.ErrTimedOut
)

// errDeadlineExceeded is RocksDB's IOStatus::TimedOut("Deadline exceeded"),
// spelled as its ToString prints it.
var errDeadlineExceeded = errclass.Timeout("Deadline exceeded")

// activityError is the error a read returns when api, whose own activity is
// want, is called with the activity got. The message starts with RocksDB's
// exact text and names the activity given (one line):
//
//	Can only call Get with `ReadOptions::io_activity` is
//	`Env::IOActivity::kUnknown` or `Env::IOActivity::kGet`, not
//	`Env::IOActivity::kFlush`
//
// api is the API's name as RocksDB spells it: Get, MultiGet, NewIterator,
// NewIterators, VerifyChecksum or VerifyFileChecksums.
func activityError(api string, want, got Activity) error {
	return errclass.New("Can only call "+api+" with `ReadOptions::io_activity` is `"+
		ActivityUnknown.EnvName()+"` or `"+want.EnvName()+"`, not `"+got.EnvName()+"`", errclass.ErrInvalidArgument, nil)
}
