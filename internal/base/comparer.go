package base

import (
	"bytes"
	"unsafe"
)

// Compare orders two user keys: negative when a sorts before b, zero when
// they are equal, positive otherwise.
type Compare func(a, b []byte) int

// Comparer is a database's order of user keys (RocksDB's Comparator,
// Pebble's Comparer). See engine.Comparer, an alias, for the contract.
type Comparer struct {
	// Compare orders user keys. It must be a total order in which keys
	// with equal bytes compare equal (the engine tests keys for identity
	// with bytes.Equal) and the empty key sorts first (the engine uses it
	// as "before every key"). It must not retain or modify a or b.
	Compare Compare
	// Separator, when not nil, appends to dst a key k with a <= k < b
	// (a < b) and returns it: a short k lets a table's index hold short
	// entries. Nil keeps a, always correct.
	Separator func(dst, a, b []byte) []byte
	// Successor, when not nil, appends to dst a key k >= a and returns it,
	// a short separator after a table's last key. Nil keeps a.
	Successor func(dst, a []byte) []byte
	// Name identifies the order. It is recorded in the MANIFEST and in
	// each table, and a database opens only with a comparer of the name it
	// was created with.
	Name string
}

// BytewiseName is the name of the default, bytewise order: RocksDB's and
// Pebble's name for it. A database or table with no recorded name has it.
const BytewiseName = "leveldb.BytewiseComparator"

// ReverseBytewiseName is RocksDB's name for the reverse bytewise order.
const ReverseBytewiseName = "rocksdb.ReverseBytewiseComparator"

// DefaultComparer orders keys bytewise, as bytes.Compare does. The engine
// recognizes it (by pointer) and keeps its own inlined bytewise comparisons
// on hot paths.
var DefaultComparer = &Comparer{
	Compare:   bytes.Compare,
	Separator: bytewiseSeparator,
	Successor: bytewiseSuccessor,
	Name:      BytewiseName,
}

// ReverseBytewiseComparer orders keys by descending bytes (RocksDB's
// ReverseBytewiseComparator), except that the empty key sorts first, as
// every comparer's must (see Comparer.Compare); RocksDB's sorts it last.
var ReverseBytewiseComparer = &Comparer{
	Compare: compareReverse,
	Name:    ReverseBytewiseName,
}

func compareReverse(a, b []byte) int {
	if len(a) == 0 || len(b) == 0 {
		return len(a) - len(b)
	}
	return bytes.Compare(b, a)
}

// BuiltinComparer returns the built-in comparer named name, or nil.
func BuiltinComparer(name string) *Comparer {
	switch name {
	case BytewiseName, "":
		return DefaultComparer
	case ReverseBytewiseName:
		return ReverseBytewiseComparer
	}
	return nil
}

// IsBytewise reports whether c is the default order (nil counts as it).
func (c *Comparer) IsBytewise() bool { return c == nil || c == DefaultComparer }

// UserCompare returns c's user-key order, or nil for the bytewise one: the
// form the read and write paths take, where nil selects their inlined
// bytewise comparisons.
func (c *Comparer) UserCompare() Compare {
	if c.IsBytewise() {
		return nil
	}
	return c.Compare
}

// CompareUser orders user keys by cmp, bytewise when cmp is nil.
func CompareUser(cmp Compare, a, b []byte) int {
	if cmp == nil {
		return bytes.Compare(a, b)
	}
	return cmp(noescape(a), noescape(b))
}

// noescape hides b from escape analysis, as the runtime's noescape does. A
// call through a function value, such as a Comparer's Compare, makes its
// arguments escape, which would move the search keys of the read path's
// stack buffers to the heap on every call, for the default comparer too; a
// Comparer must not retain its arguments (see Comparer.Compare), so they
// need not escape.
//
//go:nosplit
func noescape(b []byte) []byte {
	// The address goes through a uintptr, which escape analysis does not
	// follow. The caller's b keeps the memory alive, and nothing in this
	// nosplit function can move a stack.
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	q := *(*unsafe.Pointer)(unsafe.Pointer(&p))
	return unsafe.Slice((*byte)(q), cap(b))[:len(b)]
}

// CompareInternalWith is CompareInternal with user keys ordered by cmp
// (bytewise when nil).
func CompareInternalWith(cmp Compare, a, b InternalKey) int {
	if cmp == nil {
		return CompareInternal(a, b)
	}
	if c := cmp(noescape(a.UserKey), noescape(b.UserKey)); c != 0 {
		return c
	}
	switch {
	case a.Trailer > b.Trailer:
		return -1
	case a.Trailer < b.Trailer:
		return 1
	}
	return 0
}

// CompareEncodedWith is CompareEncoded with user keys ordered by cmp
// (bytewise when nil).
func CompareEncodedWith(cmp Compare) func(a, b []byte) int {
	if cmp == nil {
		return CompareEncoded
	}
	return func(a, b []byte) int { return CompareEncodedCmp(cmp, a, b) }
}

// bytewiseSeparator is LevelDB's FindShortestSeparator: a's common prefix
// with b, then a's next byte incremented when that still sorts below b.
func bytewiseSeparator(dst, a, b []byte) []byte {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	if n < len(a) && n < len(b) && a[n] < 0xff && a[n]+1 < b[n] {
		dst = append(dst, a[:n+1]...)
		dst[len(dst)-1]++
		return dst
	}
	return append(dst, a...)
}

// bytewiseSuccessor is LevelDB's FindShortSuccessor: a's first byte below
// 0xff incremented, the rest dropped.
func bytewiseSuccessor(dst, a []byte) []byte {
	for i, c := range a {
		if c != 0xff {
			dst = append(dst, a[:i+1]...)
			dst[len(dst)-1]++
			return dst
		}
	}
	return append(dst, a...)
}

// CompareEncodedCmp is CompareEncoded with user keys ordered by cmp
// (bytewise when nil), without building a function value.
func CompareEncodedCmp(cmp Compare, a, b []byte) int {
	if cmp == nil {
		return CompareEncoded(a, b)
	}
	ka, oka := DecodeInternalKey(a)
	kb, okb := DecodeInternalKey(b)
	if !oka || !okb {
		return bytes.Compare(a, b)
	}
	return CompareInternalWith(cmp, ka, kb)
}
