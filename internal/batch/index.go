package batch

import (
	"slices"

	"github.com/shaledb/shale/internal/base"
)

// IndexSeqNum is the sequence number an IndexIter gives every entry. It is
// base.MaxSeqNum, which no committed write reaches (2^56-1 writes), so a
// batch entry sorts before every committed version of its user key in
// base.CompareInternal order and shadows it. A reader that merges an IndexIter
// over a snapshot iterator must treat entries at IndexSeqNum as visible
// whatever its snapshot.
const IndexSeqNum = base.MaxSeqNum

// Index is a read-your-writes view of a Batch for transactions: the latest
// write to each key, by point lookup or in key order.
//
// The index is built incrementally: each call first indexes the records
// appended to the batch since the previous call, and starts over when the
// batch was Reset or given another encoding. Costs, for n distinct keys:
//
//   - Get is one map lookup (plus indexing any new records, O(1) each), and
//     does not allocate.
//   - NewIter sorts the n latest entries, O(n log n), the first time after the
//     batch changed, and reuses that sorted slice otherwise. Positioning an
//     IndexIter is O(log n) for seeks and O(1) for Next and Prev, and does not
//     allocate.
//   - Memory: per distinct key, a copy of the key (the map's), a map slot and
//     a 40-byte entry; plus a sorted copy of the entries for each version of
//     the batch that has been iterated.
//
// An Index is not safe for concurrent use, nor concurrently with writes to its
// batch.
type Index struct {
	b      *Batch
	gen    uint64         // b.gen when indexing (re)started
	off    int            // offset of the first record not yet indexed
	num    uint32         // records indexed
	latest []indexEntry   // the latest write to each distinct key, in first-write order
	byKey  map[string]int // key → position in latest
	// rangeDels are the batch's range deletions in batch order, as offsets.
	rangeDels []indexRange
	// sorted is latest sorted by key, shared read-only with the iterators
	// made since the batch last changed; nil when stale. It is never written
	// after it is built, so older iterators keep a consistent view.
	sorted []indexEntry
	// cmp orders user keys; nil is bytewise (see SetCompare).
	cmp base.Compare
}

// indexEntry locates a record in the batch's encoding by offsets, which stay
// right when appends reallocate the buffer.
type indexEntry struct {
	keyOff, keyLen int
	valOff, valLen int
	kind           base.Kind
}

// indexRange locates a range deletion's start and end in the batch.
type indexRange struct {
	startOff, startLen int
	endOff, endLen     int
}

// NewIndex returns an index over b. The index reads b's buffer directly; b
// must outlive it.
func NewIndex(b *Batch) *Index {
	return &Index{b: b, gen: b.gen, off: HeaderLen, byKey: make(map[string]int)}
}

// catchUp indexes the records written since the last call.
func (x *Index) catchUp() {
	b := x.b
	if x.gen != b.gen {
		x.gen = b.gen
		x.off = HeaderLen
		x.num = 0
		x.latest = x.latest[:0]
		x.rangeDels = x.rangeDels[:0]
		clear(x.byKey)
		x.sorted = nil
	}
	for x.off < len(b.data) {
		rec, err := decodeRecord(b.data, x.off, x.num)
		if err != nil {
			// Set, Delete and SetRepr only ever leave well-formed records.
			panic(base.AssertionFailedf("batch: indexing a batch whose records do not decode: %v", err))
		}
		if rec.kind == base.KindRangeDelete {
			x.indexRangeDelete(rec)
		} else {
			e := indexEntry{keyOff: rec.keyOff, keyLen: rec.keyLen, valOff: rec.valOff, valLen: rec.valLen, kind: rec.kind}
			key := b.data[rec.keyOff : rec.keyOff+rec.keyLen]
			if i, ok := x.byKey[string(key)]; ok {
				x.latest[i] = e
			} else {
				x.byKey[string(key)] = len(x.latest)
				x.latest = append(x.latest, e)
			}
		}
		x.off = rec.end
		x.num++
		x.sorted = nil
	}
}

// indexRangeDelete records a range deletion and turns the latest write of
// every key it covers into a Delete: the deletion is newer than each of them.
// It costs O(keys indexed so far), which transactions' batches afford.
func (x *Index) indexRangeDelete(rec record) {
	r := indexRange{startOff: rec.keyOff, startLen: rec.keyLen, endOff: rec.valOff, endLen: rec.valLen}
	x.rangeDels = append(x.rangeDels, r)
	for i := range x.latest {
		e := &x.latest[i]
		if e.kind != base.KindDelete && x.covers(r, x.b.data[e.keyOff:e.keyOff+e.keyLen]) {
			e.kind = base.KindDelete
			e.valOff, e.valLen = 0, 0
		}
	}
}

// covers reports whether r's range holds key; an empty end is unbounded.
func (x *Index) covers(r indexRange, key []byte) bool {
	data := x.b.data
	return base.CompareUser(x.cmp, data[r.startOff:r.startOff+r.startLen], key) <= 0 &&
		(r.endLen == 0 || base.CompareUser(x.cmp, key, data[r.endOff:r.endOff+r.endLen]) < 0)
}

// RangeDeletions calls fn with the start and end of each range deletion in
// the batch, in batch order, until fn returns false; an empty end is
// unbounded. The slices point into
// the batch's buffer and must not be modified or retained past the batch's
// next change. A reader merging the index over a snapshot treats every
// snapshot key they cover as deleted; keys the batch wrote after a range
// deletion are already in the index as their latest write.
func (x *Index) RangeDeletions(fn func(start, end []byte) bool) {
	x.catchUp()
	data := x.b.data
	for _, r := range x.rangeDels {
		if !fn(data[r.startOff:r.startOff+r.startLen:r.startOff+r.startLen], data[r.endOff:r.endOff+r.endLen:r.endOff+r.endLen]) {
			return
		}
	}
}

// NumRangeDeletions returns the number of range deletions in the batch.
func (x *Index) NumRangeDeletions() int {
	x.catchUp()
	return len(x.rangeDels)
}

// Len returns the number of distinct keys written to the batch.
func (x *Index) Len() int {
	x.catchUp()
	return len(x.latest)
}

// Get returns the latest write to key in the batch. found is false when the
// batch does not write key; otherwise kind is base.KindSet with the value,
// base.KindMerge with the latest operand (the engine's transactions, the
// index's user, write none), or base.KindDelete with a nil value. A key that a range deletion covers, and
// that the batch did not write again after it, is found as a Delete. The value points into the batch's buffer:
// it must not be modified, and it is valid until the batch is Reset or given
// another encoding.
func (x *Index) Get(key []byte) (value []byte, kind base.Kind, found bool) {
	x.catchUp()
	i, ok := x.byKey[string(key)]
	if !ok {
		for _, r := range x.rangeDels {
			if x.covers(r, key) {
				return nil, base.KindDelete, true
			}
		}
		return nil, 0, false
	}
	e := &x.latest[i]
	if e.kind == base.KindSet || e.kind == base.KindMerge {
		value = x.b.data[e.valOff : e.valOff+e.valLen : e.valOff+e.valLen]
	}
	return value, e.kind, true
}

// NewIter returns an iterator over the latest write to each user key in
// [lower, upper) (a nil bound is no bound), one entry per key at
// IndexSeqNum; lower and upper are not retained. The iterator sees the batch
// as it is now: records written to the batch later are not visible to it. It
// is valid until the batch is Reset or given another encoding, and should be
// closed.
func (x *Index) NewIter(lower, upper []byte) *IndexIter {
	x.catchUp()
	data := x.b.data
	if x.sorted == nil {
		x.sorted = slices.Clone(x.latest)
		slices.SortFunc(x.sorted, func(a, b indexEntry) int {
			return base.CompareUser(x.cmp, data[a.keyOff:a.keyOff+a.keyLen], data[b.keyOff:b.keyOff+b.keyLen])
		})
	}
	it := &IndexIter{data: data, entries: x.sorted, hi: len(x.sorted), pos: -1, cmp: x.cmp}
	if lower != nil {
		it.lo = it.search(lower)
	}
	if upper != nil {
		it.hi = max(it.search(upper), it.lo)
	}
	return it
}

// IndexIter iterates over an Index in key order. It implements
// base.InternalIterator: every entry has sequence number IndexSeqNum, the
// kind of the latest write to its key, and, for a Set, its value. Keys and
// values point into the batch's buffer and must not be modified; the
// *base.InternalKV returned is owned by the iterator and valid until it is
// next positioned.
//
// Once Next or Prev has run off either end, or a seek found nothing, the
// iterator is exhausted: Next and Prev return nil until it is positioned
// again with a seek, First or Last.
//
// An IndexIter is not safe for concurrent use.
type IndexIter struct {
	data    []byte
	entries []indexEntry // sorted; shared, never written
	lo, hi  int          // the entries within the bounds
	pos     int          // current entry, or -1 when exhausted or unpositioned
	kv      base.InternalKV
	cmp     base.Compare // the Index's
}

var _ base.InternalIterator = (*IndexIter)(nil)

// search returns the index of the first entry whose key is >= key within
// [it.lo, it.hi], so that it clamps to the bounds.
func (it *IndexIter) search(key []byte) int {
	i, j := it.lo, it.hi
	for i < j {
		h := int(uint(i+j) >> 1)
		e := &it.entries[h]
		if base.CompareUser(it.cmp, it.data[e.keyOff:e.keyOff+e.keyLen], key) < 0 {
			i = h + 1
		} else {
			j = h
		}
	}
	return i
}

// at positions the iterator at entry i, or exhausts it when i is out of
// bounds.
func (it *IndexIter) at(i int) *base.InternalKV {
	if i < it.lo || i >= it.hi {
		it.pos = -1
		return nil
	}
	it.pos = i
	e := &it.entries[i]
	it.kv.K = base.MakeInternalKey(it.data[e.keyOff:e.keyOff+e.keyLen:e.keyOff+e.keyLen], IndexSeqNum, e.kind)
	it.kv.V = nil
	if e.kind == base.KindSet || e.kind == base.KindMerge {
		it.kv.V = it.data[e.valOff : e.valOff+e.valLen : e.valOff+e.valLen]
	}
	return &it.kv
}

// SeekGE moves to the first entry whose user key is >= key and within the
// bounds.
func (it *IndexIter) SeekGE(key []byte) *base.InternalKV { return it.at(it.search(key)) }

// SeekLT moves to the last entry whose user key is < key and within the
// bounds.
func (it *IndexIter) SeekLT(key []byte) *base.InternalKV { return it.at(it.search(key) - 1) }

// First moves to the first entry within the bounds.
func (it *IndexIter) First() *base.InternalKV { return it.at(it.lo) }

// Last moves to the last entry within the bounds.
func (it *IndexIter) Last() *base.InternalKV { return it.at(it.hi - 1) }

// Next moves to the following entry.
func (it *IndexIter) Next() *base.InternalKV {
	if it.pos < 0 {
		return nil
	}
	return it.at(it.pos + 1)
}

// Prev moves to the preceding entry.
func (it *IndexIter) Prev() *base.InternalKV {
	if it.pos < 0 {
		return nil
	}
	return it.at(it.pos - 1)
}

// Error returns nil: an IndexIter reads memory the batch has already
// checked.
func (it *IndexIter) Error() error { return nil }

// Close releases the iterator's references to the batch.
func (it *IndexIter) Close() error {
	*it = IndexIter{pos: -1}
	return nil
}
