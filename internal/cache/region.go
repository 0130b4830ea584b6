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
// The region is carved into slabs, each dedicated to one size class when it
// is first needed; a class hands out objects of exactly its size from its
// slabs, and freed objects go back to its free list. Anything the region
// cannot serve (a buffer larger than a slab, a class with no free object
// when no slab is left) comes from the Go heap, as every buffer did before.
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
	// rounding and the tails of slabs.
	regionSlackDiv = 4
	// granuleShift is the log of the smallest class: no two objects start
	// in the same granule, which keys the invariants build's bitmap.
	granuleShift = minClassShift
)

// region is a Cache's off-heap memory. Its methods are safe for concurrent
// use.
type region struct {
	mem []byte // the mapping
	// slabs is the number of slabs in mem; next is the first unassigned one.
	slabs int
	next  atomic.Int64
	// slabClass is the class of each assigned slab. Written once, under the
	// class's lock, before any object of the slab is handed out; an object
	// reaches free only after it was handed out, so free reads it safely.
	slabClass []uint8
	classes   [numClasses]regionClass

	// inUse has a bit per granule set while the object starting there is
	// handed out. Maintained in invariants builds only: free panics on a
	// double or foreign free. (Leaks show in objectsInUse, in every build.)
	inUse []atomic.Uint64
}

// regionClass is the state of one size class in the region.
type regionClass struct {
	mu sync.Mutex
	// free holds the offsets of freed objects, reused last in first out
	// (the most recently used memory is the most likely to be resident
	// and in the CPU's caches).
	free []uintptr
	// bump and end delimit the uncarved rest of the class's current slab;
	// carved counts the objects ever carved.
	bump, end uintptr
	carved    int64
	_         [64]byte // keep neighbouring classes' locks off one cache line
}

// Compile-time check that class numbers fit slabClass's bytes.
const _ uint8 = 255 - numClasses

// newRegion maps a region for a cache of the given capacity, or returns nil
// when the platform has no anonymous mappings, pointers are 32 bits wide (the
// address space is too small to reserve caches in), the capacity is too
// small to use, or the mapping fails: the cache then lives on the Go heap.
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
	r := &region{mem: mem, slabs: int(slabs), slabClass: make([]uint8, slabs)}
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

// alloc returns an object of class cl (its full size as length and
// capacity), and whether it was freed before (so holds the poison of an
// invariants build); or nil when the region has none to give.
func (r *region) alloc(cl int) (b []byte, reused bool) {
	size := uintptr(classSize(cl))
	if size > slabSize {
		return nil, false
	}
	rc := &r.classes[cl]
	rc.mu.Lock()
	var off uintptr
	switch n := len(rc.free); {
	case n > 0:
		off = rc.free[n-1]
		rc.free = rc.free[:n-1]
		reused = true
	case rc.bump+size <= rc.end:
		off = rc.bump
		rc.bump += size
		rc.carved++
	default:
		s := r.next.Add(1) - 1
		if s >= int64(r.slabs) {
			rc.mu.Unlock()
			return nil, false
		}
		r.slabClass[s] = uint8(cl)
		off = uintptr(s) << slabShift
		rc.bump, rc.end = off+size, off+slabSize
		rc.carved++
	}
	rc.mu.Unlock()
	if invariants.Enabled {
		r.mark(off, true)
	}
	return r.mem[off : off+size : off+size], reused
}

// free takes back the object b points into (b may be a reslice of it, of
// any capacity). Invariants builds poison the whole object, which the next
// alloc of it checks.
func (r *region) free(b []byte) {
	off := uintptr(unsafe.Pointer(unsafe.SliceData(b))) - uintptr(unsafe.Pointer(unsafe.SliceData(r.mem)))
	s := off >> slabShift
	cl := int(r.slabClass[s])
	size := uintptr(classSize(cl))
	slab := s << slabShift
	off = slab + (off-slab)/size*size
	if invariants.Enabled {
		r.mark(off, false)
		poison(r.mem[off : off+size])
	}
	rc := &r.classes[cl]
	rc.mu.Lock()
	rc.free = append(rc.free, off)
	rc.mu.Unlock()
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

// objectsInUse returns the number of objects handed out and not freed, in every
// build: the objects carved minus those on the free lists.
func (r *region) objectsInUse() int64 {
	var n int64
	for i := range r.classes {
		rc := &r.classes[i]
		rc.mu.Lock()
		n += rc.carved - int64(len(rc.free))
		rc.mu.Unlock()
	}
	return n
}

// release unmaps the region. Called by the Cache's cleanup, once nothing
// can reach the Cache and so no handle or entry can point into the region.
func (r *region) release() { unmapRegion(r.mem) }
