// Package merge holds the merge operator interface the read path, flush and
// compaction call, and RocksDB's built-in operators (stringappend,
// uint64add, max).
//
// A key's merge operands are the KindMerge entries above its newest Set or
// tombstone (or above nothing). Readers collect them newest first and call
// FullMerge with them oldest first; flush and compaction combine them the
// same way where a snapshot cannot tell the difference (see
// internal/compact).
package merge

import (
	"bytes"
	"encoding/binary"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/statistics"
)

// Operator combines a key's merge operands (RocksDB's MergeOperator). Its
// methods must be safe for concurrent use and deterministic: the same
// inputs give the same result whether a read or a compaction asks.
type Operator interface {
	// Name is recorded in the database and checked at every open: data
	// merged by one operator must never be read with another.
	Name() string
	// FullMerge returns the value of key from its existing value (when
	// hasExisting; a key without one was never set, or was deleted) and
	// its operands, oldest first. The result may alias nothing the caller
	// gave (the slices are only valid during the call). An error fails the
	// read that asked, naming the key.
	FullMerge(key, existing []byte, hasExisting bool, operands [][]byte) ([]byte, error)
	// PartialMerge combines two adjacent operands, older then newer, into
	// one that FullMerge treats as both; ok false leaves them apart (for an
	// operator that cannot, or inputs it does not combine).
	PartialMerge(key, older, newer []byte) (merged []byte, ok bool)
}

// OperandChecker is an optional interface of an Operator: CheckOperand
// refuses an operand FullMerge could never use, so that a bad write fails
// at once (ErrInvalidArgument) rather than every later read of its key.
type OperandChecker interface {
	CheckOperand(operand []byte) error
}

// Builtin returns the built-in operator of the given name: "stringappend"
// (operands joined with ','), "stringappend:D" (joined with the string D,
// possibly empty), "uint64add" or "max". ok is false for any other name.
func Builtin(name string) (op Operator, ok bool) {
	switch {
	case name == "stringappend":
		return StringAppend{Delim: ","}, true
	case strings.HasPrefix(name, "stringappend:"):
		return StringAppend{Delim: strings.TrimPrefix(name, "stringappend:")}, true
	case name == "uint64add":
		return UInt64Add{}, true
	case name == "max":
		return Max{}, true
	}
	return nil, false
}

// StringAppend is RocksDB's StringAppendOperator: the value is the existing
// value and the operands, oldest first, joined with Delim.
type StringAppend struct{ Delim string }

// Name returns "stringappend" for the default ',' delimiter, else
// "stringappend:" and the delimiter: a database written with one delimiter
// cannot be read with another.
func (s StringAppend) Name() string {
	if s.Delim == "," {
		return "stringappend"
	}
	return "stringappend:" + s.Delim
}

// FullMerge joins the existing value and the operands.
func (s StringAppend) FullMerge(_, existing []byte, hasExisting bool, operands [][]byte) ([]byte, error) {
	n := len(existing) + len(s.Delim)*len(operands)
	for _, o := range operands {
		n += len(o)
	}
	out := make([]byte, 0, n)
	if hasExisting {
		out = append(out, existing...)
	}
	for i, o := range operands {
		if hasExisting || i > 0 {
			out = append(out, s.Delim...)
		}
		out = append(out, o...)
	}
	return out, nil
}

// PartialMerge joins two operands: appending is associative.
func (s StringAppend) PartialMerge(_, older, newer []byte) ([]byte, bool) {
	out := make([]byte, 0, len(older)+len(s.Delim)+len(newer))
	out = append(append(append(out, older...), s.Delim...), newer...)
	return out, true
}

// UInt64Add is RocksDB's UInt64AddOperator: values and operands are 8-byte
// little-endian unsigned integers, added with wrap-around. Where RocksDB
// logs a malformed value and counts it as 0, shale refuses: an operand of
// another length fails its write (CheckOperand), and a base value of
// another length (a Put of something else) fails the reads of its key with
// an error naming it, as a wrong answer would be worse than none.
type UInt64Add struct{}

// Name returns "uint64add".
func (UInt64Add) Name() string { return "uint64add" }

// CheckOperand refuses an operand that is not 8 bytes long.
func (UInt64Add) CheckOperand(operand []byte) error {
	if len(operand) != 8 {
		return base.InvalidArgumentf("merge operator uint64add: an operand is an 8-byte little-endian uint64, not %d bytes", len(operand))
	}
	return nil
}

// FullMerge adds the existing value and the operands.
func (u UInt64Add) FullMerge(key, existing []byte, hasExisting bool, operands [][]byte) ([]byte, error) {
	var sum uint64
	if hasExisting {
		v, err := DecodeUint64(existing)
		if err != nil {
			return nil, base.InvalidArgumentf("merge operator uint64add: the value of key %q under its merge operands: %v", key, err)
		}
		sum = v
	}
	for _, o := range operands {
		v, err := DecodeUint64(o)
		if err != nil {
			return nil, base.InvalidArgumentf("merge operator uint64add: a merge operand of key %q: %v", key, err)
		}
		sum += v
	}
	return binary.LittleEndian.AppendUint64(nil, sum), nil
}

// PartialMerge adds two operands; malformed ones are left apart, for
// FullMerge to report.
func (UInt64Add) PartialMerge(_, older, newer []byte) ([]byte, bool) {
	a, err1 := DecodeUint64(older)
	b, err2 := DecodeUint64(newer)
	if err1 != nil || err2 != nil {
		return nil, false
	}
	return binary.LittleEndian.AppendUint64(nil, a+b), true
}

// DecodeUint64 decodes uint64add's 8-byte little-endian encoding.
func DecodeUint64(b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, base.InvalidArgumentf("%d bytes, not an 8-byte little-endian uint64", len(b))
	}
	return binary.LittleEndian.Uint64(b), nil
}

// Max is RocksDB's MaxOperator: the value is the bytewise largest of the
// existing value and the operands.
type Max struct{}

// Name returns "max".
func (Max) Name() string { return "max" }

// FullMerge returns the largest.
func (Max) FullMerge(_, existing []byte, hasExisting bool, operands [][]byte) ([]byte, error) {
	var best []byte
	found := false
	if hasExisting {
		best, found = existing, true
	}
	for _, o := range operands {
		if !found || bytes.Compare(o, best) > 0 {
			best, found = o, true
		}
	}
	return append([]byte{}, best...), nil
}

// PartialMerge keeps the larger.
func (Max) PartialMerge(_, older, newer []byte) ([]byte, bool) {
	if bytes.Compare(newer, older) > 0 {
		return bytes.Clone(newer), true
	}
	return bytes.Clone(older), true
}

// Full calls op.FullMerge, timing it into MergeOperationTimeNanos (from
// LevelExceptTimeForMutex up, as RocksDB times merges only with detailed
// timers) and counting a failure in NumberMergeFailures. A failure names
// the operator; op's own error says what was wrong with which key.
func Full(op Operator, stats *statistics.Statistics, key, existing []byte, hasExisting bool, operands [][]byte) ([]byte, error) {
	var start time.Time
	timed := stats.Level() >= statistics.LevelExceptTimeForMutex
	if timed {
		start = time.Now()
	}
	v, err := op.FullMerge(key, existing, hasExisting, operands)
	if timed {
		stats.RecordTick(statistics.MergeOperationTimeNanos, uint64(time.Since(start).Nanoseconds()))
	}
	if err != nil {
		stats.RecordTick(statistics.NumberMergeFailures, 1)
		return nil, errors.Wrapf(err, "merge operator %s: key %q", op.Name(), key)
	}
	if v == nil {
		v = []byte{}
	}
	return v, nil
}

// ErrNoOperator returns the error of a read that meets a merge operand of
// key in a database opened without a merge operator.
func ErrNoOperator(key []byte) error {
	return base.InvalidArgumentf("key %q has merge operands but the database was opened without a merge operator (merge_operator)", key)
}
