package engine

import (
	"bytes"
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/compact"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/merging"
	"github.com/shaledb/shale/internal/rangedel"
	"github.com/shaledb/shale/internal/readpath"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
)

func (d *database) compactOptions() compact.Options {
	return compact.Options{
		L0CompactionTrigger:      d.opts.Level0FileNumCompactionTrigger,
		LevelMultiplier:          d.opts.MaxBytesForLevelMultiplier,
		MaxBytesForLevelBase:     uint64(d.opts.MaxBytesForLevelBase),
		TargetFileSizeBase:       uint64(d.opts.TargetFileSizeBase),
		TargetFileSizeMultiplier: d.opts.TargetFileSizeMultiplier,
		MaxCompactionBytes:       25 * uint64(d.opts.TargetFileSizeBase),
	}
}

// compactionReadEnv is how compactions read their inputs: tagged Compaction,
// charged at Low priority (when the limiter limits reads), verified, and
// kept out of the block cache so a compaction does not evict the working
// set.
var compactionReadEnv = sstable.ReadEnv{
	IO:              ioctx.IOOptions{Activity: ioctx.ActivityCompaction, RateLimiterPriority: ioctx.PriorityLow},
	VerifyChecksums: true,
	FillCache:       false,
}

// pickAndMarkLocked picks a compaction (automatic when manual is nil) and
// marks its inputs as being compacted. busy reports that a manual
// compaction's level has files in its range but the compaction cannot start
// because a file it needs is being compacted in the background: the caller
// must wait for that compaction and ask again. d.mu is held.
func (d *database) pickAndMarkLocked(manual *manualCompaction) (c *compact.Compaction, busy bool) {
	if d.mu.ingesting {
		// The version is about to gain tables placed clear of the
		// running compactions: one picked now could write over them.
		// The ingest wakes the waiters when it is done.
		return nil, manual != nil
	}
	v := d.readState.Load().current
	if manual != nil {
		if len(v.Overlaps(manual.level, manual.start, manual.end)) == 0 {
			return nil, false
		}
		// With inputs in the level, the picker declines only when one of
		// them, or a file of the output level overlapping the inputs'
		// whole key range (which may reach beyond [start, end]), is being
		// compacted.
		if c = compact.PickManual(v, d.compactOptions(), manual.level, manual.start, manual.end); c == nil {
			return nil, true
		}
	} else if c = compact.Pick(v, d.compactOptions()); c == nil {
		return nil, false
	}
	for _, files := range c.Inputs {
		for _, f := range files {
			if invariants.Enabled && f.CompactionInProgress {
				// The pickers never choose a file being compacted.
				panic(errors.AssertionFailedf("engine: compaction input %s is already being compacted", f.FileNum))
			}
			f.CompactionInProgress = true
		}
	}
	if d.mu.compactions == nil {
		d.mu.compactions = make(map[*compact.Compaction]struct{})
	}
	d.mu.compactions[c] = struct{}{}
	return c, false
}

func (d *database) unmarkLocked(c *compact.Compaction) {
	delete(d.mu.compactions, c)
	for _, files := range c.Inputs {
		for _, f := range files {
			f.CompactionInProgress = false
		}
	}
}

// compactionStartHook, when a test sets it, is called by every compaction
// before it does any work, without d.mu held and with the inputs marked as
// being compacted; a test holds a compaction in progress by blocking in it.
var compactionStartHook atomic.Pointer[func(d *database, c *compact.Compaction)]

// runCompaction executes c and installs its result (installEdit).
func (d *database) runCompaction(ctx context.Context, c *compact.Compaction) error {
	if hook := compactionStartHook.Load(); hook != nil {
		(*hook)(d, c)
	}
	// A table moves down as it is only when both levels use the same
	// codec: otherwise it is rewritten, so that, say, data reaching L6 by
	// moves alone still ends up in bottommost_compression's codec.
	if c.TrivialMove && d.opts.compressionFor(c.Level) != d.opts.compressionFor(c.OutputLevel) {
		c.TrivialMove = false
	}
	u := &versionUpdate{compaction: c, compactEv: d.startCompactionEvent(c),
		sw: d.stats.StartStopWatch(statistics.CompactionTime, statistics.HistogramNone)}
	var err error
	if c.TrivialMove {
		u.edit = c.Edit(c.Inputs[0])
	} else {
		u.outputs, err = d.compactFiles(ctx, c)
		if err == nil {
			u.edit = c.Edit(u.outputs.metas())
		}
	}
	return d.installEdit(u, err)
}

// compactFiles merges the compaction's inputs and writes the outputs, cut at
// the target file size and where grandparent overlap grows too large, never
// splitting one user key's versions across two tables (which would make the
// output level's tables overlap). The outputs are finished and hold their
// reservations, which installEdit ends; on failure, none is left.
func (d *database) compactFiles(ctx context.Context, c *compact.Compaction) (outputs tableOutputs, err error) {
	iters, tombstones, err := compactionInputs(ctx, c, d.tables)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	snapshots := d.mu.snapshots.seqNums()
	d.mu.Unlock()
	merged := merging.NewIter(iters...)
	merged.SetCompare(d.ucmp())
	ci := compact.NewIter(merged, snapshots, c.KeyNotExistsBeyondOutputLevel)
	ci.SetCompare(d.ucmp())
	// Range tombstones drop the points they cover and go to the outputs,
	// each output taking those below the next output's first key.
	dels := rangedel.NewCmp(d.ucmp(), tombstones)
	ci.SetRangeDels(dels)
	// Merge operands are combined where no snapshot can tell.
	mi := compact.NewMergeIter(ci, d.opts.MergeOperator, d.stats, dels)
	splitter := compact.NewRangeDelSplitter(dels, snapshots, c.Bottommost)
	// tw is the output being written, if any. Every output is in outputs
	// from its creation, so a failure deletes them all, finished or not,
	// with one abandon (goleveldb's compactionTransact rollback).
	var tw *tableWriter
	defer func() {
		err = errors.CombineErrors(err, ci.Close())
		if err != nil {
			outputs.abandon()
			outputs = nil
		}
	}()

	target := c.TargetFileSize()
	var lastUserKey []byte
	var readBytes uint64
	for _, files := range c.Inputs {
		for _, f := range files {
			readBytes += f.Size
		}
	}
	// finish finishes the current output; next is the first user key of the
	// next output, nil for the last.
	finish := func(next []byte) error {
		out := tw
		tw = nil
		for _, f := range splitter.Take(next) {
			if err := out.w.AddRangeDeletion(f); err != nil {
				return err
			}
		}
		if err := out.finish(); err != nil {
			return err
		}
		if err := d.openAndCheckTable(ctx, out.meta, c.OutputLevel, ioctx.ActivityCompaction, ioctx.PriorityLow); err != nil {
			return err
		}
		d.stats.RecordTick(statistics.CompactWriteBytes, out.meta.Size)
		return nil
	}
	for kv := mi.First(); kv != nil; kv = mi.Next() {
		if err := ctx.Err(); err != nil {
			return outputs, errors.Wrap(err, "engine: compaction cancelled")
		}
		// Cut outputs only where the user key changes, so no user key
		// spans two tables of the output level.
		if lastUserKey == nil || !bytes.Equal(kv.K.UserKey, lastUserKey) {
			stop := c.ShouldStopBefore(kv.K.UserKey)
			if tw != nil && (stop || tw.w.EstimatedSize() >= target) {
				if !stop {
					c.FinishOutput()
				}
				if err := finish(kv.K.UserKey); err != nil {
					return outputs, err
				}
			}
		}
		if tw == nil {
			if tw, err = d.newTableWriter(ctx, ioctx.PriorityLow, c.OutputLevel); err != nil {
				return outputs, err
			}
			outputs = append(outputs, tw)
		}
		if err := tw.w.Add(kv.K, kv.V); err != nil {
			return outputs, err
		}
		lastUserKey = append(lastUserKey[:0], kv.K.UserKey...)
	}
	if err := ci.Error(); err != nil {
		return outputs, errors.Wrap(err, "engine: reading compaction inputs")
	}
	if tw == nil && !splitter.Empty() {
		// Every point was dropped, but tombstones remain to be kept.
		if tw, err = d.newTableWriter(ctx, ioctx.PriorityLow, c.OutputLevel); err != nil {
			return outputs, err
		}
		outputs = append(outputs, tw)
	}
	if tw != nil {
		if err := finish(nil); err != nil {
			return outputs, err
		}
	}
	d.stats.RecordTick(statistics.CompactReadBytes, readBytes)
	stats := ci.Stats()
	d.stats.RecordTick(statistics.CompactionKeyDropNewerEntry, stats.DroppedNewerEntry)
	d.stats.RecordTick(statistics.CompactionKeyDropObsolete, stats.DroppedObsolete)
	return outputs, nil
}

// compactionInputs returns the iterators to merge for c's inputs, in the
// order of c.Inputs, and the inputs' range tombstones. Each L0 input gets an
// iterator of its own (L0 tables overlap); the files of a level >= 1 are
// sorted and disjoint, so they share one that opens them one at a time (see
// readpath.NewCompactionIter). The caller closes the iterators.
//
// The tombstones are read first, from every input that has some (as the
// MANIFEST says, which reads trust too), since they cover points of the
// other inputs: each such table is acquired, its tombstones copied (so that
// they do not refer to the memory of a reader a bounded table cache may
// close, which may be a mapping) and released.
func compactionInputs(ctx context.Context, c *compact.Compaction, tables readpath.TableSource) (
	[]base.InternalIterator, []rangedel.Tombstone, error) {
	var tombstones []rangedel.Tombstone
	for i, files := range c.Inputs {
		level := c.Level
		if i == 1 {
			level = c.OutputLevel
		}
		for _, f := range files {
			if !f.HasRangeDels {
				continue
			}
			ref, err := tables.Acquire(ctx, compactionReadEnv, f, level)
			if err != nil {
				return nil, nil, errors.Wrapf(err, "engine: compaction input %s", f.FileNum)
			}
			n := len(tombstones)
			tombstones = ref.Reader.RangeDeletions().Tombstones(tombstones)
			for j := n; j < len(tombstones); j++ {
				tombstones[j].Start = bytes.Clone(tombstones[j].Start)
				tombstones[j].End = bytes.Clone(tombstones[j].End)
			}
			ref.Release()
		}
	}
	var iters []base.InternalIterator
	if c.Level == 0 {
		for i := range c.Inputs[0] {
			iters = append(iters, readpath.NewCompactionIterCmp(ctx, compactionReadEnv, tables, 0, c.Inputs[0][i:i+1], c.Compare()))
		}
	} else if len(c.Inputs[0]) > 0 {
		iters = append(iters, readpath.NewCompactionIterCmp(ctx, compactionReadEnv, tables, c.Level, c.Inputs[0], c.Compare()))
	}
	if len(c.Inputs[1]) > 0 {
		iters = append(iters, readpath.NewCompactionIterCmp(ctx, compactionReadEnv, tables, c.OutputLevel, c.Inputs[1], c.Compare()))
	}
	return iters, tombstones, nil
}

// manualCompaction is a Compact call's request.
type manualCompaction struct {
	level      int
	start, end []byte
}

// Compact compacts every level's tables overlapping the user-key range
// [start, end] (nil bounds are open) down to the bottom of the tree, waiting
// until done. It first flushes the memtables, so all data in the range is in
// tables. Each level's tables go straight to the first level below that
// holds data in their key range (or to the last level), so empty levels are
// skipped rather than rewritten (compact.PickManual). Below L0 it compacts
// up to GOMAXPROCS disjoint key ranges of a level at once
// (compactManualParallel).
// It honours ctx while waiting and while compacting: cancelled, it abandons
// the outputs of the compaction it is running and returns.
func (d *database) Compact(ctx context.Context, start, end []byte) error {
	if start != nil && end != nil && base.CompareUser(d.ucmp(), start, end) > 0 {
		return base.InvalidArgumentf("engine: Compact range start %q is after end %q", start, end)
	}
	if err := d.Flush(ctx); err != nil {
		return err
	}
	defer func() {
		d.mu.Lock()
		d.notifyLocked()
		d.maybeScheduleLocked()
		d.mu.Unlock()
	}()
	for level := 0; level < manifest.NumLevels-1; level++ {
		var err error
		if level == 0 {
			// L0's tables overlap one another: one compaction takes them all.
			err = d.compactManualRange(ctx, level, start, end)
		} else {
			err = d.compactManualParallel(ctx, level, start, end)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// compactManualRange compacts level's tables overlapping [start, end] down
// (Compact's work for one level and range), one compaction after another,
// until none is left there.
func (d *database) compactManualRange(ctx context.Context, level int, start, end []byte) error {
	for {
		if err := ctx.Err(); err != nil {
			return errors.Wrap(err, "engine: Compact")
		}
		d.mu.Lock()
		if e := d.bgErrorLocked(); e != nil && e.stopsWrites() {
			d.mu.Unlock()
			return e
		}
		m := &manualCompaction{level: level, start: start, end: end}
		c, busy := d.pickAndMarkLocked(m)
		if c == nil && !busy {
			d.mu.Unlock()
			return nil
		}
		if c == nil {
			// Inputs are busy with another compaction: wait for it.
			ch := d.mu.changed
			d.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return errors.Wrap(ctx.Err(), "engine: Compact")
			}
			continue
		}
		d.mu.Unlock()
		err := d.runCompaction(ctx, c)
		d.mu.Lock()
		if err != nil && ctx.Err() == nil {
			err = d.setBackgroundErrorLocked(reasonCompaction, err)
		}
		// A sibling of compactManualParallel may wait for these inputs.
		d.notifyLocked()
		d.mu.Unlock()
		if err != nil {
			return err
		}
		if c.OutputLevel == level {
			// Compacting the last level in place: done with it.
			return nil
		}
	}
}

// maxManualSubcompactions bounds the compactions one Compact runs at once
// within a level.
const maxManualSubcompactions = 4

// compactManualParallel is compactManualRange for a level >= 1, whose
// tables are sorted and disjoint: it splits the level's tables in [start,
// end] into up to GOMAXPROCS runs of about equal size and compacts each
// run's key range in a goroutine of its own, as Pebble's manual compaction
// with parallelize does. One compaction of a whole level is one goroutine
// merging and compressing: on 2 cores the full compaction of 4 GiB took
// 1.04-1.7× Pebble's time. The runs' compactions are picked and marked
// like any other, so where one grows into another's tables (or both need
// one output-level table) the second waits for the first and picks again.
func (d *database) compactManualParallel(ctx context.Context, level int, start, end []byte) error {
	d.mu.Lock()
	files := d.readState.Load().current.Overlaps(level, start, end)
	d.mu.Unlock()
	ranges := manualSplits(files, min(runtime.GOMAXPROCS(0), maxManualSubcompactions))
	if len(ranges) <= 1 {
		return d.compactManualRange(ctx, level, start, end)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(ranges))
	var wg sync.WaitGroup
	for i, r := range ranges {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = d.compactManualRange(ctx, level, r[0], r[1]); errs[i] != nil {
				// The others stop: Compact fails whatever they do.
				cancel()
			}
		}()
	}
	wg.Wait()
	// The first failure rather than the cancellations it caused.
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// manualSplits divides files, a level's sorted and disjoint tables, into up
// to n runs of consecutive tables of about equal total size, and returns
// each run's user-key range [first table's smallest, last table's
// largest]. Fewer than two tables give one run or none.
func manualSplits(files []*manifest.FileMetadata, n int) [][2][]byte {
	if len(files) == 0 {
		return nil
	}
	n = min(n, len(files))
	var total uint64
	for _, f := range files {
		total += f.Size
	}
	var out [][2][]byte
	var acc uint64
	first := 0
	for i, f := range files {
		acc += f.Size
		// Close run len(out) once it holds its share, leaving at least one
		// table for each run still to come.
		share := total * uint64(len(out)+1) / uint64(n)
		if i == len(files)-1 || (len(out) < n-1 && acc >= share && len(files)-1-i >= n-1-len(out)) {
			out = append(out, [2][]byte{files[first].Smallest.UserKey, f.Largest.UserKey})
			first = i + 1
		}
	}
	return out
}

// compactOne runs one automatic compaction if one is needed, reporting
// whether it did. While a background error stands it compacts nothing,
// except as the retry of a soft one (a compaction that ran out of space),
// when that is due.
func (d *database) compactOne(ctx context.Context) (bool, error) {
	d.mu.Lock()
	if d.mu.closing {
		d.mu.Unlock()
		return false, nil
	}
	var rec *bgRecovery
	if d.mu.bgErr != nil {
		var retry bool
		if rec, retry = d.startRetryLocked(severitySoft); !retry {
			d.mu.Unlock()
			return false, nil
		}
	}
	var c *compact.Compaction
	if !d.opts.DisableAutoCompactions {
		c, _ = d.pickAndMarkLocked(nil)
	}
	if c == nil {
		if rec != nil {
			// Nothing to retry: no compaction is needed (or only a manual
			// Compact failed, and it reported its error).
			d.retryEndedLocked(rec, false)
			d.clearBackgroundErrorLocked(rec, severitySoft)
		}
		d.mu.Unlock()
		return false, nil
	}
	d.mu.Unlock()
	err := d.runCompaction(ctx, c)
	d.mu.Lock()
	if err != nil && !errors.Is(err, context.Canceled) {
		err = d.setBackgroundErrorLocked(reasonCompaction, err)
	}
	if rec != nil {
		d.retryEndedLocked(rec, err != nil)
	}
	d.notifyLocked()
	d.mu.Unlock()
	return err == nil, err
}
