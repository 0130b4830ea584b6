package driver

import (
	"encoding/binary"
	"strconv"
)

// Batch is a list of writes that DB.Write applies atomically and in order.
// The zero value is an empty batch ready to use.
//
// Put, Delete and DeleteRange copy their arguments, so the caller may reuse
// its slices at once. Write neither modifies nor retains the batch: it may be
// reused (after Reset, or to append more) or written again, even to several
// databases at once.
//
// A batch keeps its writes in a compact encoding (a kind byte, then each
// slice as a uvarint length and its bytes) in chunks of up to 1 MiB, not as
// a slice of [Op]s: a million small writes cost their bytes plus about
// three bytes each, not an Op's 56 more. A driver reads them back in order
// with [Batch.Reader], which does not allocate.
//
// A Batch is not safe for concurrent use while it is being modified; any
// number of goroutines may read it (Len, Size, Reader, Replay, or a Write)
// while nobody modifies it.
type Batch struct {
	// chunks are the full chunks of encoded writes, data the current one;
	// the writes are the chunks' bytes back to back, no write spanning
	// two. A full chunk is replaced, not grown, so nothing is ever moved:
	// a million-op batch costs its encoding plus the last chunk's slack,
	// and the slices a reader returned stay valid while the batch grows.
	chunks [][]byte
	data   []byte
	// size is the bytes of the full chunks, so Size does not sum them.
	size int
	// n is the number of writes; ranges the number of range deletions
	// among them, which the façade checks against the driver's
	// capabilities before writing anything.
	n, ranges int
	// merges is the number of merge operands, checked as ranges are.
	merges int
}

// minBatchChunk is the first chunk's size; chunks double up to
// maxBatchChunk, or are larger when one write needs it.
const (
	minBatchChunk = 256
	maxBatchChunk = 1 << 20
)

// OpKind is the kind of an [Op].
type OpKind uint8

// The kinds of writes a Batch holds. The values are the batch's encoding
// in memory only; nothing stores them.
const (
	// OpPut sets Key to Value.
	OpPut OpKind = iota + 1
	// OpDelete removes Key.
	OpDelete
	// OpDeleteRange removes every key k with Key <= k < Value, or every
	// key k >= Key when Value is nil.
	OpDeleteRange
	// OpMerge is a merge operand: Value is merged into Key's value by the
	// driver's merge operator (see [DB.Merge]). Only a driver that
	// implements [Merger] receives it.
	OpMerge
)

// opDeleteRangeOpen encodes an OpDeleteRange without an end, which has no
// value in the encoding: the reader returns it as OpDeleteRange with a nil
// Value (an encoded empty end would read back as an empty, non-nil one).
const opDeleteRangeOpen OpKind = 0x80 | OpDeleteRange

// String returns "Put", "Delete", "DeleteRange" or "Merge".
func (k OpKind) String() string {
	switch k {
	case OpPut:
		return "Put"
	case OpDelete:
		return "Delete"
	case OpDeleteRange:
		return "DeleteRange"
	case OpMerge:
		return "Merge"
	}
	return "OpKind(" + strconv.Itoa(int(k)) + ")"
}

// Op is one write of a [Batch], as [BatchReader.Next] returns it:
//   - OpPut: a put of Value at Key. A put of an empty value has a non-nil
//     empty Value.
//   - OpDelete: a deletion of Key; Value is nil.
//   - OpDeleteRange: a deletion of every key in [Key, Value) (Key is the
//     start, never nil; Value the exclusive end, nil for "after every key";
//     Key < Value when Value is not nil). Only a driver that implements
//     [RangeDeleter] receives it.
//   - OpMerge: a merge operand Value for Key (a non-nil Value, empty for an
//     empty operand). Only a driver that implements [Merger] receives it.
//
// The slices point into the batch: they stay valid as the batch grows, until
// its Reset (for a driver: only until Write returns), must not be modified,
// and are capped, so appending to one cannot overwrite the next.
type Op struct {
	Kind       OpKind
	Key, Value []byte
}

// Put appends a write of value at key. It copies both; a nil or empty
// value writes an empty value.
func (b *Batch) Put(key, value []byte) {
	b.append(OpPut, key, value)
}

// Merge appends a merge operand for key (see [DB.Merge]). It copies both.
// Writing a batch that holds a merge to a driver without merges fails with
// an error matching ErrNotSupported, and writes nothing.
func (b *Batch) Merge(key, operand []byte) {
	b.append(OpMerge, key, operand)
	b.merges++
}

// Delete appends a deletion of key. It copies key.
func (b *Batch) Delete(key []byte) {
	b.append(OpDelete, key, nil)
}

// DeleteRange appends a deletion of every key k with start <= k < end, in
// the driver's key order (RocksDB's DeleteRange; bytewise unless the
// driver's database has another comparer). It copies both. A nil end means
// "after every key" and a nil start "before every key", as for
// [DB.DeleteRange]. An empty range (start equal to end, or an empty end,
// below which no key sorts in any order) deletes nothing and is not
// recorded; one inverted in the driver's order (start > end) is
// recorded, since the Batch does not know the order, and deletes nothing
// when written. Writing a batch that holds a range deletion to a driver
// without range deletions fails with an error matching ErrNotSupported, and
// writes nothing.
func (b *Batch) DeleteRange(start, end []byte) {
	if emptyRange(start, end) {
		return
	}
	if end == nil {
		b.append(opDeleteRangeOpen, start, nil)
	} else {
		b.append(OpDeleteRange, start, end)
	}
	b.ranges++
}

// Len returns the number of writes in the batch.
func (b *Batch) Len() int { return b.n }

// Size returns the size of the batch's encoding in bytes: the keys and
// values plus a few bytes of framing per write.
func (b *Batch) Size() int { return b.size + len(b.data) }

// Reset empties the batch, keeping its current chunk for reuse.
func (b *Batch) Reset() {
	clear(b.chunks) // drop the earlier chunks
	b.chunks = b.chunks[:0]
	b.data = b.data[:0]
	b.size, b.n, b.ranges, b.merges = 0, 0, 0, 0
}

// hasRangeDeletes reports whether the batch holds a range deletion.
func (b *Batch) hasRangeDeletes() bool { return b.ranges > 0 }

func (b *Batch) append(kind OpKind, key, value []byte) {
	need := 1 + 2*binary.MaxVarintLen64 + len(key) + len(value)
	if cap(b.data)-len(b.data) < need {
		if len(b.data) > 0 {
			b.chunks = append(b.chunks, b.data)
			b.size += len(b.data)
		}
		size := min(max(2*cap(b.data), minBatchChunk), maxBatchChunk)
		b.data = make([]byte, 0, max(size, need))
	}
	b.data = append(b.data, byte(kind))
	b.data = binary.AppendUvarint(b.data, uint64(len(key)))
	b.data = append(b.data, key...)
	if kind != OpDelete && kind != opDeleteRangeOpen {
		b.data = binary.AppendUvarint(b.data, uint64(len(value)))
		b.data = append(b.data, value...)
	}
	b.n++
}

// Reader returns a reader of the batch's writes in order. The reader is a
// small value; it does not allocate, and neither does its Next.
func (b *Batch) Reader() BatchReader { return BatchReader{chunks: b.chunks, last: b.data} }

// BatchReader reads a [Batch]'s writes in order: those there were when
// Reader was called, even if the batch grows meanwhile. Reset invalidates
// it.
type BatchReader struct {
	data   []byte   // the rest of the current chunk
	chunks [][]byte // the full chunks not yet read
	last   []byte   // the batch's current chunk, read after the full ones
}

// Next returns the next write, or false after the last one. The Op's
// slices point into the batch (see [Op]).
func (r *BatchReader) Next() (Op, bool) {
	for len(r.data) == 0 {
		switch {
		case len(r.chunks) > 0:
			r.data, r.chunks = r.chunks[0], r.chunks[1:]
		case len(r.last) > 0:
			r.data, r.last = r.last, nil
		default:
			return Op{}, false
		}
	}
	op := Op{Kind: OpKind(r.data[0])}
	r.data = r.data[1:]
	op.Key = r.slice()
	switch op.Kind {
	case OpDelete:
	case opDeleteRangeOpen:
		op.Kind = OpDeleteRange
	default:
		op.Value = r.slice()
	}
	return op, true
}

// slice decodes one length-prefixed slice. The batch wrote the encoding
// itself, so it is trusted.
func (r *BatchReader) slice() []byte {
	n, w := binary.Uvarint(r.data)
	end := w + int(n)
	s := r.data[w:end:end]
	r.data = r.data[end:]
	return s
}

// BatchWriter receives the writes of [Batch.Replay]. *Batch implements it,
// so a batch can be appended to another.
type BatchWriter interface {
	Put(key, value []byte)
	Delete(key []byte)
	DeleteRange(start, end []byte)
	Merge(key, operand []byte)
}

// Replay calls w's method for each write of the batch, in order. The slices
// passed to w point into the batch (see [Op]): w copies what it keeps (a
// Batch does). Replaying a batch into itself
// appends a copy of its writes: the replay reads only the writes there were
// when it began.
func (b *Batch) Replay(w BatchWriter) {
	r := b.Reader()
	for op, ok := r.Next(); ok; op, ok = r.Next() {
		switch op.Kind {
		case OpPut:
			w.Put(op.Key, op.Value)
		case OpDelete:
			w.Delete(op.Key)
		case OpDeleteRange:
			w.DeleteRange(op.Key, op.Value)
		case OpMerge:
			w.Merge(op.Key, op.Value)
		}
	}
}
