package block

import (
	"bytes"
	"encoding/binary"
	"strconv"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/invariants"
)

// Iter iterates over the entries of one uncompressed block.
//
// Keys are rebuilt from their shared prefixes in scratch buffers that the
// Iter keeps across moves and across Init, so once the buffers have grown to
// the block's longest key no move allocates. Keys that share nothing with
// their predecessor (every restart point's) point into the block itself.
//
// Every read of the block is bounds-checked: a corrupt entry or restart point
// invalidates the Iter and makes Error return an error marked
// base.ErrCorruption that names the offset within the block. The error is
// sticky until the next Init. No input makes the Iter panic or loop forever:
// each move decodes at most the entries between two restart points, plus a
// binary search for seeks and Prev (on a block whose restart points are
// corrupt yet in bounds, at most the whole block).
//
// An exhausted Iter (a move returned false) stays exhausted: Next and Prev
// return false until a First, Last or seek repositions it.
//
// The zero Iter is an empty, exhausted iterator. An Iter is not safe for
// concurrent use; distinct Iters may read one block concurrently.
type Iter struct {
	cmp func(a, b []byte) int
	// internal says the keys are encoded internal keys ordered by
	// base.CompareEncoded (InitInternal): seeks then compare user key
	// bytes and trailers inline instead of calling cmp.
	internal bool
	// ucmp, when not nil, orders the user keys of an internal Iter instead
	// of the inline bytewise comparison (a database's Comparer).
	ucmp base.Compare
	data []byte
	// restarts is the offset of the restart array, which is also the end of
	// the entries.
	restarts    int
	numRestarts int

	// offset and nextOffset are the offsets of the current entry and of the
	// one after it (restarts when the current entry is the last).
	offset     int
	nextOffset int
	key, value []byte
	valid      bool

	// keyInBuf says whether key is buf (built from a shared prefix) rather
	// than block memory. A key that shares a prefix with its predecessor is
	// built in buf in place, as LevelDB does; spare holds a key that SeekLT
	// decodes ahead of the current one.
	keyInBuf   bool
	buf, spare []byte
	// sink receives the bytes touch loads only to bring their lines into
	// the processor's cache, so that the compiler keeps the loads.
	sink byte
	// scanning says the last positioning was First or Last, as when a
	// table iterator moves on to the next block: the next block given to
	// Init is then likely walked through too, so init touches it (see
	// touch) while it waits for the block's restart count. It survives
	// Init and Reset; SeekGE and SeekLT clear it, so that blocks sought
	// in (point reads) are not touched.
	scanning bool
	// touched says init touched the block.
	touched bool

	err error
}

// Init positions i, exhausted, over data, an uncompressed block whose keys
// are ordered by cmp. It checks the restart array's header (its length, and
// the first and last restart points) in constant time, so that opening a
// large index block per lookup stays cheap; every other restart point is
// checked when a move reads it (and all of them here in invariants builds).
// A malformed block is an error marked base.ErrCorruption, which Error also
// returns.
//
// data must stay unchanged until the Iter is re-initialised or Reset: Key and
// Value point into it.
func (i *Iter) Init(cmp func(a, b []byte) int, data []byte) error {
	return i.init(cmp, false, data)
}

// InitInternal is Init for a block whose keys are encoded internal keys
// ordered by base.CompareEncoded, such as a table's data blocks. Seeks in
// it compare keys without calling through a function value, and so cost
// less; the results are those of Init(base.CompareEncoded, data).
func (i *Iter) InitInternal(data []byte) error {
	return i.init(base.CompareEncoded, true, data)
}

// InitInternalCmp is InitInternal for a block whose user keys are ordered
// by ucmp; a nil ucmp is bytewise, InitInternal.
func (i *Iter) InitInternalCmp(ucmp base.Compare, data []byte) error {
	err := i.init(base.CompareEncoded, true, data)
	i.ucmp = ucmp
	return err
}

func (i *Iter) init(cmp func(a, b []byte) int, internal bool, data []byte) error {
	i.Reset()
	i.cmp, i.internal = cmp, internal
	if len(data) >= 4 && i.scanning {
		// Before the restart count is used: these loads and its are in
		// flight together.
		i.touch(data)
		i.touched = true
	}
	restarts, n, err := checkRestarts(data)
	if err != nil {
		return i.initFail(err)
	}
	i.data, i.restarts, i.numRestarts = data, restarts, n
	return nil
}

// checkRestarts checks the restart array of the block data, as Init
// documents, and returns the offset of the array (the end of the entries)
// and the number of restart points (0 for an empty block).
func checkRestarts(data []byte) (restarts, n int, err error) {
	if len(data) < 4 {
		return 0, 0, base.CorruptionErrorf("block: %d bytes are too short to hold a restart count", len(data))
	}
	count := binary.LittleEndian.Uint32(data[len(data)-4:])
	if uint64(count) > uint64(len(data)-4)/4 {
		return 0, 0, base.CorruptionErrorf("block: %d restart points do not fit in a %d-byte block", count, len(data))
	}
	n = int(count)
	restarts = len(data) - 4 - 4*n
	if restarts == 0 {
		// An empty block: LevelDB writes one restart point at 0.
		if n > 1 || (n == 1 && restartAt(data, restarts, 0) != 0) {
			return 0, 0, base.CorruptionErrorf("block: empty block with restart points %s", describeRestarts(data, restarts, n))
		}
		return restarts, 0, nil
	}
	if n == 0 {
		return 0, 0, base.CorruptionErrorf("block: %d bytes of entries but no restart point", restarts)
	}
	if first := restartAt(data, restarts, 0); first != 0 {
		return 0, 0, base.CorruptionErrorf("block: first restart point is %d, not 0", first)
	}
	if last := restartAt(data, restarts, n-1); last >= restarts {
		return 0, 0, base.CorruptionErrorf("block: restart point %d at %d is beyond the entries, which end at %d",
			n-1, last, restarts)
	}
	if invariants.Enabled {
		// Checking every restart point costs a pass over the array on every
		// Init, too much for large index blocks in release builds, where a
		// bad point is caught when it is used.
		for j := 1; j < n; j++ {
			if restartAt(data, restarts, j) <= restartAt(data, restarts, j-1) {
				return 0, 0, base.CorruptionErrorf("block: restart points out of order: %s", describeRestarts(data, restarts, n))
			}
		}
	}
	return restarts, n, nil
}

// Reset releases the block, keeping the scratch buffers for the next Init
// (and whether the Iter is scanning). init starts with it.
func (i *Iter) Reset() {
	*i = Iter{buf: i.buf[:0], spare: i.spare[:0], scanning: i.scanning}
}

// Valid reports whether i is positioned at an entry.
func (i *Iter) Valid() bool { return i.valid }

// Key returns the current entry's key, or nil when i is not Valid. It points
// into the block or into i's scratch memory and is valid until the next move,
// Init or Reset.
func (i *Iter) Key() []byte { return i.key }

// Value returns the current entry's value, or nil when i is not Valid. It
// points into the block and is valid as long as the block's memory is.
func (i *Iter) Value() []byte { return i.value }

// Error returns the corruption that stopped i, if any.
func (i *Iter) Error() error { return i.err }

// First moves to the first entry and reports whether there is one.
func (i *Iter) First() bool {
	if i.err != nil || i.numRestarts == 0 {
		return i.exhaust()
	}
	i.startScan()
	return i.loadAt(0, 0)
}

// startScan notes a positioning that walks through the block (First, Last)
// and touches the block unless init did.
func (i *Iter) startScan() {
	i.scanning = true
	if !i.touched {
		i.touch(i.data)
		i.touched = true
	}
}

// touchLimit bounds the bytes touch reads a line of: 64 lines. The
// hardware prefetcher follows a walk past them; and a block far larger than
// a data block's usual 4 KiB is mostly values, which a walk over the keys
// may never read.
const touchLimit = 4 << 10

// touch reads one byte of every 64-byte cache line of the block's first
// touchLimit bytes, before a move that will walk through its entries. Those
// loads do not depend on each other, so the processor has them all in
// flight at once, while a walk loads one entry's line at a time: the offset
// of each entry comes from the lengths in the one before it. For a block that is
// not in the processor's caches (one of a block cache larger than they are,
// read by a scan) the walk then costs about a third less per entry
// (BenchmarkBlockScanCold on the 2-core test machine: medians of 5 runs,
// 118 ns with init's touch, 126 with First's, 186 without).
func (i *Iter) touch(data []byte) {
	d := data[:min(len(data), touchLimit)]
	x := i.sink
	for off := 0; off < len(d); off += 64 {
		x |= d[off]
	}
	i.sink = x
}

// Last moves to the last entry and reports whether there is one.
func (i *Iter) Last() bool {
	if i.err != nil || i.numRestarts == 0 {
		return i.exhaust()
	}
	i.startScan()
	if !i.loadAt(i.restartOffset(i.numRestarts-1), 0) {
		return false
	}
	for i.nextOffset < i.restarts {
		if !i.loadAt(i.nextOffset, len(i.key)) {
			return false
		}
	}
	return true
}

// Next moves to the following entry and reports whether there is one.
func (i *Iter) Next() bool {
	if !i.valid {
		return false
	}
	if i.nextOffset >= i.restarts {
		return i.exhaust()
	}
	return i.loadAt(i.nextOffset, len(i.key))
}

// Prev moves to the preceding entry and reports whether there is one. Keys
// are prefix-compressed forwards, so it re-decodes from the restart point
// before the current entry (as LevelDB does): with restart interval r a Prev
// costs about r/2 entry decodes and no allocation.
func (i *Iter) Prev() bool {
	if !i.valid {
		return false
	}
	target := i.offset
	if target == 0 {
		return i.exhaust()
	}
	// Find the last restart point before target. Init checked restart 0 is
	// 0 < target, so there is one even if later points are out of order.
	lo, hi := 1, i.numRestarts
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if i.restartOffset(mid) < target {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	off := i.restartOffset(lo - 1)
	if off >= target {
		return i.fail(base.CorruptionErrorf("block: restart point %d at %d is not before the entry at %d",
			lo-1, off, target))
	}
	if !i.loadAt(off, 0) {
		return false
	}
	for i.nextOffset < target {
		if !i.loadAt(i.nextOffset, len(i.key)) {
			return false
		}
	}
	if i.nextOffset != target {
		return i.fail(base.CorruptionErrorf("block: entry at %d runs past the entry at %d: restart points and entries disagree",
			i.offset, target))
	}
	return true
}

// SeekGE moves to the first entry whose key is >= key and reports whether
// there is one.
func (i *Iter) SeekGE(key []byte) bool {
	i.scanning = false
	if i.err != nil || i.numRestarts == 0 {
		return i.exhaust()
	}
	t := i.makeTarget(key)
	r, ok := i.searchRestarts(&t)
	if !ok {
		return false
	}
	// Scan the restart interval with the iterator's state in locals, and
	// build keys only where they share a prefix: a point lookup in a block
	// with one restart point scans half the block, so this loop is most of
	// its cost. The state is stored once, for the entry found.
	// Restart point 0 is at 0 (Init checked): not reading it lets the first
	// entry's load start before the restart array's (the block's end, a
	// different cache line) arrives.
	off, buf := 0, i.buf
	if r > 0 {
		off = i.restartOffset(r)
	}
	var prev []byte // the previous entry's key: in the block, or buf
	prevInBuf := false
	for off < i.restarts {
		shared, keyStart, keyEnd, next, err := i.header(off, len(prev))
		if err != nil {
			i.buf = buf
			return i.fail(err)
		}
		var k []byte
		if shared == 0 {
			k = i.data[keyStart:keyEnd:keyEnd]
		} else {
			// buf[:shared] is prev's prefix already when prev is in buf.
			if !prevInBuf {
				buf = append(buf[:0], prev[:shared]...)
			}
			buf = append(buf[:shared], i.data[keyStart:keyEnd]...)
			k = buf[:len(buf):len(buf)]
		}
		// Most keys differ from the target in their first 8 bytes: decide
		// those here, without the call.
		c := 0
		if t.head8 && len(k) >= 8+base.TrailerLen {
			if x := binary.BigEndian.Uint64(k); x < t.head {
				c = -1
			} else if x > t.head {
				c = 1
			}
		}
		if c == 0 {
			c = i.compare(k, &t)
		}
		if c >= 0 {
			i.buf = buf
			i.key, i.keyInBuf = k, shared != 0
			i.value = i.data[keyEnd:next:next]
			i.offset, i.nextOffset = off, next
			i.valid = true
			return true
		}
		off, prev, prevInBuf = next, k, shared != 0
	}
	i.buf = buf
	return i.exhaust()
}

// target is a seek key, with its user key and trailer split off when the
// Iter compares internal keys.
type target struct {
	key     []byte
	uk      []byte
	trailer uint64
	// internal says uk and trailer are set: the Iter's keys are internal
	// keys and key is one.
	internal bool
	// head8 says uk has at least 8 bytes, and head holds them big-endian:
	// a key whose user key's first 8 bytes differ compares as they do.
	head8 bool
	head  uint64
}

func (i *Iter) makeTarget(key []byte) target {
	t := target{key: key}
	if n := len(key) - base.TrailerLen; i.internal && n >= 0 {
		t.uk, t.trailer, t.internal = key[:n:n], binary.LittleEndian.Uint64(key[n:]), true
		if n >= 8 && i.ucmp == nil {
			t.head8, t.head = true, binary.BigEndian.Uint64(key)
		}
	}
	return t
}

// compare returns cmp(k, t.key), without the call for internal keys:
// base.CompareEncoded's order, user keys ascending, then trailers
// descending.
func (i *Iter) compare(k []byte, t *target) int {
	n := len(k) - base.TrailerLen
	if !t.internal || n < 0 {
		return i.cmp(k, t.key)
	}
	if i.ucmp != nil {
		if c := i.ucmp(k[:n], t.uk); c != 0 {
			return c
		}
	} else if c := compareBytes(k[:n], t.uk); c != 0 {
		return c
	}
	switch tr := binary.LittleEndian.Uint64(k[n:]); {
	case tr > t.trailer:
		return -1
	case tr < t.trailer:
		return 1
	}
	return 0
}

// SeekLT moves to the last entry whose key is < key and reports whether there
// is one.
func (i *Iter) SeekLT(key []byte) bool {
	i.scanning = false
	if i.err != nil || i.numRestarts == 0 {
		return i.exhaust()
	}
	t := i.makeTarget(key)
	r, ok := i.searchRestarts(&t)
	if !ok || !i.loadAt(i.restartOffset(r), 0) {
		return false
	}
	if i.compare(i.key, &t) >= 0 {
		// Only possible at restart 0: every key is >= key.
		return i.exhaust()
	}
	// Peek at each following entry, building its key in the spare buffer so
	// that the current key survives when the peeked one is >= key.
	for i.nextOffset < i.restarts {
		off := i.nextOffset
		shared, keyStart, keyEnd, next, err := i.header(off, len(i.key))
		if err != nil {
			return i.fail(err)
		}
		var k []byte
		if shared == 0 {
			k = i.data[keyStart:keyEnd:keyEnd]
		} else {
			i.spare = append(append(i.spare[:0], i.key[:shared]...), i.data[keyStart:keyEnd]...)
			k = i.spare[:len(i.spare):len(i.spare)]
		}
		if i.compare(k, &t) >= 0 {
			break
		}
		if shared != 0 {
			i.buf, i.spare = i.spare, i.buf
		}
		i.keyInBuf = shared != 0
		i.key, i.value = k, i.data[keyEnd:next:next]
		i.offset, i.nextOffset = off, next
	}
	return true
}

// searchRestarts returns the last restart point whose key is < t's, or 0
// when there is none. It returns false, with i failed, on a corrupt restart
// point.
func (i *Iter) searchRestarts(t *target) (int, bool) {
	lo, hi := 0, i.numRestarts-1
	for lo < hi {
		mid := int(uint(lo+hi+1) >> 1)
		off := i.restartOffset(mid)
		if off >= i.restarts {
			return 0, i.fail(base.CorruptionErrorf("block: restart point %d at %d is beyond the entries, which end at %d",
				mid, off, i.restarts))
		}
		_, keyStart, keyEnd, _, err := i.header(off, 0)
		if err != nil {
			return 0, i.fail(err)
		}
		if i.compare(i.data[keyStart:keyEnd:keyEnd], t) < 0 {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo, true
}

// restartOffset returns restart point j; j must be < numRestarts.
func (i *Iter) restartOffset(j int) int { return restartAt(i.data, i.restarts, j) }

// restartAt returns restart point j of the block data whose restart array
// starts at restarts.
func restartAt(data []byte, restarts, j int) int {
	return int(binary.LittleEndian.Uint32(data[restarts+4*j:]))
}

// loadAt decodes the entry at off, whose predecessor's key has prevLen bytes
// (0 at a restart point) and is the current key, and makes it current.
// off >= i.restarts exhausts i.
func (i *Iter) loadAt(off, prevLen int) bool {
	if off >= i.restarts {
		return i.exhaust()
	}
	shared, keyStart, keyEnd, next, err := i.header(off, prevLen)
	if err != nil {
		return i.fail(err)
	}
	if shared == 0 {
		i.key = i.data[keyStart:keyEnd:keyEnd]
		i.keyInBuf = false
	} else {
		if i.keyInBuf {
			i.buf = i.buf[:shared]
		} else {
			i.buf = append(i.buf[:0], i.key[:shared]...)
		}
		i.buf = append(i.buf, i.data[keyStart:keyEnd]...)
		i.key = i.buf[:len(i.buf):len(i.buf)]
		i.keyInBuf = true
	}
	i.value = i.data[keyEnd:next:next]
	i.offset, i.nextOffset = off, next
	i.valid = true
	return true
}

// header decodes the lengths of the entry at off, whose predecessor's key
// has prevLen bytes, and checks them against the block: the entry's key is
// prev[:shared] followed by data[keyStart:keyEnd], its value runs from keyEnd
// to next.
func (i *Iter) header(off, prevLen int) (shared, keyStart, keyEnd, next int, err error) {
	// The common case, small enough to inline: the two key lengths take
	// one byte each, the value length one or two (values below 16 KiB),
	// and the entry is well formed. Anything else takes headerSlow.
	if end := i.restarts; off+4 <= end {
		b := i.data[off : off+4 : off+4]
		s, unshared, valueLen, p := int(b[0]), int(b[1]), int(b[2]), off+3
		if valueLen >= 0x80 {
			valueLen, p = valueLen&0x7f|int(b[3])<<7, p+1
		}
		keyEnd = p + unshared
		next = keyEnd + valueLen
		if s|unshared|int(b[3]&b[2]) < 0x80 && s <= prevLen && next <= end {
			return s, p, keyEnd, next, nil
		}
	}
	return i.headerSlow(off, prevLen)
}

// headerSlow is header for any entry, checking every length.
func (i *Iter) headerSlow(off, prevLen int) (shared, keyStart, keyEnd, next int, err error) {
	return decodeHeader(i.data, i.restarts, off, prevLen)
}

// decodeHeader decodes the lengths of the entry at off in the block data,
// whose entries end at end and whose predecessor's key has prevLen bytes,
// checking every length against the block: the entry's key is
// prev[:shared] followed by data[keyStart:keyEnd], its value runs from
// keyEnd to next. A bad length is an error marked base.ErrCorruption.
func decodeHeader(data []byte, end, off, prevLen int) (shared, keyStart, keyEnd, next int, err error) {
	s, p, ok := uvarint32(data, off, end)
	if !ok {
		return 0, 0, 0, 0, corruptEntry(data, off, "bad shared-prefix length")
	}
	unshared, p, ok := uvarint32(data, p, end)
	if !ok {
		return 0, 0, 0, 0, corruptEntry(data, off, "bad key length")
	}
	valueLen, p, ok := uvarint32(data, p, end)
	if !ok {
		return 0, 0, 0, 0, corruptEntry(data, off, "bad value length")
	}
	if uint64(s) > uint64(prevLen) {
		return 0, 0, 0, 0, corruptEntry(data, off, "shares more bytes than the previous key has")
	}
	if uint64(unshared) > uint64(end-p) {
		return 0, 0, 0, 0, corruptEntry(data, off, "key runs past the entries")
	}
	keyEnd = p + int(unshared)
	if uint64(valueLen) > uint64(end-keyEnd) {
		return 0, 0, 0, 0, corruptEntry(data, off, "value runs past the entries")
	}
	return int(s), p, keyEnd, keyEnd + int(valueLen), nil
}

func corruptEntry(data []byte, off int, what string) error {
	return base.CorruptionErrorf("block: corrupt entry at offset %d of %d-byte block: %s", off, len(data), what)
}

// exhaust leaves i unpositioned without an error and returns false.
func (i *Iter) exhaust() bool {
	i.valid = false
	i.key, i.value = nil, nil
	return false
}

// initFail records err as Init's result and leaves i empty.
func (i *Iter) initFail(err error) error {
	i.data, i.restarts, i.numRestarts = nil, 0, 0
	i.err = err
	return err
}

// fail records err (the first one sticks), invalidates i and returns false.
func (i *Iter) fail(err error) bool {
	if i.err == nil {
		i.err = err
	}
	return i.exhaust()
}

// describeRestarts formats (a prefix of) the restart array of the block
// data, n points from offset restarts, for errors.
func describeRestarts(data []byte, restarts, n int) string {
	const limit = 8
	s := "["
	for j := 0; j < n && j < limit; j++ {
		if j > 0 {
			s += " "
		}
		s += strconv.Itoa(restartAt(data, restarts, j))
	}
	if n > limit {
		s += " ..."
	}
	return s + "]"
}

// compareBytes is bytes.Compare, eight bytes at a time: user keys are
// short, and for them a call into the assembly loop costs more than the
// comparison.
func compareBytes(a, b []byte) int {
	for len(a) >= 8 && len(b) >= 8 {
		if x, y := binary.BigEndian.Uint64(a), binary.BigEndian.Uint64(b); x != y {
			if x < y {
				return -1
			}
			return 1
		}
		a, b = a[8:], b[8:]
	}
	if len(a) == 0 || len(b) == 0 {
		return len(a) - len(b)
	}
	return bytes.Compare(a, b)
}

// uvarint32 decodes a varint32 from b[p:end] and returns it with the offset
// after it. It fails on truncation and on values above 32 bits.
func uvarint32(b []byte, p, end int) (uint32, int, bool) {
	if p < end && b[p] < 0x80 {
		return uint32(b[p]), p + 1, true
	}
	var v uint32
	for shift := uint(0); shift <= 28; shift += 7 {
		if p >= end {
			return 0, 0, false
		}
		c := b[p]
		p++
		if shift == 28 && c > 0x0f {
			return 0, 0, false
		}
		v |= uint32(c&0x7f) << shift
		if c < 0x80 {
			return v, p, true
		}
	}
	return 0, 0, false
}
