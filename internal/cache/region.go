package cache

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/invariants"
)

// A cache's block buffers live outside the Go heap, in a region: one
// anonymous mapping per Cache, reserved at New (pages become resident only
// when touched) and unmapped only once the Cache is unreachable. Live Go heap
// costs about twice its size in memory, since the garbage collector lets the
// heap grow to GOGC percent above what it found live; the cache's blocks are
// most of a read-heavy engine's live heap, so moving them out of it takes
// that doubling off the cache (Pebble manages its cache's memory by hand for
// the same reason).
//
// The region is carved into slabs of 1 MiB. A slab serves one size class at
// a time: it hands out objects of exactly the class's size, and freed
// objects go back to its free list. A slab whose objects are all free goes
// back to the region's pool, from which any class can take it: the mix of
// sizes a cache holds changes (a scan fills it with data blocks, then point
// reads with index and filter partitions, a few KiB larger), and slabs
// bound to a class for good would leave the region full of one class's free
// objects while the other's buffers come from the Go heap — where, with the
// garbage collector's headroom, they cost about twice their size. (A 4 GiB
// database read through a 32 MiB cache, after a scan, kept 34 MB of index
// partitions on the Go heap so: a peak RSS 60 MiB above the cache's budget.)
//
// To let slabs empty, a class allocates from its fullest slabs: from its
// current slab, and when that is full, from a slab of the fullest non-empty
// occupancy quarter (see regionClass.partial). Its emptier slabs then only
// lose objects, as the cache evicts them, until they go back to the pool.
// Anything the region cannot serve (a buffer larger than a slab, a class
// with no free object when the pool is empty) comes from the Go heap, as
// every buffer did before.
//
// Nothing outside the package may keep a pointer into the region past the
// release of the handle it came from: bytes handed to users are copied (see
// Cache.OffHeap). A handle, an entry and the Cache each reach one another,
// so as long as any handle or entry can be used the Cache, and with it the
// mapping, stays alive.
const (
	slabShift = 20 // 1 MiB slabs
	slabSize  = 1 << slabShift
	// regionSlackDiv adds capacity/regionSlackDiv to the region: room for
	// evicted blocks still referenced by handles, the size classes'
	// rounding, the tails of slabs and the free objects of slabs not yet
	// empty.
	regionSlackDiv = 4
	// granuleShift is the log of the smallest class: no two objects start
	// in the same granule, which keys the invariants build's bitmap.
	granuleShift = minClassShift
	// quarters is the number of occupancy groups of a class's partial slabs.
	quarters = 4
	noSlab   = -1
)

// region is a Cache's off-heap memory. Its methods are safe for concurrent
// use. Lock order: a class's mu, then the region's mu.
type region struct {
	mem []byte // the mapping
	// slab describes each slab. A slab's fields are guarded by the mutex
	// of the class it serves; it passes between classes through the pool,
	// under mu.
	slab []slabState
	// mu guards pool, the slabs that serve no class, the lowest-numbered
	// last (so touched first, and its pages resident first).
	mu   sync.Mutex
	pool []int32

	classes [numClasses]regionClass

	// inUse has a bit per granule set while the object starting there is
	// handed out. Maintained in invariants builds only: free panics on a
	// double or foreign free. (Leaks show in objectsInUse, in every build.)
	inUse []atomic.Uint64
}

// slabState is one slab's bookkeeping.
type slabState struct {
	// class is the class the slab serves. Written, before any of its
	// objects is handed out, when the slab leaves the pool; free reads it
	// without a lock, which is safe because an object reaches free only
	// after it was handed out, and the slab goes back to the pool only
	// when none of its objects is out.
	class uint8
	// quarter is the partial list the slab is on, or -1 when on none (it is
	// its class's current slab, or full).
	quarter int8
	// carved counts the objects cut from the slab, from its start; inUse
	// those handed out and not freed; free holds the indexes of freed
	// objects, reused last in first out (the most recently used memory is
	// the most likely to be resident and in the CPU's caches).
	carved, inUse int32
	free          []uint16
	// recycled says the slab served a class before. In invariants builds
	// it was poisoned whole when it went back to the pool, so a carved
	// object is checked as a reused one is.
	recycled bool
	// prev and next link the slab into its quarter's list.
	prev, next int32
}

// regionClass is the state of one size class in the region.
type regionClass struct {
	mu sync.Mutex
	// cur is the slab allocations come from first, noSlab for none.
	cur int32
	// partial lists the class's other slabs that have a free object, by
	// occupancy: partial[q] heads the list of those with q quarters (or
	// more, below q+1) of their objects in use.
	partial [quarters]int32
	// inUse counts the class's objects handed out and not freed.
	inUse int64
	_     [64]byte // keep neighbouring classes' locks off one cache line
}

// Compile-time check that class numbers fit slabState.class, and that a
// slab's object indexes fit its free list's uint16.
const (
	_ uint8  = 255 - numClasses
	_ uint16 = slabSize>>minClassShift - 1
)

// newRegion maps a region for a cache of the given capacity, or returns nil
// where there is none (32-bit platforms, a failed mapping).
func newRegion(capacity int64) *region {
	if unsafe.Sizeof(uintptr(0)) < 8 || capacity <= 0 {
		return nil
	}
	size := capacity + capacity/regionSlackDiv
	slabs := (size + slabSize - 1) >> slabShift
	mem := mapRegion(int(slabs << slabShift))
	if mem == nil {
		return nil
	}
	r := &region{mem: mem, slab: make([]slabState, slabs), pool: make([]int32, slabs)}
	for i := range r.pool {
		r.pool[i] = int32(len(r.pool) - 1 - i)
	}
	for i := range r.classes {
		rc := &r.classes[i]
		rc.cur = noSlab
		for q := range rc.partial {
			rc.partial[q] = noSlab
		}
	}
	if invariants.Enabled {
		r.inUse = make([]atomic.Uint64, (len(mem)>>granuleShift+63)/64)
	}
	return r
}

// contains reports whether b's memory starts in the region. O(1): one
// subtraction and a comparison.
func (r *region) contains(b []byte) bool {
	if r == nil || cap(b) == 0 {
		return false
	}
	off := uintptr(unsafe.Pointer(unsafe.SliceData(b))) - uintptr(unsafe.Pointer(unsafe.SliceData(r.mem)))
	return off < uintptr(len(r.mem))
}

// alloc returns an object of class cl, or of a larger class (see below),
// at its full size as length and capacity, and whether it was freed before
// (so holds the poison of an invariants build); or nil when the region has
// none to give.
//
// When cl has no free object and the pool no slab, alloc lends a free
// object of one of the classes up to twice cl's size, from the slabs they
// hold. The mix of sizes changes faster than slabs empty: after a scan has
// given every slab to data blocks, the index and filter partitions that
// point reads bring in are smaller, and while the evictions they cause
// leave each data slab partly free, no slab reaches the pool for their
// class. Lent, an object wastes at most half its size; on the Go heap,
// where it went before, the collector's headroom doubles it.
// (TestRegionLendsLargerObjects: 35% of the small objects went to the Go
// heap without lending.) A lent object goes back to its own slab when
// freed, like any other.
func (r *region) alloc(cl int) (b []byte, reused bool) {
	if classSize(cl) > slabSize {
		return nil, false
	}
	if b, reused = r.allocOf(cl, true); b != nil {
		return b, reused
	}
	for lender := cl + 1; lender <= cl+classSteps && lender < numClasses && classSize(lender) <= slabSize; lender++ {
		if b, reused = r.allocOf(lender, false); b != nil {
			return b, reused
		}
	}
	return nil, false
}

// allocOf returns an object of class cl as alloc does, from the class's
// slabs or, with fromPool, from a slab of the pool; nil when there is none.
func (r *region) allocOf(cl int, fromPool bool) (b []byte, reused bool) {
	size := classSize(cl)
	rc := &r.classes[cl]
	rc.mu.Lock()
	s := rc.cur
	if s == noSlab || r.slab[s].full(size) {
		if s = r.nextSlab(rc, cl, fromPool); s == noSlab {
			rc.mu.Unlock()
			return nil, false
		}
		rc.cur = s
	}
	st := &r.slab[s]
	var i int32
	if n := len(st.free); n > 0 {
		i = int32(st.free[n-1])
		st.free = st.free[:n-1]
		reused = true
	} else {
		i = st.carved
		st.carved++
		reused = st.recycled
	}
	st.inUse++
	rc.inUse++
	rc.mu.Unlock()
	off := uintptr(s)<<slabShift + uintptr(i)*uintptr(size)
	if invariants.Enabled {
		r.mark(off, true)
	}
	return r.mem[off : off+uintptr(size) : off+uintptr(size)], reused
}

// full reports whether a slab of a class of the given size has no object to
// give.
func (st *slabState) full(size int) bool {
	return len(st.free) == 0 && int(st.carved) >= slabSize/size
}

// quarterOf returns the partial list of a slab with inUse of its per
// objects in use.
func quarterOf(inUse, per int32) int8 {
	return int8(min(int64(inUse)*quarters/int64(per), quarters-1))
}

// nextSlab returns the slab that becomes rc's current one, its current
// slab being full or absent: the first of its fullest partial slabs, or
// else, with fromPool, one from the pool; noSlab when there is none. rc.mu
// is held.
func (r *region) nextSlab(rc *regionClass, cl int, fromPool bool) int32 {
	for q := quarters - 1; q >= 0; q-- {
		if s := rc.partial[q]; s != noSlab {
			r.unlink(rc, s)
			return s
		}
	}
	if !fromPool {
		return noSlab
	}
	r.mu.Lock()
	n := len(r.pool)
	if n == 0 {
		r.mu.Unlock()
		return noSlab
	}
	s := r.pool[n-1]
	r.pool = r.pool[:n-1]
	r.mu.Unlock()
	st := &r.slab[s]
	st.class, st.quarter = uint8(cl), -1
	st.carved, st.inUse, st.free = 0, 0, st.free[:0]
	return s
}

// free takes back the object b points into (b may be a reslice of it, of
// any capacity). Invariants builds poison the whole object, which the next
// alloc of it checks.
func (r *region) free(b []byte) {
	off := uintptr(unsafe.Pointer(unsafe.SliceData(b))) - uintptr(unsafe.Pointer(unsafe.SliceData(r.mem)))
	s := int32(off >> slabShift)
	st := &r.slab[s]
	cl := int(st.class)
	size := uintptr(classSize(cl))
	i := (off - uintptr(s)<<slabShift) / size
	off = uintptr(s)<<slabShift + i*size
	if invariants.Enabled {
		r.mark(off, false)
		poison(r.mem[off : off+size])
	}
	rc := &r.classes[cl]
	rc.mu.Lock()
	st.free = append(st.free, uint16(i))
	st.inUse--
	rc.inUse--
	switch per := int32(slabSize / size); {
	case st.inUse == 0:
		// Empty: back to the pool, for any class.
		if s == rc.cur {
			rc.cur = noSlab
		} else if st.quarter >= 0 {
			r.unlink(rc, s)
		}
		st.recycled = true
		if invariants.Enabled {
			r.poisonSlab(s, int(size))
		}
		r.mu.Lock()
		r.pool = append(r.pool, s)
		r.mu.Unlock()
	case s == rc.cur:
	default:
		if q := quarterOf(st.inUse, per); q != st.quarter {
			if st.quarter >= 0 {
				r.unlink(rc, s)
			}
			r.link(rc, s, q)
		}
	}
	rc.mu.Unlock()
}

// poisonSlab checks, as the slab goes back to the pool, that none of its
// objects was written after it was freed, and poisons the whole slab: its
// objects under the next class start elsewhere.
func (r *region) poisonSlab(s int32, size int) {
	st := &r.slab[s]
	start := int(s) << slabShift
	if !checkPoison(r.mem[start : start+int(st.carved)*size]) {
		panic(base.AssertionFailedf("cache: an off-heap buffer in slab %d was written after its last handle was released", s))
	}
	poison(r.mem[start : start+slabSize])
}

// link puts slab s at the head of rc's partial list q. rc.mu is held.
func (r *region) link(rc *regionClass, s int32, q int8) {
	st := &r.slab[s]
	st.quarter, st.prev, st.next = q, noSlab, rc.partial[q]
	if st.next != noSlab {
		r.slab[st.next].prev = s
	}
	rc.partial[q] = s
}

// unlink takes slab s off its partial list. rc.mu is held.
func (r *region) unlink(rc *regionClass, s int32) {
	st := &r.slab[s]
	if st.prev != noSlab {
		r.slab[st.prev].next = st.next
	} else {
		rc.partial[st.quarter] = st.next
	}
	if st.next != noSlab {
		r.slab[st.next].prev = st.prev
	}
	st.quarter, st.prev, st.next = -1, noSlab, noSlab
}

// mark records (invariants builds) that the object at off was handed out
// or freed, panicking on a double free or a free of an object not handed
// out.
func (r *region) mark(off uintptr, out bool) {
	g := off >> granuleShift
	w, bit := &r.inUse[g/64], uint64(1)<<(g%64)
	for {
		old := w.Load()
		if (old&bit != 0) == out {
			if out {
				panic(base.AssertionFailedf("cache: off-heap object at %d handed out twice", off))
			}
			panic(base.AssertionFailedf("cache: off-heap object at %d freed twice, or never handed out", off))
		}
		if w.CompareAndSwap(old, old^bit) {
			return
		}
	}
}

// objectsInUse returns the number of objects handed out and not freed, in
// every build.
func (r *region) objectsInUse() int64 {
	var n int64
	for i := range r.classes {
		rc := &r.classes[i]
		rc.mu.Lock()
		n += rc.inUse
		rc.mu.Unlock()
	}
	return n
}

// freeSlabs returns the number of slabs in the pool.
func (r *region) freeSlabs() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pool)
}

// release unmaps the region. Called by the Cache's cleanup, once nothing
// can reach the Cache and so no handle or entry can point into the region.
func (r *region) release() { unmapRegion(r.mem) }
