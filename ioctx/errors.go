package ioctx

import (
	"context"
	"errors"
)

// The error classes of shale. They live in this leaf package, which every
// layer imports, so that driver, engine and the internal packages share the
// very same values: driver.ErrNotFound, engine.ErrNotFound and the internal
// class are one error, and one errors.Is check works at every layer. Errors
// are marked with a class (and keep their own message); test with errors.Is.
var (
	// ErrInvalidArgument marks errors caused by a misused API, such as a
	// read whose ReadOptions carry another API's activity.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrNotFound is returned by a point lookup of a key that has no value.
	ErrNotFound = errors.New("not found")
	// ErrCorruption marks data that fails a checksum or cannot be decoded.
	// Corrupt data is never returned as data.
	ErrCorruption = errors.New("corruption")
	// ErrClosed marks calls on a closed database, session, iterator or
	// transaction.
	ErrClosed = errors.New("closed")
	// ErrConflict is returned by a transaction's Commit when a key it wrote
	// was written by someone else after the transaction began.
	ErrConflict = errors.New("transaction conflict")
)

// ErrTimedOut marks errors caused by a deadline or per-IO timeout that
// expired. Errors marked with it also match context.DeadlineExceeded, so a
// caller checking errors.Is(err, ctx.Err()) after its context expired sees
// the match.
var ErrTimedOut = errors.New("operation timed out")

// markedError is an error with a fixed message that errors.Is matches against
// its marks. Both the standard errors.Is and cockroachdb/errors.Is use the Is
// method.
type markedError struct {
	msg   string
	marks [2]error
}

func (e *markedError) Error() string { return e.msg }

func (e *markedError) Is(target error) bool {
	return target != nil && (target == e.marks[0] || target == e.marks[1])
}

// errDeadlineExceeded is RocksDB's IOStatus::TimedOut("Deadline exceeded"),
// spelled as its ToString prints it.
var errDeadlineExceeded error = &markedError{
	msg:   "Operation timed out: Deadline exceeded",
	marks: [2]error{ErrTimedOut, context.DeadlineExceeded},
}

// TimeoutError returns an error marked ErrTimedOut (and
// context.DeadlineExceeded) with RocksDB's "Operation timed out: " prefix and
// the given detail, for a per-IO timeout that expired.
func TimeoutError(detail string) error {
	return &markedError{
		msg:   "Operation timed out: " + detail,
		marks: [2]error{ErrTimedOut, context.DeadlineExceeded},
	}
}

// CheckAndTag validates the activity of a public read API's options and tags
// them with the API's own activity: it accepts Unknown (and sets want) or want
// itself, and rejects anything else with an error marked ErrInvalidArgument.
// The message starts with RocksDB's exact text and names the activity given:
//
//	Can only call Get with `ReadOptions::io_activity` is
//	`Env::IOActivity::kUnknown` or `Env::IOActivity::kGet`, not
//	`Env::IOActivity::kFlush`
//
// (one line). api is the API's name as RocksDB spells it: Get, MultiGet,
// NewIterator, NewIterators, VerifyChecksum or VerifyFileChecksums.
func (ro ReadOptions) CheckAndTag(api string, want Activity) (ReadOptions, error) {
	switch ro.Activity {
	case want:
		return ro, nil
	case ActivityUnknown:
		ro.Activity = want
		return ro, nil
	}
	return ro, ActivityError(api, want, ro.Activity)
}

// ActivityError is the error CheckAndTag returns when api, whose own activity
// is want, is called with the activity got.
func ActivityError(api string, want, got Activity) error {
	return &markedError{
		msg: "Can only call " + api + " with `ReadOptions::io_activity` is `" +
			ActivityUnknown.EnvName() + "` or `" + want.EnvName() + "`, not `" + got.EnvName() + "`",
		marks: [2]error{ErrInvalidArgument},
	}
}
