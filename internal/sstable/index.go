package sstable

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"unsafe"

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
	// common, big-endian, zero-padded. nil in the form of an index
	// partition (see encodeIndexPartition), which is searched by its keys.
	abbr []uint64
	// keys holds the encoded separators back to back: separator i is
	// keys[offs[i]:offs[i+1]].
	keys []byte
	offs []uint32
	// handles[i] is data block i's handle; nil in the compact form with
	// narrow handles.
	handles []block.Handle

	// n is the number of data blocks.
	n int
	// compact marks the compact form of an index partition (see
	// encodeIndexCompactWith): keys holds each separator after common, its
	// trailer only where the top bit of its end in offs says so (see
	// entry), and sep and userKey do not apply.
	compact bool
	// narrow holds, in the compact form with narrow handles, data block
	// i's offset from base at 2i and its length at 2i+1.
	narrow []uint32
	base   uint64

	// cmp, when not nil, is the table's user-key order (a non-bytewise
	// Comparer): searches then compare whole separators with it, and the
	// form is never compact. Set by the Reader after viewIndexTable.
	cmp base.Compare
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

// newIndexTable decodes the index block data into memory of its own. An
// entry whose separator is shorter than an internal key trailer or whose
// value is not exactly a handle is an error marked base.ErrCorruption. It
// does not check that the separators increase or that the handles lie in the
// data region: Check does the first, every block read the second, and a
// search of a misordered table returns a wrong block, never reads out of
// bounds.
func newIndexTable(data []byte) (*indexTable, error) {
	buf, err := encodeIndexTable(data, nil)
	if err != nil {
		return nil, err
	}
	x := viewIndexTable(buf)
	return &x, nil
}

// The flat form of an indexTable, one buffer that a block cache entry can
// hold: a header of four uint64s (the number of blocks n, the length of
// keys, the length of common, and the form flags: formAbbr when there is an
// abbr array; formCompact marks the compact form, see compact_index.go),
// then abbr (8n bytes, or none), handles (16n), offs (4(n+1), padded to a
// multiple of 8), keys and common. It is in native byte order: it is never
// written to a file, only built by encodeIndexTable or encodeIndexPartition
// and read by viewIndexTable in the same process.
const indexHeaderLen = 32

// indexFlatLen is the length of the flat form of n blocks, with an abbr
// array or not.
func indexFlatLen(n, keysLen, commonLen int, abbr bool) int {
	l := indexHeaderLen + 16*n + (4*(n+1)+7)&^7 + keysLen + commonLen
	if abbr {
		l += 8 * n
	}
	return l
}

// encodeIndexTable decodes the index block data into the flat form, in a
// buffer from alloc (make when nil), and returns it. Errors are as for
// newIndexTable.
func encodeIndexTable(data []byte, alloc func(n int) []byte) ([]byte, error) {
	return encodeIndexTableWith(data, alloc, true, decodeIndexValue)
}

// encodeIndexPartition is encodeIndexTable for an index partition: a form
// without the abbr array. A partition is small (a 4 KiB one has about 150
// entries, whose keys a search probes 8 times, in memory it has just
// touched), so the array saves a search little, while it is 8 of the about
// 40 bytes an entry costs the cache (the stored entry costs 10 to 20): a
// cache that holds more partitions misses fewer. The Reader holds and
// caches partitions in the denser compact form (see encodeIndexCompactWith),
// which falls back to this one only for keys of 2 GiB or more.
func encodeIndexPartition(data []byte, alloc func(n int) []byte) ([]byte, error) {
	return encodeIndexTableWith(data, alloc, false, decodeIndexValue)
}

// decodeIndexValue is the value decoder of an index block: one handle.
func decodeIndexValue(_ int, v []byte) (block.Handle, error) { return decodeHandleExact(v) }

// encodeIndexTableWith is encodeIndexTable for a block whose entry i's value
// value decodes into the handle the table keeps (and whatever else value
// keeps on the side, as the top-level index's filter handles): value is
// called once per entry, in order. withAbbr says whether the form has the
// abbr array.
func encodeIndexTableWith(data []byte, alloc func(n int) []byte, withAbbr bool, value func(i int, v []byte) (block.Handle, error)) ([]byte, error) {
	// A Walker, not an Iter: the two walks are most of a decode's cost.
	var it block.Walker
	if err := it.Init(data); err != nil {
		return nil, err
	}
	// Two passes: the first counts and finds the common prefix, so that
	// the buffer is allocated once at its final size.
	n, size := 0, 0
	var common []byte
	for it.Next() {
		sep := it.Key()
		if len(sep) < base.TrailerLen {
			return nil, base.CorruptionErrorf("separator %d, %q, is shorter than a %d-byte trailer", n, sep, base.TrailerLen)
		}
		uk := sep[:len(sep)-base.TrailerLen]
		if n == 0 {
			// common aliases the block only until it is copied below.
			common = uk
		} else {
			common = common[:commonPrefix(common, uk)]
		}
		n++
		size += len(sep)
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	buf := allocAligned(indexFlatLen(n, size, len(common), withAbbr), alloc)
	hdr := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(buf))), 4)
	hdr[0], hdr[1], hdr[2], hdr[3] = uint64(n), uint64(size), uint64(len(common)), 0
	if withAbbr {
		hdr[3] = formAbbr
	}
	x := viewIndexTable(buf)
	copy(x.common, common)
	x.offs[0] = 0
	pos := 0
	i := 0
	if err := it.Init(data); err != nil {
		return nil, err
	}
	for it.Next() {
		h, err := value(i, it.Value())
		if err != nil {
			return nil, err
		}
		x.handles[i] = h
		pos += copy(x.keys[pos:], it.Key())
		i++
		x.offs[i] = uint32(pos)
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	if i != n || pos != size {
		// The block changed between the passes: only a caller writing
		// into it concurrently could do that.
		return nil, base.AssertionFailedf("sstable: index block gave %d entries of %d bytes, then %d of %d", n, size, i, pos)
	}
	for i := range x.abbr {
		x.abbr[i] = abbreviate(x.userKey(i)[len(x.common):])
	}
	return buf, nil
}

// allocAligned returns a buffer of n bytes from alloc (make when nil) whose
// start is aligned for uint64s. Go's allocator aligns every allocation of 8
// bytes or more to 8 bytes, so the fallback, a []uint64's memory, is only a
// guard.
func allocAligned(n int, alloc func(n int) []byte) []byte {
	var buf []byte
	if alloc != nil {
		buf = alloc(n)
	}
	if buf == nil || uintptr(unsafe.Pointer(unsafe.SliceData(buf)))%8 != 0 {
		words := make([]uint64, (n+7)/8)
		buf = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), n)
	}
	return buf[:n:n]
}

// viewIndexTable returns the indexTable whose flat form is buf, sharing its
// memory. buf must come from encodeIndexTable.
func viewIndexTable(buf []byte) indexTable {
	p := unsafe.Pointer(unsafe.SliceData(buf))
	hdr := (*[4]uint64)(p)
	n, keysLen, commonLen, form := int(hdr[0]), int(hdr[1]), int(hdr[2]), hdr[3]
	if form&formCompact != 0 {
		return viewCompact(buf, n, keysLen, commonLen, form)
	}
	withAbbr := form&formAbbr != 0
	off := uintptr(indexHeaderLen)
	var abbr []uint64
	var handles []block.Handle
	// Not for n == 0: a pointer to a Handle there would reach past the
	// buffer, which checkptr (-race) rejects even for an empty slice.
	if n > 0 && withAbbr {
		abbr = unsafe.Slice((*uint64)(unsafe.Add(p, off)), n)
		off += uintptr(8 * n)
	}
	if n > 0 {
		handles = unsafe.Slice((*block.Handle)(unsafe.Add(p, off)), n)
	}
	off += uintptr(16 * n)
	offs := unsafe.Slice((*uint32)(unsafe.Add(p, off)), n+1)
	off += uintptr((4*(n+1) + 7) &^ 7)
	keys := buf[off : int(off)+keysLen : int(off)+keysLen]
	off += uintptr(keysLen)
	common := buf[off : int(off)+commonLen : int(off)+commonLen]
	return indexTable{common: common, abbr: abbr, keys: keys, offs: offs, handles: handles, n: n}
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
func (x *indexTable) len() int { return x.n }

// handle returns data block i's handle.
func (x *indexTable) handle(i int) block.Handle {
	if x.narrow != nil {
		return block.Handle{Offset: x.base + uint64(x.narrow[2*i]), Length: uint64(x.narrow[2*i+1])}
	}
	return x.handles[i]
}

// compareUserKey compares the user key of separator i with k, as
// bytes.Compare: what an iterator's bound checks need, without the
// separator's bytes in one piece.
func (x *indexTable) compareUserKey(i int, k []byte) int {
	if x.cmp != nil {
		return base.CompareUser(x.cmp, x.userKey(i), k)
	}
	if x.compact {
		return x.compareUserKeyCompact(i, k)
	}
	return bytes.Compare(x.userKey(i), k)
}

// compareSep compares separator i with key, an encoded internal key at
// least a trailer long, as base.CompareEncoded does.
func (x *indexTable) compareSep(i int, key []byte) int {
	if x.cmp != nil {
		return base.CompareEncodedCmp(x.cmp, x.sep(i), key)
	}
	if x.compact {
		return x.compareSepCompact(i, key)
	}
	return base.CompareEncoded(x.sep(i), key)
}

// sep returns separator i, encoded. It is valid for the Reader's life. Not
// for the compact form (see appendSep).
func (x *indexTable) sep(i int) []byte { return x.keys[x.offs[i]:x.offs[i+1]:x.offs[i+1]] }

// userKey returns the user key of separator i. Not for the compact form
// (see compareUserKey).
func (x *indexTable) userKey(i int) []byte {
	end := x.offs[i+1] - base.TrailerLen
	return x.keys[x.offs[i]:end:end]
}

// seekGE returns the first i whose separator is >= key (an encoded internal
// key, at least a trailer long) in base.CompareEncoded order, or len() if
// there is none: data block i is the only one that can hold the first entry
// >= key.
func (x *indexTable) seekGE(key []byte) int {
	if x.cmp != nil {
		return x.seekGECmp(key)
	}
	n := x.n
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
	if x.abbr == nil {
		// A partition's form: its keys are all there is to search.
		if x.compact {
			return x.searchCompact(0, n, key)
		}
		return x.searchKeys(0, n, key)
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

// searchKeys returns the first i in [lo, hi) whose separator is >= key, or
// hi if there is none. key's user key starts with common, as every
// separator's does (seekGE has checked it), so a probe compares only the
// bytes after common, and the trailers, which sort descending, only where
// the user keys tie: CompareEncoded would decode both keys and compare
// common again at every probe (85 against 54 ns on a 150-entry partition).
func (x *indexTable) searchKeys(lo, hi int, key []byte) int {
	cl := len(x.common)
	n := len(key) - base.TrailerLen
	uk, trailer := key[cl:n], binary.LittleEndian.Uint64(key[n:])
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		s := x.sep(mid)
		sn := len(s) - base.TrailerLen
		c := bytes.Compare(s[cl:sn], uk)
		if c < 0 || c == 0 && binary.LittleEndian.Uint64(s[sn:]) > trailer {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

func (x *indexTable) memSize() int {
	size := len(x.common) + 8*cap(x.abbr) + cap(x.keys) + 4*cap(x.offs) + 16*cap(x.handles) + 4*cap(x.narrow)
	if x.compact {
		size += 8 // base
	}
	return size
}
