package sstable

import (
	"bytes"
	"encoding/binary"
	"math/bits"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/sstable/block"
)

// indexTable is the index block decoded at Open into flat arrays, for the
// searches of Get, MultiGet and iterator seeks.
//
// Searching the block itself costs, per binary-search probe, a read of the
// restart array and a varint-prefixed entry in another cache line, about 24
// cache misses on a 3.5k-block table. Here a search is a binary search over
// abbr, an array of one uint64 per block (28 KiB for 3.5k blocks), whose
// first probes fall on the same few cache lines every time and stay cached;
// the full separator is compared only where abbreviations tie.
//
// An indexTable is immutable after Open and safe for concurrent use.
type indexTable struct {
	// common is the longest prefix that the user keys of all separators
	// share: abbreviations start after it, so that keys with a long common
	// prefix (a table of one key range) still differ in their
	// abbreviations.
	common []byte
	// abbr[i] is abbreviate of separator i's user key: the 8 bytes after
	// common, big-endian, zero-padded.
	abbr []uint64
	// keys holds the encoded separators back to back: separator i is
	// keys[offs[i]:offs[i+1]].
	keys []byte
	offs []uint32
	// handles[i] is data block i's handle.
	handles []block.Handle
}

// abbreviate returns the first 8 bytes of b as a big-endian integer, b
// padded with zeros when shorter. For user keys a and b with the same
// prefix before them, abbreviate(a) < abbreviate(b) implies a < b (the
// first difference is within the 8 bytes, or a ends there and b has a
// non-zero byte), and a < b implies abbreviate(a) <= abbreviate(b).
func abbreviate(b []byte) uint64 {
	if len(b) >= 8 {
		return binary.BigEndian.Uint64(b)
	}
	var buf [8]byte
	copy(buf[:], b)
	return binary.BigEndian.Uint64(buf[:])
}

// newIndexTable decodes the index block data. An entry whose separator is
// shorter than an internal key trailer or whose value is not exactly a
// handle is an error marked base.ErrCorruption. It does not check that the
// separators increase or that the handles lie in the data region: Check
// does the first, every block read the second, and a search of a misordered
// table returns a wrong block, never reads out of bounds.
func newIndexTable(data []byte) (*indexTable, error) {
	var it block.Iter
	if err := it.Init(base.CompareEncoded, data); err != nil {
		return nil, err
	}
	// Two passes: the first counts, so that the arrays are allocated once
	// at their final size.
	n, size := 0, 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
		size += len(it.Key())
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	x := &indexTable{
		abbr:    make([]uint64, n),
		keys:    make([]byte, 0, size),
		offs:    make([]uint32, 1, n+1),
		handles: make([]block.Handle, n),
	}
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		sep := it.Key()
		if len(sep) < base.TrailerLen {
			return nil, base.CorruptionErrorf("separator %d, %q, is shorter than a %d-byte trailer", i, sep, base.TrailerLen)
		}
		h, err := decodeHandleExact(it.Value())
		if err != nil {
			return nil, err
		}
		x.handles[i] = h
		x.keys = append(x.keys, sep...)
		x.offs = append(x.offs, uint32(len(x.keys)))
		uk := sep[:len(sep)-base.TrailerLen]
		if i == 0 {
			x.common = uk
		} else {
			x.common = x.common[:commonPrefix(x.common, uk)]
		}
		i++
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	// common aliases the block, which the Reader does not keep.
	x.common = bytes.Clone(x.common)
	for i := range n {
		x.abbr[i] = abbreviate(x.userKey(i)[len(x.common):])
	}
	return x, nil
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// len returns the number of data blocks.
func (x *indexTable) len() int { return len(x.handles) }

// sep returns separator i, encoded. It is valid for the Reader's life.
func (x *indexTable) sep(i int) []byte { return x.keys[x.offs[i]:x.offs[i+1]:x.offs[i+1]] }

// userKey returns the user key of separator i.
func (x *indexTable) userKey(i int) []byte {
	end := x.offs[i+1] - base.TrailerLen
	return x.keys[x.offs[i]:end:end]
}

// seekGE returns the first i whose separator is >= key (an encoded internal
// key, at least a trailer long) in base.CompareEncoded order, or len() if
// there is none: data block i is the only one that can hold the first entry
// >= key.
func (x *indexTable) seekGE(key []byte) int {
	n := len(x.abbr)
	uk := key[:len(key)-base.TrailerLen]
	// Every separator's user key starts with common, so a key that differs
	// from it within its length is below or above all of them.
	p := min(len(x.common), len(uk))
	if c := bytes.Compare(uk[:p], x.common[:p]); c != 0 || len(uk) < len(x.common) {
		if c > 0 {
			return n
		}
		// Below common, or a proper prefix of it: below every user key.
		return 0
	}
	a := abbreviate(uk[len(x.common):])

	// The first i with abbr[i] >= a, by a binary search without
	// data-dependent branches: which way a probe goes is unpredictable,
	// and a mispredicted branch costs more than the probe. (The compiler
	// keeps an if here as a branch; the borrow of the subtraction is 1
	// exactly when abbr[...] < a.)
	lo, m := 0, n
	for m > 1 {
		half := m >> 1
		_, lt := bits.Sub64(x.abbr[lo+half-1], a, 0)
		lo += half & -int(lt)
		m -= half
	}
	if m == 1 && x.abbr[lo] < a {
		lo++
	}
	if lo == n || x.abbr[lo] != a {
		// abbr[lo-1] < a < abbr[lo]: the user keys decide.
		return lo
	}
	// Separators whose abbreviations tie with the key's (the key's own
	// block may end with it; or keys longer than common plus 8 bytes share
	// those 8, and many versions of one key can span many blocks): search
	// on with the full comparison where abbreviations tie.
	hi := n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if x.abbr[mid] < a || (x.abbr[mid] == a && base.CompareEncoded(x.sep(mid), key) < 0) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// memSize returns the bytes the table holds (not counting slice headers).
func (x *indexTable) memSize() int {
	return len(x.common) + 8*cap(x.abbr) + cap(x.keys) + 4*cap(x.offs) + 16*cap(x.handles)
}
