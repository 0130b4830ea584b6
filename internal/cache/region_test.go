package cache

import (
	"bytes"
	"fmt"
	"math/rand/v2"
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
	// keeper keeps its slab serving its class (an empty slab goes back to
	// the pool: TestRegionSlabsChangeClass).
	keeper := c.Alloc(4000)
	for i := range 100 {
		k := Key{1, 1, uint64(i)}
		b := c.Alloc(4000)
		require.True(t, c.OffHeap(b))
		require.Equal(t, classSize(ceilClass(4000)), cap(b))
		p := addr(b)
		c.Set(k, b).Release()
		c.EvictFile(1, 1) // frees the entry: nothing else references it

		// Another class never gets an object of a slab in use; its own
		// class gets it back at once (the free lists are last in, first
		// out).
		other := c.Alloc(9000)
		require.True(t, c.OffHeap(other))
		require.NotEqual(t, p, addr(other))
		again := c.Alloc(4000)
		require.Equal(t, p, addr(again), "round %d", i)
		c.Free(other)
		c.Free(again)
	}
	c.Free(keeper)
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
	deadline := time.Now().Add(2 * time.Minute)
	for mapped() {
		require.True(t, time.Now().Before(deadline), "the region of an unreachable cache is still mapped")
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}

// addr is the address of b's memory: testify compares pointers by what they
// point to, so tests compare addresses.
func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// TestRegionSlabsChangeClass checks that a slab whose objects are all free
// serves any class: a region first filled by one class is not lost to the
// others once that class's objects are gone.
func TestRegionSlabsChangeClass(t *testing.T) {
	c := offHeapOrSkip(t, 4<<20)
	r := c.region
	slabs := len(r.slab)
	fill := func(n int) [][]byte {
		var objs [][]byte
		for {
			b := c.Alloc(n)
			if !c.OffHeap(b) {
				return objs
			}
			objs = append(objs, b)
		}
	}
	a := fill(4400)
	require.Len(t, a, slabs*(slabSize/classSize(ceilClass(4400))))
	require.Zero(t, r.freeSlabs())
	require.False(t, c.OffHeap(c.Alloc(6000)), "every slab serves the first class")
	checkRegion(t, r)

	// Emptying one slab gives it to the other class, and only that slab.
	per := slabSize / classSize(ceilClass(4400))
	for _, b := range a[per : 2*per] {
		c.Free(b)
	}
	require.Equal(t, 1, r.freeSlabs())
	b := fill(6000)
	require.Len(t, b, slabSize/classSize(ceilClass(6000)))
	checkRegion(t, r)

	for _, o := range append(a[:per], a[2*per:]...) {
		c.Free(o)
	}
	for _, o := range b {
		c.Free(o)
	}
	require.Equal(t, slabs, r.freeSlabs())
	require.Zero(t, r.objectsInUse())
	checkRegion(t, r)
	require.Len(t, fill(6000), slabs*(slabSize/classSize(ceilClass(6000))))
}

// TestRegionFollowsTheMix checks the case that made slabs movable: a cache
// full of one size of block (a scan's data blocks) that then takes in
// blocks of another size (point reads' index partitions) while evicting
// the first. The new blocks must come to live in the region, not on the Go
// heap: the cache allocates from its fullest slabs, so the emptiest ones
// drain as their blocks are evicted and go to the new class.
func TestRegionFollowsTheMix(t *testing.T) {
	const capacity = 8 << 20
	c := offHeapOrSkip(t, capacity)
	insert := func(file uint64, size, n int) {
		for i := range n {
			k := Key{1, file, uint64(i)}
			c.Set(k, makeValue(c.Alloc(size), k, 1)).Release()
		}
	}
	// Twice the capacity of each, so that the second size is inserted
	// into a cache (and a region) the first one filled.
	insert(1, 4400, 2*capacity/4400)
	insert(2, 6000, 2*capacity/6000)
	var on, off int64
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for _, head := range s.entries {
			for e := head; e != nil; e = e.hashNext {
				if c.OffHeap(e.buf) {
					on += int64(len(e.buf))
				} else {
					off += int64(len(e.buf))
				}
			}
		}
		s.mu.Unlock()
	}
	t.Logf("cached: %d bytes off the Go heap, %d on it", on, off)
	require.Less(t, off*10, on+off, "more than a tenth of the cached bytes are on the Go heap")
	checkRegion(t, c.region)
	requireQuiescent(t, c)
}

// TestRegionRandom allocates and frees objects of a few classes at random
// and checks, against a model, that live objects never overlap, that the
// counts agree, that the slab lists are consistent, and that every slab is
// back in the pool once everything is freed.
func TestRegionRandom(t *testing.T) {
	c := offHeapOrSkip(t, 3<<20)
	r := c.region
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int{100, 4400, 6000, 70000}
	type obj struct {
		b   []byte
		tag byte
	}
	var live []obj
	for step := range 50000 {
		if len(live) > 0 && (rng.IntN(100) < 48 || len(live) > 2000) {
			i := rng.IntN(len(live))
			o := live[i]
			if bytes.Count(o.b, []byte{o.tag}) != len(o.b) {
				t.Fatalf("step %d: a live object was overwritten", step)
			}
			c.Free(o.b)
			live[i] = live[len(live)-1]
			live = live[:len(live)-1]
		} else {
			b := c.Alloc(sizes[rng.IntN(len(sizes))])
			if !c.OffHeap(b) {
				continue
			}
			tag := byte(step)
			fillTag(b, tag)
			live = append(live, obj{b, tag})
		}
		if step%5000 == 0 {
			require.Equal(t, int64(len(live)), r.objectsInUse())
			checkRegion(t, r)
		}
	}
	for _, o := range live {
		c.Free(o.b)
	}
	require.Zero(t, r.objectsInUse())
	require.Equal(t, len(r.slab), r.freeSlabs())
	checkRegion(t, r)
}

// fillTag sets every byte of b to tag by doubling copies: objects are up to
// 70 KB and a byte loop, instrumented byte by byte under -race, was most of
// TestRegionRandom's time there; copy is checked as one range.
func fillTag(b []byte, tag byte) {
	if len(b) == 0 {
		return
	}
	b[0] = tag
	for n := 1; n < len(b); n *= 2 {
		copy(b[n:], b[:n])
	}
}

// checkRegion checks the region's bookkeeping: every slab is in the pool,
// its class's current slab, on the partial list its occupancy names, or
// full; and the counts agree with the slabs.
func checkRegion(t *testing.T, r *region) {
	t.Helper()
	r.mu.Lock()
	pooled := map[int32]bool{}
	for _, s := range r.pool {
		require.False(t, pooled[s], "slab %d twice in the pool", s)
		pooled[s] = true
	}
	r.mu.Unlock()
	seen := map[int32]bool{}
	for cl := range r.classes {
		rc := &r.classes[cl]
		rc.mu.Lock()
		size := classSize(cl)
		per := int32(slabSize / max(size, 1))
		var inUse int64
		if rc.cur != noSlab {
			st := &r.slab[rc.cur]
			require.Equal(t, uint8(cl), st.class)
			require.EqualValues(t, -1, st.quarter)
			require.False(t, pooled[rc.cur], "current slab %d is in the pool", rc.cur)
			seen[rc.cur] = true
		}
		for q := range quarters {
			prev := int32(noSlab)
			for s := rc.partial[q]; s != noSlab; s = r.slab[s].next {
				st := &r.slab[s]
				require.False(t, seen[s] || pooled[s], "slab %d listed twice", s)
				seen[s] = true
				require.Equal(t, uint8(cl), st.class)
				require.EqualValues(t, q, st.quarter)
				require.Equal(t, prev, st.prev)
				require.Positive(t, st.inUse)
				require.False(t, st.full(size), "full slab %d on a partial list", s)
				require.EqualValues(t, q, quarterOf(st.inUse, per))
				prev = s
			}
		}
		for s := range r.slab {
			st := &r.slab[s]
			if pooled[int32(s)] || int(st.class) != cl {
				continue
			}
			inUse += int64(st.inUse)
			require.EqualValues(t, st.carved-int32(len(st.free)), st.inUse, "slab %d", s)
			if !seen[int32(s)] {
				require.True(t, st.full(size), "slab %d of class %d is neither pooled, current, listed nor full", s, cl)
			}
		}
		require.Equal(t, rc.inUse, inUse, "class %d", cl)
		rc.mu.Unlock()
	}
}

// TestRegionFreeKeepsCacheAlive frees a cache's last buffer as the last use
// of the cache while collections run: the cache's cleanup unmaps the
// region, so it must not run while Free still writes there (invariants
// builds poison a freed object, and an emptied slab whole).
func TestRegionFreeKeepsCacheAlive(t *testing.T) {
	if !invariants.Enabled {
		t.Skip("only invariants builds write into the region as they free")
	}
	offHeapOrSkip(t, 1<<20)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
			}
		}
	}()
	defer func() { close(stop); <-done }()
	for range 100 {
		c := New(1 << 20)
		b := c.Alloc(4096)
		c.Free(b) // the last use of c
	}
}
