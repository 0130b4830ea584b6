package memtable

import (
	"unsafe"

	"github.com/shaledb/shale/internal/base"
)

// Iter iterates over a memtable's entries in base.CompareInternal order,
// every version of every key, tombstones included, within bounds on user
// keys. It implements base.InternalIterator.
//
// The *base.InternalKV it returns is owned by the iterator and overwritten
// by the next positioning call; the key and value bytes it points to are in
// the arena, must not be modified, and stay valid while the memtable is
// alive. Positioning does not allocate. First, SeekGE and SeekLT are
// O(log n); Next and Prev are O(1) (Prev follows the level-0 prev links) and
// Last is O(log n).
//
// Once Next or Prev has run off either end, or a seek found nothing, the
// iterator is exhausted: Next and Prev return nil until it is positioned
// again with a seek, First or Last.
//
// An Iter is not safe for concurrent use, but any number of iterators may
// run concurrently with each other and with writes to the memtable; see the
// package doc for what they see.
type Iter struct {
	m            *MemTable
	nd           uint32 // current node; 0 when exhausted or unpositioned
	lower, upper []byte
	kv           base.InternalKV
	// bm is m.bm: an iterator over a memtable made from a batch walks its
	// index, where pos is 1 + the current position (0 when exhausted or
	// unpositioned, as nd).
	bm  *batchMem
	pos int
}

var _ base.InternalIterator = (*Iter)(nil)

// NewIter returns an iterator over the entries whose user keys are in
// [lower, upper); a nil bound is no bound. The iterator keeps lower and
// upper, which must not be modified while it is in use.
func (m *MemTable) NewIter(lower, upper []byte) *Iter {
	return &Iter{m: m, lower: lower, upper: upper, bm: m.bm}
}

// SeekGE moves to the first entry whose user key is >= key (and >= the
// lower bound).
func (it *Iter) SeekGE(key []byte) *base.InternalKV {
	if it.lower != nil && base.CompareUser(it.m.cmp, key, it.lower) < 0 {
		key = it.lower
	}
	if it.bm != nil {
		return it.forwardAt(it.bm.searchGE(key))
	}
	// (key, MaxSeqNum, KindMax) sorts before every entry of key.
	_, next := it.m.seek(base.MakeSearchKey(key, base.MaxSeqNum))
	return it.forward(next)
}

// SeekLT moves to the last entry whose user key is < key (and < the upper
// bound).
func (it *Iter) SeekLT(key []byte) *base.InternalKV {
	if it.upper != nil && base.CompareUser(it.m.cmp, key, it.upper) > 0 {
		key = it.upper
	}
	if it.bm != nil {
		return it.backwardAt(it.bm.searchGE(key) - 1)
	}
	prev, _ := it.m.seek(base.MakeSearchKey(key, base.MaxSeqNum))
	return it.backward(prev)
}

// First moves to the first entry within the bounds.
func (it *Iter) First() *base.InternalKV {
	if it.lower != nil {
		return it.SeekGE(it.lower)
	}
	if it.bm != nil {
		return it.forwardAt(0)
	}
	return it.forward(it.m.arena.node(it.m.head).nextOff(0))
}

// Last moves to the last entry within the bounds.
func (it *Iter) Last() *base.InternalKV {
	if it.upper != nil {
		return it.SeekLT(it.upper)
	}
	if it.bm != nil {
		return it.backwardAt(len(it.bm.index) - 1)
	}
	return it.backward(it.m.last())
}

// Next moves to the following entry.
func (it *Iter) Next() *base.InternalKV {
	if it.bm != nil {
		if it.pos == 0 {
			return nil
		}
		return it.forwardAt(it.pos)
	}
	if it.nd == 0 {
		return nil
	}
	return it.forward(it.m.arena.node(it.nd).nextOff(0))
}

// Prev moves to the preceding entry.
func (it *Iter) Prev() *base.InternalKV {
	if it.bm != nil {
		if it.pos == 0 {
			return nil
		}
		return it.backwardAt(it.pos - 2)
	}
	if it.nd == 0 {
		return nil
	}
	return it.backward(it.m.arena.node(it.nd).prev.Load())
}

// Error returns nil: the arena is memory, not input to decode.
func (it *Iter) Error() error { return nil }

// Close releases the iterator. It always returns nil.
func (it *Iter) Close() error {
	*it = Iter{}
	return nil
}

// forward positions at off, reached by moving forward, checking the upper
// bound; off 0 exhausts the iterator.
func (it *Iter) forward(off uint32) *base.InternalKV {
	if off == 0 {
		it.nd = 0
		return nil
	}
	it.set(off)
	if it.upper != nil && base.CompareUser(it.m.cmp, it.kv.K.UserKey, it.upper) >= 0 {
		it.nd = 0
		return nil
	}
	// Nodes lie in the arena in insertion order, so in a memtable filled
	// in random order each Next is a cache miss: start the next one's now,
	// to overlap with what the caller does with this entry (a flush builds
	// its block).
	if next := it.m.arena.node(off).nextOff(0); next != 0 {
		prefetchNode(unsafe.Pointer(it.m.arena.node(next)))
	}
	return &it.kv
}

// backward positions at off, reached by moving backward, checking the lower
// bound; the head exhausts the iterator.
func (it *Iter) backward(off uint32) *base.InternalKV {
	if off == it.m.head {
		it.nd = 0
		return nil
	}
	it.set(off)
	if it.lower != nil && base.CompareUser(it.m.cmp, it.kv.K.UserKey, it.lower) < 0 {
		it.nd = 0
		return nil
	}
	return &it.kv
}

func (it *Iter) set(off uint32) {
	a := &it.m.arena
	nd := a.node(off)
	it.nd = off
	it.kv.K = base.InternalKey{UserKey: a.bytes(nd.keyOffset, nd.keySize), Trailer: nd.trailer}
	it.kv.V = nil
	if base.Kind(nd.trailer&0xff) != base.KindDelete {
		it.kv.V = a.bytes(nd.keyOffset+nd.keySize, nd.valueSize)
	}
}

// forwardAt positions at index position i of a memtable made from a batch,
// reached by moving forward, checking the upper bound; i past the end
// exhausts the iterator.
func (it *Iter) forwardAt(i int) *base.InternalKV {
	if i >= len(it.bm.index) {
		it.pos = 0
		return nil
	}
	it.bm.set(&it.kv, i)
	it.pos = i + 1
	if it.upper != nil && base.CompareUser(it.m.cmp, it.kv.K.UserKey, it.upper) >= 0 {
		it.pos = 0
		return nil
	}
	return &it.kv
}

// backwardAt is forwardAt moving backward: it checks the lower bound, and
// i < 0 exhausts the iterator.
func (it *Iter) backwardAt(i int) *base.InternalKV {
	if i < 0 {
		it.pos = 0
		return nil
	}
	it.bm.set(&it.kv, i)
	it.pos = i + 1
	if it.lower != nil && base.CompareUser(it.m.cmp, it.kv.K.UserKey, it.lower) < 0 {
		it.pos = 0
		return nil
	}
	return &it.kv
}
