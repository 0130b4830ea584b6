package cache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/invariants"
	"github.com/stretchr/testify/require"
)

// TestChargeIsAllocationClass pins that an entry is charged the size class
// its buffer occupies, not the length asked for: a 4097-byte block keeps a
// 4608-byte buffer from everything else.
func TestChargeIsAllocationClass(t *testing.T) {
	for _, goHeap := range []bool{false, true} {
		for _, n := range []int{1, 64, 65, 4096, 4097, 4608, 70000} {
			t.Run(fmt.Sprintf("goheap=%t/n=%d", goHeap, n), func(t *testing.T) {
				c := newCache(1<<20, 1, ^uint64(0), Options{GoHeap: goHeap})
				v := c.Alloc(n)
				want := classSize(ceilClass(n))
				require.Equal(t, want, cap(v))
				h := c.Set(Key{ID: 1, FileNum: 1}, v)
				require.Equal(t, int64(want+EntryOverhead), c.Size())
				h.Release()
				c.EvictFile(1, 1)
				require.Zero(t, c.Size())
				requireQuiescent(t, c)
			})
		}
	}
}

// TestChargeIgnoresSpareCapacity checks that a value is charged the class
// of its length whatever its buffer's capacity, so that a buffer the
// off-heap region lent from a larger class costs what any other does.
func TestChargeIgnoresSpareCapacity(t *testing.T) {
	c := newCache(1<<20, 1, ^uint64(0), Options{GoHeap: true})
	h := c.Set(Key{ID: 1, FileNum: 1}, make([]byte, 4097, 8192))
	require.Equal(t, int64(4608+EntryOverhead), c.Size())
	h.Release()
	c.EvictFile(1, 1)
	require.Zero(t, c.Size())
}

// TestCapacityBoundsAllocations fills caches with blocks of random lengths,
// as a table's compressed blocks are, and checks that the buffers the
// cache's entries keep (their capacities, rounding included) never add up to
// more than its capacity, or, off-heap, than the region's slack beyond it
// (a lent object is charged the class of its length; see entry.charge).
func TestCapacityBoundsAllocations(t *testing.T) {
	const capacity = 256 << 10
	for _, goHeap := range []bool{false, true} {
		t.Run(fmt.Sprintf("goheap=%t", goHeap), func(t *testing.T) {
			c := newCache(capacity, 4, ^uint64(0), Options{GoHeap: goHeap, HighPriorityPoolRatio: 0.5})
			bound := int64(capacity)
			if c.region != nil {
				bound += capacity / regionSlackDiv
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range 2000 {
				n := 3000 + rng.IntN(3000)
				v := c.Alloc(n)
				pri := PriorityNormal
				if i%3 == 0 {
					pri = PriorityHigh
				}
				h, _, err := c.GetOrLoadWithPriority(context.Background(), Key{ID: 1, FileNum: uint64(1 + i%7), Offset: uint64(i)}, pri,
					func() ([]byte, error) { return v, nil })
				require.NoError(t, err)
				h.Release()
				if i%100 == 99 {
					require.LessOrEqual(t, heldBytes(c), bound, "after %d inserts", i+1)
				}
			}
			require.LessOrEqual(t, heldBytes(c), bound)
			require.Greater(t, heldBytes(c), int64(capacity)/2, "the cache should be nearly full")
			requireQuiescent(t, c)
		})
	}
}

// heldBytes sums, over the indexed entries, the memory each keeps: its
// buffer's capacity and the per-entry overhead.
func heldBytes(c *Cache) int64 {
	var n int64
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for _, head := range s.entries {
			for e := head; e != nil; e = e.hashNext {
				n += int64(cap(e.buf)) + EntryOverhead
			}
		}
		s.mu.Unlock()
	}
	return n
}

// TestMaxValueSizeCountsTheClass checks that MaxValueSize is the largest
// length whose buffer from Alloc still fits a shard once charged its class.
func TestMaxValueSizeCountsTheClass(t *testing.T) {
	for _, tc := range []struct {
		room, want int
	}{
		{room: 5000, want: 4608},         // the class below 5120
		{room: 4608, want: 4608},         // exactly a class
		{room: 63, want: 0},              // below the smallest class
		{room: 64, want: 64},             // the smallest class
		{room: 20 << 20, want: 20 << 20}, // beyond the classes, Alloc is exact
	} {
		t.Run(fmt.Sprint(tc.room), func(t *testing.T) {
			c := newCache(int64(tc.room+EntryOverhead), 1, ^uint64(0), Options{GoHeap: true})
			require.Equal(t, tc.want, c.MaxValueSize())
			if tc.want == 0 || tc.want > 1<<maxClassShift {
				return
			}
			k := Key{ID: 1, FileNum: 1}
			c.Set(k, c.Alloc(tc.want)).Release()
			require.Equal(t, 1, c.Len(), "a value of MaxValueSize is cached")
			k.Offset++
			c.Set(k, c.Alloc(tc.want+1)).Release()
			_, ok := c.Get(k)
			require.False(t, ok, "a value one byte longer is not")
		})
	}
}

// TestLargeBuffersNotPooled checks that recycle keeps a freed Go heap
// buffer of a block for reuse but leaves one larger than maxPooledSize (a
// whole index or filter) to the garbage collector: a sync.Pool given such
// buffers faster than it hands them out grows the live heap.
func TestLargeBuffersNotPooled(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	for _, tc := range []struct {
		n      int
		pooled bool
	}{
		{4 << 10, true},
		{maxPooledSize, true},
		{maxPooledSize + 1, false},
		{1 << 20, false},
	} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			c := newCache(64<<20, 1, ^uint64(0), Options{GoHeap: true})
			v := c.Alloc(tc.n)
			c.Set(Key{ID: 1, FileNum: 1}, v).Release()
			c.EvictFile(1, 1)
			cl := floorClass(cap(v))
			require.GreaterOrEqual(t, cl, 0)
			// Nothing else uses the cache's pools; a sync.Pool keeps its
			// items across one collection (two would have to pass here).
			x := c.bufs[cl].Get()
			require.Equal(t, tc.pooled, x != nil)
		})
	}
}
