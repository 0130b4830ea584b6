package main

import "math/bits"

// keyOrder is a fixed pseudo-random permutation of [0, n), the fill's key
// order, computed per position instead of stored: a stored []int
// permutation was 8 bytes a key of every child's heap (128 MiB at 4 GiB of
// data), and so counted in every engine's peak RSS, doubled by the Go
// GC's headroom.
//
// It is a four-round Feistel network over the smallest domain of an even
// number of bits that holds n, with cycle walking: a value at or beyond n
// is enciphered again until it falls below n. A Feistel network is a
// bijection of its domain whatever its round function, and cycle walking
// from a position below n must come back below n (at the latest to the
// position itself, going round its cycle), so at is a bijection of
// [0, n). The domain is less than 4n, so a position takes fewer than four
// encipherments on average.
type keyOrder struct {
	n    uint64
	half uint   // bits in each half of the domain
	mask uint64 // the low half's bits
	keys [4]uint64
}

func newKeyOrder(n int, seed uint64) keyOrder {
	half := max(1, (bits.Len64(uint64(max(n, 1)-1))+1)/2)
	o := keyOrder{n: uint64(n), half: uint(half), mask: 1<<half - 1}
	for i := range o.keys {
		seed += 0x9e3779b97f4a7c15
		o.keys[i] = mix(seed)
	}
	return o
}

// at returns the key filled at position i, 0 <= i < n.
func (o *keyOrder) at(i int) int {
	x := uint64(i)
	for {
		x = o.encipher(x)
		if x < o.n {
			return int(x)
		}
	}
}

func (o *keyOrder) encipher(x uint64) uint64 {
	l, r := x>>o.half, x&o.mask
	for _, k := range o.keys {
		l, r = r, l^(mix(r^k)&o.mask)
	}
	return l<<o.half | r
}

// mix is SplitMix64's finalizer: every input bit affects every output bit.
func mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
