package cache

import (
	"math/bits"
	"runtime"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/invariants"
)

// Buffers are recycled by size class. Each power of two from 64 B to 16 MiB is
// split into 8 classes (64, 72, 80, ..., 120, 128, 144, ...), so a buffer from
// Alloc wastes less than 1/8 of its length (or 63 bytes below 64 B). Larger
// buffers are allocated and dropped as usual.
const (
	minClassShift = 6  // smallest class: 64 B
	maxClassShift = 24 // largest class: 16 MiB
	classStepBits = 3  // 1<<classStepBits classes per power of two
	classSteps    = 1 << classStepBits
	numClasses    = (maxClassShift-minClassShift)*classSteps + 1
)

// classSize returns the size of class cl.
func classSize(cl int) int {
	b := minClassShift + cl/classSteps
	return 1<<b + (cl%classSteps)<<(b-classStepBits)
}

// ceilClass returns the smallest class whose size is at least n, or -1 when n
// is not positive or exceeds the largest class.
func ceilClass(n int) int {
	if n <= 0 || n > 1<<maxClassShift {
		return -1
	}
	if n <= 1<<minClassShift {
		return 0
	}
	b := bits.Len(uint(n)) - 1 // 1<<b <= n < 1<<(b+1)
	s := b - classStepBits
	j := (n - 1<<b + 1<<s - 1) >> s // 0..8; 8 is the next power's first class
	return (b-minClassShift)*classSteps + j
}

// floorClass returns the largest class whose size is at most c, or -1 when c
// is below the smallest class or above the largest.
func floorClass(c int) int {
	if c < 1<<minClassShift || c > 1<<maxClassShift {
		return -1
	}
	b := bits.Len(uint(c)) - 1
	return (b-minClassShift)*classSteps + (c-1<<b)>>(b-classStepBits)
}

// Alloc returns a buffer of length n for the caller to fill and then hand to
// Set, or return from a GetOrLoad load; once that entry is gone and every
// handle to it released, the cache reuses the buffer for a later Alloc. The
// contents are unspecified. Its capacity may exceed n (by less than n/8 + 64
// bytes, or, for an object the off-heap region lends from a larger class
// while its slabs change class, by up to n + 64); the cache charges an entry
// the size class of its length, that slack included (a lent object's extra
// is covered by the region's slack instead).
//
// The buffer may come from the cache's off-heap region (see OffHeap): a
// caller that does not hand it over must give it back with Free, or it is
// lost to the cache until the cache itself is unreachable. (A Go heap
// buffer may simply be dropped; Free takes either.)
//
// On a nil *Cache, Alloc is make([]byte, n).
func (c *Cache) Alloc(n int) []byte {
	cl := ceilClass(n)
	if c == nil || cl < 0 {
		return make([]byte, n)
	}
	if c.region != nil {
		b, reused := c.region.alloc(cl)
		if b != nil && invariants.Enabled && reused && !checkPoison(b) {
			panic(base.AssertionFailedf("cache: a %d-byte off-heap buffer was written after its last handle was released", len(b)))
		}
		// The Cache's cleanup unmaps the region: c must stay reachable
		// until the region is no longer touched (here and in Free and
		// recycle), even when the caller's last use of c is this call.
		runtime.KeepAlive(c)
		if b != nil {
			return b[:n]
		}
	}
	x := c.bufs[cl].Get()
	if x == nil {
		return make([]byte, n, classSize(cl))
	}
	e := x.(*entry)
	b := e.buf[:n]
	e.buf = nil
	c.spares.Put(e)
	if invariants.Enabled && !checkPoison(b[:cap(b)]) {
		panic(base.AssertionFailedf("cache: a %d-byte buffer was written after its last handle was released", cap(b)))
	}
	return b
}

// Free gives back a buffer from Alloc that the caller did not hand to the
// cache (a load that failed after allocating, say). The caller must not use
// b, or any slice sharing its memory, afterwards. Go heap buffers are left
// to the garbage collector; nil and empty-capacity slices are ignored.
func (c *Cache) Free(b []byte) {
	if !c.OffHeap(b) {
		return
	}
	c.region.free(b)
	runtime.KeepAlive(c)
}

// maxPooledSize is the largest Go heap buffer recycle keeps in the pools.
// Blocks (a few KiB) are freed and allocated again all the time; buffers
// larger than this (a whole index or filter of a table) are rare, and a
// sync.Pool keeps what it is given until two collections pass: buffers put
// faster than they are taken again (a large block reloaded while handles
// still hold its evicted copy) pile up as live heap, which raises the
// collector's goal, which lets more pile up. A 128 MiB fill with
// cache_index_and_filter_blocks at the default 8 MiB cache kept 51 MB of
// such buffers live (a heap profile) and peaked at 124 MiB RSS.
const maxPooledSize = 256 << 10

// recycle keeps a freed entry for reuse: an off-heap buffer goes back to the
// region, a Go heap one of up to maxPooledSize to the pool of the largest
// class it can serve (with the entry), and the entry otherwise among the
// spare entry structs.
func (c *Cache) recycle(e *entry) {
	if invariants.Enabled {
		c.live.Add(-1)
	}
	if c.region.contains(e.buf) {
		c.region.free(e.buf)
		runtime.KeepAlive(c)
	} else if cl := floorClass(cap(e.buf)); cl >= 0 && cap(e.buf) <= maxPooledSize {
		c.bufs[cl].Put(e)
		return
	}
	e.buf = nil
	c.spares.Put(e)
}

// newEntry returns an unpublished entry for k in the given state, without a
// value and with no references. It reuses a spare struct when there is one;
// the struct keeps its generation counter, so handles to its previous life
// stay recognisable.
//
// A freed entry already has refs 0, no links, no flight and no buffer (see
// entry.free, shard.removeLocked, releaseChain and Alloc), so a spare needs
// only plain stores: an atomic store is a full fence on amd64, and on the
// spare's line, often cold by now, it would stall the miss path.
func (c *Cache) newEntry(k Key, state entryState) *entry {
	var e *entry
	if x := c.spares.Get(); x != nil {
		e = x.(*entry)
		// The CLOCK bit is the one atomic a freed entry may have left set
		// (EvictFile and replacement remove referenced entries); load it
		// first so that the usual clear bit costs no store.
		if e.referenced.Load() {
			e.referenced.Store(false)
		}
	} else {
		e = &entry{cache: c}
	}
	if invariants.Enabled {
		c.live.Add(1)
		if e.refs.Load() != 0 || e.buf != nil || e.next != nil || e.prev != nil ||
			e.hashNext != nil || e.chained || e.fileNext != nil || e.filePrev != nil ||
			e.flight != nil || e.cache != c {
			panic(base.AssertionFailedf("cache: a spare entry was not reset (was %s)", e.key))
		}
	}
	e.key = k
	e.state = state
	// A freed entry keeps its ring flags: plain stores, as for the
	// state.
	e.scan, e.high, e.inHigh = false, false, false
	return e
}
