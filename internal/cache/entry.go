package cache

import (
	"bytes"
	"sync/atomic"
	"unsafe"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/invariants"
)

// EntryOverhead is the fixed number of bytes charged for each cached entry on
// top of len(value): the entry struct, its index map slot and its share of the
// per-file index. The build fails if the entry struct outgrows it.
const EntryOverhead = 160

// mapSlotOverhead estimates one slot of the index, a map[uint64]*entry
// (16-byte slot, control byte, load-factor slack).
const mapSlotOverhead = 32

// entry is one value: a buffer and the reference count that decides when the
// buffer may be reused. While an entry is indexed it is also a node of its
// shard's CLOCK ring and of its file's list.
//
// An entry is created by Set or by GetOrLoad, reusing a struct freed earlier
// when there is one (see Cache.newEntry); it is never re-inserted after it
// leaves the index: a later Set of the same key makes a new entry.
//
// A GetOrLoad miss indexes its entry before calling load, as a placeholder
// (stateLoading) that hits skip and that later callers of the same key wait
// on; once the load returns the same entry takes the value without another
// index operation. This is what makes the single flight cost no extra map.
type entry struct {
	// The first 64 bytes are what a hit touches; with the struct in the
	// 128-byte malloc size class they are one cache line.

	// refs counts one reference for every outstanding Handle (including,
	// during a single-flight load, the ones reserved for waiters) plus
	// indexRef while the index holds the entry. The entry is freed when it
	// reaches 0.
	refs atomic.Int32
	// gen changes every time the entry is freed. A Handle records it, so a
	// Release or Value through a stale handle is recognised even after the
	// struct has been reused for another value.
	gen atomic.Uint32
	// referenced is the CLOCK bit. Hits set it under the shard's read lock;
	// the eviction hand clears it under the write lock.
	referenced atomic.Bool
	// state says where the entry is (see entryState). Guarded by the
	// shard's mu; a hit reads it under the read lock.
	state entryState
	// chained is set while another entry precedes this one on its index
	// chain (see index). Guarded by the shard's mu.
	chained bool
	// scan says the entry is probationary: a load of PriorityScan that no
	// hit has promoted yet. An indexed scan entry is on its shard's
	// probation ring (shard.scanHand), any other on the main ring
	// (shard.hand). Guarded by the shard's write lock; it fits in the
	// padding before buf, so the struct does not grow.
	scan bool
	// high says the entry was loaded with PriorityHigh (an index or
	// filter block), and inHigh that it is on the high-priority ring
	// (shard.highHand) now: a high entry pushed out of the pool's share
	// is demoted to the main ring, and goes back when the main hand finds
	// it hit (see shard.evictLocked). Guarded by the shard's write lock;
	// both fit in the padding before buf with scan.
	high, inHigh bool

	// buf is the value, with the full capacity the cache owns; handles see
	// buf[:len:len]. Written before the entry is published and not again
	// until it is freed.
	buf []byte
	key Key

	// next and prev link the shard's main, probation or high-priority
	// ring (see scan and inHigh);
	// after removal, next chains the entries whose index reference is
	// still to be dropped (see releaseChain). hashNext links an index
	// chain. fileNext and filePrev link a ring of the entries of one file
	// and its sentinel (see shard.files). All are guarded by the shard's
	// write lock and nil while the entry is not linked, so a freed entry
	// needs no reset.
	next, prev         *entry
	hashNext           *entry
	fileNext, filePrev *entry
	// cache recycles buf when the entry is freed; nil for the detached
	// entries of a nil *Cache.
	cache *Cache
	// flight is the record waiters of a loading entry share; the first
	// waiter creates it, so a load nobody waits on allocates nothing.
	// Guarded by the shard's write lock.
	flight *flight
}

// entryState is where an entry is. Every change happens under the shard's
// write lock.
type entryState uint8

const (
	// stateDetached: in no index. Freed entries, the entries of a nil
	// *Cache, values too large for a shard, and loads that lost their
	// placeholder slot to a Set (they insert when they finish).
	stateDetached entryState = iota
	// stateLoading: in the index as the placeholder of a load in progress;
	// not in the ring, not charged, invisible to hits.
	stateLoading
	// stateIndexed: in the index, the ring and its file's list, charged.
	stateIndexed
	// stateSentinel: the head of a file's list (shard.files); never a value.
	stateSentinel
)

// indexRef is the index's share of refs. Counting it as a large constant
// rather than as 1 lets a lock-free Release tell "the last handle went while
// the entry is still indexed" (a double Release: refs would fall to
// indexRef-1) from a legitimate release, without a separate indexed flag to
// store on every insert and removal.
const indexRef = 1 << 30

// charge is what an entry whose value occupies n bytes costs the shard.
func charge(n int) int64 { return int64(n) + EntryOverhead }

// charge is what e costs its shard: the memory its buffer keeps from
// everything else, not its length. For a buffer from Alloc that is the size
// class of its length (up to 1/8 longer than asked for); charging it is what
// makes the capacity a bound on the memory the cache holds
// (TestCapacityBoundsAllocations). A buffer of less capacity (a caller's
// own) is charged its capacity. One of more is charged the class of its
// length, so that an object the off-heap region lends from a larger class
// (up to twice the size, while its slabs change class; the region's slack
// covers those) costs what any other does: charged its capacity, a value
// MaxValueSize admits could be evicted as it is inserted, to be read again
// by every lookup. Nothing reslices an entry's buffer while it is charged.
func (e *entry) charge() int64 { return chargeOf(e.buf) }

// chargeOf is what an entry of value v costs its shard (see entry.charge).
func chargeOf(v []byte) int64 { return charge(min(cap(v), allocSize(len(v)))) }

// allocSize is the capacity of Alloc(n)'s buffer (when not lent).
func allocSize(n int) int {
	if cl := ceilClass(n); cl >= 0 {
		return classSize(cl)
	}
	return n
}

// entryAllocSize is the malloc size class entries fall in.
const entryAllocSize = 128

// Compile-time proof that the struct fits its size class and EntryOverhead
// covers it and a map slot; the expressions underflow (a compile error)
// otherwise.
const (
	_ = entryAllocSize - unsafe.Sizeof(entry{})
	_ = EntryOverhead - (entryAllocSize + mapSlotOverhead)
)

// release drops one Handle's reference. gen is the generation the handle
// recorded.
func (e *entry) release(gen uint32) {
	if g := e.gen.Load(); g != gen {
		panic(base.AssertionFailedf(
			"cache: Release of a handle to %s whose entry was already freed (generation %d, now %d)",
			e.key, gen, g))
	}
	switch n := e.refs.Add(-1); {
	case n == 0:
		e.free()
	case n < 0 || n == indexRef-1:
		panic(base.AssertionFailedf("cache: double Release of a handle to %s (reference count %d)", e.key, n))
	}
}

// releaseIndexRef drops the index's reference after the entry has left the
// index.
func (e *entry) releaseIndexRef() {
	switch n := e.refs.Add(-indexRef); {
	case n == 0:
		e.free()
	case n < 0:
		panic(base.AssertionFailedf("cache: reference count of %s is %d after eviction", e.key, n))
	}
}

// free is called once the last reference is gone: no Handle can reach buf
// any more, so it may be reused. The entry is linked nowhere and refs is 0,
// which newEntry relies on.
func (e *entry) free() {
	if invariants.Enabled {
		poison(e.buf[:cap(e.buf)])
	}
	e.gen.Add(1)
	if c := e.cache; c != nil {
		c.recycle(e)
	}
}

// Handle is a reference to a cached (or detached) value. It is a small value
// type: copying a Handle does not add a reference, so exactly one copy must be
// released, exactly once. The zero Handle is valid to Release and holds no
// value.
//
// A Handle may be used from any goroutine, but Release must not race with
// Value on the same handle (as with any other ownership hand-off).
type Handle struct {
	e   *entry
	gen uint32
}

// Value returns the value. It is owned by the cache and read-only: it stays
// valid and unchanged until Release, even if the entry is evicted or replaced
// meanwhile, and must not be used afterwards. Its capacity equals its length,
// so appending to it copies. Value returns nil for the zero Handle.
func (h Handle) Value() []byte {
	e := h.e
	if e == nil {
		return nil
	}
	if invariants.Enabled {
		if g := e.gen.Load(); g != h.gen || e.refs.Load() <= 0 {
			panic(base.AssertionFailedf("cache: Value of a released handle to %s", e.key))
		}
	}
	return e.buf[:len(e.buf):len(e.buf)]
}

// Valid reports whether h holds a value (it is not the zero Handle).
func (h Handle) Valid() bool { return h.e != nil }

// Release drops the handle's reference. Call it exactly once per handle that
// Get, Set or GetOrLoad returned; the zero Handle's Release is a no-op.
//
// A second Release of the same handle panics (with an assertion failure) when
// it can be told apart from a legitimate one: when the entry has already been
// freed, or when it would consume the reference the index holds. A double
// Release while other handles to the same entry are outstanding is detected
// at the latest when the last of those is released.
func (h Handle) Release() {
	if h.e != nil {
		h.e.release(h.gen)
	}
}

// poisonByte fills freed buffers in invariants builds, so a read through a
// released handle sees 0xDB bytes ("dead block") instead of plausible data,
// and a write through one is caught when Alloc hands the buffer out again.
const poisonByte = 0xDB

func poison(b []byte) {
	// Doubling copies, not a byte loop: under the race detector a loop's
	// every store is instrumented, and poisoning whole 1 MiB slabs that
	// way made TestPartitionEdges four times slower (19 s to 79 s).
	if len(b) == 0 {
		return
	}
	b[0] = poisonByte
	for n := 1; n < len(b); n *= 2 {
		copy(b[n:], b[:n])
	}
}

// checkPoison reports whether b is still entirely poisoned.
func checkPoison(b []byte) bool {
	return bytes.Count(b, poisonPattern[:]) == len(b)
}

var poisonPattern = [1]byte{poisonByte}
