package sstable

import (
	"bytes"
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/sstable/block"
)

// The compact flat form of an index partition. The partition form of
// encodeIndexPartition costs a cached entry a 16-byte handle, a 4-byte
// offset and the whole separator: 32 to 40 bytes on the bench's keys, where
// the separator is 3 or 4 user-key bytes and a trailer. With a block cache
// smaller than the index and filter partitions (the bench at 4 GiB), every
// byte an entry costs is a partition the cache does not hold, and a Get
// that misses one pays a pread and a decode. The compact form stores:
//
//   - handles narrow when the partition's blocks lie within 4 GiB of its
//     first block and none is 4 GiB long (always, for a table the Writer
//     wrote): a base offset once, then per block a uint32 offset from it
//     and a uint32 length, 8 bytes instead of 16;
//   - each separator without common, the prefix all of the partition's
//     user keys share;
//   - without its trailer a separator whose trailer is elidedTrailer, as
//     every separator the Writer shortens has (see Writer.shortKey); the
//     top bit of the separator's end offset says the trailer is stored.
//
// Its layout: the header of the other forms (n, the length of keys, the
// length of common, the form flags, with formCompact and formNarrow), the
// base offset (8 bytes), the handles (8n bytes narrow, 16n wide), offs
// (4(n+1), padded to a multiple of 8), keys and common. A search stays a
// binary search over offs and keys, as searchKeys's.
const (
	// formAbbr marks the form with the abbr array (the whole index's).
	formAbbr = 1 << iota
	// formCompact marks the compact form of an index partition.
	formCompact
	// formNarrow marks narrow handles in the compact form.
	formNarrow
)

// elidedTrailer is the trailer that the compact form does not store: that
// of the Writer's shortened separators, MakeTrailer(MaxSeqNum,
// separatorKind).
const elidedTrailer = uint64(base.MaxSeqNum)<<8 | uint64(separatorKind)

// separatorKind is the kind in a shortened separator's trailer: KindSet,
// which was KindMax until merge operands came (KindMerge). A shortened
// separator's user key is no entry's, so its kind orders it against no
// entry; it stays KindSet so that tables keep their bytes.
const separatorKind = base.KindSet

// sepTrailerStored, set in offs[i+1] of the compact form, says that
// separator i's stored bytes end with its trailer. The offsets proper are
// below it: the encoder falls back to the wide form for keys of 2 GiB or
// more.
const sepTrailerStored = 1 << 31

// compactFlatLen is the length of the compact form of n blocks.
func compactFlatLen(n, keysLen, commonLen int, narrow bool) int {
	hl := 16 * n
	if narrow {
		hl = 8 * n
	}
	return indexHeaderLen + 8 + hl + (4*(n+1)+7)&^7 + keysLen + commonLen
}

// indexEntry is what the compact decode keeps of an index entry between
// its walk over the block and its copy into the form: where its separator
// lies in the block, and its handle. No pointers, so that filling a pooled
// slice of them costs no write barriers.
type indexEntry struct {
	start, end uint32
	h          block.Handle
}

// encodeIndexCompactWith decodes the index partition block data into the
// compact form, in a buffer from alloc (make when nil), and returns it,
// keeping the entries in *entries (a pooled scratch, grown as needed).
// Errors are as for newIndexTable. elide says whether shortened
// separators' trailers are left out (false only for measuring what that
// gains). Keys that would reach maxKeys bytes (sepTrailerStored, 2 GiB,
// except in tests), which the offsets cannot mark trailers in, and a block
// whose keys share prefixes, which the Writer never writes for an index,
// get the wide partition form instead (see encodeIndexPartition), which
// viewIndexTable reads as well.
//
// It walks the block once, keeping each entry's place and handle in
// *entries, and then copies from the block into the form, whose size only
// the walk tells: walking and decoding the block a second time, as
// encodeIndexTableWith does, made a decode about a third slower
// (BenchmarkIndexForm/decode/compact: 3.84 against 2.80 us), and the
// decode is what every cache miss of a partition pays besides its read.
func encodeIndexCompactWith(data []byte, alloc func(n int) []byte, entries *[]indexEntry, elide bool, maxKeys uint64) ([]byte, error) {
	if uint64(len(data)) > math.MaxUint32 {
		// Beyond what indexEntry's offsets address.
		return encodeIndexTableWith(data, alloc, false, decodeIndexValue)
	}
	var it block.Walker
	if err := it.Init(data); err != nil {
		return nil, err
	}
	es := (*entries)[:0]
	defer func() { *entries = es[:0] }()
	size, elided := 0, 0
	var common []byte
	var first uint64
	narrow := true
	for it.Next() {
		sep := it.Key()
		if len(sep) < base.TrailerLen {
			return nil, base.CorruptionErrorf("separator %d, %q, is shorter than a %d-byte trailer", len(es), sep, base.TrailerLen)
		}
		if !it.KeyInBlock() {
			// A key rebuilt from a shared prefix, which an index block
			// the Writer wrote (restart interval 1) does not have: the
			// wide form takes any block.
			return encodeIndexTableWith(data, alloc, false, decodeIndexValue)
		}
		h, err := decodeIndexValue(len(es), it.Value())
		if err != nil {
			return nil, err
		}
		uk := sep[:len(sep)-base.TrailerLen]
		if len(es) == 0 {
			common = uk
			first = h.Offset
		} else {
			common = common[:commonPrefix(common, uk)]
		}
		narrow = narrow && fitsNarrow(h, first)
		if elide && binary.LittleEndian.Uint64(sep[len(uk):]) == elidedTrailer {
			elided++
		}
		size += len(sep)
		start := uint32(uintptr(unsafe.Pointer(unsafe.SliceData(sep))) - uintptr(unsafe.Pointer(unsafe.SliceData(data))))
		es = append(es, indexEntry{start: start, end: start + uint32(len(sep)), h: h})
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	n := len(es)
	keysLen := size - n*len(common) - elided*base.TrailerLen
	if uint64(keysLen) >= maxKeys {
		return encodeIndexTableWith(data, alloc, false, decodeIndexValue)
	}
	buf := allocAligned(compactFlatLen(n, keysLen, len(common), narrow), alloc)
	hdr := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(buf))), 5)
	hdr[0], hdr[1], hdr[2], hdr[3], hdr[4] = uint64(n), uint64(keysLen), uint64(len(common)), formCompact, first
	if narrow {
		hdr[3] |= formNarrow
	}
	x := viewIndexTable(buf)
	copy(x.common, common)
	cl := len(common)
	x.offs[0] = 0
	pos := 0
	for i, e := range es {
		sep := data[e.start:e.end]
		ukEnd := len(sep) - base.TrailerLen
		if narrow {
			x.narrow[2*i], x.narrow[2*i+1] = uint32(e.h.Offset-first), uint32(e.h.Length)
		} else {
			x.handles[i] = e.h
		}
		pos += copy(x.keys[pos:], sep[cl:ukEnd])
		end := uint32(pos)
		if !elide || binary.LittleEndian.Uint64(sep[ukEnd:]) != elidedTrailer {
			pos += copy(x.keys[pos:], sep[ukEnd:])
			end = uint32(pos) | sepTrailerStored
		}
		x.offs[i+1] = end
	}
	return buf, nil
}

// fitsNarrow reports whether h has a narrow form relative to the base
// offset first.
func fitsNarrow(h block.Handle, first uint64) bool {
	return h.Offset >= first && h.Offset-first <= math.MaxUint32 && h.Length <= math.MaxUint32
}

// viewCompact is viewIndexTable for the compact form, of the header's n,
// key and common lengths and form flags.
func viewCompact(buf []byte, n, keysLen, commonLen int, form uint64) indexTable {
	p := unsafe.Pointer(unsafe.SliceData(buf))
	x := indexTable{n: n, compact: true, base: *(*uint64)(unsafe.Add(p, indexHeaderLen))}
	off := uintptr(indexHeaderLen + 8)
	narrow := form&formNarrow != 0
	// Not for n == 0: as in viewIndexTable, a pointer there would reach
	// past the buffer.
	if n > 0 {
		if narrow {
			x.narrow = unsafe.Slice((*uint32)(unsafe.Add(p, off)), 2*n)
		} else {
			x.handles = unsafe.Slice((*block.Handle)(unsafe.Add(p, off)), n)
		}
	}
	if narrow {
		off += uintptr(8 * n)
	} else {
		off += uintptr(16 * n)
	}
	x.offs = unsafe.Slice((*uint32)(unsafe.Add(p, off)), n+1)
	off += uintptr((4*(n+1) + 7) &^ 7)
	x.keys = buf[off : int(off)+keysLen : int(off)+keysLen]
	off += uintptr(keysLen)
	x.common = buf[off : int(off)+commonLen : int(off)+commonLen]
	return x
}

// entry returns, in the compact form, separator i's user key without
// common, and its trailer.
func (x *indexTable) entry(i int) ([]byte, uint64) {
	start, end := x.offs[i]&^sepTrailerStored, x.offs[i+1]
	if end&sepTrailerStored == 0 {
		return x.keys[start:end:end], elidedTrailer
	}
	end &^= sepTrailerStored
	t := end - base.TrailerLen
	return x.keys[start:t:t], binary.LittleEndian.Uint64(x.keys[t:end])
}

// searchCompact is searchKeys for the compact form.
func (x *indexTable) searchCompact(lo, hi int, key []byte) int {
	cl := len(x.common)
	n := len(key) - base.TrailerLen
	uk, trailer := key[cl:n], binary.LittleEndian.Uint64(key[n:])
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		s, st := x.entry(mid)
		c := bytes.Compare(s, uk)
		if c < 0 || c == 0 && st > trailer {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// compareUserKeyCompact is compareUserKey for the compact form.
func (x *indexTable) compareUserKeyCompact(i int, k []byte) int {
	cl := len(x.common)
	p := min(cl, len(k))
	if c := bytes.Compare(x.common[:p], k[:p]); c != 0 {
		return c
	}
	if len(k) < cl {
		// k is a proper prefix of common, and so of the user key.
		return 1
	}
	s, _ := x.entry(i)
	return bytes.Compare(s, k[cl:])
}

// compareSepCompact is compareSep for the compact form.
func (x *indexTable) compareSepCompact(i int, key []byte) int {
	n := len(key) - base.TrailerLen
	if c := x.compareUserKeyCompact(i, key[:n]); c != 0 {
		return c
	}
	_, st := x.entry(i)
	switch kt := binary.LittleEndian.Uint64(key[n:]); {
	case st > kt:
		return -1
	case st < kt:
		return 1
	}
	return 0
}
