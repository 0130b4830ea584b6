package cache

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/shaledb/shale/internal/invariants"
	"github.com/stretchr/testify/require"
)

// offHeapOrSkip returns a cache of the given capacity with an off-heap
// region, skipping the test where the platform has none.
func offHeapOrSkip(t *testing.T, capacity int64) *Cache {
	t.Helper()
	c := New(capacity)
	if !c.HasOffHeap() {
		t.Skipf("no off-heap region on %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	return c
}

func TestRegionRecyclesByClass(t *testing.T) {
	c := offHeapOrSkip(t, 8<<20)
	for i := range 100 {
		k := Key{1, 1, uint64(i)}
		b := c.Alloc(4000)
		require.True(t, c.OffHeap(b))
		require.Equal(t, classSize(ceilClass(4000)), cap(b))
		p := addr(b)
		c.Set(k, b).Release()
		c.EvictFile(1, 1) // frees the entry: nothing else references it

		// Another class never gets the object; its own class gets it back
		// at once (the free lists are last in, first out).
		other := c.Alloc(9000)
		require.True(t, c.OffHeap(other))
		require.NotEqual(t, p, addr(other))
		again := c.Alloc(4000)
		require.Equal(t, p, addr(again), "round %d", i)
		c.Free(other)
		c.Free(again)
	}
	requireQuiescent(t, c)

	// A buffer handed over with its capacity cut (an aligned index view,
	// say) goes back whole, to its class.
	b := c.Alloc(5000)
	p := addr(b)
	c.Set(Key{2, 1, 0}, b[:5000:5000]).Release()
	c.EvictFile(2, 1)
	got := c.Alloc(4700) // the same class as 5000
	require.Equal(t, p, addr(got))
	require.Equal(t, classSize(ceilClass(5000)), cap(got))
	c.Free(got)

	// A referenced buffer is never handed out again.
	k := Key{3, 1, 0}
	h := c.Set(k, makeValue(c.Alloc(4000), k, 1))
	c.EvictFile(3, 1)
	var held [][]byte
	for range 20 {
		b := c.Alloc(4000)
		require.NotEqual(t, addr(h.Value()), addr(b), "a referenced buffer was handed out")
		held = append(held, b)
	}
	_, err := checkValue(h.Value(), k)
	require.NoError(t, err)
	h.Release()
	for _, b := range held {
		c.Free(b)
	}
	requireQuiescent(t, c)
}

func TestRegionFallsBackToGoHeap(t *testing.T) {
	// The smallest region: one slab.
	c := offHeapOrSkip(t, 100)
	require.Len(t, c.region.mem, slabSize)
	size := classSize(ceilClass(4096))
	var objs [][]byte
	for range slabSize / size {
		b := c.Alloc(4096)
		require.True(t, c.OffHeap(b))
		objs = append(objs, b)
	}
	// The slab is used up, and no slab is left for this class or another.
	require.False(t, c.OffHeap(c.Alloc(4096)))
	require.False(t, c.OffHeap(c.Alloc(64)))
	// Larger than a slab: always the Go heap.
	big := offHeapOrSkip(t, 64<<20)
	require.False(t, big.OffHeap(big.Alloc(slabSize+1)))
	require.True(t, big.OffHeap(big.Alloc(slabSize)))

	// A freed object serves its class again.
	c.Free(objs[3])
	require.Equal(t, addr(objs[3]), addr(c.Alloc(4096)))
	require.False(t, c.OffHeap(c.Alloc(4096)))
	// A Go heap buffer in the cache works as before, and Free ignores it.
	k := Key{1, 1, 0}
	heap := c.Alloc(4096)
	h := c.Set(k, makeValue(heap, k, 1))
	_, err := checkValue(h.Value(), k)
	require.NoError(t, err)
	h.Release()
	c.Free(make([]byte, 10))
}

func TestOffHeap(t *testing.T) {
	var nilCache *Cache
	require.False(t, nilCache.OffHeap(make([]byte, 10)))
	require.False(t, nilCache.HasOffHeap())

	goHeap := NewWithOptions(8<<20, Options{GoHeap: true})
	require.False(t, goHeap.HasOffHeap())
	require.False(t, goHeap.OffHeap(goHeap.Alloc(4096)))

	c := offHeapOrSkip(t, 8<<20)
	b := c.Alloc(4096)
	for _, tc := range []struct {
		name string
		b    []byte
		want bool
	}{
		{"region buffer", b, true},
		{"its tail", b[4000:], true},
		{"empty with capacity", b[:0], true},
		{"no capacity", b[4096:], false},
		{"nil", nil, false},
		{"Go heap", make([]byte, 4096), false},
		{"the region's last byte", c.region.mem[len(c.region.mem)-1:], true},
		{"another cache's region", offHeapOrSkip(t, 8<<20).Alloc(64), false},
	} {
		require.Equal(t, tc.want, c.OffHeap(tc.b), tc.name)
	}
	c.Free(b)
}

func TestRegionPoison(t *testing.T) {
	if !invariants.Enabled {
		t.Skip("poison and double frees are checked in invariants builds only")
	}
	c := offHeapOrSkip(t, 8<<20)
	k := Key{1, 1, 0}
	h := c.Set(k, c.Alloc(4000))
	stale := h.Value()
	c.EvictFile(1, 1)
	h.Release()
	require.True(t, c.OffHeap(stale))
	require.True(t, checkPoison(stale), "a released off-heap buffer is poisoned")
	stale[100] = 1 // use after release
	require.Panics(t, func() { c.Alloc(4000) })

	b := c.Alloc(9000)
	c.Free(b)
	require.Panics(t, func() { c.Free(b) }, "double Free")
	require.Panics(t, func() { c.Free(c.region.mem[slabSize*3:]) }, "Free of an object never handed out")

	// The counter of live objects sees leaks.
	before := c.region.objectsInUse()
	leak := c.Alloc(100)
	require.Equal(t, before+1, c.region.objectsInUse())
	c.Free(leak)
	require.Equal(t, before, c.region.objectsInUse())
}

// TestRegionUnmappedWhenUnreachable checks that a cache's region is
// unmapped once the cache is garbage, and not before, from the process's
// own list of mappings.
func TestRegionUnmappedWhenUnreachable(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/maps")
	}
	c := offHeapOrSkip(t, 8<<20)
	start := addr(c.region.mem)
	mapped := func() bool {
		maps, err := os.ReadFile("/proc/self/maps")
		require.NoError(t, err)
		return bytes.Contains(maps, fmt.Appendf(nil, "\n%x-", start)) || bytes.HasPrefix(maps, fmt.Appendf(nil, "%x-", start))
	}
	k := Key{1, 1, 0}
	h := c.Set(k, makeValue(c.Alloc(4096), k, 1))
	c = nil
	// A handle keeps the cache, and so the region, alive.
	for range 3 {
		runtime.GC()
	}
	require.True(t, mapped())
	_, err := checkValue(h.Value(), k)
	require.NoError(t, err)
	h.Release()
	h = Handle{}
	deadline := time.Now().Add(10 * time.Second)
	for mapped() {
		require.True(t, time.Now().Before(deadline), "the region of an unreachable cache is still mapped")
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}

// addr is the address of b's memory: testify compares pointers by what they
// point to, so tests compare addresses.
func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
