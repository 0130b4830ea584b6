package ioctx

import (
	"context"
	"errors"
	"fmt"
	"io"
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

// classedError is shale's one error marker: an error that errors.Is matches
// against up to two classes (ErrNotFound, ErrTimedOut, ...) besides its
// cause chain. Its message is msg, or its cause's when msg is empty. Both the
// standard errors.Is and cockroachdb/errors' use the Is method, so a class
// matches whichever the caller uses (cockroachdb/errors.Mark's marks are
// invisible to the standard one, which is why shale does not use it).
type classedError struct {
	msg     string
	cause   error
	classes [2]error
}

func (e *classedError) Error() string {
	if e.msg == "" && e.cause != nil {
		return e.cause.Error()
	}
	return e.msg
}

func (e *classedError) Unwrap() error { return e.cause }

func (e *classedError) Is(target error) bool {
	return target != nil && (target == e.classes[0] || target == e.classes[1])
}

// Format prints the message, and with %+v the cause's details (the stack
// traces cockroachdb/errors records).
func (e *classedError) Format(s fmt.State, verb rune) {
	if verb == 'v' && s.Flag('+') && e.cause != nil && e.msg == "" {
		fmt.Fprintf(s, "%+v", e.cause)
		return
	}
	io.WriteString(s, e.Error())
}

// Mark returns err marked with class: errors.Is(result, class) holds, and so
// does errors.Is(result, c) for every cause c of err. The message is err's.
// Mark(nil, class) is nil.
func Mark(err, class error) error {
	if err == nil {
		return nil
	}
	return &classedError{cause: err, classes: [2]error{class}}
}

// ClassError returns an error with message msg that matches class (and
// also, when not nil, also) with errors.Is. Built once and kept in a
// variable, returning it allocates nothing.
func ClassError(msg string, class, also error) error {
	return &classedError{msg: msg, classes: [2]error{class, also}}
}

// errDeadlineExceeded is RocksDB's IOStatus::TimedOut("Deadline exceeded"),
// spelled as its ToString prints it.
var errDeadlineExceeded = ClassError("Operation timed out: Deadline exceeded", ErrTimedOut, context.DeadlineExceeded)

// TimeoutError returns an error marked ErrTimedOut (and
// context.DeadlineExceeded) with RocksDB's "Operation timed out: " prefix and
// the given detail, for a per-IO timeout that expired.
func TimeoutError(detail string) error {
	return ClassError("Operation timed out: "+detail, ErrTimedOut, context.DeadlineExceeded)
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
	return ClassError("Can only call "+api+" with `ReadOptions::io_activity` is `"+
		ActivityUnknown.EnvName()+"` or `"+want.EnvName()+"`, not `"+got.EnvName()+"`", ErrInvalidArgument, nil)
}
