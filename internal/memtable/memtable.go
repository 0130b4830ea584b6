package memtable

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/batch"
	"github.com/shaledb/shale/internal/rangedel"
)

var (
	// ErrArenaFull is returned by Add and Apply when the arena has no room for
	// the entries; nothing was inserted. The engine rotates to a new memtable.
	ErrArenaFull = errors.New("memtable: arena full")
	// ErrRecordExists is returned by Add and Apply for an entry whose user
	// key, sequence number and kind are already in the memtable. Sequence
	// numbers are never reused, so this is a caller bug.
	ErrRecordExists = errors.New("memtable: entry with this key, sequence number and kind exists")
)

// MemTable is a concurrent skiplist of internal keys and values in a
// fixed-size arena; see the package doc. It is safe for concurrent use: any
// number of goroutines may call Add, Apply, Get and the other methods, and
// use iterators, at once.
type MemTable struct {
	// bm is set in a memtable made from a batch (NewFromBatch), which has
	// no arena and no skiplist: reads dispatch on it with one predictable
	// branch. It comes first, on the cache line of the arena that every
	// read of an ordinary memtable loads anyway.
	bm    *batchMem
	arena arena
	// unmap unmaps a mapped arena if the MemTable becomes unreachable
	// without Free; Free stops it.
	unmap runtime.Cleanup
	freed bool
	head  uint32 // offset of the head node, which has a full tower and no key
	// height is the tallest tower linked or being linked, 1..maxHeight.
	// Searches start at this level.
	height atomic.Uint32
	count  atomic.Int64
	// rangeDels holds the range tombstones, beside the skiplist.
	rangeDels rangeDelList
	// cmp orders user keys; nil is bytewise (see SetCompare).
	cmp base.Compare
	// yield, set only by tests, makes inserters yield inside the windows
	// where links are half updated, so concurrent tests hit them.
	yield bool
}

// New returns an empty memtable whose arena has arenaSize bytes, allocated
// now and never grown. The engine passes write_buffer_size plus headroom.
// Sizes are clamped to [344 B, 4 GiB): offsets into the arena are uint32s, and
// a smaller arena could not hold the head node.
//
// On Unix the arena is an anonymous mapping outside the Go heap: the
// garbage collector sizes its heap goal from the live heap, so 64 MiB
// arenas on the heap would let it grow by as much again before collecting.
// The owner calls Free when nothing reads the memtable any more; one that
// is dropped without Free is unmapped when the garbage collector finds it
// unreachable. On Linux an arena of 2 MiB or more is advised to use
// transparent huge pages (see adviseHugePages).
func New(arenaSize int) *MemTable {
	m := &MemTable{}
	m.arena.init(arenaSize)
	if m.arena.mapped {
		m.unmap = runtime.AddCleanup(m, unmapMemory, m.arena.buf)
	}
	m.initHead()
	return m
}

// Free releases the arena now. Nothing the memtable returned (values, keys,
// iterators) may be used after it, nor the memtable itself: with a mapped
// arena such a use faults. Calling Free twice is a bug and panics.
func (m *MemTable) Free() {
	if m.freed {
		panic(base.AssertionFailedf("memtable: Free called twice"))
	}
	m.freed = true
	m.bm = nil
	if m.arena.mapped {
		m.unmap.Stop()
		unmapMemory(m.arena.buf)
	}
	m.arena.buf = nil
}

// Release gives the arena's memory back to the operating system where it
// can (a mapped arena on Linux), keeping the mapping, for a memtable kept
// for reuse: it holds no memory until Reset makes it a memtable again. The
// caller must make sure, as for Reset, that nothing refers to the memtable
// any more; it may not be used until Reset.
func (m *MemTable) Release() {
	if m.bm != nil {
		panic(base.AssertionFailedf("memtable: Release of a memtable made from a batch"))
	}
	m.arena.reset()
	m.rangeDels.reset()
}

func (m *MemTable) initHead() {
	head, ok := m.arena.alloc(uint64(maxNodeSize))
	if !ok {
		panic(base.AssertionFailedf("memtable: a %d-byte arena has no room for the head node", len(m.arena.buf)))
	}
	m.head = head
	m.height.Store(1)
}

// Reset empties the memtable so its arena can hold a new one, saving the
// allocation (and the garbage) of a fresh arena. The caller must make sure
// that nothing refers to the memtable any more: no reader, no iterator, no
// value it returned.
func (m *MemTable) Reset() {
	if m.bm != nil {
		panic(base.AssertionFailedf("memtable: Reset of a memtable made from a batch"))
	}
	// Nodes are linked assuming zeroed memory, as a fresh arena has.
	m.arena.reset()
	m.count.Store(0)
	m.rangeDels.reset()
	m.initHead()
}

// rangeDelList is a memtable's range tombstones: an append-only list under a
// mutex and an immutable fragmented Set of it, rebuilt lazily by the first
// reader after a change. Readers of a memtable without tombstones pay one
// atomic load; with tombstones, one more while the Set is current.
type rangeDelList struct {
	n    atomic.Int64 // len(list), readable without mu
	mu   sync.Mutex
	list []rangedel.Tombstone
	// set is the fragmented form of the first setN tombstones of list.
	set  atomic.Pointer[fragmented]
	heap int64 // bytes of keys copied into list
	cmp  base.Compare
}

type fragmented struct {
	n   int64
	set *rangedel.Set
}

func (l *rangeDelList) add(seq base.SeqNum, start, end []byte) {
	// One allocation holds both keys; they must outlive the memtable's
	// readers, so they live on the Go heap, not in the (unmappable) arena.
	buf := make([]byte, len(start)+len(end))
	copy(buf, start)
	copy(buf[len(start):], end)
	l.mu.Lock()
	l.list = append(l.list, rangedel.Tombstone{Start: buf[:len(start):len(start)], End: buf[len(start):], Seq: seq})
	l.heap += int64(len(buf)) + 64
	l.n.Store(int64(len(l.list)))
	l.mu.Unlock()
}

func (l *rangeDelList) reset() {
	l.mu.Lock()
	l.list, l.heap = nil, 0
	l.n.Store(0)
	l.set.Store(nil)
	l.mu.Unlock()
}

// fragments returns the current Set, rebuilding it if tombstones were added
// since it was built.
func (l *rangeDelList) fragments() *rangedel.Set {
	n := l.n.Load()
	if n == 0 {
		return nil
	}
	if f := l.set.Load(); f != nil && f.n == n {
		return f.set
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	n = int64(len(l.list))
	if f := l.set.Load(); f != nil && f.n == n {
		return f.set
	}
	set := rangedel.NewCmp(l.cmp, l.list[:n:n])
	l.set.Store(&fragmented{n: n, set: set})
	return set
}

// AddRangeDelete adds a range tombstone deleting the keys in [start, end)
// below seq; an empty end is unbounded (every key >= start). The keys are
// copied. An empty or inverted range is kept (it deletes nothing).
func (m *MemTable) AddRangeDelete(seq base.SeqNum, start, end []byte) error {
	if seq > base.MaxSeqNum {
		return base.InvalidArgumentf("memtable: sequence number %d above the maximum %d", seq, base.MaxSeqNum)
	}
	m.rangeDels.add(seq, start, end)
	return nil
}

// RangeDeletions returns the memtable's range tombstones in fragmented form,
// every one of them whatever its sequence number (readers filter by their
// own), or nil when there are none: the check costs one atomic load. The Set
// is immutable; tombstones added later are in the Set of a later call.
func (m *MemTable) RangeDeletions() *rangedel.Set { return m.rangeDels.fragments() }

// NumRangeDeletions returns the number of range tombstones added.
func (m *MemTable) NumRangeDeletions() int { return int(m.rangeDels.n.Load()) }

// Add inserts an entry: key at seq with kind, and value for a Set (a Delete
// has no value, and value is ignored). It copies key and value into the
// arena; the caller may reuse them at once. It returns ErrArenaFull when the
// entry does not fit, ErrRecordExists when the internal key is already
// present, and an error marked base.ErrInvalidArgument for an unknown kind
// or a sequence number above base.MaxSeqNum; in each case nothing is
// inserted.
func (m *MemTable) Add(seq base.SeqNum, kind base.Kind, key, value []byte) error {
	if err := m.checkWritable(); err != nil {
		return err
	}
	if err := checkEntry(seq, kind); err != nil {
		return err
	}
	if kind == base.KindDelete {
		value = nil
	}
	return m.addOne(base.MakeTrailer(seq, kind), key, value)
}

// addOne inserts one entry from outside the arena. It searches before it
// writes the node: the search ends at the level-0 node the link must then
// load (see link), and copying key and value into the arena, a write to
// memory not yet cached, overlaps that cache miss instead of preceding it.
// A duplicate costs no arena space.
func (m *MemTable) addOne(trailer uint64, key, value []byte) error {
	ik := base.InternalKey{UserKey: key, Trailer: trailer}
	kp := m.keyPrefix32(key)
	var ins inserter
	listHeight, found := m.findSpliceFrom(ik, kp, &ins)
	if found {
		return ErrRecordExists
	}
	if next := ins.spl[0].next; next != 0 {
		prefetchNode(unsafe.Pointer(m.arena.node(next.off())))
	}
	h := randomHeight(rand.Uint64())
	off, ok := m.arena.alloc(entrySize(h, len(key), len(value)))
	if !ok {
		return ErrArenaFull
	}
	m.initNode(off, h, trailer, key, value)
	return m.linkSpliced(off, h, ik, kp, &ins, listHeight)
}

// checkWritable refuses writes to a memtable made from a batch.
func (m *MemTable) checkWritable() error {
	if m.bm != nil {
		return base.InvalidArgumentf("memtable: a memtable made from a batch takes no writes")
	}
	return nil
}

func checkEntry(seq base.SeqNum, kind base.Kind) error {
	if kind != base.KindSet && kind != base.KindDelete && kind != base.KindMerge {
		return base.InvalidArgumentf("memtable: unknown kind %d", kind)
	}
	if seq > base.MaxSeqNum {
		return base.InvalidArgumentf("memtable: sequence number %d above the maximum %d", seq, base.MaxSeqNum)
	}
	return nil
}

// Apply inserts the records of b with sequence numbers seq, seq+1, ... in
// batch order. It is all-or-nothing as to space: it reserves arena room for
// every record in one allocation before it inserts any, and returns
// ErrArenaFull, having inserted nothing, when they do not fit. The records
// become visible one by one, so the engine makes the batch's sequence
// numbers visible to readers only after Apply returns.
//
// A range deletion record is not a skiplist entry: it joins the memtable's
// range tombstones (see RangeDeletions) at its sequence number, after the
// arena reservation succeeded, so a batch that does not fit adds none.
//
// A malformed batch (one that did not come from Set, Delete or a successful
// SetRepr) returns its corruption error before anything is inserted.
// ErrRecordExists part-way through means a sequence number was reused, a
// caller bug; the records inserted before it stay inserted.
//
// A batch of sortedApplyMin records or more is inserted in key order rather
// than batch order (see applySorted): readers cannot tell, as none of its
// sequence numbers is visible yet.
func (m *MemTable) Apply(b *batch.Batch, seq base.SeqNum) error {
	if err := m.checkWritable(); err != nil {
		return err
	}
	n := b.Count()
	if n == 0 {
		return nil
	}
	if err := checkSeqRange(seq, n); err != nil {
		return err
	}
	if n == 1 {
		return m.applyOne(b, seq)
	}

	// Two passes draw the same tower heights from one seed: the first sizes
	// the entries exactly, so the reservation wastes nothing, and no slice
	// of heights is needed.
	var rng rand.PCG
	seed1, seed2 := rand.Uint64(), rand.Uint64()
	rng.Seed(seed1, seed2)
	var total uint64
	r := b.Reader()
	for {
		kind, key, value, ok, err := r.Next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if kind == base.KindRangeDelete {
			continue
		}
		total += entrySize(randomHeight(rng.Uint64()), len(key), len(value))
	}
	off, ok := m.arena.alloc(total)
	if !ok {
		return ErrArenaFull
	}

	rng.Seed(seed1, seed2)
	if n >= sortedApplyMin {
		return m.applySorted(b, seq, off, &rng)
	}
	return m.placeNodes(b, seq, off, &rng, nil)
}

// applyOne is Apply for a batch of one record, the engine's single-key
// write: it decodes the record once and draws one height, where Apply's two
// passes decode it twice and seed a generator to draw the same height
// twice. Like Apply, it returns a malformed batch's error (trailing bytes
// included) before inserting anything.
func (m *MemTable) applyOne(b *batch.Batch, seq base.SeqNum) error {
	r := b.Reader()
	kind, key, value, ok, err := r.Next()
	if err == nil && ok {
		// The end of the batch, or the corruption of bytes after its one
		// record.
		_, _, _, _, err = r.Next()
	}
	if err != nil {
		return err
	}
	if !ok {
		return base.AssertionFailedf("memtable: a batch of one record has none")
	}
	if kind == base.KindRangeDelete {
		m.rangeDels.add(seq, key, value)
		return nil
	}
	return m.addOne(base.MakeTrailer(seq, kind), key, value)
}

// placeNodes writes a node for each of b's point records into the arena
// space Apply reserved, from off on, drawing the heights Apply sized the
// entries with from rng, and adds b's range deletions to the tombstones in
// batch order. Each node is linked at once or, when sorted is not nil,
// appended to *sorted, for applySorted to link in key order.
func (m *MemTable) placeNodes(b *batch.Batch, seq base.SeqNum, off uint32, rng *rand.PCG, sorted *[]sortEntry) error {
	r := b.Reader()
	for s := seq; ; s++ {
		kind, key, value, ok, err := r.Next()
		if err != nil {
			return base.AssertionFailedf("memtable: batch changed during Apply: %v", err)
		}
		if !ok {
			return nil
		}
		if kind == base.KindRangeDelete {
			m.rangeDels.add(s, key, value)
			continue
		}
		h := randomHeight(rng.Uint64())
		m.initNode(off, h, base.MakeTrailer(s, kind), key, value)
		if sorted != nil {
			*sorted = append(*sorted, sortEntry{prefix: m.sortKeyPrefix(key), off: off})
		} else if err := m.link(off, h); err != nil {
			return err
		}
		off += uint32(entrySize(h, len(key), len(value)))
	}
}

// checkSeqRange refuses a batch of n records at sequence numbers seq,
// seq+1, ... when they would pass base.MaxSeqNum.
func checkSeqRange(seq base.SeqNum, n uint32) error {
	if n > 0 && (seq > base.MaxSeqNum || seq > base.MaxSeqNum-base.SeqNum(n-1)) {
		return base.InvalidArgumentf("memtable: sequence numbers %d+%d exceed the maximum %d", seq, n, base.MaxSeqNum)
	}
	return nil
}

// Fits reports whether Apply(b, ...) would find room for b now. It uses an
// upper bound on the space (every tower at full height), so Fits implies
// success when nothing else writes meanwhile; it is cheap, O(1), for deciding
// to rotate before applying. A memtable made from a batch fits nothing.
func (m *MemTable) Fits(b *batch.Batch) bool {
	return m.bm == nil && ApplyBound(b) <= m.Room()
}

// Room returns the arena bytes Apply can still reserve: when nothing else
// writes meanwhile, batches whose ApplyBounds sum to at most Room can all be
// applied, one after another (every reservation is a multiple of the
// alignment, so none pads the next). A writer applying several batches
// checks their sum against it, since Fits checks one batch against the room
// the batches before it left. It is 0 for a memtable made from a batch.
func (m *MemTable) Room() uint64 {
	if m.bm != nil {
		return 0
	}
	limit := uint64(len(m.arena.buf) - towerSlack)
	used := alignUp(m.arena.used.Load())
	if used >= limit {
		return 0
	}
	return limit - used
}

// ArenaSizeFor returns an arena size that is sure to hold b: New(n) with
// n >= ArenaSizeFor(b) makes a memtable that Fits b. It counts a full-height
// node per record, about 190 bytes, plus the memtable's fixed overhead, so it
// can exceed b.Len() many times over for batches of small records; size a
// memtable that must take an oversized batch with it rather than with
// b.Len().
func ArenaSizeFor(b *batch.Batch) int {
	return int(ApplyBound(b)) + minArenaSize
}

// FitsAny reports whether some memtable can hold b: a batch whose
// ArenaSizeFor exceeds the largest arena (4 GiB, so that node offsets fit
// 32 bits) fits none, and a writer must refuse it rather than rotate
// memtables forever.
func FitsAny(b *batch.Batch) bool {
	return fitsArena(ApplyBound(b))
}

func fitsArena(bound uint64) bool {
	return bound+uint64(minArenaSize+towerSlack) <= maxArenaSize
}

// ApplyBound bounds the arena bytes Apply(b) allocates: each record's entry
// is at most a full-height node, its key and value, and alignment padding,
// and the keys and values take at most the encoding's bytes after the
// header. It is O(1); compare it, or the sum of several batches', with
// Room.
func ApplyBound(b *batch.Batch) uint64 {
	return uint64(b.Count())*uint64(maxNodeSize+nodeAlign-1) + uint64(b.Len()-batch.HeaderLen)
}

// Get returns the newest entry of key with a sequence number <= seq (a seq
// above base.MaxSeqNum means all of them). found is false when there is none;
// otherwise kind is base.KindSet with the value (non-nil, even when empty),
// base.KindMerge with the operand, or base.KindDelete with a nil value. The value points into the arena: it must
// not be modified, and it is valid as long as the memtable is alive.
func (m *MemTable) Get(key []byte, seq base.SeqNum) (value []byte, kind base.Kind, found bool) {
	value, kind, _, found = m.GetEntry(key, seq)
	return value, kind, found
}

// GetEntry is Get that also returns the entry's sequence number, which a
// reader compares with the range tombstones covering key.
func (m *MemTable) GetEntry(key []byte, seq base.SeqNum) (value []byte, kind base.Kind, entrySeq base.SeqNum, found bool) {
	if m.bm != nil {
		return m.bm.getEntry(key, seq)
	}
	_, next := m.seek(base.MakeSearchKey(key, min(seq, base.MaxSeqNum)))
	if next == 0 {
		return nil, 0, 0, false
	}
	nd := m.arena.node(next)
	if !bytes.Equal(m.arena.bytes(nd.keyOffset, nd.keySize), key) {
		return nil, 0, 0, false
	}
	kind = base.Kind(nd.trailer & 0xff)
	entrySeq = base.SeqNum(nd.trailer >> 8)
	if kind == base.KindDelete {
		return nil, kind, entrySeq, true
	}
	return m.arena.bytes(nd.keyOffset+nd.keySize, nd.valueSize), kind, entrySeq, true
}

// ApproximateSize returns the arena bytes in use, including the memtable's
// fixed overhead (a few hundred bytes), plus the heap bytes of its range
// tombstones. For a memtable made from a batch it is the batch's encoding
// and its index instead of the arena.
func (m *MemTable) ApproximateSize() int {
	n := m.arena.size()
	if m.rangeDels.n.Load() != 0 {
		m.rangeDels.mu.Lock()
		n += int(m.rangeDels.heap)
		m.rangeDels.mu.Unlock()
	}
	return n
}

// Capacity returns the arena's size in bytes: 0 for a memtable made from a
// batch.
func (m *MemTable) Capacity() int { return len(m.arena.buf) }

// OffHeap reports whether b points into this memtable's arena and the arena
// lives outside the Go heap. Such bytes must be copied before they leave the
// engine: the garbage collector does not see pointers into a mapping, so a
// caller's slice would not keep the arena alive, and once Free (or the
// cleanup) unmaps it the slice would fault or, after a later mapping reuses
// the addresses, show another owner's bytes. Heap arenas report false: a
// slice into one keeps it alive.
func (m *MemTable) OffHeap(b []byte) bool {
	if !m.arena.mapped || cap(b) == 0 {
		return false
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	start := uintptr(unsafe.Pointer(unsafe.SliceData(m.arena.buf)))
	return p >= start && p < start+uintptr(len(m.arena.buf))
}

// Count returns the number of entries.
func (m *MemTable) Count() int { return int(m.count.Load()) }

// Empty reports whether the memtable has no entries and no range
// tombstones.
func (m *MemTable) Empty() bool { return m.count.Load() == 0 && m.rangeDels.n.Load() == 0 }

// initNode writes an entry at off, which alloc returned with room for it.
// The arena is zeroed memory that is never reused, so the links start at 0.
func (m *MemTable) initNode(off uint32, h int, trailer uint64, key, value []byte) {
	a := &m.arena
	nd := a.node(off)
	keyOff := off + uint32(nodeSize(h))
	nd.keyOffset = keyOff
	nd.keySize = uint32(len(key))
	nd.valueSize = uint32(len(value))
	nd.trailer = trailer
	copy(a.buf[keyOff:], key)
	copy(a.buf[keyOff+uint32(len(key)):], value)
}

// splice is where a key belongs at one level: between prev and the node
// next links to (0 when prev is the last node of the level).
type splice struct {
	prev uint32
	next link
}

// inserter remembers where the last node it inserted went, so that the next
// insertion of a larger key can start from there instead of from the head
// (RocksDB's splice hint). A fresh search costs O(log n) comparisons, each
// likely a cache miss; inserting keys in ascending order from the last splice
// costs O(log gap), about O(1) when the keys are dense in the list.
type inserter struct {
	spl [maxHeight]splice
	// height is the number of levels of spl that hold a splice: each one's
	// prev is a node before every key this inserter will still insert
	// (keys come in ascending order). 0 means no hint: search from the head.
	height int
}

// link inserts the initialized node at off, of height h, into the list. It
// links level 0 first and then each level up, so that a node reachable at a
// level is always reachable at every level below it.
//
// At level 0 it also keeps prev links, with the protocol of pebble's
// arenaskl: after nd is linked between prev and next, next.prev moves from
// prev to nd by CAS. That CAS fails if next's own inserter has not yet moved
// next.prev to prev, and that inserter's later CAS would then point
// next.prev past nd for good; so before linking, an inserter that sees
// next.prev behind while prev.next is next moves next.prev to prev itself.
// Prev links only ever move forward, to nodes closer to their owner, so the
// CASes cannot suffer ABA, and a prev link is always some earlier node: a
// reader going backward during inserts may skip a node being inserted, never
// see one out of order. Once inserts stop, every prev link is exact.
func (m *MemTable) link(off uint32, h int) error {
	var ins inserter
	return m.insert(off, h, &ins)
}

// insert is link starting from ins's splices, which it leaves describing
// where the node went. Successive calls with one inserter must insert keys
// in ascending order.
func (m *MemTable) insert(off uint32, h int, ins *inserter) error {
	a := &m.arena
	nd := a.node(off)
	key := base.InternalKey{UserKey: a.bytes(nd.keyOffset, nd.keySize), Trailer: nd.trailer}
	kp := m.keyPrefix32(key.UserKey)

	listHeight, found := m.findSpliceFrom(key, kp, ins)
	if found {
		return ErrRecordExists
	}
	return m.linkSpliced(off, h, key, kp, ins, listHeight)
}

// linkSpliced is insert once findSpliceFrom has filled ins for key (the
// node's key, at off, or the same bytes elsewhere), whose link prefix is kp,
// and returned listHeight.
func (m *MemTable) linkSpliced(off uint32, h int, key base.InternalKey, kp uint32, ins *inserter, listHeight int) error {
	a := &m.arena
	nd := a.node(off)
	if m.yield {
		runtime.Gosched()
	}
	m.raiseHeight(h)

	self := makeLink(off, kp)
	spl := &ins.spl
	for level := range h {
		prev, next := m.head, link(0)
		if level < listHeight {
			// Above the height findSpliceFrom saw, the level was empty
			// then; the CAS below notices if it is not any more.
			prev, next = spl[level].prev, spl[level].next
		}
		for {
			nd.next[level].Store(uint64(next))
			if level == 0 {
				nd.prev.Store(prev)
				if next != 0 {
					nn := a.node(next.off())
					if p := nn.prev.Load(); p != prev && a.node(prev).nextOff(0) == next.off() {
						nn.prev.CompareAndSwap(p, prev)
					}
				}
			}
			if a.node(prev).next[level].CompareAndSwap(uint64(next), uint64(self)) {
				if m.yield {
					runtime.Gosched()
				}
				if level == 0 && next != 0 {
					a.node(next.off()).prev.CompareAndSwap(prev, off)
				}
				break
			}
			// Another node went in between prev and next. prev is still
			// before key (nodes are never removed), so search on from it.
			var found bool
			prev, next, found = m.findSpliceForLevel(key, kp, level, prev, 0)
			if found {
				if level != 0 {
					// The node is unique at level 0, which was linked first.
					return base.AssertionFailedf("memtable: %s found at level %d after it was linked at level 0", key, level)
				}
				return ErrRecordExists
			}
		}
		// The next key goes after this node.
		spl[level] = splice{off, next}
	}
	ins.height = max(listHeight, h)
	m.count.Add(1)
	return nil
}

// raiseHeight raises the list height to at least h.
func (m *MemTable) raiseHeight(h int) {
	for {
		cur := m.height.Load()
		if uint32(h) <= cur || m.height.CompareAndSwap(cur, uint32(h)) {
			return
		}
	}
}

// findSpliceFrom fills ins.spl[:height] with where key, whose link prefix is
// kp, belongs at each level, for the list height it returns, starting from
// ins's splices when they cover the list's height. found reports that key
// itself is in the list.
//
// A splice found for an earlier, smaller key still has its prev before key;
// it brackets key when key is also at or before its next. Its next at a level
// is at or before its next at every level above (the splices came from one
// descent, then moved to nodes that went in at every level of their height),
// so the lowest level that brackets key, and every level above it, need no
// search: the levels below it are searched down from its prev, as a fresh
// search would from the head. Nodes other writers inserted meanwhile make a
// splice stale, not wrong: the link's CAS fails and searches on from prev.
func (m *MemTable) findSpliceFrom(key base.InternalKey, kp uint32, ins *inserter) (height int, found bool) {
	height = int(m.height.Load())
	// No hint, or the list grew taller than the hint: every level is
	// searched from the head.
	level := height
	if ins.height >= height {
		height = ins.height
		if level, found = m.bracketingLevel(key, kp, ins); found {
			return height, true
		}
	}
	prev, stop := m.head, uint32(0)
	if level < height {
		prev, stop = ins.spl[level].prev, ins.spl[level].next.off()
	}
	_, _, found = m.descend(key, kp, level, 0, prev, stop, &ins.spl)
	return height, found
}

// bracketingLevel returns the lowest level whose splice in ins brackets key
// (key is at or before its next), or ins.height when none does. found
// reports that key is a splice's next, that is, in the list.
func (m *MemTable) bracketingLevel(key base.InternalKey, kp uint32, ins *inserter) (level int, found bool) {
	for ; level < ins.height; level++ {
		next := ins.spl[level].next
		if next == 0 {
			break
		}
		c := m.compareLink(key, kp, next)
		if c == 0 {
			return level, true
		}
		if c < 0 {
			break
		}
	}
	return level, false
}

// compareLink orders key, whose link prefix is kp, against the node next
// links to, loading that node only when the prefixes tie.
func (m *MemTable) compareLink(key base.InternalKey, kp uint32, next link) int {
	if np := next.prefix(); kp != np {
		if kp < np {
			return -1
		}
		return 1
	}
	return m.compare(key, next.off())
}

// findSpliceForLevel walks level from start, which must be before key (whose
// link prefix is kp), to the last node before key (prev) and the link to the
// first node at or after it (next, 0 at the end of the level). found reports
// that next is key. stop, when not 0, is a node known to be after key (or,
// for a caller that ignores found, at it): the level above's next. A descent
// often ends a level at the node that ended the level above, and comparing
// it again would be wasted: a search for a new key does 32.9 comparisons on
// 24.4 distinct nodes in BenchmarkFillApply.
//
// The walk loads only the nodes it moves to: the one where it turns down is
// compared by its link's prefix, unless the prefixes tie.
func (m *MemTable) findSpliceForLevel(key base.InternalKey, kp uint32, level int, start, stop uint32) (prev uint32, next link, found bool) {
	return m.descend(key, kp, level+1, level, start, stop, nil)
}

// descend is findSpliceForLevel for each level from top-1 down to bottom,
// each starting where the one above ended, with the level above's next as
// its stop unless that was key; spl, when not nil, gets each level's
// splice. It returns the bottom level's. One function walks every level of
// a search: the loop is an insert's most executed code besides the loads
// themselves, and a call per level, spilling the key around it, cost more
// instructions than the walk.
func (m *MemTable) descend(key base.InternalKey, kp uint32, top, bottom int, prev, stop uint32, spl *[maxHeight]splice) (uint32, link, bool) {
	// Offsets in links come from the arena's own allocations: the walk adds
	// them to the arena's base without bounds checks.
	buf := unsafe.Pointer(unsafe.SliceData(m.arena.buf))
	var next link
	found := false
	for level := top - 1; level >= bottom; level-- {
		for {
			nd := (*node)(unsafe.Add(buf, prev))
			next = link(nd.next[level].Load())
			if level > 0 {
				// If the walk turns down at prev, the level below starts
				// at down, and moves to it when key is not before its
				// prefix: fetch it while this level is decided, so that
				// the two cache misses overlap instead of following one
				// another.
				if down := link(nd.next[level-1].Load()); down != next && down != 0 && kp >= down.prefix() {
					prefetchNode(unsafe.Add(buf, down.off()))
				}
			}
			if next == 0 || next.off() == stop {
				found = false
				break
			}
			// compareLink, with its prefix test inlined.
			if np := next.prefix(); kp != np {
				if kp < np {
					found = false
					break
				}
			} else if c := m.compare(key, next.off()); c <= 0 {
				found = c == 0
				break
			}
			prev = next.off()
		}
		if spl != nil {
			spl[level] = splice{prev, next}
		}
		if !found {
			stop = next.off()
		}
	}
	return prev, next, found
}

// seek returns the last node before key (possibly the head) and the first
// node at or after it (0 if none).
func (m *MemTable) seek(key base.InternalKey) (prev, next uint32) {
	prev, l, _ := m.descend(key, m.keyPrefix32(key.UserKey), int(m.height.Load()), 0, m.head, 0, nil)
	return prev, l.off()
}

// last returns the last node, or the head when the list is empty.
func (m *MemTable) last() uint32 {
	prev := m.head
	for level := int(m.height.Load()) - 1; level >= 0; level-- {
		for {
			next := m.arena.node(prev).nextOff(level)
			if next == 0 {
				break
			}
			prev = next
		}
	}
	return prev
}

// compare orders key against the key of the node at off as
// base.CompareInternal does.
func (m *MemTable) compare(key base.InternalKey, off uint32) int {
	nd := m.arena.node(off)
	nk := m.arena.bytes(nd.keyOffset, nd.keySize)
	if m.cmp != nil {
		return base.CompareInternalWith(m.cmp, key, base.InternalKey{UserKey: nk, Trailer: nd.trailer})
	}
	// Most comparisons of a search are settled by the first 8 bytes: as
	// integers they cost no call into bytes.Compare's assembly.
	if len(key.UserKey) >= 8 && len(nk) >= 8 {
		if a, b := binary.BigEndian.Uint64(key.UserKey), binary.BigEndian.Uint64(nk); a != b {
			if a < b {
				return -1
			}
			return 1
		}
	}
	return base.CompareInternal(key, base.InternalKey{UserKey: nk, Trailer: nd.trailer})
}
