package memtable

import (
	"cmp"
	"encoding/binary"
	"math/rand/v2"
	"slices"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/batch"
)

// sortedApplyMin is the smallest batch Apply inserts in key order. Sorting
// pays for itself once consecutive keys of the sorted batch are close in the
// list, so that a search from the previous key's splice is shorter than one
// from the head; a small batch into a large memtable gains nothing.
const sortedApplyMin = 1024

// sortEntry is one point record of a batch being sorted: its node in the
// arena, and the first 8 bytes of its user key as a big-endian integer, so
// that most comparisons are of integers and touch no key bytes.
type sortEntry struct {
	prefix uint64
	off    uint32
}

// keyPrefix returns the first 8 bytes of key as a big-endian integer, zero
// padded. prefix(a) < prefix(b) implies a < b, and a < b implies
// prefix(a) <= prefix(b), so only equal prefixes need the keys compared.
func keyPrefix(key []byte) uint64 {
	if len(key) >= 8 {
		return binary.BigEndian.Uint64(key)
	}
	var buf [8]byte
	copy(buf[:], key)
	return binary.BigEndian.Uint64(buf[:])
}

// applySorted is Apply for a large batch, once its arena space, from off on,
// is reserved and rng is seeded to draw the heights Apply sized the entries
// with. It writes every node into the reservation, sorts the nodes by
// internal key (a key set twice in the batch sorts its later, higher
// sequence number first) and links them in that order, each from the splice
// of the one before (see inserter): a million random keys then cost a sort
// and a walk along the list instead of a million searches from the head, each
// a chain of cache misses.
//
// Range deletions join the memtable's tombstones in batch order, as in
// Apply.
func (m *MemTable) applySorted(b *batch.Batch, seq base.SeqNum, off uint32, rng *rand.PCG) error {
	entries := make([]sortEntry, 0, b.Count())
	if err := m.placeNodes(b, seq, off, rng, &entries); err != nil {
		return err
	}
	slices.SortFunc(entries, func(x, y sortEntry) int {
		if c := cmp.Compare(x.prefix, y.prefix); c != 0 {
			return c
		}
		return m.compareNodes(x.off, y.off)
	})
	var ins inserter
	for _, e := range entries {
		if err := m.insert(e.off, m.nodeHeight(e.off), &ins); err != nil {
			return err
		}
	}
	return nil
}

// compareNodes orders the nodes at x and y by internal key.
func (m *MemTable) compareNodes(x, y uint32) int {
	nd := m.arena.node(x)
	return m.compare(base.InternalKey{UserKey: m.arena.bytes(nd.keyOffset, nd.keySize), Trailer: nd.trailer}, y)
}

// nodeHeight returns the height of an initialized node: its key starts
// right after its tower.
func (m *MemTable) nodeHeight(off uint32) int {
	return int(m.arena.node(off).keyOffset-off-uint32(nodeHeaderSize)) / linkSize
}
