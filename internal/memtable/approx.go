package memtable

import (
	"github.com/shaledb/shale/internal/base"
)

// approxSample is how many nodes ApproximateStats walks on one level of the
// skiplist before it moves up a level.
const approxSample = 512

// ApproximateStats estimates the number of entries whose user keys are in
// [start, end), a nil bound being unbounded, and the arena bytes they take
// (key, value and node; RocksDB's GetApproximateMemTableStats). Every
// version of a key and every deletion counts as an entry, as in RocksDB.
//
// It walks level 0 of the skiplist from start: a range of fewer than
// approxSample (512) entries is counted exactly. A larger one is counted
// on the lowest level whose nodes in the range are fewer than approxSample:
// each node of level L stands for 2^L entries, since a node reaches level L
// with probability 2^-L, independently of its key, so the estimate is
// unbiased and its relative standard deviation is about 1/sqrt(nodes
// counted): around 6% (at least 256 nodes are counted, else the level below
// would have had fewer than 512). The walk visits at most approxSample
// nodes per level, so its cost grows with the log of the range's size.
//
// A memtable made from a batch counts exactly, by binary search in its
// index, and estimates the bytes from the batch's average record.
//
// It is safe to call concurrently with writers: entries added meanwhile
// may or may not be counted.
func (m *MemTable) ApproximateStats(start, end []byte) (count, size uint64) {
	if start != nil && end != nil && base.CompareUser(m.cmp, start, end) >= 0 {
		return 0, 0
	}
	if bm := m.bm; bm != nil {
		i, j := 0, len(bm.index)
		if start != nil {
			i = bm.searchGE(start)
		}
		if end != nil {
			j = bm.searchGE(end)
		}
		if j <= i || len(bm.index) == 0 {
			return 0, 0
		}
		n := uint64(j - i)
		return n, n * uint64(len(bm.data)) / uint64(len(bm.index))
	}
	height := int(m.height.Load())
	for level := 0; level < height; level++ {
		nodes, b, complete := m.walkLevel(start, end, level)
		if complete {
			return nodes << level, b << level
		}
	}
	// More than approxSample nodes even on the top level: impossible in
	// practice (it needs 2^maxHeight entries); count what was sampled.
	nodes, b, _ := m.walkLevel(start, end, height-1)
	return nodes << (height - 1), b << (height - 1)
}

// walkLevel counts the nodes of level whose user keys are in [start, end)
// and their bytes, stopping after approxSample of them: complete says the
// walk reached the range's end.
func (m *MemTable) walkLevel(start, end []byte, level int) (nodes, size uint64, complete bool) {
	off := m.seekLevel(start, level)
	for off != 0 {
		nd := m.arena.node(off)
		if end != nil && base.CompareUser(m.cmp, m.arena.bytes(nd.keyOffset, nd.keySize), end) >= 0 {
			return nodes, size, true
		}
		if nodes == approxSample {
			return nodes, size, false
		}
		nodes++
		// A node's tower averages 2 slots (p = 1/2).
		size += uint64(nodeHeaderSize) + 2*linkSize + uint64(nd.keySize) + uint64(nd.valueSize)
		off = nd.nextOff(level)
	}
	return nodes, size, true
}

// seekLevel returns the first node of level (one whose tower reaches it)
// whose user key is >= start, or 0 when there is none; nil start is the
// level's first node.
func (m *MemTable) seekLevel(start []byte, level int) uint32 {
	if start == nil {
		return m.arena.node(m.head).nextOff(level)
	}
	key := base.InternalKey{UserKey: start, Trailer: base.MakeTrailer(base.MaxSeqNum, base.KindMax)}
	_, next, _ := m.descend(key, m.keyPrefix32(start), int(m.height.Load()), level, m.head, 0, nil)
	return next.off()
}
