package engine

import (
	"bytes"
	"context"
)

// DeleteRange adds a deletion of every key in [start, end): one range
// tombstone, applied atomically with the rest of the batch. It covers the
// keys put earlier in the batch and none put after it. An empty or inverted
// range (start >= end) is a no-op, as in Pebble, and adds nothing. start and
// end are copied.
func (b *Batch) DeleteRange(start, end []byte) {
	if bytes.Compare(start, end) >= 0 {
		return
	}
	b.b.DeleteRange(start, end)
}

// DeleteRange deletes every key in [start, end) with one write, whatever the
// number of keys: a range tombstone that reads, flushes and compactions
// honour. An empty or inverted range writes nothing and returns nil (after
// the checks every write makes: a closed or read-only database, a done ctx).
func (d *DB) DeleteRange(ctx context.Context, start, end []byte) error {
	b := batchPool.Get().(*Batch)
	b.DeleteRange(start, end)
	err := d.Write(ctx, b, nil)
	b.Reset()
	batchPool.Put(b)
	return err
}
