package engine

import (
	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/compact"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/statistics"
	"sync/atomic"
)

// Installing a version edit has one owner, installEdit, as in goleveldb,
// where compactionTransact does the work (rolling its outputs back when it
// fails) and compactionCommit alone makes it visible, and in Pebble, where
// every version goes through versionSet.logAndApply. A flush or a compaction
// does its work (flushMemTable, compactFiles: each deletes its own partial
// outputs when it fails), builds its edit, and hands both, with what the
// edit makes obsolete, to installEdit. Nothing else in the engine logs an
// edit to the MANIFEST, ends the reservation of an installed table, drops
// the database's reference to a flushed memtable, unmarks a compaction's
// inputs or reports the end of a flush or compaction. (Open commits the
// recovered state with manifest.VersionSet.Start, a new MANIFEST rather
// than an edit to the current one: see recovery.commit.)

// versionUpdate is the result of a flush or a compaction, to be made
// visible by installEdit. Exactly one of flushed and compaction is set.
type versionUpdate struct {
	// edit adds the outputs and deletes a compaction's inputs; installEdit
	// fills in the log number of a flush and the last sequence number. nil
	// when the work failed.
	edit *manifest.VersionEdit
	// outputs are the new tables the edit adds, holding their reservations
	// (tableWriter) until installEdit ends them.
	outputs tableOutputs

	// flushed is the memtable a flush wrote: the oldest immutable one, whose
	// database reference installEdit drops, and whose WAL the edit makes
	// obsolete, once the edit is applied.
	flushed *memTable
	flushEv flushEvent
	// compaction is the compaction whose inputs the edit deletes; they are
	// marked as being compacted until installEdit unmarks them.
	compaction *compact.Compaction
	compactEv  compactionEvent
	// ingest, for an ingest (whose edit is nil until then), places its
	// tables and assigns their sequence number under manifestMu and d.mu,
	// which logAndApply holds, and then makes that number visible; no
	// compaction is picked meanwhile (d.mu.ingesting). See ingest.go.
	ingest *ingestion

	// sw times the work and its installation (FlushTime, CompactionTime).
	sw statistics.StopWatch
}

// what names the work, for errors.
func (u *versionUpdate) what() string {
	if u.flushed != nil {
		return "flush"
	}
	if u.ingest != nil {
		return "ingest"
	}
	return "compaction"
}

// installEdit ends a flush, a compaction or an ingest (whose tables, linked
// into the directory, are its outputs): workErr is the failure of its work,
// if any. Every flush, compaction and ingest ends here, once. It
//
//   - makes the outputs' directory entries durable (the MANIFEST must not
//     name a table a crash could lose);
//   - logs u.edit to the MANIFEST and applies it (manifest.VersionSet.
//     LogAndApply), with the log number a flush moves recovery to and the
//     last sequence number, under manifestMu, so edits are logged one at a
//     time and in the order they are applied;
//   - ends the outputs' reservations exactly once: abandoned (deleted) when
//     no edit naming them was attempted, released when the edit was applied
//     or when it failed, after d.mu.manifestFailed is set (the MANIFEST may
//     then name them, and no file is deleted until a reopen);
//   - on success, takes the flushed memtable out of the queue and drops the
//     database's reference to it, notes the tables the edit deleted as
//     obsolete (noteObsoleteLocked) and installs a new read state;
//   - unmarks the compaction's inputs, whatever happened;
//   - reports the end of the flush or compaction (events, statistics);
//   - on success, deletes the files the edit made obsolete
//     (deleteObsoleteFiles), before it returns: a Flush or Compact returns
//     with them gone.
//
// It returns workErr, or the failure to install. The caller makes that the
// background error and wakes waiters (flushOldest, compactOne, Compact).
func (d *database) installEdit(u *versionUpdate, workErr error) error {
	err := workErr
	if err == nil && len(u.outputs) > 0 {
		err = d.syncDir()
	}
	if err != nil {
		// No edit names the outputs: they go (the work's own failure
		// already deleted its partial ones).
		u.outputs.abandon()
		if u.compaction != nil {
			d.mu.Lock()
			d.unmarkLocked(u.compaction)
			d.maybeScheduleLocked()
			d.mu.Unlock()
		}
	} else {
		err = d.logAndApply(u)
	}
	u.report(d, err)
	if err == nil {
		d.deleteObsoleteFiles(false)
	}
	return err
}

// installAppliedHook, when a test sets it, is called by logAndApply once
// the edit is current and before d.mu is taken again: a test can build a
// read state in that window, as a write switching memtables may.
var installAppliedHook atomic.Pointer[func(d *database, u *versionUpdate)]

// logAndApply logs u.edit to the MANIFEST, applies it and installs the
// result in memory, for installEdit, which alone calls it.
func (d *database) logAndApply(u *versionUpdate) error {
	d.manifestMu.Lock()
	defer d.manifestMu.Unlock()

	d.mu.Lock()
	if u.flushed != nil {
		// Recovery now replays from the WAL of the memtable after the
		// flushed one.
		next := d.mu.mem.logNum
		if len(d.mu.imm) > 1 {
			next = d.mu.imm[1].logNum
		}
		u.edit.SetLogNumber(next)
	}
	if u.ingest != nil {
		u.edit = u.ingest.editLocked()
		d.mu.ingesting = true
	}
	u.edit.SetLastSeqNum(d.mu.lastSeq)
	if u.flushed != nil && len(u.edit.NewFiles) > 0 {
		// From the moment LogAndApply makes the flush's table current
		// until the memtable leaves d.mu.imm below, a read state built
		// meanwhile (a write switching memtables) must not list both.
		d.mu.flushApplying = u.edit.NewFiles[0].Meta
	}
	d.mu.Unlock()

	err := d.vs.LogAndApply(u.edit)
	if hook := installAppliedHook.Load(); hook != nil {
		(*hook)(d, u)
	}
	if err != nil {
		// The edit may or may not be durable. Set before the reservations
		// end: until then only they keep deleteObsoleteFiles away from
		// tables the MANIFEST may name.
		d.mu.Lock()
		d.mu.manifestFailed = true
		d.mu.Unlock()
	}
	// The version names the outputs now (or manifestFailed stops every
	// deletion).
	u.outputs.release()

	d.mu.Lock()
	defer d.mu.Unlock()
	d.mu.flushApplying = nil
	if u.compaction != nil {
		d.unmarkLocked(u.compaction)
	}
	if u.ingest != nil {
		d.mu.ingesting = false
		// Compactions refused meanwhile may start, and manual ones
		// waiting for the picker retry.
		d.notifyLocked()
		d.maybeScheduleLocked()
	}
	if err != nil {
		if u.compaction != nil {
			d.maybeScheduleLocked()
		}
		return errors.Wrapf(err, "engine: recording a %s in the MANIFEST", u.what())
	}
	if m := u.flushed; m != nil {
		if len(d.mu.imm) == 0 || d.mu.imm[0] != m {
			return base.AssertionFailedf("engine: flushed memtable is not the oldest")
		}
		d.mu.imm[0] = nil
		d.mu.imm = d.mu.imm[1:]
		d.mu.flushesDone++
	}
	// Before the read state lets go of the version holding them.
	d.noteObsoleteLocked(u.edit)
	d.updateReadStateLocked()
	if u.ingest != nil {
		// The ingest heads the write queue: no write's sequence number
		// is above its own.
		d.visibleSeq.Store(uint64(d.mu.lastSeq))
	}
	if u.flushed != nil {
		// The database's reference; the read states that list it hold
		// their own.
		u.flushed.unref()
	}
	if u.compaction != nil {
		if e := d.bgErrorLocked(); e != nil {
			// A compaction that succeeds ends a pause of compactions for
			// lack of space.
			d.clearBackgroundErrorLocked(e.rec, severitySoft)
		}
	}
	d.maybeScheduleLocked()
	return nil
}

// report reports the end of the flush or compaction, failed with err or not:
// its event and its statistics.
func (u *versionUpdate) report(d *database, err error) {
	if u.ingest != nil {
		if err == nil {
			u.ingest.report()
		}
		return
	}
	if u.flushed != nil {
		u.sw.Stop()
		var tw *tableWriter
		if len(u.outputs) > 0 {
			tw = u.outputs[0]
		}
		d.endFlushEvent(u.flushEv, tw, err)
		return
	}
	c := u.compaction
	d.endCompactionEvent(u.compactEv, u.outputs, err)
	if err == nil {
		u.sw.Stop()
		d.stats.RecordInHistogram(statistics.NumFilesInSingleCompaction, uint64(len(c.Inputs[0])+len(c.Inputs[1])))
	}
}
