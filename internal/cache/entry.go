package cache

import (
	"sync/atomic"
	"unsafe"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/invariants"
)

// EntryOverhead is the fixed number of bytes charged for each cached entry on
// top of len(value): the entry struct, its index map slot and its share of the
// per-file index. The build fails if the entry struct outgrows it.
const EntryOverhead = 160

// mapSlotOverhead estimates one map[Key]*entry slot (24-byte key, 8-byte
// pointer, control byte, load-factor slack).
const mapSlotOverhead = 48

// entry is one value: a buffer and the reference count that decides when the
// buffer may be reused. While an entry is in its shard's index it is also a
// node of the shard's CLOCK ring and of its file's list.
//
// An entry is created by Set or a load, possibly reusing a struct freed
// earlier (see Cache.newEntry); it is never re-inserted after it leaves the
// index: a later Set of the same key makes a new entry.
type entry struct {
	// The fields a hit touches come first, so that they share a cache line.

	// refs is 1 for the index while the entry is indexed, plus 1 for every
	// outstanding Handle (including, during a single-flight load, the ones
	// reserved for waiters). The entry is freed when it reaches 0.
	refs atomic.Int32
	// gen changes every time the entry is freed. A Handle records it, so a
	// Release or Value through a stale handle is recognised even after the
	// struct has been reused for another value.
	gen atomic.Uint32
	// referenced is the CLOCK bit. Hits set it under the shard's read lock;
	// the eviction hand clears it under the write lock.
	referenced atomic.Bool
	// indexed is true while the entry is in its shard's index. It is written
	// under the shard's write lock and read by release without it: a
	// Handle's release that drops refs to 0 while the entry is still indexed
	// must have consumed the index's reference, so it is a double Release.
	indexed atomic.Bool

	// buf is the value, with the full capacity the cache owns; handles see
	// buf[:len:len]. Written before the entry is published and not again
	// until it is freed.
	buf []byte

	key Key
	// cache recycles buf when the entry is freed; nil for the detached
	// entries of a nil *Cache.
	cache *Cache
	// charge is len(buf) + EntryOverhead.
	charge int64

	// next and prev link the shard's CLOCK ring; after removal, next chains
	// the entries whose index reference is still to be dropped (see
	// releaseChain). fileNext and filePrev link the entries of one file.
	// All four are guarded by the shard's write lock.
	next, prev         *entry
	fileNext, filePrev *entry
}

// Compile-time proof that EntryOverhead covers the struct and a map slot; the
// expression underflows (a compile error) otherwise.
const _ = EntryOverhead - (unsafe.Sizeof(entry{}) + mapSlotOverhead)

// release drops one Handle's reference. gen is the generation the handle
// recorded.
func (e *entry) release(gen uint32) {
	if g := e.gen.Load(); g != gen {
		panic(base.AssertionFailedf(
			"cache: Release of a handle to %s whose entry was already freed (generation %d, now %d)",
			e.key, gen, g))
	}
	n := e.refs.Add(-1)
	if n > 0 {
		return
	}
	if n < 0 || e.indexed.Load() {
		panic(base.AssertionFailedf("cache: double Release of a handle to %s (reference count %d)", e.key, n))
	}
	e.free()
}

// releaseIndexRef drops the index's reference after the entry has left the
// index.
func (e *entry) releaseIndexRef() {
	switch n := e.refs.Add(-1); {
	case n == 0:
		e.free()
	case n < 0:
		panic(base.AssertionFailedf("cache: reference count of %s is %d after eviction", e.key, n))
	}
}

// free is called once the last reference is gone: no Handle can reach buf
// any more, so it may be reused.
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
	for i := range b {
		b[i] = poisonByte
	}
}

// checkPoison reports whether b is still entirely poisoned.
func checkPoison(b []byte) bool {
	for _, c := range b {
		if c != poisonByte {
			return false
		}
	}
	return true
}
