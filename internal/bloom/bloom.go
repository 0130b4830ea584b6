package bloom

import (
	"math"
	"slices"
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

// EncodingBlocked is the last byte of every filter this package writes: the
// cache-line-blocked encoding of the package doc. Part of the file format; do
// not change.
const EncodingBlocked = 0xff

// LineSize is the size of a filter line in bytes: every probe of a key falls
// in one line. Part of the file format; do not change.
const LineSize = 64

// trailerLen is the k byte and the encoding byte after the lines.
const trailerLen = 2

// golden is the multiplier of the probe sequence (2^32 / the golden ratio).
// Part of the file format; do not change.
const golden = 0x9e3779b9

// maxProbes bounds k. Filters with more probes are not ones this package
// wrote (see the package doc), and more probes cost lookups for no gain.
const maxProbes = 30

// probesByBitsPerKey[b] is k for b bits per key (see the package doc's False
// positives; computed for 512-bit lines with a Poisson model of the line
// loads). Bits per key above the table use its last entry: the rate is then
// below 1e-6 anyway.
var probesByBitsPerKey = [...]uint8{
	0,
	1, 1, 2, 3, 3, 4, 5, 5, 6, 6, // 1-10
	7, 8, 8, 9, 9, 9, 10, 10, 11, 11, // 11-20
	11, 12, 12, 12, 13, 13, 13, 14, 14, 14, // 21-30
	14, 15, 15, 15, 15, 16, 16, 16, 16, 17, // 31-40
}

// numProbes returns k for bitsPerKey (>= 1).
func numProbes(bitsPerKey int) int {
	return int(probesByBitsPerKey[min(bitsPerKey, len(probesByBitsPerKey)-1)])
}

// Hash returns the hash of key that the filter is built from. A caller that
// probes several filters for one key (a MultiGet) hashes it once and calls
// MayContainHash for each. key is only read during the call.
func Hash(key []byte) uint32 { return uint32(xxhash.Sum64(key)) }

// Builder accumulates the hashes of keys and writes a filter over them.
//
// A Builder is not safe for concurrent use.
type Builder struct {
	bitsPerKey int
	hashes     []uint32
}

// NewBuilder returns a Builder for filters with bitsPerKey bits per key.
// bitsPerKey below 1 is treated as 1.
func NewBuilder(bitsPerKey int) *Builder {
	return &Builder{bitsPerKey: max(bitsPerKey, 1)}
}

// AddKey adds key to the filter. Adding a key twice does no harm but costs
// space: callers that see keys in order skip duplicates. key is not retained.
func (b *Builder) AddKey(key []byte) { b.hashes = append(b.hashes, Hash(key)) }

// AddHash adds a key by its Hash.
func (b *Builder) AddHash(h uint32) { b.hashes = append(b.hashes, h) }

// NumKeys returns the number of keys added since the last Reset.
func (b *Builder) NumKeys() int { return len(b.hashes) }

// Reset forgets the keys added so far, keeping memory for reuse.
func (b *Builder) Reset() { b.hashes = b.hashes[:0] }

// numLines returns L for n keys at bitsPerKey: enough 512-bit lines for
// n*bitsPerKey bits, at least one, at most 2^32-1 (a 256 GiB filter; the
// limit keeps line numbers 32-bit).
func numLines(n, bitsPerKey int) uint32 {
	bits := uint64(n) * uint64(bitsPerKey)
	return uint32(min(max((bits+8*LineSize-1)/(8*LineSize), 1), math.MaxUint32))
}

// Size returns the length of the filter Finish would write for n keys at
// bitsPerKey bits per key (below 1 treated as 1).
func Size(n, bitsPerKey int) int {
	return int(numLines(n, max(bitsPerKey, 1)))*LineSize + trailerLen
}

// Finish appends the filter over the keys added since the last Reset to dst
// and returns the extended slice, which belongs to the caller (it reuses dst's
// memory when dst has room). It does not reset the Builder.
func (b *Builder) Finish(dst []byte) []byte {
	lines := numLines(len(b.hashes), b.bitsPerKey)
	nBytes := int(lines) * LineSize
	k := numProbes(b.bitsPerKey)

	start := len(dst)
	dst = slices.Grow(dst, nBytes+trailerLen)[:start+nBytes+trailerLen]
	array := dst[start : start+nBytes]
	clear(array)
	dst[start+nBytes] = byte(k)
	dst[start+nBytes+1] = EncodingBlocked
	for _, h := range b.hashes {
		off := int(lineOf(h, lines)) * LineSize
		line := (*[LineSize]byte)(array[off : off+LineSize])
		p := h * golden
		for range k {
			bit := p >> 23
			line[bit>>3] |= 1 << (bit & 7)
			p *= golden
		}
	}
	return dst
}

// lineOf maps h to a line in [0, lines): the high bits of h scaled down, a
// multiply and a shift instead of a division.
func lineOf(h, lines uint32) uint32 { return uint32((uint64(h) * uint64(lines)) >> 32) }

// MayContainHash reports whether a key whose Hash is h may have been added
// to the filter. false means it certainly was not. A malformed filter
// returns true. filter is not retained. It is safe to call concurrently on
// the same filter. Callers hash a key once for all the filters they probe.
func MayContainHash(filter []byte, h uint32) bool {
	n := len(filter) - trailerLen
	if n < LineSize || n%LineSize != 0 || filter[n+1] != EncodingBlocked || uint64(n/LineSize) > math.MaxUint32 {
		return true
	}
	k := int(filter[n])
	if k == 0 || k > maxProbes {
		return true
	}
	off := int(lineOf(h, uint32(n/LineSize))) * LineSize
	// A pointer to an array lets the compiler drop the bounds checks: a bit
	// index >> 3 is below 64.
	line := (*[LineSize]byte)(filter[off : off+LineSize])
	p := h * golden
	// All k probes, then one branch: which probe finds a clear bit is
	// unpredictable, and the probes share one cache line, so stopping early
	// saves less than the mispredicted branches cost.
	var set byte = 1
	for range k {
		bit := p >> 23
		set &= line[bit>>3] >> (bit & 7)
		p *= golden
	}
	return set&1 != 0
}

// CacheAligned returns filter itself when its lines start on a 64-byte
// boundary of memory, and otherwise a copy that does: a line then spans one
// cache line rather than two, so a query costs one cache miss. A reader that
// keeps a filter for a long time aligns it once. The result may share
// filter's memory.
func CacheAligned(filter []byte) []byte {
	if len(filter) == 0 || uintptr(unsafe.Pointer(unsafe.SliceData(filter)))%LineSize == 0 {
		return filter
	}
	aligned := AlignedIn(make([]byte, len(filter)+LineSize-1), len(filter))
	copy(aligned, filter)
	return aligned
}

// AlignedIn returns the n bytes of buf that start at its first 64-byte
// boundary of memory; buf must hold at least n+LineSize-1 bytes. A filter
// copied there has its lines on cache lines (see CacheAligned), for a
// caller that owns the buffer, such as a block cache entry.
func AlignedIn(buf []byte, n int) []byte {
	skip := int(-uintptr(unsafe.Pointer(unsafe.SliceData(buf)))) & (LineSize - 1)
	return buf[skip : skip+n : skip+n]
}
