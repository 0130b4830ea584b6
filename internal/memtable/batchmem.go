package memtable

import (
	"bytes"
	"cmp"
	"math"
	"math/bits"
	"slices"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/batch"
)

// batchMem is the contents of a memtable made from one batch
// (NewFromBatch): the batch's own encoding, not copied, and a sorted index of
// its point records. It never changes after NewFromBatch returns.
type batchMem struct {
	// data is the batch's encoding, header included, retained from the
	// batch (batch.Batch.Retain) so that it never changes.
	data []byte
	// seq is the sequence number of the batch's first record; record i has
	// seq+i.
	seq base.SeqNum
	// index has one entry per point record (Set or Delete), in
	// base.CompareInternal order: user key ascending, then sequence number
	// descending (the batch's later write of a key first). An entry packs
	// the record's number in the batch in its high 32 bits and the record's
	// offset in data in its low 32: 8 bytes per record, one load per probe.
	index []uint64
	// cmp orders user keys; nil is bytewise.
	cmp base.Compare
}

// NewFromBatch returns an immutable memtable holding the records of b at
// sequence numbers seq, seq+1, ... in batch order: to every reader it is the
// memtable that Apply(b, seq) into an empty memtable makes (the same Get and
// GetEntry answers, the same iterator output, the same RangeDeletions,
// Count and Empty). It does not copy the records: it retains b's encoding
// (batch.Batch.Retain), which therefore never changes again (b itself stays
// usable: its next change moves it to a new buffer), and builds an index of
// 8 bytes per point record, once. Range deletions join the memtable's range
// tombstones as Apply adds them.
//
// It costs a pass over the batch and a sort of integers (the records' key
// prefixes) instead of a skiplist insertion per record, and no arena: the
// engine turns a batch too large for its write buffer into one of these,
// as Pebble does with its flushable batches.
//
// The memtable lives on the Go heap (OffHeap reports false), takes no
// writes (Add and Apply fail with an error marked base.ErrInvalidArgument,
// Fits reports false) and is never Reset; Free drops its references.
//
// A batch whose sequence numbers would pass base.MaxSeqNum, or whose
// encoding is 4 GiB or longer, is an error marked base.ErrInvalidArgument;
// a malformed one returns its corruption error.
func NewFromBatch(b *batch.Batch, seq base.SeqNum) (*MemTable, error) {
	return NewFromBatchCmp(nil, b, seq)
}

// NewFromBatchCmp is NewFromBatch for user keys ordered by cmp (bytewise
// when nil).
func NewFromBatchCmp(cmp base.Compare, b *batch.Batch, seq base.SeqNum) (*MemTable, error) {
	if err := checkSeqRange(seq, b.Count()); err != nil {
		return nil, err
	}
	if uint64(b.Len()) > math.MaxUint32 { // uint64: the constant overflows a 32-bit int
		return nil, base.InvalidArgumentf("memtable: a %d-byte batch is too large to index with 32-bit offsets", b.Len())
	}
	m := &MemTable{}
	m.SetCompare(cmp)
	bm, err := m.indexBatch(b, seq)
	if err != nil {
		return nil, err
	}
	bm.data = b.Retain()
	m.bm = bm
	// Count, Empty and ApproximateSize read these as for an arena.
	m.count.Store(int64(len(bm.index)))
	m.arena.used.Store(uint64(len(bm.data)) + 8*uint64(len(bm.index)))
	return m, nil
}

// indexBatch builds the index of b's point records and adds its range
// deletions to m. The index is sorted on integers: each entry starts as the
// first bits of its user key (after the prefix every key of the batch
// shares) above its record number, so that one sort of uint64s orders the
// records by key prefix, and only records whose prefixes tie are compared
// by their whole keys. The record's offset is kept in a side slice until the
// sorted entries are rewritten as (record number, offset).
func (m *MemTable) indexBatch(b *batch.Batch, seq base.SeqNum) (*batchMem, error) {
	n := b.Count()
	bm := &batchMem{seq: seq, cmp: m.cmp}
	if n == 0 {
		return bm, nil
	}
	data := b.Repr()
	// idxBits low bits of an entry hold the record number; the rest hold
	// the key prefix.
	idxBits := uint(bits.Len32(n - 1))
	offs := make([]uint32, n)
	ents := make([]uint64, 0, n)
	var first []byte
	lcp := -1 // length of the prefix every point key shares; -1 before the first
	r := b.Reader()
	for i := uint32(0); ; i++ {
		off := r.Offset()
		kind, key, value, ok, err := r.Next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		offs[i] = uint32(off)
		if kind == base.KindRangeDelete {
			m.rangeDels.add(seq+base.SeqNum(i), key, value)
			continue
		}
		if m.cmp != nil {
			// Prefixes order keys bytewise only: with none, every record
			// ties and is compared whole.
			ents = append(ents, uint64(i))
			continue
		}
		switch {
		case lcp < 0:
			first, lcp = key, len(key)
		case lcp > 0:
			lcp = commonPrefixLen(first[:lcp], key)
		}
		ents = append(ents, sortPrefix(key, idxBits)|uint64(i))
	}
	mask := uint64(1)<<idxBits - 1
	if lcp > 0 {
		// Every key starts alike (a table's prefix, say): sort on what
		// follows, or every prefix would tie.
		for j, e := range ents {
			ents[j] = sortPrefix(batch.KeyAt(data, offs[e&mask])[lcp:], idxBits) | e&mask
		}
	}
	slices.Sort(ents)
	// Equal prefixes sort by record number; order each run of them by
	// key, and a key's records newest first.
	for lo := 0; lo < len(ents); {
		hi := lo + 1
		for hi < len(ents) && ents[hi]>>idxBits == ents[lo]>>idxBits {
			hi++
		}
		if hi-lo > 1 {
			slices.SortFunc(ents[lo:hi], func(x, y uint64) int {
				if c := base.CompareUser(m.cmp, batch.KeyAt(data, offs[x&mask]), batch.KeyAt(data, offs[y&mask])); c != 0 {
					return c
				}
				return cmp.Compare(y&mask, x&mask)
			})
		}
		lo = hi
	}
	for j, e := range ents {
		ents[j] = (e&mask)<<32 | uint64(offs[e&mask])
	}
	bm.index = ents
	return bm, nil
}

// sortPrefix returns key's first 8 bytes as a big-endian integer (zero
// padded) with its low idxBits bits cleared, room for a record number. Like
// keyPrefix it never orders two keys against their byte order; keys whose
// prefixes are equal need comparing whole.
func sortPrefix(key []byte, idxBits uint) uint64 {
	return keyPrefix(key) >> idxBits << idxBits
}

// commonPrefixLen returns the length of the longest common prefix of a and
// b.
func commonPrefixLen(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// key returns the user key of index entry e.
func (bm *batchMem) key(e uint64) []byte { return batch.KeyAt(bm.data, uint32(e)) }

// seqOf returns the sequence number of index entry e.
func (bm *batchMem) seqOf(e uint64) base.SeqNum { return bm.seq + base.SeqNum(e>>32) }

// searchGE returns the position of the first entry whose user key is >= key.
func (bm *batchMem) searchGE(key []byte) int {
	// Every entry of key is at or below the largest sequence number.
	return bm.search(key, math.MaxUint64)
}

// search returns the position of the first entry at or after (key, seq) in
// internal order: a larger user key, or key itself at a sequence number <=
// seq.
func (bm *batchMem) search(key []byte, seq base.SeqNum) int {
	lo, hi := 0, len(bm.index)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		e := bm.index[mid]
		c := base.CompareUser(bm.cmp, bm.key(e), key)
		if c < 0 || (c == 0 && bm.seqOf(e) > seq) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// getEntry is GetEntry: the newest record of key at or below seq.
func (bm *batchMem) getEntry(key []byte, seq base.SeqNum) (value []byte, kind base.Kind, entrySeq base.SeqNum, found bool) {
	lo := bm.search(key, min(seq, base.MaxSeqNum))
	if lo == len(bm.index) {
		return nil, 0, 0, false
	}
	e := bm.index[lo]
	kind, k, v := batch.DecodeAt(bm.data, uint32(e))
	if !bytes.Equal(k, key) {
		return nil, 0, 0, false
	}
	if kind == base.KindDelete {
		v = nil
	}
	return v, kind, bm.seqOf(e), true
}

// set makes kv the entry at position pos.
func (bm *batchMem) set(kv *base.InternalKV, pos int) {
	e := bm.index[pos]
	kind, key, value := batch.DecodeAt(bm.data, uint32(e))
	kv.K = base.MakeInternalKey(key, bm.seqOf(e), kind)
	kv.V = nil
	if kind != base.KindDelete {
		kv.V = value
	}
}
