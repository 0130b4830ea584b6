// Package errclass holds shale's error classes and its one error marker.
//
// The classes are the values users test with errors.Is under their public
// names (driver.ErrNotFound, driver.ErrCorruption, ...). They live in this
// leaf package, imported by the façade, the engine and every internal layer,
// so that all of them return the very same values and one errors.Is check
// works at every layer. Nothing outside the module can import it: users and
// other drivers see the classes only through package driver.
//
// An error is classified by marking, not by type: [Mark] wraps an error so
// that errors.Is matches a class besides the error's own cause chain, and
// [New] builds a fixed, classified error once, so that returning it
// allocates nothing.
package errclass

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// The classes. Their messages are the bare class names; errors marked with
// them keep their own messages.
var (
	// ErrInvalidArgument marks errors caused by a misused API.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrNotFound is returned by a point lookup of a key that has no value.
	ErrNotFound = errors.New("not found")
	// ErrCorruption marks data that fails a checksum or cannot be decoded.
	ErrCorruption = errors.New("corruption")
	// ErrClosed marks calls on a closed database, session, iterator or
	// transaction.
	ErrClosed = errors.New("closed")
	// ErrConflict is returned by a transaction's Commit when a key it wrote was
	// written by someone else after the transaction began.
	ErrConflict = errors.New("transaction conflict")
	// ErrTimedOut marks errors caused by a deadline or per-IO timeout that
	// expired. Errors built by [Timeout] also match
	// context.DeadlineExceeded.
	ErrTimedOut = errors.New("operation timed out")
)

// classedError is an error that errors.Is matches against up to two classes
// besides its cause chain. Its message is msg, or its cause's when msg is
// empty. Both the standard errors.Is and cockroachdb/errors' use the Is
// method, so a class matches whichever the caller uses (cockroachdb/errors'
// own marks are invisible to the standard errors.Is, which is why shale does
// not use them).
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

// New returns an error with message msg that matches class (and also, when
// not nil) with errors.Is. Built once and kept in a variable, returning it
// allocates nothing.
func New(msg string, class, also error) error {
	return &classedError{msg: msg, classes: [2]error{class, also}}
}

// Timeout returns an error marked ErrTimedOut and context.DeadlineExceeded
// with RocksDB's "Operation timed out: " prefix and the given detail, for a
// deadline or per-IO timeout that expired.
func Timeout(detail string) error {
	return New("Operation timed out: "+detail, ErrTimedOut, context.DeadlineExceeded)
}
