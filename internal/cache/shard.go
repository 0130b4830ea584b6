package cache

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// fileKey names one table file of one DB: the unit EvictFile drops.
type fileKey struct{ id, fileNum uint64 }

// shardState is a shard without its padding.
type shardState struct {
	// mu guards the maps, the ring and the entries' links. Hits take it
	// shared: they only read the index and touch atomics (refs, the CLOCK
	// bit), so readers of one shard do not exclude each other.
	mu      sync.RWMutex
	entries map[Key]*entry
	// files maps a file to one entry of its circular list of entries.
	files map[fileKey]*entry
	// flights holds the single-flight loads in progress.
	flights map[Key]*flight
	// hand is the CLOCK hand: the next entry eviction examines. New entries
	// are linked just behind it, so they are examined last.
	hand *entry
	// capacity is this shard's share of the cache's capacity. Immutable.
	capacity int64
	// size and count are the charged bytes and number of indexed entries.
	// They change only under mu (write); atomics let Size and Len read them
	// without locking.
	size  atomic.Int64
	count atomic.Int64
}

// cacheLinePad separates shards so that one shard's lock word does not share
// a cache line (or an adjacent-line prefetch pair) with its neighbour's.
const cacheLinePad = 128

// shard is one independently locked part of the cache. Keys are spread over
// shards by hash (see Cache.shardFor).
type shard struct {
	shardState
	_ [cacheLinePad - unsafe.Sizeof(shardState{})%cacheLinePad]byte
}

// flight is a single-flight load in progress. Until done is closed, every
// field is guarded by the shard's mu; afterwards e, gen and err are
// read-only.
type flight struct {
	// done is closed when the load has finished. The first waiter creates
	// it, so a miss nobody waits on costs no channel.
	done chan struct{}
	// waiters is the number of callers waiting that still want a reference.
	// The loader adds that many references to the entry before it closes
	// done; a waiter that gives up earlier decrements it.
	waiters int32
	// completed is set, under mu, by the loader when it has finished.
	completed bool
	e         *entry
	gen       uint32
	err       error
}

func (s *shard) init(capacity int64) {
	s.entries = make(map[Key]*entry)
	s.files = make(map[fileKey]*entry)
	s.flights = make(map[Key]*flight)
	s.capacity = capacity
}

// get is the hit path: a shared lock, a map lookup and two atomics.
func (s *shard) get(k Key) (Handle, bool) {
	s.mu.RLock()
	e := s.entries[k]
	if e == nil {
		s.mu.RUnlock()
		return Handle{}, false
	}
	h := refLocked(e)
	s.mu.RUnlock()
	return h, true
}

// refLocked returns a new handle to an indexed entry. The caller holds mu,
// shared or exclusive, which keeps the index's reference (and so the entry)
// alive while refs is incremented.
func refLocked(e *entry) Handle {
	e.refs.Add(1)
	// Load before Store: a hot entry's bit is usually set already, and a
	// load does not take its cache line away from the other readers.
	if !e.referenced.Load() {
		e.referenced.Store(true)
	}
	return Handle{e: e, gen: e.gen.Load()}
}

// insertLocked indexes e, whose charge must fit the shard, replacing any entry
// of the same key, and evicts until the shard is within capacity. It returns
// the chain of removed entries (linked by next) whose index references the
// caller drops with releaseChain after unlocking. e.refs must already count
// the index's reference.
func (s *shard) insertLocked(e *entry) (evicted *entry) {
	if old := s.entries[e.key]; old != nil {
		evicted = s.removeLocked(old, evicted)
	}
	s.entries[e.key] = e
	e.indexed.Store(true)

	if h := s.hand; h == nil {
		e.next, e.prev = e, e
		s.hand = e
	} else {
		e.next, e.prev = h, h.prev
		h.prev.next = e
		h.prev = e
	}

	fk := fileKey{e.key.ID, e.key.FileNum}
	if head := s.files[fk]; head == nil {
		e.fileNext, e.filePrev = e, e
		s.files[fk] = e
	} else {
		e.fileNext, e.filePrev = head, head.filePrev
		head.filePrev.fileNext = e
		head.filePrev = e
	}

	s.size.Add(e.charge)
	s.count.Add(1)
	return s.evictLocked(evicted)
}

// evictLocked runs the CLOCK hand until the shard is within capacity: an
// entry whose bit is set gets a second chance (the bit is cleared), one whose
// bit is clear is removed. Hits cannot set bits meanwhile (they need the
// shared lock), so after at most one turn every bit is clear and the loop
// ends.
func (s *shard) evictLocked(evicted *entry) *entry {
	for s.size.Load() > s.capacity {
		e := s.hand
		if e == nil {
			break
		}
		if e.referenced.Load() {
			e.referenced.Store(false)
			s.hand = e.next
			continue
		}
		evicted = s.removeLocked(e, evicted)
	}
	return evicted
}

// removeLocked takes e out of the index, the ring and its file's list, and
// pushes it on the evicted chain.
func (s *shard) removeLocked(e, evicted *entry) *entry {
	delete(s.entries, e.key)
	e.indexed.Store(false)

	if e.next == e {
		s.hand = nil
	} else {
		if s.hand == e {
			s.hand = e.next
		}
		e.prev.next = e.next
		e.next.prev = e.prev
	}

	if e.fileNext == e {
		delete(s.files, fileKey{e.key.ID, e.key.FileNum})
	} else {
		fk := fileKey{e.key.ID, e.key.FileNum}
		if s.files[fk] == e {
			s.files[fk] = e.fileNext
		}
		e.filePrev.fileNext = e.fileNext
		e.fileNext.filePrev = e.filePrev
	}
	e.fileNext, e.filePrev, e.prev = nil, nil, nil

	s.size.Add(-e.charge)
	s.count.Add(-1)
	e.next = evicted
	return e
}

// releaseChain drops the index reference of every entry on a chain built by
// removeLocked. It runs after the shard is unlocked: freeing poisons (in
// invariants builds) and pools buffers, which need not hold up the shard.
func releaseChain(e *entry) {
	for e != nil {
		next := e.next // read first: once released, e may be reused at once
		e.next = nil
		e.releaseIndexRef()
		e = next
	}
}
