package cache

import (
	"sync"
	"unsafe"
)

// shardState is a shard without its padding.
type shardState struct {
	// mu guards the fields below not marked immutable, and the entries'
	// links and states. Hits take it shared: they only read the index and
	// touch atomics (refs, the CLOCK bit), so readers of one shard do not
	// exclude each other.
	mu sync.RWMutex
	// entries indexes the shard's entries, and the placeholders of loads
	// in progress (stateLoading), by hashKey & mask.
	entries index
	// files indexes the sentinel of each file's ring of indexed entries,
	// by the hash of the sentinel's key, (ID, FileNum, 0). A sentinel,
	// rather than one of the entries, heads the ring so that removing an
	// entry never has to update the index, except when the last entry of a
	// file goes.
	files index
	// mask is applied to hashes before they key entries and files: all
	// ones, except in tests that force hash collisions. Immutable.
	mask uint64
	// hand is the CLOCK hand: the next entry eviction examines. New entries
	// are linked just behind it, so they are examined last.
	hand *entry
	// capacity is this shard's share of the cache's capacity. Immutable.
	capacity int64
	// size and count are the charged bytes and number of indexed entries
	// (placeholders excluded). Plain fields, not atomics: the miss path
	// changes them under mu anyway, and Size and Len are rare enough to
	// take the read lock.
	size  int64
	count int64
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

// flight is what the callers waiting for a load share. The first waiter
// creates it (see entry.flight). Until completed is set every field is
// guarded by the shard's mu; afterwards e, gen and err are read-only.
type flight struct {
	// done is closed when the load has finished.
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

func (s *shard) init(capacity int64, mask uint64) {
	s.entries = make(index)
	s.files = make(index)
	s.capacity = capacity
	s.mask = mask
}

// get is the hit path: a shared lock, a map lookup and two atomics. hash is
// hashKey(k).
func (s *shard) get(hash uint64, k Key) (Handle, bool) {
	s.mu.RLock()
	e := s.entries.find(hash&s.mask, k)
	if e == nil || e.state != stateIndexed {
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

// publishLocked makes e, which holds a value and is not in the index, the
// entry of its key, storing in refs the references the caller counted plus
// indexRef; or, if e does not fit the shard, leaves it detached with just
// those. Either way an older entry of the key leaves the index (a placeholder
// only for an e that fits: a load in progress keeps its slot otherwise). It
// returns the chain of removed entries (linked by next) whose index references
// the caller drops with releaseChain after unlocking.
func (s *shard) publishLocked(e *entry, refs int32) (evicted *entry) {
	h := hashKey(e.key) & s.mask
	fits := charge(len(e.buf)) <= s.capacity
	switch old := s.entries.find(h, e.key); {
	case old == nil:
	case old.state == stateIndexed:
		evicted = s.removeLocked(old, evicted)
	case fits:
		// A load in progress loses its slot. It inserts its own value
		// when it finishes (see Cache.finishLoad), and its waiters wait
		// for that.
		s.entries.remove(h, old)
		old.state = stateDetached
	}
	if !fits {
		e.refs.Store(refs)
		return evicted
	}
	e.refs.Store(refs + indexRef)
	s.entries.add(h, e, s.entries[h])
	return s.linkLocked(e, evicted)
}

// linkLocked makes e, which holds a value and the index slot of its key,
// an indexed entry: it joins the ring just behind the hand and its file's
// list, is charged, and the hand then evicts until the shard is within
// capacity. e.refs must already count indexRef.
func (s *shard) linkLocked(e *entry, evicted *entry) *entry {
	e.state = stateIndexed
	if h := s.hand; h == nil {
		e.next, e.prev = e, e
		s.hand = e
	} else {
		e.next, e.prev = h, h.prev
		h.prev.next = e
		h.prev = e
	}

	fk := Key{ID: e.key.ID, FileNum: e.key.FileNum}
	fh := hashKey(fk) & s.mask
	sent, head := s.files.lookup(fh, fk)
	if sent == nil {
		sent = &entry{state: stateSentinel, key: fk}
		sent.fileNext, sent.filePrev = sent, sent
		s.files.add(fh, sent, head)
	}
	e.fileNext, e.filePrev = sent, sent.filePrev
	sent.filePrev.fileNext = e
	sent.filePrev = e

	s.size += charge(len(e.buf))
	s.count++
	return s.evictLocked(evicted)
}

// evictLocked runs the CLOCK hand until the shard is within capacity: an
// entry whose bit is set gets a second chance (the bit is cleared), one whose
// bit is clear is removed. Hits cannot set bits meanwhile (they need the
// shared lock), so after at most one turn every bit is clear and the loop
// ends.
func (s *shard) evictLocked(evicted *entry) *entry {
	for s.size > s.capacity {
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

// removeLocked takes the indexed entry e out of the index, the ring and its
// file's list, and pushes it on the evicted chain. Its links are cleared, as
// newEntry expects of a freed entry.
func (s *shard) removeLocked(e, evicted *entry) *entry {
	s.entries.remove(hashKey(e.key)&s.mask, e)
	e.state = stateDetached

	if e.next == e {
		s.hand = nil
	} else {
		if s.hand == e {
			s.hand = e.next
		}
		e.prev.next = e.next
		e.next.prev = e.prev
	}

	if sent := e.fileNext; sent == e.filePrev {
		// Only the sentinel is left.
		s.files.remove(hashKey(sent.key)&s.mask, sent)
	} else {
		e.filePrev.fileNext = e.fileNext
		e.fileNext.filePrev = e.filePrev
	}
	e.fileNext, e.filePrev, e.prev = nil, nil, nil

	s.size -= charge(len(e.buf))
	s.count--
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
