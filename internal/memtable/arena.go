package memtable

import (
	"math"
	"math/bits"
	"sync/atomic"
	"unsafe"
)

const (
	// maxHeight bounds a node's tower. With p = 1/2 the top level holds
	// about n/2^19 of n entries: a few for the million or so entries of a
	// 64 MiB memtable of small records. Only a memtable of tens of millions
	// of entries (a write buffer of gigabytes) walks more than a handful of
	// nodes there, all of them cached.
	maxHeight = 20

	// nodeAlign is the alignment of nodes in the arena: node.trailer is a
	// uint64, and the tower's atomics need 4.
	nodeAlign = 8

	// nodeHeaderSize is a node's size without its tower.
	nodeHeaderSize = int(unsafe.Offsetof(node{}.next))
	// maxNodeSize is the size of a node of maxHeight, the head's.
	maxNodeSize = int(unsafe.Sizeof(node{}))
	// towerSlack is the part of a full tower a node of height 1 does not
	// allocate. Every allocation leaves this much room before the end of the
	// arena, because a node is accessed as a *node of full size (its unused
	// slots are never touched) and that must not reach past the arena.
	towerSlack = maxNodeSize - nodeHeaderSize - linkSize

	// linkSize is the size of a tower slot.
	linkSize = 8

	// arenaStart is where allocation starts: offset 0 must not be a node, as
	// 0 means "none".
	arenaStart = nodeAlign

	// maxArenaSize keeps every offset a node stores, up to the end of its
	// value, within a uint32.
	maxArenaSize = math.MaxUint32
	// minArenaSize holds the head node and the slack after it.
	minArenaSize = arenaStart + maxNodeSize + towerSlack
)

// node is an entry's header in the arena; see the package doc for the layout.
// Only the first height slots of next exist for a node of that height. The
// fields other than prev and next are written before the node is linked and
// never change.
type node struct {
	keyOffset uint32
	keySize   uint32
	valueSize uint32
	// prev is the level-0 predecessor. A node's insertion sets it first, and
	// later insertions of nodes just before it move it to them (see link).
	prev    atomic.Uint32
	trailer uint64
	// next[i] is the link to the following node at level i (see link).
	next [maxHeight]atomic.Uint64
}

// link is a tower slot: the offset of the following node in its low 32
// bits and the first 4 bytes of that node's user key (keyPrefix32) in its
// high 32. A search compares its key's prefix with the link's and loads the
// following node only when they tie or the key is after it: the node where
// a search turns down a level is then mostly never touched, and in a
// memtable larger than the cache each node touched is a cache miss. 0 is
// the end of the level. The prefix is a function of the node, so a CAS on a
// link is a CAS on the offset.
type link uint64

func makeLink(off, prefix uint32) link { return link(uint64(prefix)<<32 | uint64(off)) }

func (l link) off() uint32    { return uint32(l) }
func (l link) prefix() uint32 { return uint32(l >> 32) }

// nextOff returns the offset of the following node at level.
func (nd *node) nextOff(level int) uint32 { return uint32(nd.next[level].Load()) }

// nodeSize returns the size of a node of height h.
func nodeSize(h int) uint64 { return uint64(nodeHeaderSize + linkSize*h) }

// entrySize returns the arena bytes an entry of height h takes, rounded up
// to nodeAlign so that entries can be laid out back to back.
func entrySize(h, keyLen, valueLen int) uint64 {
	return alignUp(nodeSize(h) + uint64(keyLen) + uint64(valueLen))
}

func alignUp(n uint64) uint64 { return (n + nodeAlign - 1) &^ (nodeAlign - 1) }

// randomHeight turns 64 random bits into a height with P(h > k) = 2^-k: one
// more level per trailing zero bit.
//
// p = 1/2 rather than 1/4 (LevelDB's and RocksDB's default): a search then
// visits fewer distinct nodes, and in a memtable larger than the cache each
// is a cache miss on the search's critical path, one load depending on the
// one before. In BenchmarkFillApply (131,072 random 16-byte keys with
// 256-byte values, 36 MiB) a search visits 24.4 distinct nodes instead of
// 29.7 (32.9 comparisons instead of 31.7, the extra ones on nodes already
// cached). The towers cost 2 slots (of 8 bytes) per node on average instead
// of 1.33, 5.3 bytes.
func randomHeight(r uint64) int {
	return min(bits.TrailingZeros64(r)+1, maxHeight)
}

// arena is a lock-free bump allocator over one buffer. It is safe for
// concurrent use.
type arena struct {
	// buf is 8-byte aligned: a page-aligned mapping, or the memory of a
	// []uint64.
	buf []byte
	// mapped says buf is a mapping outside the Go heap (see New).
	mapped bool
	// used is the offset of the first free byte. It only grows, and only up
	// to a value that leaves towerSlack bytes free.
	used atomic.Uint64
}

// init allocates the buffer, size bytes clamped to [minArenaSize,
// maxArenaSize]: mapped memory where the platform has it, else a heap slice.
func (a *arena) init(size int) {
	// In uint64: maxArenaSize overflows a 32-bit int, and there any int
	// size is below it.
	size = int(min(max(uint64(max(size, 0)), uint64(minArenaSize)), maxArenaSize))
	if b := mapMemory(size); b != nil {
		a.buf, a.mapped = b, true
	} else {
		words := make([]uint64, (size+7)/8)
		a.buf = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), size)
	}
	a.used.Store(arenaStart)
}

// alloc reserves n bytes at a nodeAlign-aligned offset. It fails, taking
// nothing, when they do not fit: a failed allocation must not use up the
// arena, or one oversized entry would make every later Add fail.
func (a *arena) alloc(n uint64) (off uint32, ok bool) {
	for {
		old := a.used.Load()
		start := alignUp(old)
		end := start + n
		if end < start || end > uint64(len(a.buf)-towerSlack) {
			return 0, false
		}
		if a.used.CompareAndSwap(old, end) {
			return uint32(start), true
		}
	}
}

// size returns the bytes allocated, including the reserved start and the
// head node.
func (a *arena) size() int { return int(a.used.Load()) }

// node returns the node at off. off must come from alloc.
func (a *arena) node(off uint32) *node {
	return (*node)(unsafe.Pointer(&a.buf[off]))
}

// bytes returns the n bytes at off, capped so that appending to them cannot
// write into the arena.
func (a *arena) bytes(off, n uint32) []byte {
	return a.buf[off : off+n : off+n]
}

// reset zeroes the allocated bytes, as a fresh arena is, and empties the
// arena. A mapped arena's pages are dropped rather than cleared where the
// platform allows (releaseMemory): an arena waiting in a pool for its next
// memtable then holds no memory, and one reused at once costs the same
// zeroing either way, by the kernel on first touch instead of by clear.
func (a *arena) reset() {
	used := int(a.used.Load())
	if !a.mapped || !releaseMemory(a.buf, used) {
		clear(a.buf[:used])
	}
	a.used.Store(arenaStart)
}
