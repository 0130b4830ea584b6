package ratelimit

import (
	"strconv"

	"github.com/shaledb/shale/internal/base"
)

// Mode says which kind of IO a limiter charges: RocksDB's RateLimiter::Mode.
// Requests for the other kind are let through at once and are not counted.
//
// The zero value is ModeReads. RocksDB's default is kWritesOnly; shale's
// limiter exists mainly for its read path, and callers always set the mode
// explicitly (the DSN key rate_limit_mode), so the zero value is not a
// default anyone relies on.
type Mode uint8

const (
	// ModeReads charges reads only (RocksDB kReadsOnly).
	ModeReads Mode = iota
	// ModeWrites charges writes only (RocksDB kWritesOnly).
	ModeWrites
	// ModeAll charges reads and writes (RocksDB kAllIo).
	ModeAll

	numModes
)

var modeNames = [numModes]string{
	ModeReads:  "reads",
	ModeWrites: "writes",
	ModeAll:    "all",
}

// String returns the mode as the DSN spells it: "reads", "writes" or "all";
// "Mode(N)" for a value that names no mode.
func (m Mode) String() string {
	if m < numModes {
		return modeNames[m]
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// ParseMode parses the DSN spelling of a mode ("reads", "writes", "all";
// exact, lower case). Anything else is an error marked
// errclass.ErrInvalidArgument that quotes the value.
func ParseMode(s string) (Mode, error) {
	for m, name := range modeNames {
		if s == name {
			return Mode(m), nil
		}
	}
	return 0, base.InvalidArgumentf("ratelimit: unknown mode %q (want \"reads\", \"writes\" or \"all\")", s)
}

// OpType is the kind of IO a request is for: RocksDB's RateLimiter::OpType.
type OpType uint8

const (
	// OpRead is a read.
	OpRead OpType = iota
	// OpWrite is a write.
	OpWrite
)

// String returns "read" or "write"; "OpType(N)" for any other value.
func (op OpType) String() string {
	switch op {
	case OpRead:
		return "read"
	case OpWrite:
		return "write"
	}
	return "OpType(" + strconv.Itoa(int(op)) + ")"
}
