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
// DBOpen during recovery). It returns the table's writer, whose reservation
// the caller ends once the version edit naming the table is applied (or
// failed); nil means mem held nothing to write. mem must be the oldest
// memtable not yet in a table, and pending the tables written before it that
// the current version does not name yet (recovery's).
func (d *database) flushMemTable(
	ctx context.Context, mem *memtable.MemTable, activity ioctx.Activity, snapshots []base.SeqNum, pending []*manifest.FileMetadata,
) (*tableWriter, error) {
	it := compact.NewIter(mem.NewIter(nil, nil), snapshots, nil)
	// The memtable's range tombstones go to the table as they are, but
	// for the unbounded one, clamped; the points they cover are dropped by
	// compactions, which see every source.
	dels := d.clampRangeDels(mem, pending)
	tw, err := d.writeTableFrom(ctx, it, dels.Fragments(), ioctx.PriorityHigh)
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
		if bytes.Compare(k, largest) > 0 {
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
	fe := d.startFlushEvent(mem.MemTable)

	sw := d.stats.StartStopWatch(statistics.FlushTime, statistics.HistogramNone)
	tw, err := d.flushMemTable(ctx, mem.MemTable, ioctx.ActivityFlush, snapshots, nil)
	if err == nil {
		err = d.applyFlush(mem, tw)
	}
	sw.Stop()
	d.endFlushEvent(fe, tw, err)
	if err == nil {
		// Before waking Flush's waiters: a Flush returns with the files it
		// made obsolete (the WAL it replaced) already gone.
		d.deleteObsoleteFiles(false)
	}

	d.mu.Lock()
	if err != nil {
		err = d.setBackgroundErrorLocked(reasonFlush, err)
	}
	d.notifyLocked()
	d.mu.Unlock()
	return err == nil, err
}

// applyFlush records the flushed table (nil when mem held nothing to write)
// in the MANIFEST, together with the WAL number from which recovery must now
// replay, and swaps the memtable for the table in the read state. It ends
// the table's reservation.
func (d *database) applyFlush(mem *memTable, tw *tableWriter) error {
	d.manifestMu.Lock()
	defer d.manifestMu.Unlock()

	d.mu.Lock()
	next := d.mu.mem.logNum
	if len(d.mu.imm) > 1 {
		next = d.mu.imm[1].logNum
	}
	lastSeq := d.mu.lastSeq
	d.mu.Unlock()

	var edit manifest.VersionEdit
	if tw != nil {
		// The table's directory entry must be durable before the MANIFEST
		// names it.
		if err := d.syncDir(); err != nil {
			tw.abandon()
			return err
		}
		edit.AddFile(0, tw.meta)
	}
	edit.SetLogNumber(next)
	edit.SetLastSeqNum(lastSeq)
	err := d.vs.LogAndApply(&edit)
	if tw != nil {
		// Released after d.mu.manifestFailed is set, if the edit failed:
		// until then only the reservation keeps deleteObsoleteFiles from a
		// table the MANIFEST may name.
		defer tw.release()
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		d.mu.manifestFailed = true
		return errors.Wrap(err, "engine: recording a flush in the MANIFEST")
	}
	if len(d.mu.imm) == 0 || d.mu.imm[0] != mem {
		return base.AssertionFailedf("engine: flushed memtable is not the oldest")
	}
	d.mu.imm[0] = nil
	d.mu.imm = d.mu.imm[1:]
	d.mu.flushesDone++
	d.updateReadStateLocked()
	mem.unref()
	d.maybeScheduleLocked()
	return nil
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
