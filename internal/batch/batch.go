package batch

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
)

// HeaderLen is the length of a batch's header: an 8-byte sequence number and
// a 4-byte record count. Part of the WAL format; do not change.
const HeaderLen = 12

// maxVarint32Len is the longest varint32 encoding.
const maxVarint32Len = 5

// maxFieldLen is the longest key or value a record can hold: its length must
// fit a varint32.
const maxFieldLen = math.MaxUint32

// Batch is a sequence of Set, Delete and DeleteRange records in the encoding described in
// the package doc. The zero Batch is empty and ready to use.
//
// A Batch is not safe for concurrent use. The read-only methods (Count,
// Empty, Len, SeqNum, Repr, Reader) may be called from several goroutines at
// once as long as none modifies the batch.
type Batch struct {
	// data is the encoding: nil for a zero batch, otherwise at least HeaderLen
	// bytes holding the header and the records.
	data []byte
	// gen changes whenever the records are replaced rather than appended to
	// (Reset, SetRepr), so that an Index knows to start over.
	gen uint64
	// retained says data was handed out by Retain and must never change
	// again: the next change moves the batch to a buffer of its own first.
	retained bool
}

// New returns an empty batch.
func New() *Batch {
	return &Batch{data: make([]byte, HeaderLen, 256)}
}

// ensureHeader gives a zero batch its header.
func (b *Batch) ensureHeader() {
	if b.data == nil {
		b.data = make([]byte, HeaderLen, 256)
	}
}

// Set appends a record that sets key to value. The batch copies key and
// value; the caller may reuse them at once. It panics if key or value is 4 GiB
// or longer, which the encoding cannot represent.
func (b *Batch) Set(key, value []byte) { b.appendTwoFields(base.KindSet, key, value) }

// Merge appends a merge operand for key (RocksDB's Merge): a record of
// kind base.KindMerge with the operand as its value. The batch copies both.
// It panics if key or operand is 4 GiB or longer.
func (b *Batch) Merge(key, operand []byte) { b.appendTwoFields(base.KindMerge, key, operand) }

// Delete appends a record that deletes key. The batch copies key. It panics
// if key is 4 GiB or longer.
func (b *Batch) Delete(key []byte) {
	checkFieldLen(len(key))
	b.ensureHeader()
	b.grow(1 + maxVarint32Len + len(key))
	b.data = append(b.data, byte(base.KindDelete))
	b.data = binary.AppendUvarint(b.data, uint64(len(key)))
	b.data = append(b.data, key...)
	b.addCount(1)
}

// DeleteRange appends a record that deletes every key in [start, end): a
// range tombstone with key start and value end (end is exclusive; an empty
// or nil end is unbounded, deleting every key >= start). It covers the keys
// written earlier in the batch, whose sequence numbers are lower, and none
// written after it. The batch copies start and end; it does not check their
// order (the engine drops empty and inverted ranges before they reach a
// batch). It panics if start or end is 4 GiB or longer.
func (b *Batch) DeleteRange(start, end []byte) {
	if len(end) == 0 {
		// Its own kind, without an end field: a release that predates
		// unbounded deletions refuses the record as an unknown kind
		// (corruption, naming the offset) rather than reading an empty
		// end as an empty range and bringing deleted keys back.
		checkFieldLen(len(start))
		b.ensureHeader()
		b.grow(1 + maxVarint32Len + len(start))
		b.data = append(b.data, byte(kindRangeDeleteOpen))
		b.data = binary.AppendUvarint(b.data, uint64(len(start)))
		b.data = append(b.data, start...)
		b.addCount(1)
		return
	}
	b.appendTwoFields(base.KindRangeDelete, start, end)
}

// kindRangeDeleteOpen is the record kind of an unbounded range deletion: a
// start field and no end. It exists only in the batch (and so the WAL)
// encoding: readers return it as base.KindRangeDelete with an empty end. It
// is part of the WAL format: do not change it.
const kindRangeDeleteOpen base.Kind = 0x1F

// appendTwoFields appends a record of kind with two length-prefixed fields:
// a Set's key and value, a range deletion's start and end.
func (b *Batch) appendTwoFields(kind base.Kind, first, second []byte) {
	checkFieldLen(len(first))
	checkFieldLen(len(second))
	b.ensureHeader()
	b.grow(1 + 2*maxVarint32Len + len(first) + len(second))
	b.data = append(b.data, byte(kind))
	b.data = binary.AppendUvarint(b.data, uint64(len(first)))
	b.data = append(b.data, first...)
	b.data = binary.AppendUvarint(b.data, uint64(len(second)))
	b.data = append(b.data, second...)
	b.addCount(1)
}

// Grow makes room for at least n more bytes of records, so that a caller
// that knows a batch's size (a copy of another batch, say) allocates its
// buffer once. Appending records grows the buffer anyway; Grow only saves
// the copies.
func (b *Batch) Grow(n int) {
	if n < 0 {
		panic(errors.AssertionFailedf("batch: Grow(%d)", n))
	}
	b.ensureHeader()
	if b.retained {
		b.unretain(n)
		return
	}
	b.data = slices.Grow(b.data, n)
}

// grow makes room for n more bytes, doubling the buffer when it is full.
// append grows a large slice by only a quarter, which for a batch of a
// million records means copying about four times its final size and
// allocating five; doubling copies at most its size and allocates at most
// twice (issue 12's million-record batch: 393 MB allocated to build 67 MB).
// A retained batch moves to a buffer of its own, even when there is room.
func (b *Batch) grow(n int) {
	if !b.retained && cap(b.data)-len(b.data) >= n {
		return
	}
	// slices.Grow asked for more than twice the capacity gives exactly
	// what was asked (rounded up to an allocation size class), without
	// zeroing the part it copies.
	if b.retained {
		// Appending to a retained batch is the start of its next version:
		// leave the same doubling room, in a new buffer.
		b.unretain(max(n, len(b.data)+1))
		return
	}
	want := max(n, 2*cap(b.data)+1-len(b.data))
	if len(b.data)+want < hugeBufferMin {
		b.data = slices.Grow(b.data, want)
		return
	}
	b.data = growHuge(b.data, len(b.data)+want)
}

// hugeBufferMin is the capacity from which a batch's buffer is advised to
// use transparent huge pages (see growHuge).
const hugeBufferMin = 8 << 20

// hugePage is the size of a transparent huge page on the platforms shale
// runs on (x86-64 and arm64 with 4 KiB base pages).
const hugePage = 2 << 20

// growHuge returns a buffer of capacity at least c holding data, advised,
// before anything is written to it, to be backed by transparent huge pages.
// A large batch writes its buffer once, front to back, and fresh memory
// costs a page fault per 4 KiB page, where huge pages fault once per 2 MiB.
// On the VM of commit f4c6250, where a fault cost about 12 us, a cold build
// of issue 12's million-record batch took 550-614 ms in 32,800 faults, and
// 123-127 ms in 5,700 with the advice.
func growHuge(data []byte, c int) []byte {
	nb := make([]byte, len(data), c)
	adviseHugePages(nb[:c])
	copy(nb, data)
	return nb
}

// Retain hands the batch's encoding to the caller to keep: the returned
// bytes never change again, whatever is done to b later. Every later change
// to b (Set, Delete, DeleteRange, Append, Grow, SetSeqNum, Reset) first
// moves b to a buffer of its own, so b stays usable and a retained encoding
// costs nothing unless b is changed after all (copy-on-write). The engine
// retains a large batch's encoding as the data of a memtable made from it
// (memtable.NewFromBatch) instead of copying it.
func (b *Batch) Retain() []byte {
	b.ensureHeader()
	b.retained = true
	return b.data
}

// unretain moves a retained batch to a new buffer with room for n more
// bytes, so the retained encoding is left as it was.
func (b *Batch) unretain(n int) {
	data := make([]byte, len(b.data), len(b.data)+n)
	copy(data, b.data)
	b.data = data
	b.retained = false
}

// HasValue reports whether records of kind carry a second field: the value
// of a Set, the operand of a Merge, the end key of a range deletion.
func HasValue(kind base.Kind) bool {
	return kind == base.KindSet || kind == base.KindMerge || kind == base.KindRangeDelete
}

func checkFieldLen(n int) {
	if uint64(n) > maxFieldLen {
		panic(errors.AssertionFailedf("batch: a %d-byte key or value does not fit a varint32 length", n))
	}
}

// addCount adds n to the header's record count. A batch of 2^32 records
// would need at least 8 GiB, so overflow is a caller bug, not data.
func (b *Batch) addCount(n uint32) {
	c := binary.LittleEndian.Uint32(b.data[8:HeaderLen])
	if c > math.MaxUint32-n {
		panic(errors.AssertionFailedf("batch: more than %d records", uint32(math.MaxUint32)))
	}
	binary.LittleEndian.PutUint32(b.data[8:HeaderLen], c+n)
}

// Count returns the number of records.
func (b *Batch) Count() uint32 {
	if len(b.data) < HeaderLen {
		return 0
	}
	return binary.LittleEndian.Uint32(b.data[8:HeaderLen])
}

// Empty reports whether the batch has no records.
func (b *Batch) Empty() bool { return b.Count() == 0 }

// Len returns the length of the batch's encoding, header included.
func (b *Batch) Len() int { return max(len(b.data), HeaderLen) }

// SeqNum returns the sequence number in the header: the one the first record
// gets when the batch is applied.
func (b *Batch) SeqNum() base.SeqNum {
	if len(b.data) < HeaderLen {
		return 0
	}
	return base.SeqNum(binary.LittleEndian.Uint64(b.data[:8]))
}

// SetSeqNum sets the sequence number in the header. The write path calls it
// once it has assigned the batch its sequence numbers, before writing the
// batch to the WAL.
func (b *Batch) SetSeqNum(seq base.SeqNum) {
	b.ensureHeader()
	if b.retained {
		if b.SeqNum() == seq {
			return
		}
		b.unretain(0)
	}
	binary.LittleEndian.PutUint64(b.data[:8], uint64(seq))
}

// Repr returns the batch's encoding. The slice is owned by the batch: the
// caller must not modify it, and it is valid until the batch is next modified
// (a later Set or Delete may reallocate it; Reset and SetRepr replace it).
func (b *Batch) Repr() []byte {
	if len(b.data) < HeaderLen {
		// A zero batch has no buffer; read-only methods never give it one, so
		// they stay safe for concurrent readers.
		return make([]byte, HeaderLen)
	}
	return b.data
}

// SetRepr replaces the batch's contents with data after checking the header
// and every record. A malformed encoding returns an error marked
// base.ErrCorruption that names the offset, and leaves the batch unchanged.
// On success the batch takes ownership of data: the caller must not modify
// it afterwards, and the batch may write into it if it is reused after Reset.
func (b *Batch) SetRepr(data []byte) error {
	if err := validate(data); err != nil {
		return err
	}
	b.data = data
	b.retained = false
	b.gen++
	return nil
}

// Append appends other's records to b, as group commit does to write several
// batches as one. b's sequence number is unchanged; other is not modified.
func (b *Batch) Append(other *Batch) {
	n := other.Count()
	if n == 0 {
		return
	}
	b.ensureHeader()
	if b.retained {
		b.unretain(len(other.data) - HeaderLen)
	}
	// Appending b to itself is fine: append copies the source before it
	// writes past len(b.data).
	b.data = append(b.data, other.data[HeaderLen:]...)
	b.addCount(n)
}

// Reset empties the batch and zeroes its sequence number, keeping its buffer
// for reuse unless the buffer is retained: then the batch lets it go and
// becomes a zero batch.
func (b *Batch) Reset() {
	if b.retained {
		b.data, b.retained = nil, false
	} else if b.data != nil {
		b.data = b.data[:HeaderLen]
		clear(b.data)
	}
	b.gen++
}

// Reader returns a reader over the batch's records. The batch must not be
// modified while the reader is in use.
func (b *Batch) Reader() Reader {
	if len(b.data) < HeaderLen {
		return Reader{}
	}
	return Reader{data: b.data, off: HeaderLen, left: b.Count()}
}

// DecodeHeader returns the sequence number and record count in the header of
// an encoded batch. It reads only the header (SetRepr checks the records) and
// does not retain data.
func DecodeHeader(data []byte) (seq base.SeqNum, count uint32, err error) {
	if len(data) < HeaderLen {
		return 0, 0, base.CorruptionErrorf("batch: %d bytes is too short for the %d-byte header", len(data), HeaderLen)
	}
	return base.SeqNum(binary.LittleEndian.Uint64(data[:8])), binary.LittleEndian.Uint32(data[8:HeaderLen]), nil
}

// validate checks an encoding as SetRepr promises: a header, exactly count
// well-formed records, nothing after them, and sequence numbers in range.
func validate(data []byte) error {
	seq, count, err := DecodeHeader(data)
	if err != nil {
		return err
	}
	if seq > base.MaxSeqNum || (count > 0 && seq > base.MaxSeqNum-base.SeqNum(count-1)) {
		return base.CorruptionErrorf("batch: sequence numbers %d+%d exceed the maximum %d", seq, count, base.MaxSeqNum)
	}
	r := Reader{data: data, off: HeaderLen, left: count}
	for {
		_, _, _, ok, err := r.Next()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
	}
}

// Reader decodes a batch's records in order. It is not safe for concurrent
// use. Its zero value has no records.
type Reader struct {
	data []byte // the whole encoding, so errors can name absolute offsets
	off  int    // offset of the next record
	left uint32 // records the header says remain
	num  uint32 // records read so far
	err  error
}

// Next returns the next record. ok is false at the end of the records or on
// an error. key and value point into the batch's buffer: they are valid as
// long as the batch is (until it is Reset or given another encoding) and must
// not be modified. value is nil for a Delete; for a range deletion
// (base.KindRangeDelete) key is the start and value the exclusive end, empty
// (not nil) when unbounded.
//
// A batch built with Set, Delete and DeleteRange, or accepted by SetRepr, never makes Next
// fail. A Reader over bytes that were not checked returns an error marked
// base.ErrCorruption that names the record and offset, and keeps returning it.
func (r *Reader) Next() (kind base.Kind, key, value []byte, ok bool, err error) {
	if r.err != nil {
		return 0, nil, nil, false, r.err
	}
	if r.left == 0 {
		if r.off < len(r.data) {
			r.err = base.CorruptionErrorf("batch: %d unexpected bytes at offset %d after the last of %d records",
				len(r.data)-r.off, r.off, r.num)
			return 0, nil, nil, false, r.err
		}
		return 0, nil, nil, false, nil
	}
	if r.off >= len(r.data) {
		r.err = base.CorruptionErrorf("batch: the header counts %d records but the data ends after %d, at offset %d",
			r.num+r.left, r.num, r.off)
		return 0, nil, nil, false, r.err
	}
	rec, err := decodeRecord(r.data, r.off, r.num)
	if err != nil {
		r.err = err
		return 0, nil, nil, false, err
	}
	r.off = rec.end
	r.left--
	r.num++
	key = r.data[rec.keyOff : rec.keyOff+rec.keyLen : rec.keyOff+rec.keyLen]
	if HasValue(rec.kind) {
		value = r.data[rec.valOff : rec.valOff+rec.valLen : rec.valOff+rec.valLen]
	}
	return rec.kind, key, value, true, nil
}

// Offset returns the offset, in the batch's encoding, of the record the next
// call to Next decodes: an index of a batch can name its records by offset
// and decode them later with DecodeAt.
func (r *Reader) Offset() int { return r.off }

// DecodeAt decodes the record at offset off of an encoding whose records
// were already read without error (by a Reader, or SetRepr), off being a
// value Reader.Offset gave before one of them. It does not check the
// encoding again: it is the fast path for an index of record offsets, such
// as a memtable made from a batch. key and value are as Reader.Next returns
// them.
func DecodeAt(data []byte, off uint32) (kind base.Kind, key, value []byte) {
	kind = base.Kind(data[off])
	key, end := fieldAt(data, off+1)
	switch {
	case kind == kindRangeDeleteOpen:
		return base.KindRangeDelete, key, data[end:end:end]
	case HasValue(kind):
		value, _ = fieldAt(data, end)
	}
	return kind, key, value
}

// KeyAt returns the key (or range start) of the record at off, under the
// conditions of DecodeAt.
func KeyAt(data []byte, off uint32) []byte {
	key, _ := fieldAt(data, off+1)
	return key
}

// fieldAt returns the length-prefixed field at off of a checked encoding and
// the offset just past it. A one-byte length, the common case, is decoded
// inline.
func fieldAt(data []byte, off uint32) ([]byte, uint32) {
	n, w := uint32(data[off]), uint32(1)
	if n >= 0x80 {
		v, k := uvarint32(data[off:])
		n, w = v, uint32(k)
	}
	start := off + w
	end := start + n
	return data[start:end:end], end
}

// record locates one decoded record within a batch's encoding. Offsets, not
// slices, so an Index can keep them across reallocations of the buffer.
type record struct {
	kind           base.Kind
	keyOff, keyLen int
	valOff, valLen int
	end            int // offset just past the record
}

// decodeRecord decodes the record at data[off:], where off < len(data); num
// is its index, for error messages. Every length is checked against the bytes
// that remain, so bad input cannot index out of range or make a caller loop:
// a record is at least two bytes long.
func decodeRecord(data []byte, off int, num uint32) (record, error) {
	rec := record{kind: base.Kind(data[off])}
	if rec.kind != base.KindSet && rec.kind != base.KindDelete && rec.kind != base.KindRangeDelete &&
		rec.kind != kindRangeDeleteOpen && rec.kind != base.KindMerge {
		return record{}, base.CorruptionErrorf("batch: record %d at offset %d: unknown kind %d", num, off, data[off])
	}
	var err error
	if rec.keyOff, rec.keyLen, err = decodeField(data, off+1, num, "key"); err != nil {
		return record{}, err
	}
	rec.end = rec.keyOff + rec.keyLen
	if rec.kind == kindRangeDeleteOpen {
		// An unbounded range deletion: a range deletion with an empty
		// end to every reader of the record.
		rec.kind, rec.valOff = base.KindRangeDelete, rec.end
		return rec, nil
	}
	if HasValue(rec.kind) {
		if rec.valOff, rec.valLen, err = decodeField(data, rec.end, num, "value"); err != nil {
			return record{}, err
		}
		rec.end = rec.valOff + rec.valLen
	}
	return rec, nil
}

// decodeField decodes a varint32 length at data[off:] and checks that that
// many bytes follow it. It returns the offset and length of the bytes.
func decodeField(data []byte, off int, num uint32, what string) (start, n int, err error) {
	v, w := uvarint32(data[off:])
	switch {
	case w == 0:
		return 0, 0, base.CorruptionErrorf("batch: record %d: %s length at offset %d: truncated varint", num, what, off)
	case w < 0:
		return 0, 0, base.CorruptionErrorf("batch: record %d: %s length at offset %d: varint overflows 32 bits", num, what, off)
	}
	start = off + w
	if uint64(v) > uint64(len(data)-start) {
		return 0, 0, base.CorruptionErrorf("batch: record %d: %d-byte %s at offset %d overruns the %d-byte batch",
			num, v, what, start, len(data))
	}
	return start, int(v), nil
}

// uvarint32 decodes an unsigned varint of at most 5 bytes whose value fits in
// 32 bits. w is the number of bytes read, 0 when buf ends inside the varint,
// and -1 when the varint is longer than 5 bytes or its value overflows.
func uvarint32(buf []byte) (v uint32, w int) {
	for i := 0; i < maxVarint32Len; i++ {
		if i == len(buf) {
			return 0, 0
		}
		c := buf[i]
		if c < 0x80 {
			if i == maxVarint32Len-1 && c > 0x0f {
				return 0, -1
			}
			return v | uint32(c)<<(7*i), i + 1
		}
		v |= uint32(c&0x7f) << (7 * i)
	}
	return 0, -1
}
