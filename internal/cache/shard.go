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
	// hand is the CLOCK hand of the main ring: the next entry eviction
	// examines there. New entries of PriorityNormal, and promoted scan
	// entries, are linked just behind it, so they are examined last.
	hand *entry
	// scanHand heads the probation ring: the entries of PriorityScan loads
	// that have not been promoted, oldest first (new ones are linked just
	// behind it). Eviction takes from here first while scanSize exceeds
	// scanCapacity (see evictLocked).
	scanHand *entry
	// highHand is the CLOCK hand of the high-priority ring: the entries of
	// PriorityHigh loads (index and filter blocks) within the pool's
	// share. Eviction takes from the other rings first while highSize is
	// within highCapacity (see evictLocked).
	highHand *entry
	// capacity is this shard's share of the cache's capacity,
	// scanCapacity the share of that the probation ring may take from the
	// main ring's entries (see scanShare), and highCapacity the share the
	// high-priority ring keeps from the others (Options.HighPriorityPoolRatio).
	// Immutable.
	capacity     int64
	scanCapacity int64
	highCapacity int64
	// scanSize and highSize are the parts of size charged for the
	// probation and high-priority rings.
	scanSize int64
	highSize int64
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

// scanShare is the divisor of a shard's capacity that gives its probation
// share (see the package documentation): a scan over more data than the
// cache recycles an eighth of it and leaves the rest to the entries that
// point reads brought in and hits kept.
const scanShare = 8

func (s *shard) init(capacity, highCapacity int64, mask uint64) {
	s.entries = make(index)
	s.files = make(index)
	s.capacity = capacity
	s.scanCapacity = capacity / scanShare
	s.highCapacity = highCapacity
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
	fits := e.charge() <= s.capacity
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
// an indexed entry: it joins its ring (the probation ring if e.scan, the
// high-priority one if e.high, else the main one) just behind that ring's
// hand and its file's list, is
// charged, and eviction then runs until the shard is within capacity.
// e.refs must already count indexRef.
func (s *shard) linkLocked(e *entry, evicted *entry) *entry {
	e.state = stateIndexed
	switch {
	case e.scan:
		linkBehind(&s.scanHand, e)
		s.scanSize += e.charge()
	case e.high:
		s.linkHighLocked(e)
	default:
		linkBehind(&s.hand, e)
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

	s.size += e.charge()
	s.count++
	return s.evictLocked(evicted)
}

// linkBehind links e into the ring whose hand is *hand, just behind the
// hand: the last entry that hand examines.
func linkBehind(hand **entry, e *entry) {
	if h := *hand; h == nil {
		e.next, e.prev = e, e
		*hand = e
	} else {
		e.next, e.prev = h, h.prev
		h.prev.next = e
		h.prev = e
	}
}

// unlinkRing takes e out of the ring whose hand is *hand, moving the hand
// on if it points at e. It leaves e's own links as they are.
func unlinkRing(hand **entry, e *entry) {
	if e.next == e {
		*hand = nil
		return
	}
	if *hand == e {
		*hand = e.next
	}
	e.prev.next = e.next
	e.next.prev = e.prev
}

// evictLocked removes entries until the shard is within capacity, taking
// from the rings in this order:
//
//   - the probation ring while it holds more than its share (or the main
//     ring is empty): its oldest entry goes, unless a hit set its bit;
//     then it is promoted to the main ring instead (see promoteLocked);
//   - the main ring: its CLOCK hand runs; an entry whose bit is set gets a
//     second chance (the bit is cleared), one whose bit is clear is
//     removed; except that a hit PriorityHigh entry, demoted earlier, goes
//     back to the high-priority ring with its bit cleared (as a hit in
//     RocksDB puts a high priority entry back in its pool);
//   - when both are empty, the high-priority ring, whose CLOCK hand runs
//     as the main one's.
//
// The high-priority ring never holds more than its share (see
// linkHighLocked), so within that share an index or filter block is
// evicted only when no other block is left. Hits cannot set bits meanwhile
// (they need the shared lock), so every promotion and return spends a set
// bit, every demotion shrinks the high ring's overflow for good, and after
// at most a turn of each hand every bit is clear: the loop ends.
func (s *shard) evictLocked(evicted *entry) *entry {
	for s.size > s.capacity {
		if e := s.scanHand; e != nil && (s.scanSize > s.scanCapacity || s.hand == nil) {
			if e.referenced.Load() {
				s.promoteLocked(e)
			} else {
				evicted = s.removeLocked(e, evicted)
			}
			continue
		}
		if e := s.hand; e != nil {
			switch {
			case !e.referenced.Load():
				evicted = s.removeLocked(e, evicted)
			case e.high:
				unlinkRing(&s.hand, e)
				e.referenced.Store(false)
				s.linkHighLocked(e)
			default:
				e.referenced.Store(false)
				s.hand = e.next
			}
			continue
		}
		e := s.highHand
		if e == nil {
			break
		}
		if e.referenced.Load() {
			e.referenced.Store(false)
			s.highHand = e.next
			continue
		}
		evicted = s.removeLocked(e, evicted)
	}
	return evicted
}

// promoteLocked moves e, the oldest probation entry, whose bit a hit set,
// to the main ring just behind its hand, as if a point read had just
// inserted it: the hit is spent on the promotion (the bit is cleared), and
// a further hit before the main hand comes round keeps it again.
func (s *shard) promoteLocked(e *entry) {
	unlinkRing(&s.scanHand, e)
	e.scan = false
	s.scanSize -= e.charge()
	e.referenced.Store(false)
	linkBehind(&s.hand, e)
}

// linkHighLocked links e, a PriorityHigh entry on no ring, behind the
// high-priority ring's hand, and then keeps the ring within its share as
// RocksDB keeps its high priority pool, on every insert and not only when
// the shard is full: while it is over, the ring's CLOCK hand runs and the
// entry it stops at (bit clear) is demoted to the main ring, just behind
// the main hand, where it competes with the data blocks as the newest of
// them. So the main ring is never empty while high entries overflow, and
// a block inserted there is not examined before the ones demoted for it.
func (s *shard) linkHighLocked(e *entry) {
	e.inHigh = true
	linkBehind(&s.highHand, e)
	s.highSize += e.charge()
	for s.highSize > s.highCapacity {
		d := s.highHand
		if d.referenced.Load() {
			d.referenced.Store(false)
			s.highHand = d.next
			continue
		}
		unlinkRing(&s.highHand, d)
		d.inHigh = false
		s.highSize -= d.charge()
		linkBehind(&s.hand, d)
	}
}

// removeLocked takes the indexed entry e out of the index, its ring and its
// file's list, and pushes it on the evicted chain. Its links are cleared, as
// newEntry expects of a freed entry.
func (s *shard) removeLocked(e, evicted *entry) *entry {
	s.entries.remove(hashKey(e.key)&s.mask, e)
	e.state = stateDetached

	switch {
	case e.scan:
		unlinkRing(&s.scanHand, e)
		s.scanSize -= e.charge()
	case e.inHigh:
		unlinkRing(&s.highHand, e)
		s.highSize -= e.charge()
	default:
		unlinkRing(&s.hand, e)
	}

	if sent := e.fileNext; sent == e.filePrev {
		// Only the sentinel is left.
		s.files.remove(hashKey(sent.key)&s.mask, sent)
	} else {
		e.filePrev.fileNext = e.fileNext
		e.fileNext.filePrev = e.filePrev
	}
	e.fileNext, e.filePrev, e.prev = nil, nil, nil

	s.size -= e.charge()
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
