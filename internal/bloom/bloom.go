package bloom

import (
	"math"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// maxProbes bounds k. Filters with more probes are not ones this package
// wrote (see the package doc), and more probes cost lookups for no gain.
const maxProbes = 30

// minBits is the smallest bit array: very small tables would otherwise get
// filters with a high false-positive rate.
const minBits = 64

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

// numProbes returns k for bitsPerKey: round(bitsPerKey * ln 2) in [1, 30].
func numProbes(bitsPerKey int) int {
	k := int(math.Round(float64(bitsPerKey) * math.Ln2))
	return min(max(k, 1), maxProbes)
}

// Finish appends the filter over the keys added since the last Reset to dst
// and returns the extended slice, which belongs to the caller (it reuses dst's
// memory when dst has room). It does not reset the Builder.
func (b *Builder) Finish(dst []byte) []byte {
	bits := max(uint64(len(b.hashes))*uint64(b.bitsPerKey), minBits)
	bits = (bits + 7) &^ 7
	nBytes := int(bits / 8)

	start := len(dst)
	dst = slices.Grow(dst, nBytes+1)[:start+nBytes+1]
	array := dst[start : start+nBytes]
	clear(array)
	k := numProbes(b.bitsPerKey)
	dst[start+nBytes] = byte(k)

	if bits <= math.MaxUint32 {
		// The same probes with 32-bit division, which is faster.
		m := uint32(bits)
		for _, h := range b.hashes {
			delta := h>>17 | h<<15
			for j := 0; j < k; j++ {
				pos := h % m
				array[pos/8] |= 1 << (pos % 8)
				h += delta
			}
		}
		return dst
	}
	for _, h := range b.hashes {
		delta := h>>17 | h<<15
		for j := 0; j < k; j++ {
			pos := uint64(h) % bits
			array[pos/8] |= 1 << (pos % 8)
			h += delta
		}
	}
	return dst
}

// MayContain reports whether key may have been added to the filter. false
// means it certainly was not. A malformed filter returns true. filter is not
// retained. It is safe to call concurrently on the same filter.
func MayContain(filter, key []byte) bool {
	return MayContainHash(filter, Hash(key))
}

// MayContainHash is MayContain for a key whose Hash is h.
func MayContainHash(filter []byte, h uint32) bool {
	if len(filter) < 2 {
		return true
	}
	k := int(filter[len(filter)-1])
	if k == 0 || k > maxProbes {
		return true
	}
	array := filter[:len(filter)-1]
	bits := uint64(len(array)) * 8
	delta := h>>17 | h<<15
	if bits <= math.MaxUint32 {
		// The same probes with 32-bit division, which is faster; every
		// filter of a realistic table takes this path.
		m := uint32(bits)
		for j := 0; j < k; j++ {
			pos := h % m
			if array[pos/8]&(1<<(pos%8)) == 0 {
				return false
			}
			h += delta
		}
		return true
	}
	for j := 0; j < k; j++ {
		pos := uint64(h) % bits
		if array[pos/8]&(1<<(pos%8)) == 0 {
			return false
		}
		h += delta
	}
	return true
}
