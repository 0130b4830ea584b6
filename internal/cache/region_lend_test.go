package cache

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRegionLendsLargerObjects is TestRegionFollowsTheMix the other way
// round, as the 4 GiB bench has it after its scan: a cache full of large
// objects (data blocks), half of them kept by hits scattered over every
// slab, then smaller ones (index and filter partitions). Until a slab of
// the large class empties, the small class has no slab; the region lends
// it the large class's free objects rather than leave it to the Go heap.
func TestRegionLendsLargerObjects(t *testing.T) {
	const capacity = 8 << 20
	c := offHeapOrSkip(t, capacity)
	rng := rand.New(rand.NewPCG(7, 8))
	n := capacity / 6000
	for i := range n {
		k := Key{1, 1, uint64(i)}
		c.Set(k, makeValue(c.Alloc(6000), k, 1)).Release()
	}
	// Hits on a random half: CLOCK evicts the others first, so every slab
	// keeps about half its objects while the small ones come in.
	for i := range n {
		if rng.IntN(2) == 0 {
			if h, ok := c.Get(Key{1, 1, uint64(i)}); ok {
				h.Release()
			}
		}
	}
	var on, off int64
	for i := range n / 2 {
		b := c.Alloc(4400)
		if c.OffHeap(b) {
			on += int64(len(b))
		} else {
			off += int64(len(b))
		}
		k := Key{1, 2, uint64(i)}
		c.Set(k, makeValue(b, k, 1)).Release()
	}
	t.Logf("small objects: %d bytes off the Go heap, %d on it", on, off)
	require.Less(t, off*10, on+off, "more than a tenth of the small objects came from the Go heap")
	checkRegion(t, c.region)
	requireQuiescent(t, c)
}
