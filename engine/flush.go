package engine

import (
	"bytes"
	"context"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/compact"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/memtable"
	"github.com/shaledb/shale/internal/rangedel"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
)

// flushMemTable writes mem to a new L0 table, with its range tombstones,
// dropping versions no snapshot can see, and opens and checks it with activity (Flush in the background,
// DBOpen during recovery). It returns the table's writer, holding its
// reservation, which installEdit (or recovery's commit) ends; nil means mem
// held nothing to write. On failure it deletes the table itself. mem must be the oldest
// memtable not yet in a table, and pending the tables written before it that
// the current version does not name yet (recovery's).
func (d *database) flushMemTable(
	ctx context.Context, mem *memtable.MemTable, activity ioctx.Activity, snapshots []base.SeqNum, pending []*manifest.FileMetadata,
) (*tableWriter, error) {
	it := compact.NewIter(mem.NewIter(nil, nil), snapshots, nil)
	it.SetCompare(d.ucmp())
	// The memtable's range tombstones go to the table as they are, but
	// for the unbounded one, clamped; the points they cover are dropped by
	// compactions, which see every source.
	dels := d.clampRangeDels(mem, pending)
	// Merge operands are combined where no snapshot can tell.
	mi := compact.NewMergeIter(it, d.opts.MergeOperator, d.stats, dels)
	tw, err := d.writeTableFrom(ctx, mi, dels.Fragments(), ioctx.PriorityHigh)
	if err = errors.CombineErrors(err, it.Close()); err == nil && tw != nil {
		err = d.openAndCheckTable(ctx, tw.meta, 0, activity, ioctx.PriorityTotal)
	}
	if err != nil {
		if tw != nil {
			tw.abandon()
		}
		return nil, err
	}
	if tw != nil {
		d.stats.RecordTick(statistics.FlushWriteBytes, tw.meta.Size)
	}
	return tw, nil
}

// clampRangeDels returns mem's range tombstones as its table holds them:
// with the unbounded fragment of DeleteRange(start, nil), if any, ended just
// after the largest user key in the tree, that of mem's last entry or of any
// table's largest key (the current version's, and pending). That is exact
// (package rangedel says why): those tombstones delete only entries
// numbered below them, which, mem being the oldest memtable left, are in
// mem or in those tables; every later write is numbered above them. Tables
// thus never hold an unbounded tombstone, and their bounds stay finite.
func (d *database) clampRangeDels(mem *memtable.MemTable, pending []*manifest.FileMetadata) *rangedel.Set {
	dels := mem.RangeDeletions()
	if !dels.Unbounded() {
		return dels
	}
	var largest []byte
	grow := func(k []byte) {
		if base.CompareUser(d.ucmp(), k, largest) > 0 {
			largest = k
		}
	}
	it := mem.NewIter(nil, nil)
	if kv := it.Last(); kv != nil {
		largest = bytes.Clone(kv.K.UserKey)
	}
	_ = it.Close()
	v := d.vs.Current()
	defer v.Unref()
	for _, files := range v.Levels {
		for _, f := range files {
			grow(f.Largest.UserKey)
		}
	}
	for _, f := range pending {
		grow(f.Largest.UserKey)
	}
	return dels.ClampEnd(append(bytes.Clone(largest), 0))
}

// flushOne flushes the oldest immutable memtable, for the flush loop. It
// reports whether there was one. While writes are stopped by a background
// error it flushes nothing, except as the retry of a hard error
// (recoverHard), when that is due.
func (d *database) flushOne(ctx context.Context) (bool, error) {
	d.mu.Lock()
	if e := d.bgErrorLocked(); e != nil && e.stopsWrites() {
		rec, retry := d.startRetryLocked(severityHard)
		d.mu.Unlock()
		if retry {
			return d.recoverHard(ctx, rec), nil
		}
		return false, nil
	}
	d.mu.Unlock()
	return d.flushOldest(ctx)
}

// flushStartHook, when a test sets it, is called by every background flush
// with the memtable it is about to write, without d.mu: a test can hold one
// memtable's flush back while the ones before it are flushed.
var flushStartHook atomic.Pointer[func(d *database, mem *memtable.MemTable)]

// flushOldest flushes the oldest immutable memtable, reporting whether there
// was one. Its failure becomes the background error.
func (d *database) flushOldest(ctx context.Context) (bool, error) {
	d.mu.Lock()
	if len(d.mu.imm) == 0 {
		d.mu.Unlock()
		return false, nil
	}
	mem := d.mu.imm[0]
	snapshots := d.mu.snapshots.seqNums()
	d.mu.Unlock()
	if hook := flushStartHook.Load(); hook != nil {
		(*hook)(d, mem.MemTable)
	}
	u := &versionUpdate{flushed: mem, flushEv: d.startFlushEvent(mem.MemTable),
		sw: d.stats.StartStopWatch(statistics.FlushTime, statistics.HistogramNone)}
	tw, err := d.flushMemTable(ctx, mem.MemTable, ioctx.ActivityFlush, snapshots, nil)
	if err == nil {
		// The table, if mem held anything, replaces mem; installEdit sets
		// the WAL from which recovery must now replay.
		u.edit = &manifest.VersionEdit{}
		if tw != nil {
			u.outputs = tableOutputs{tw}
			u.edit.AddFile(0, tw.meta)
		}
	}
	err = d.installEdit(u, err)

	d.mu.Lock()
	if err != nil {
		err = d.setBackgroundErrorLocked(reasonFlush, err)
	}
	d.notifyLocked()
	d.mu.Unlock()
	return err == nil, err
}

// Flush makes every write acknowledged before the call durable in a table:
// it switches to a new memtable and waits until the old one and every
// earlier one are flushed. It honours ctx while waiting.
func (d *database) Flush(ctx context.Context) error {
	if err := d.checkWritable(ctx); err != nil {
		return err
	}
	// Queue as a writer so the rotation happens between commit groups.
	w := d.headAloneLocked(ctx)
	var err error
	if e := d.bgErrorLocked(); e != nil && e.stopsWrites() {
		err = e
	} else if !d.mu.mem.Empty() {
		err = d.rotateMemtableLocked(nil, nil)
	}
	target := d.mu.flushesDone + uint64(len(d.mu.imm))
	d.finishGroupLocked(d.mu.writers[:1], err)
	for err == nil && d.mu.flushesDone < target {
		if e := d.bgErrorLocked(); e != nil && e.stopsWrites() {
			err = e
			break
		}
		d.maybeScheduleLocked()
		ch := d.mu.changed
		d.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			err = errors.Wrap(ctx.Err(), "engine: waiting for a flush")
		}
		d.mu.Lock()
	}
	d.mu.Unlock()
	writerPool.Put(w)
	return err
}
