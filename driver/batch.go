package driver

// Batch is a list of writes that DB.Write applies atomically and in order.
// The zero value is an empty batch ready to use.
//
// Put and Delete copy their arguments, so the caller may reuse its slices at
// once. Write neither modifies nor retains the batch: it may be reused (after
// Reset, or to append more) or written again, even to several databases at
// once.
//
// A Batch is not safe for concurrent use while it is being modified.
type Batch struct {
	// ops are the writes, their slices pointing into chunks of data.
	ops []Op
	// data is the current chunk. A full chunk is replaced, not grown, so
	// the slices of earlier ops stay valid without being moved.
	data []byte
}

// minBatchChunk is the first chunk's size; chunks double up to
// maxBatchChunk, or are larger when one write needs it.
const (
	minBatchChunk = 256
	maxBatchChunk = 1 << 20
)

// Put appends a write of value at key. It copies both; a nil or empty
// value writes an empty value.
func (b *Batch) Put(key, value []byte) {
	k, v := b.alloc(key, value)
	b.ops = append(b.ops, Op{Key: k, Value: v})
}

// Delete appends a deletion of key. It copies key.
func (b *Batch) Delete(key []byte) {
	k, _ := b.alloc(key, nil)
	b.ops = append(b.ops, Op{Delete: true, Key: k})
}

// Len returns the number of writes in the batch.
func (b *Batch) Len() int { return len(b.ops) }

// Reset empties the batch, keeping its current memory for reuse.
func (b *Batch) Reset() {
	clear(b.ops) // drop references to earlier chunks
	b.ops = b.ops[:0]
	b.data = b.data[:0]
}

// alloc copies key and value into the batch's memory. The results are
// non-nil (an empty value stays distinguishable from a deletion's nil) and
// capped, so a driver appending to one cannot overwrite the next.
func (b *Batch) alloc(key, value []byte) (k, v []byte) {
	n := len(key) + len(value)
	if b.data == nil || cap(b.data)-len(b.data) < n {
		size := min(max(2*cap(b.data), minBatchChunk), maxBatchChunk)
		b.data = make([]byte, 0, max(size, n))
	}
	off := len(b.data)
	b.data = append(b.data, key...)
	b.data = append(b.data, value...)
	mid, end := off+len(key), off+n
	return b.data[off:mid:mid], b.data[mid:end:end]
}
