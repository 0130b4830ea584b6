package merging

import (
	"github.com/shaledb/shale/internal/base"
)

// Iter is a merging iterator over child internal iterators; see the package
// doc. It implements base.InternalIterator. The *base.InternalKV it returns
// is the current child's: it is valid until the merged iterator is next
// positioned, as the child's own contract says.
//
// An Iter is not safe for concurrent use. Its zero value is an iterator over
// no children; Init gives it some.
type Iter struct {
	children []child
	// heap holds the children that have an entry, as a binary heap ordered
	// by dir: the top is the current entry. It is empty when the iterator is
	// unpositioned, exhausted or stopped by an error.
	heap []*child
	// winner is the index in heap (1 or 2) of the root's child that comes
	// first, or 0 when unknown. Only the top child moves while stepping, so
	// as long as the top stays on top the subtrees below it are unchanged
	// and so is their winner: fixTop then costs one comparison (the top
	// against the winner) instead of the two of a sift-down, which is the
	// common case when one child (the largest level) holds most entries.
	winner int
	dir    direction
	err    error
	// cmp orders user keys; nil is bytewise (see SetCompare).
	cmp base.Compare
}

var _ base.InternalIterator = (*Iter)(nil)

type direction int8

const (
	forward direction = iota
	backward
)

type child struct {
	iter  base.InternalIterator
	kv    *base.InternalKV // the child's current entry; nil when it has none
	index int              // position in the argument list, to order equal keys
}

// NewIter returns a merging iterator over iters. The iterator owns the
// children from now on: its Close closes them.
func NewIter(iters ...base.InternalIterator) *Iter {
	m := &Iter{}
	m.Init(iters...)
	return m
}

// Init makes m a fresh merging iterator over iters, reusing m's memory: it
// allocates only when iters outnumbers the children m had before. The
// previous children must have been closed (by Close) or handed elsewhere.
func (m *Iter) Init(iters ...base.InternalIterator) {
	if cap(m.children) < len(iters) {
		m.children = make([]child, len(iters))
		m.heap = make([]*child, 0, len(iters))
	}
	m.children = m.children[:len(iters)]
	for i, it := range iters {
		m.children[i] = child{iter: it, index: i}
	}
	m.heap = m.heap[:0]
	m.winner = 0
	m.dir = forward
	m.err = nil
}

// Reset makes m an iterator over no children that keeps its memory for a
// later Init, and drops its references to the children it had, so that a
// recycled Iter keeps none of them alive.
func (m *Iter) Reset() {
	clear(m.children[:cap(m.children)])
	clear(m.heap[:cap(m.heap)])
	*m = Iter{children: m.children[:0], heap: m.heap[:0]}
}

// SeekGE moves to the first entry whose user key is >= key.
func (m *Iter) SeekGE(key []byte) *base.InternalKV { return m.position(opSeekGE, key) }

// SeekLT moves to the last entry whose user key is < key.
func (m *Iter) SeekLT(key []byte) *base.InternalKV { return m.position(opSeekLT, key) }

// First moves to the first entry.
func (m *Iter) First() *base.InternalKV { return m.position(opFirst, nil) }

// Last moves to the last entry.
func (m *Iter) Last() *base.InternalKV { return m.position(opLast, nil) }

// Next moves to the following entry.
func (m *Iter) Next() *base.InternalKV {
	if len(m.heap) == 0 {
		return nil
	}
	if m.dir != forward {
		return m.switchTo(forward)
	}
	c := m.heap[0]
	if c.kv = c.iter.Next(); c.kv == nil {
		return m.drop0(c)
	}
	// A lone child (one level after a full compaction, the memtables empty
	// or exhausted) needs no ordering at all.
	if len(m.heap) > 1 {
		m.fixTop()
	}
	return m.heap[0].kv
}

// Prev moves to the preceding entry.
func (m *Iter) Prev() *base.InternalKV {
	if len(m.heap) == 0 {
		return nil
	}
	if m.dir != backward {
		return m.switchTo(backward)
	}
	c := m.heap[0]
	if c.kv = c.iter.Prev(); c.kv == nil {
		return m.drop0(c)
	}
	if len(m.heap) > 1 {
		m.fixTop()
	}
	return m.heap[0].kv
}

// Error returns the first error a child reported, which stopped the
// iterator.
func (m *Iter) Error() error { return m.err }

// Close closes every child and returns the first error: the one that stopped
// iteration if any, else the first a child's Close returned. The iterator
// must not be used afterwards, except to Init it again.
func (m *Iter) Close() error {
	err := m.err
	for i := range m.children {
		if cerr := m.children[i].iter.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	// Drop the references so that a pooled Iter does not pin the children.
	clear(m.children)
	m.children = m.children[:0]
	clear(m.heap[:cap(m.heap)])
	m.heap = m.heap[:0]
	return err
}

type op int8

const (
	opSeekGE op = iota
	opSeekLT
	opFirst
	opLast
)

// position repositions every child with o and builds the heap.
func (m *Iter) position(o op, key []byte) *base.InternalKV {
	m.heap = m.heap[:0]
	m.winner = 0
	if m.err != nil {
		return nil
	}
	m.dir = forward
	if o == opSeekLT || o == opLast {
		m.dir = backward
	}
	for i := range m.children {
		c := &m.children[i]
		switch o {
		case opSeekGE:
			c.kv = c.iter.SeekGE(key)
		case opSeekLT:
			c.kv = c.iter.SeekLT(key)
		case opFirst:
			c.kv = c.iter.First()
		case opLast:
			c.kv = c.iter.Last()
		}
		if !m.add(c) {
			return nil
		}
	}
	return m.build()
}

// switchTo changes direction at the current entry, the top of the heap.
//
// Going forward, every child is positioned at or before the current entry
// and everything after its position comes after the current entry (in the
// merged order: internal key, then child index); going backward, the mirror
// image. So after the current child steps once toward d, each other child
// with an entry steps once toward d, and each child without one (exhausted
// toward the old direction, all of its entries lie toward d) restarts from
// its far end with First or Last. No child is stepped while exhausted.
func (m *Iter) switchTo(d direction) *base.InternalKV {
	cur := m.heap[0]
	m.heap = m.heap[:0]
	m.winner = 0
	m.dir = d
	for i := range m.children {
		c := &m.children[i]
		if c == cur {
			continue
		}
		switch {
		case c.kv != nil && d == forward:
			c.kv = c.iter.Next()
		case c.kv != nil:
			c.kv = c.iter.Prev()
		case d == forward:
			c.kv = c.iter.First()
		default:
			c.kv = c.iter.Last()
		}
		if !m.add(c) {
			return nil
		}
	}
	if d == forward {
		cur.kv = cur.iter.Next()
	} else {
		cur.kv = cur.iter.Prev()
	}
	if !m.add(cur) {
		return nil
	}
	return m.build()
}

// add appends c to the heap's slice, unordered, if it has an entry. A child
// without one may have failed: then add stops the iterator and returns
// false.
func (m *Iter) add(c *child) bool {
	if c.kv != nil {
		m.heap = append(m.heap, c)
		return true
	}
	if err := c.iter.Error(); err != nil {
		m.stop(err)
		return false
	}
	return true
}

// drop0 removes the top child, which just ran out of entries, from the
// heap and returns the new top entry, or stops the iterator and returns nil
// if the child failed instead.
func (m *Iter) drop0(c *child) *base.InternalKV {
	if err := c.iter.Error(); err != nil {
		m.stop(err)
		return nil
	}
	n := len(m.heap) - 1
	m.heap[0] = m.heap[n]
	m.heap[n] = nil
	m.heap = m.heap[:n]
	m.winner = 0
	m.down(0)
	return m.top()
}

func (m *Iter) stop(err error) {
	m.err = err
	m.heap = m.heap[:0]
	m.winner = 0
}

func (m *Iter) top() *base.InternalKV {
	if len(m.heap) == 0 {
		return nil
	}
	return m.heap[0].kv
}

// build orders the heap's slice into a heap and returns the top entry.
func (m *Iter) build() *base.InternalKV {
	for i := len(m.heap)/2 - 1; i >= 0; i-- {
		m.down(i)
	}
	return m.top()
}

// fixTop restores the heap order after the top child, of two or more,
// moved to a new entry.
func (m *Iter) fixTop() {
	h := m.heap
	w := 1 // the root's only child when there are two children
	if len(h) > 2 {
		if w = m.winner; w == 0 {
			w = 1
			if m.before(h[2], h[1]) {
				w = 2
			}
			m.winner = w
		}
	}
	if !m.before(h[w], h[0]) {
		return
	}
	// The winner moves up and the old top sinks into its subtree, which
	// changes; the next fixTop recomputes the winner.
	h[0], h[w] = h[w], h[0]
	m.winner = 0
	m.down(w)
}

// down sifts the child at i down to its place.
func (m *Iter) down(i int) {
	h := m.heap
	for {
		j := 2*i + 1
		if j >= len(h) {
			return
		}
		if r := j + 1; r < len(h) && m.before(h[r], h[j]) {
			j = r
		}
		if !m.before(h[j], h[i]) {
			return
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}

// before reports whether a's entry comes before b's in the current
// direction.
func (m *Iter) before(a, b *child) bool {
	var c int
	if m.cmp == nil {
		c = base.CompareInternal(a.kv.K, b.kv.K)
	} else {
		c = base.CompareInternalWith(m.cmp, a.kv.K, b.kv.K)
	}
	if c == 0 {
		c = a.index - b.index
	}
	if m.dir == backward {
		return c > 0
	}
	return c < 0
}
