package engine

import (
	"bytes"
	"context"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/rangedel"
	"github.com/shaledb/shale/internal/readpath"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
)

// DeleteRange adds a deletion of every key in [start, end): one range
// tombstone, applied atomically with the rest of the batch. It covers the
// keys put earlier in the batch and none put after it. A nil end means
// "after every key": every key >= start is deleted (the façade's contract,
// driver.RangeDeleter; the tombstone's end is empty, see package rangedel).
// An empty or inverted range (start >= end, end not nil) is a no-op, as in
// Pebble, and adds nothing. start and end are copied.
func (b *writeBatch) DeleteRange(start, end []byte) {
	if end != nil && base.CompareUser(b.cmp, start, end) >= 0 {
		return
	}
	if end == nil && b.cmp != nil {
		b.err = errUnboundedRangeOrder
		return
	}
	b.b.DeleteRange(start, end)
}

// DeleteRange deletes every key in [start, end) with one write, whatever the
// number of keys: a range tombstone that reads, flushes and compactions
// honour. A nil end deletes every key >= start. An empty or inverted range
// writes nothing and returns nil (after the checks every write makes: a
// closed or read-only database, a done ctx).
func (d *database) DeleteRange(ctx context.Context, start, end []byte) error {
	return d.deleteRangeImpl(ctx, ioctx.WriteOptionsFrom(ctx), start, end)
}

// deleteRangeImpl is DeleteRange with resolved write options (the driver
// adapter's: the façade resolved them).
func (d *database) deleteRangeImpl(ctx context.Context, wo writeOptions, start, end []byte) error {
	if err := d.checkRangeEnd(end); err != nil {
		return err
	}
	b := batchPool.Get().(*writeBatch)
	b.cmp = d.ucmp()
	b.DeleteRange(start, end)
	err := d.writeOpts(ctx, &b.b, wo, nil)
	b.Reset()
	batchPool.Put(b)
	return err
}

// DeleteRange buffers a deletion of every key in [start, end), or of every
// key >= start when end is nil. The transaction's own reads stop seeing the
// range at once (except keys it writes again afterwards), and Commit fails
// with ErrConflict if anything was written in the range since the
// transaction began. An empty or inverted range is a no-op.
func (tx *txn) DeleteRange(ctx context.Context, start, end []byte) error {
	if err := tx.checkWrite(ctx); err != nil {
		return err
	}
	if err := tx.db.checkRangeEnd(end); err != nil {
		return err
	}
	if end == nil || base.CompareUser(tx.db.ucmp(), start, end) < 0 {
		tx.b.DeleteRange(start, end)
	}
	return nil
}

// rangeDels returns the transaction's range deletions as a Set of copies, or
// nil when it has none (an unbounded one keeps its empty end).
func (tx *txn) rangeDels() *rangedel.Set {
	if tx.index.NumRangeDeletions() == 0 {
		return nil
	}
	var ts []rangedel.Tombstone
	tx.index.RangeDeletions(func(start, end []byte) bool {
		ts = append(ts, rangedel.Tombstone{Start: bytes.Clone(start), End: bytes.Clone(end), Seq: 1})
		return true
	})
	return rangedel.NewCmp(tx.db.ucmp(), ts)
}

// checkRangeConflict checks one record of the transaction against the
// writes committed since it began: for a range deletion, any write in its
// range (from its start on, for an unbounded one); for a point write, any
// write of the key, range deletions included.
func (tx *txn) checkRangeConflict(v *readpath.View, kind base.Kind, key, value []byte) error {
	start, end := key, value
	switch {
	case kind != base.KindRangeDelete && tx.db.ucmp() != nil:
		// key+"\x00" follows key immediately only in bytewise order.
		found, err := readpath.WrittenAfterKey(context.Background(), v, conflictCheckReadEnv, key, tx.snap.seq)
		if err != nil {
			return errors.Wrapf(err, "engine: checking %q for conflicts", key)
		}
		if found {
			tx.db.stats.RecordTick(statistics.TxnConflicts, 1)
			return base.Mark(errors.Newf("engine: %q was written after the transaction began at %d",
				key, tx.snap.seq), ErrConflict)
		}
		return nil
	case kind != base.KindRangeDelete:
		end = append(append(make([]byte, 0, len(key)+1), key...), 0)
	case len(end) == 0:
		end = nil // unbounded: WrittenAfter's nil end
	}
	found, err := readpath.WrittenAfter(context.Background(), v, conflictCheckReadEnv, start, end, tx.snap.seq)
	if err != nil {
		return errors.Wrapf(err, "engine: checking [%q, %q) for conflicts", start, end)
	}
	if found {
		tx.db.stats.RecordTick(statistics.TxnConflicts, 1)
		return base.Mark(errors.Newf("engine: [%q, %q) was written after the transaction began at %d",
			start, end, tx.snap.seq), ErrConflict)
	}
	return nil
}

// skipDeletedRange moves the snapshot side past a key the transaction's
// range deletions hide, seeking past the covering range, and reports
// whether it moved.
func (t *txnIterator) skipDeletedRange() bool {
	if t.dels == nil {
		return false
	}
	_, f := t.dels.Covering(t.db.Key(), base.MaxSeqNum)
	if f == nil {
		return false
	}
	switch {
	case t.forward && f.Unbounded():
		// Every snapshot key from here on is deleted: the snapshot side
		// is done (a turn back re-seeks it).
		t.dbOK = false
	case t.forward:
		t.dbOK = t.db.SeekGE(f.End)
	default:
		t.dbOK = t.db.SeekLT(f.Start)
	}
	return true
}

// checkTableBounds checks a table's MANIFEST bounds against its contents:
// its first and last point entries (nil when it has none) widened by its
// range tombstones, as sstable.Writer computes them. It is what the
// consistency check (check.go) needs for tables with range tombstones, whose
// bounds are not their first and last point keys.
func checkTableBounds(level int, f *manifest.FileMetadata, r *sstable.Reader, first, last *base.InternalKV) error {
	var smallest, largest base.InternalKey
	var ok bool
	if first != nil {
		smallest, largest, ok = first.K, last.K, true
	}
	if frags := r.RangeDeletions().Fragments(); len(frags) > 0 {
		lo := base.MakeInternalKey(frags[0].Start, frags[0].Seqs[0], base.KindRangeDelete)
		hi := base.MakeRangeDeleteSentinel(frags[len(frags)-1].End)
		if !ok || base.CompareInternalWith(r.Compare(), lo, smallest) < 0 {
			smallest = lo
		}
		if !ok || base.CompareInternalWith(r.Compare(), hi, largest) > 0 {
			largest = hi
		}
		ok = true
	}
	switch {
	case !ok:
		return base.CorruptionErrorf("engine: check: L%d table %s is empty", level, f.FileNum)
	case base.CompareInternal(smallest, f.Smallest) != 0:
		return base.CorruptionErrorf("engine: check: L%d table %s starts at %s, the MANIFEST says %s",
			level, f.FileNum, smallest, f.Smallest)
	case base.CompareInternal(largest, f.Largest) != 0:
		return base.CorruptionErrorf("engine: check: L%d table %s ends at %s, the MANIFEST says %s",
			level, f.FileNum, largest, f.Largest)
	case f.HasRangeDels != (r.RangeDeletions() != nil):
		return base.CorruptionErrorf("engine: check: L%d table %s: the MANIFEST says range tombstones %v, the table %v",
			level, f.FileNum, f.HasRangeDels, r.RangeDeletions() != nil)
	}
	return nil
}
