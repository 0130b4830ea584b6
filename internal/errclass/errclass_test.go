package errclass

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestMarkAndNew(t *testing.T) {
	cause := errors.New("disk says no")
	err := Mark(cause, ErrCorruption)
	if !errors.Is(err, ErrCorruption) || !errors.Is(err, cause) || errors.Is(err, ErrNotFound) {
		t.Fatalf("Mark: classes wrong: %v", err)
	}
	if err.Error() != "disk says no" {
		t.Fatalf("Mark changed the message: %q", err.Error())
	}
	if Mark(nil, ErrCorruption) != nil {
		t.Fatal("Mark(nil) is not nil")
	}
	wrapped := fmt.Errorf("table 7: %w", err)
	if !errors.Is(wrapped, ErrCorruption) {
		t.Fatal("a wrapped mark lost its class")
	}

	two := New("deadline", ErrTimedOut, context.DeadlineExceeded)
	if !errors.Is(two, ErrTimedOut) || !errors.Is(two, context.DeadlineExceeded) || errors.Is(two, ErrClosed) {
		t.Fatalf("New: classes wrong")
	}
	if !errors.Is(Timeout("x"), context.DeadlineExceeded) || Timeout("x").Error() != "Operation timed out: x" {
		t.Fatalf("Timeout: %v", Timeout("x"))
	}
}

func TestNewAllocatesOnceReturnsFree(t *testing.T) {
	fixed := New("closed", ErrClosed, nil)
	f := func() error { return fixed }
	if n := testing.AllocsPerRun(100, func() { _ = f() }); n != 0 {
		t.Fatalf("returning a fixed error allocates %v", n)
	}
}
