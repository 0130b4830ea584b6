package cache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/shaledb/shale/internal/invariants"
	"github.com/stretchr/testify/require"
)

func TestSizeClasses(t *testing.T) {
	// Class sizes strictly increase from 64 B to 16 MiB.
	require.Equal(t, 64, classSize(0))
	require.Equal(t, 16<<20, classSize(numClasses-1))
	for cl := 1; cl < numClasses; cl++ {
		require.Greater(t, classSize(cl), classSize(cl-1), "class %d", cl)
	}
	for _, tc := range []struct {
		n         int
		wantCeil  int // class size, or -1
		wantFloor int // class size, or -1
	}{
		{n: -1, wantCeil: -1, wantFloor: -1},
		{n: 0, wantCeil: -1, wantFloor: -1},
		{n: 1, wantCeil: 64, wantFloor: -1},
		{n: 63, wantCeil: 64, wantFloor: -1},
		{n: 64, wantCeil: 64, wantFloor: 64},
		{n: 65, wantCeil: 72, wantFloor: 64},
		{n: 127, wantCeil: 128, wantFloor: 120},
		{n: 128, wantCeil: 128, wantFloor: 128},
		{n: 4096, wantCeil: 4096, wantFloor: 4096},
		{n: 4097, wantCeil: 4608, wantFloor: 4096},
		{n: 4500, wantCeil: 4608, wantFloor: 4096},
		{n: 16 << 20, wantCeil: 16 << 20, wantFloor: 16 << 20},
		{n: 16<<20 + 1, wantCeil: -1, wantFloor: -1},
	} {
		t.Run(fmt.Sprintf("n=%d", tc.n), func(t *testing.T) {
			size := func(cl int) int {
				if cl < 0 {
					return -1
				}
				return classSize(cl)
			}
			require.Equal(t, tc.wantCeil, size(ceilClass(tc.n)))
			require.Equal(t, tc.wantFloor, size(floorClass(tc.n)))
		})
	}
	// Exhaustively for small sizes and at random for large ones: ceilClass is
	// the smallest class that fits, wasting less than 1/8 (or 64 bytes), and
	// floorClass the largest that does not exceed.
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(n int) {
		cl := ceilClass(n)
		switch size := classSize(cl); {
		case size < n:
			t.Fatalf("n=%d: ceil class %d holds only %d", n, cl, size)
		case cl > 0 && classSize(cl-1) >= n:
			t.Fatalf("n=%d: ceil class %d is not the smallest that fits", n, cl)
		case size-n >= max(n/8, 64):
			t.Fatalf("n=%d: class size %d wastes too much", n, size)
		}
		if n < 64 {
			return
		}
		if fl := floorClass(n); classSize(fl) > n || (fl < numClasses-1 && classSize(fl+1) <= n) {
			t.Fatalf("n=%d: floor class %d (size %d) is not the largest within n", n, fl, classSize(fl))
		}
	}
	for n := 1; n <= 1<<16; n++ {
		check(n)
	}
	for range 100000 {
		check(1 + rng.IntN(16<<20))
	}
}

func TestAllocRecycles(t *testing.T) {
	const rounds = 100
	// The Go heap's pools; region.go's tests cover the off-heap free lists.
	c := NewWithOptions(1<<20, Options{GoHeap: true})
	reused := 0
	for i := range rounds {
		k := Key{1, 1, uint64(i)}
		b := c.Alloc(4000)
		require.Len(t, b, 4000)
		require.Equal(t, classSize(ceilClass(4000)), cap(b))
		p := unsafe.SliceData(b)
		c.Set(k, b).Release()
		c.EvictFile(1, 1) // frees the entry: nothing else references it
		if unsafe.SliceData(c.Alloc(4000)) == p {
			reused++
		}
	}
	// sync.Pool may drop items (a quarter of them under -race) and is per
	// P, so not every round reuses, but most must.
	require.Greater(t, reused, rounds/3, "buffers reused in %d of %d rounds", reused, rounds)

	// A buffer that did not come from Alloc is recycled too, into the
	// largest class it can serve.
	reused = 0
	for i := range rounds {
		b := make([]byte, 5000)
		p := unsafe.SliceData(b)
		c.Set(Key{1, 1, uint64(i)}, b).Release()
		c.EvictFile(1, 1)
		if got := c.Alloc(4600); unsafe.SliceData(got) == p {
			require.Equal(t, 5000, cap(got))
			reused++
		}
	}
	require.Greater(t, reused, rounds/3)

	// A buffer is never handed out while a handle references it.
	k := Key{1, 1, 0}
	h := c.Set(k, makeValue(c.Alloc(4000), k, 1))
	c.EvictFile(1, 1)
	for range 20 {
		require.NotEqual(t, unsafe.SliceData(h.Value()), unsafe.SliceData(c.Alloc(4000)),
			"a referenced buffer was handed out")
	}
	_, err := checkValue(h.Value(), k)
	require.NoError(t, err)
	h.Release()
}

func TestAllocDetectsWriteAfterRelease(t *testing.T) {
	if !invariants.Enabled {
		t.Skip("poison is checked in invariants builds only")
	}
	c := New(1 << 20)
	require.Panics(t, func() {
		for i := range 50 { // sync.Pool may drop a few; one reuse suffices
			k := Key{1, 1, uint64(i)}
			h := c.Set(k, c.Alloc(4000))
			stale := h.Value()
			c.EvictFile(1, 1)
			h.Release()
			require.True(t, checkPoison(stale))
			stale[100] = 1 // use after release
			c.Alloc(4000)
		}
	})
}

func TestZeroAllocHit(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	c := New(1 << 20)
	k := Key{1, 1, 0}
	c.Set(k, make([]byte, 4096)).Release()
	ctx := context.Background()
	load := func() ([]byte, error) { panic("miss") }
	for _, tc := range []struct {
		name string
		fn   func()
	}{
		{name: "Get+Release", fn: func() {
			h, ok := c.Get(k)
			if !ok {
				panic("miss")
			}
			h.Release()
		}},
		{name: "GetOrLoad+Release", fn: func() {
			h, _, _ := c.GetOrLoad(ctx, k, load)
			h.Release()
		}},
		{name: "Get miss", fn: func() { c.Get(Key{9, 9, 9}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Zero(t, testing.AllocsPerRun(1000, tc.fn))
		})
	}
}

// TestMissPathAllocs bounds the allocations of a miss that fills the cache
// with a recycled buffer: in steady state Alloc, Set and the eviction they
// cause reuse the buffer and the entry of the block evicted before.
func TestMissPathAllocs(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	c := newWithShards(256<<10, 4)
	var i uint64
	set := func() {
		k := Key{1, 1, i * 4096}
		i++
		c.Set(k, c.Alloc(4096)).Release()
	}
	for range 1000 { // fill the cache and the pools
		set()
	}
	require.Less(t, testing.AllocsPerRun(1000, set), 0.1)

	ctx := context.Background()
	getOrLoad := func() {
		k := Key{1, 1, i * 4096}
		i++
		h, _, _ := c.GetOrLoad(ctx, k, func() ([]byte, error) { return c.Alloc(4096), nil })
		h.Release()
	}
	// A load nobody waits for allocates no flight record, and the closure
	// does not escape.
	require.Less(t, testing.AllocsPerRun(1000, getOrLoad), 0.1)
}
