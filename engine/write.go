package engine

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/batch"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/memtable"
	"github.com/shaledb/shale/internal/merge"
	"github.com/shaledb/shale/internal/wal"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/ratelimit"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
)

// writeBatch is an atomic group of writes: either all of them are applied or none
// is. A writeBatch is not safe for concurrent use; after Write it may be reset and
// reused, or added to and written again.
//
// A large batch (half the write buffer or more) is not copied into the
// memtable: the database keeps its buffer as a memtable of its own until
// that is flushed. The writeBatch is then copy-on-write: its next change (Put,
// Delete, DeleteRange, or a second Write) first moves it to a new buffer,
// and Reset lets the kept one go, so reusing it never changes what was
// written.
type writeBatch struct {
	b batch.Batch
	// merges counts the merge operands; mergeErr is the first one
	// checker (the merge operator's CheckOperand, nil without one)
	// refused. See prepareMerges.
	merges   int
	mergeErr error
	checker  merge.OperandChecker
	// cmp is the database's key order for DeleteRange's check of its
	// ends; nil is bytewise.
	cmp base.Compare
	// err is the first write the batch refused (an unbounded range
	// deletion under a non-bytewise comparer); Reset clears it.
	err error
}

// newWriteBatch returns an empty batch.
func newWriteBatch() *writeBatch { return &writeBatch{} }

// Put adds a write of value to key. Both are copied.
func (b *writeBatch) Put(key, value []byte) { b.b.Set(key, value) }

// Delete adds a deletion of key. key is copied.
func (b *writeBatch) Delete(key []byte) { b.b.Delete(key) }

// Count returns the number of writes in the batch.
func (b *writeBatch) Count() int { return int(b.b.Count()) }

// Len returns the batch's encoded size in bytes.
func (b *writeBatch) Len() int { return b.b.Len() }

// Reset empties the batch for reuse.
func (b *writeBatch) Reset() {
	b.b.Reset()
	b.merges, b.mergeErr, b.checker = 0, nil, nil
	b.err = nil
}

// writeOptions control one write: ioctx's, so the driver façade's resolved
// options pass through unchanged.
//
//   - Sync: the write returns once its WAL record, and every earlier one, is
//     fsynced. Options.Sync (the DSN key sync) makes every WAL write sync.
//     Concurrent writes commit in groups: a group is synced when any of its
//     writes asked, and a sync write never joins a group led by an unsynced
//     one. Without Sync, an acknowledged write is in the WAL's buffer and
//     reaches the operating system when walFile's background writer hands
//     the buffer on (up to walMaxPending bytes may wait behind a slow disk),
//     or is already there when it was written alone (see walFile):
//     a process crash (kill -9) can lose the last unsynced writes, a
//     machine crash the ones the OS had not written back; never a synced
//     write, nor any write before a synced one.
//   - DisableWAL: the write goes to the memtable only, with a sequence
//     number like any other. It is lost by any crash until its memtable is
//     flushed (Flush, or a full memtable), also when later writes to the WAL
//     are synced or SyncWAL is called; recovery replays the WAL's records
//     around the gap it leaves. A clean Close flushes them (as RocksDB's
//     close does when it holds unpersisted data). Sync together with
//     DisableWAL is an error marked ErrInvalidArgument, as in RocksDB;
//     Options.Sync does not apply.
//   - RateLimiterPriority: a priority other than Total charges the batch's
//     encoded size (its WAL record's payload) to Options.RateLimiter at that
//     priority, when the limiter's mode covers writes, before the write
//     joins the commit queue: a write waits for the limiter on its own,
//     never holding up the writes queued with it. The wait honours ctx.
type writeOptions = ioctx.WriteOptions

// maxGroupBytes bounds a commit group, so one leader does not make a small
// write wait behind megabytes of others (LevelDB's 1 MiB rule).
const maxGroupBytes = 1 << 20

// writer is one queued write.
type writer struct {
	batch *batch.Batch
	sync  bool
	// noWAL skips the WAL (WriteOptions.DisableWAL); such writes commit
	// in groups of their own.
	noWAL bool
	// precommit runs in the leader before sequence numbers are assigned,
	// with every earlier write applied; a writer with one commits alone.
	// Transactions check for conflicts in it.
	precommit func() error
	ctx       context.Context

	done bool
	err  error
	cond sync.Cond
	// turn is set, under d.mu, when done is or when the writer comes to
	// head the queue: a writer that spins for its turn (awaitTurn) reads it
	// without d.mu.
	turn atomic.Bool
}

// writerSpin bounds how long a queued writer spins for its turn before it
// parks on its cond. A group commit takes a few microseconds; a parked
// writer, once signalled, waits for the Go scheduler to run it again, and
// where every processor is busy that is when the goroutine that signalled
// it (the leader, now on to its next operation) next blocks or is
// preempted: YCSB D with four goroutines on two processors had an insert
// p99 of 0.8-1.4 ms, from the 2% of inserts another writer committed,
// against Pebble's 9 µs. RocksDB's write thread spins before it blocks for
// the same reason.
const writerSpin = 20 * time.Microsecond

// awaitTurn spins until w.turn is set or writerSpin has passed; the caller
// then takes d.mu and parks if it must. It spins only where another
// processor can run the leader meanwhile.
func (w *writer) awaitTurn() {
	if runtime.GOMAXPROCS(0) < 2 {
		return
	}
	var start time.Time
	for i := 0; ; i++ {
		if w.turn.Load() {
			return
		}
		if i&63 == 63 {
			if start.IsZero() {
				start = time.Now()
			} else if time.Since(start) >= writerSpin {
				return
			}
		}
	}
}

var writerPool = sync.Pool{New: func() any { return new(writer) }}

// groupBatch is the leader's scratch batch for a group of several writes.
type groupBatch struct {
	b batch.Batch
}

func (d *database) putImpl(ctx context.Context, wo writeOptions, key, value []byte) error {
	b := batchPool.Get().(*writeBatch)
	b.Put(key, value)
	err := d.writeOpts(ctx, &b.b, wo, nil)
	b.Reset()
	batchPool.Put(b)
	return err
}

func (d *database) deleteImpl(ctx context.Context, wo writeOptions, key []byte) error {
	b := batchPool.Get().(*writeBatch)
	b.Delete(key)
	err := d.writeOpts(ctx, &b.b, wo, nil)
	b.Reset()
	batchPool.Put(b)
	return err
}

var batchPool = sync.Pool{New: func() any { return newWriteBatch() }}

// writeOpts queues b and waits until it is applied with the write options
// wo. Concurrent writers form groups: the writer at the head of the queue
// (the leader) writes every queued batch it can in one WAL record, syncs
// once if any of them asked, applies them to the memtable and wakes their
// writers (LevelDB's group commit). Options.Sync makes every write sync.
func (d *database) writeOpts(ctx context.Context, b *batch.Batch, wo writeOptions, precommit func() error) error {
	if err := d.checkWritable(ctx); err != nil {
		return err
	}
	if wo.Sync && wo.DisableWAL {
		return errSyncWithoutWAL
	}
	if !memtable.FitsAny(b) {
		// No memtable can take it: rotating to a bigger one would loop.
		return base.InvalidArgumentf("engine: a batch of %d records and %d bytes is too large for any memtable "+
			"(it would need %d bytes of arena, above 4 GiB): split it", b.Count(), b.Len(), memtable.ArenaSizeFor(b))
	}
	sync := !wo.DisableWAL && (wo.Sync || d.opts.Sync)
	if b.Empty() && precommit == nil {
		return nil
	}
	if !wo.DisableWAL {
		if err := d.chargeWAL(ctx, wo.RateLimiterPriority, b.Len()); err != nil {
			return err
		}
	}
	w := writerPool.Get().(*writer)
	*w = writer{batch: b, sync: sync, noWAL: wo.DisableWAL, precommit: precommit, ctx: ctx}
	w.cond.L = &d.mu.Mutex
	sw := d.stats.StartStopWatch(statistics.DBWrite, statistics.HistogramNone)

	d.mu.Lock()
	d.mu.writers = append(d.mu.writers, w)
	if len(d.mu.writers) == 2 && d.mu.groupedWrites == 0 {
		// Writes come one at a time and only the leader is ahead: spin
		// rather than park (writerSpin). Where writes come together,
		// parked writers let the queue grow into larger groups, and a
		// spinning one would take the processor the leader, the WAL's
		// background goroutine and flushes need: with 4 goroutines
		// filling on 2 processors, spinning cost 1.2-1.45x the time per
		// write (BenchmarkFillConcurrent).
		d.mu.Unlock()
		w.awaitTurn()
		d.mu.Lock()
	}
	for !w.done && d.mu.writers[0] != w {
		w.cond.Wait()
	}
	if w.done {
		d.mu.Unlock()
		err := w.err
		writerPool.Put(w)
		d.stats.RecordTick(statistics.WriteDoneByOther, 1)
		sw.Stop()
		return err
	}
	d.stats.RecordTick(statistics.WriteDoneBySelf, 1)
	group, err := d.leadLocked(w)
	d.finishGroupLocked(group, err)
	d.mu.Unlock()
	writerPool.Put(w)
	sw.Stop()
	return err
}

// leadLocked commits a group led by w, the head of the queue. d.mu is held on
// entry and exit but released for IO. It returns the writers it committed.
//
// A large batch (see largeBatch) commits alone and is not inserted into the
// mutable memtable: it becomes a memtable of its own (commitLarge).
func (d *database) leadLocked(w *writer) ([]*writer, error) {
	group := d.mu.writers[:1]
	large := d.largeBatch(w.batch)
	if err := d.makeRoomForWriteLocked(w.ctx, w.batch, large); err != nil {
		return group, err
	}
	if w.precommit != nil {
		// The check must see every earlier write and no later one: run it
		// alone, with the queue head held, outside the mutex.
		d.mu.Unlock()
		err := w.precommit()
		d.mu.Lock()
		if err != nil {
			return group, err
		}
	} else if !large && len(d.mu.writers) > 1 {
		size := w.batch.Len()
		// The group is applied to the memtable w's batch fits
		// (makeRoomForWriteLocked), one batch after another, once its WAL
		// record is written: a batch joins only if the memtable has room for
		// it after the ones before. The first that does not leads the next
		// group, which switches memtables first. (Each batch fitting on its
		// own is not enough: the group would overflow the arena after its
		// record is in the WAL, a failure no write could get past.)
		room := d.mu.mem.Room()
		room -= min(room, memtable.ApplyBound(w.batch))
		for _, next := range d.mu.writers[1:] {
			// A writer without a batch is a Flush waiting to lead; writers
			// with a precommit check commit alone, and so do large batches.
			if next.batch == nil || next.precommit != nil || (next.sync && !w.sync) || next.noWAL != w.noWAL ||
				size+next.batch.Len() > maxGroupBytes || d.largeBatch(next.batch) {
				break
			}
			bound := memtable.ApplyBound(next.batch)
			if bound > room {
				break
			}
			room -= bound
			size += next.batch.Len()
			group = d.mu.writers[:len(group)+1]
		}
	}
	return group, d.commitLocked(group, large)
}

// commitLocked commits the group the queue head formed (leadLocked) and makes
// it visible: sequence numbers, the WAL record, the memtable. d.mu is held
// on entry and exit but released for IO.
func (d *database) commitLocked(group []*writer, large bool) error {
	w := group[0]
	var count uint32
	syncWAL := false
	for _, g := range group {
		count += g.batch.Count()
		syncWAL = syncWAL || g.sync
	}
	if count == 0 {
		return nil
	}
	first := d.mu.lastSeq + 1
	d.mu.lastSeq += base.SeqNum(count)
	mem := d.mu.mem
	hint := walQueued
	switch {
	case syncWAL:
		hint = walSyncing
	case len(d.mu.writers) == len(group):
		hint = walLone
	}
	d.mu.Unlock()
	var inWAL bool
	var err error
	var lm *memTable
	if large {
		lm, inWAL, err = d.commitLarge(w, first, mem.logNum, syncWAL, hint)
	} else {
		inWAL, err = d.commitGroup(group, first, mem, syncWAL, hint)
	}
	d.mu.Lock()
	if err == nil && lm != nil {
		err = d.rotateMemtableLocked(nil, lm)
	}
	if err != nil && !inWAL {
		var over *groupOverflow
		if errors.As(err, &over) {
			err = d.overflowLocked(over.rest, over.seq, mem)
		}
	}
	if err != nil {
		if inWAL {
			// Nothing of the group was applied; the WAL may end in a torn
			// record.
			return d.walFailedLocked(err)
		}
		// The WAL holds a record the memtable lacks part of: no further
		// write is safe until a reopen replays the WAL.
		return d.setBackgroundErrorLocked(reasonMemtable, err)
	}
	d.visibleSeq.Store(uint64(d.mu.lastSeq))
	return nil
}

// largeBatch reports whether b is committed as a memtable of its own
// (memtable.NewFromBatch) rather than inserted into the mutable memtable: when
// it takes half the write buffer or more, as Pebble's large-batch threshold
// (MemTableSize/2), or when the arena it could need (a node per record)
// passes a standard memtable's. Such a batch would fill most of a memtable,
// or overflow it, so it forces a rotation either way; inserting it would cost
// a skiplist node per record and a second copy of its data in a freshly
// mapped, oversized arena (first touches of fresh memory are expensive),
// where indexing it costs a sort and 8 bytes per record, and its one
// flush writes a table of at least half a memtable's size. A lower threshold
// would turn mid-sized batches into many small L0 tables; a higher one would
// leave batches that fill most of a memtable to the slow path.
func (d *database) largeBatch(b *batch.Batch) bool {
	return b.Len() >= int(d.opts.WriteBufferSize/2) || memtable.ArenaSizeFor(b) > d.standardArenaSize()
}

// standardArenaSize is the arena of a memtable made for the write buffer.
// The arena holds skiplist nodes as well as keys and values; the headroom
// keeps a memtable from being rotated well before it holds WriteBufferSize
// bytes of data.
func (d *database) standardArenaSize() int {
	size := int(d.opts.WriteBufferSize)
	return size + size/8
}

// commitLarge commits a large batch alone: it writes it to the WAL, unless
// w.noWAL, as commitGroup does, and makes it an immutable memtable of its
// own, the batch's encoding indexed in place (memtable.NewFromBatch, which
// retains the encoding: an engine Batch reused after Write moves to a new
// buffer first). The caller then rotates the memtables with it
// (rotateMemtableLocked), which queues it after the mutable memtable.
//
// The batch has a WAL of its own, logNum, the returned memtable's: the
// mutable memtable's, which makeRoomForWriteLocked made sure holds nothing
// (the rotation drops it). Flushing the memtable before the batch then lets
// that memtable's WAL go, and flushing the batch lets the batch's go, so a
// reopen replays neither again. (Pebble appends the batch to the previous
// memtable's WAL and flushes the two together; in a WAL of the next
// memtable, it would be replayed after its own flush.) commitLarge writes
// the WAL while the batch is indexed on the other core, and the rotation
// syncs it in the background. It runs without d.mu.
//
// Recovery replays such a batch's WAL record into an ordinary (oversized)
// memtable, as before large batches had memtables of their own: it runs
// once per open, where indexing in place would save little.
func (d *database) commitLarge(w *writer, first base.SeqNum, logNum manifest.FileNum, syncWAL bool, hint walHint) (_ *memTable, inWAL bool, err error) {
	b := w.batch
	// The batch is indexed on the other core while the WAL is written.
	// Neither side may write what the other reads: the header gets
	// its final sequence number and the buffer is retained before, so the
	// WAL write only reads the batch, and the index works on a Batch value
	// of its own over the same (now unchanging) bytes.
	b.SetSeqNum(first)
	b.Retain()
	view := *b
	type indexed struct {
		mt  *memtable.MemTable
		err error
	}
	done := make(chan indexed, 1)
	go func() {
		mt, err := memtable.NewFromBatchCmp(d.ucmp(), &view, first)
		done <- indexed{mt, err}
	}()
	walErr := d.logGroup([]*writer{w}, first, syncWAL, hint)
	ix := <-done
	if walErr != nil {
		return nil, true, walErr
	}
	if ix.err != nil {
		return nil, false, errors.Wrap(ix.err, "engine: indexing a large batch as a memtable")
	}
	d.stats.RecordTick(statistics.NumberKeysWritten, uint64(b.Count()))
	// Oversized: the arena pool frees it rather than keep it for reuse.
	m := &memTable{MemTable: ix.mt, logNum: logNum, free: &d.arenas, unpooled: true}
	m.refs.Store(1)
	return m, false, nil
}

// commitGroup writes the group's batches to the WAL as one record (unless
// they are DisableWAL writes; see logGroup) and applies them to mem. It runs
// without d.mu; only the leader calls it. inWAL reports that the error is the
// WAL's, in which case no batch was applied.
func (d *database) commitGroup(group []*writer, first base.SeqNum, mem *memTable, syncWAL bool, hint walHint) (inWAL bool, err error) {
	if err := d.logGroup(group, first, syncWAL, hint); err != nil {
		return true, err
	}
	return false, d.applyGroup(group, first, mem)
}

// logGroup writes the group's batches to the WAL as one record, the first
// at sequence number first, and syncs it if syncWAL. A group of DisableWAL
// writes (a group's writers agree on noWAL: see leadLocked) only counts
// their bytes and marks the database as holding unlogged writes. hint tells
// the WAL file whether other writes were queued behind the group when it
// formed and whether it syncs (see walHint): a lone or synced record is
// written to the file by the leader, an unsynced one behind which others
// wait is handed to the file's background goroutine. Only the leader calls
// it, without d.mu.
func (d *database) logGroup(group []*writer, first base.SeqNum, syncWAL bool, hint walHint) error {
	if group[0].noWAL {
		for _, g := range group {
			d.stats.RecordTick(statistics.BytesWritten, uint64(g.batch.Len()))
		}
		d.unlogged.Store(true)
		return nil
	}
	if err := d.awaitPrevWALSync(); err != nil {
		return err
	}
	var rec *batch.Batch
	if len(group) == 1 {
		rec = group[0].batch
	} else {
		rec = &d.commit.group.b
		rec.Reset()
		for _, g := range group {
			rec.Append(g.batch)
		}
	}
	rec.SetSeqNum(first)
	d.commit.logFile.hint = hint
	if _, err := d.commit.log.WriteRecord(rec.Repr()); err != nil {
		return errors.Wrapf(err, "engine: writing WAL %s", d.commit.logNum)
	}
	if syncWAL {
		if err := d.syncLog(); err != nil {
			return err
		}
	} else if err := d.commit.log.Flush(); err != nil {
		return errors.Wrapf(err, "engine: writing WAL %s", d.commit.logNum)
	}
	n := int64(len(rec.Repr()))
	d.commit.logBytes += n
	d.stats.RecordTick(statistics.WALFileBytes, uint64(n))
	d.stats.RecordTick(statistics.WriteWithWAL, uint64(len(group)))
	d.stats.RecordTick(statistics.BytesWritten, uint64(n))
	return nil
}

// applyGroup applies the group's batches to mem, the first at sequence
// number first. A batch that finds no room in mem returns a *groupOverflow
// with it and the batches after it, none of them applied (Apply reserves a
// batch's room before it inserts anything).
func (d *database) applyGroup(group []*writer, first base.SeqNum, mem *memTable) error {
	seq := first
	for i, g := range group {
		if err := mem.Apply(g.batch, seq); err != nil {
			if errors.Is(err, memtable.ErrArenaFull) {
				return &groupOverflow{rest: group[i:], seq: seq}
			}
			return errors.Wrap(err, "engine: applying a batch to the memtable")
		}
		seq += base.SeqNum(g.batch.Count())
		d.stats.RecordTick(statistics.NumberKeysWritten, uint64(g.batch.Count()))
	}
	return nil
}

// groupOverflow is applyGroup's error when a commit group's batches did not
// all fit the memtable: rest are the ones not applied, the first at
// sequence number seq.
type groupOverflow struct {
	rest []*writer
	seq  base.SeqNum
}

func (e *groupOverflow) Error() string {
	return "engine: applying a batch to the memtable: " + memtable.ErrArenaFull.Error()
}

func (e *groupOverflow) Unwrap() error { return memtable.ErrArenaFull }

// overflowLocked applies rest, the batches of a commit group that found no
// room in mem (applyGroup), the first at sequence number seq, to a memtable
// of their own, and switches memtables with it as a large batch's
// (commitLarge): it is queued after mem, now immutable, with mem's WAL,
// which holds their records, and flushing mem keeps that WAL for it
// (applyFlush). The group was bounded by mem's room (leadLocked), so this
// runs only if that bound is wrong; it is here so that, even then, the
// writes succeed at the cost of a memtable switch rather than stop every
// later write until a reopen, as a failed insert must. The caller is the
// queue head, holding d.mu (released for the switch's IO).
func (d *database) overflowLocked(rest []*writer, seq base.SeqNum, mem *memTable) error {
	standard := d.standardArenaSize()
	need := 0
	for _, g := range rest {
		// Each counts the memtable's fixed overhead once more: a little
		// headroom.
		need += memtable.ArenaSizeFor(g.batch)
	}
	m := d.memTableWithArena(max(standard, need), mem.size, mem.logNum)
	for _, g := range rest {
		if err := m.Apply(g.batch, seq); err != nil {
			m.unref()
			return errors.Wrap(err, "engine: applying a batch to an overflow memtable")
		}
		seq += base.SeqNum(g.batch.Count())
		d.stats.RecordTick(statistics.NumberKeysWritten, uint64(g.batch.Count()))
	}
	if err := d.rotateMemtableLocked(nil, m); err != nil {
		// A switch with a memtable to queue fails only before queuing it.
		m.unref()
		return err
	}
	return nil
}

// errSyncWithoutWAL is RocksDB's answer to a write that asks for both.
var errSyncWithoutWAL = base.InvalidArgumentf("engine: Sync writes have to enable the WAL (WriteOptions.Sync with DisableWAL)")

// chargeWAL charges n bytes of WAL at pri to the rate limiter, in pieces of
// at most its burst, when pri is charged and the limiter covers writes. It
// honours ctx: an error for which errors.Is(err, ctx.Err()) holds.
func (d *database) chargeWAL(ctx context.Context, pri ioctx.Priority, n int) error {
	if !pri.Charged() {
		return nil
	}
	if err := ratelimit.RequestBursts(ctx, d.opts.RateLimiter, int64(n), pri, d.stats, ratelimit.OpWrite); err != nil {
		return errors.Wrap(err, "engine: rate limiter wait for a WAL write")
	}
	return nil
}

// SyncWAL makes every write acknowledged before the call durable, as if it
// had been made with Sync (RocksDB's DB::SyncWAL): it waits for the writes
// queued before it, then fsyncs the WAL (earlier WALs were synced when the
// memtable switched). Writes made with DisableWAL are not covered. A ctx
// already done fails the call; the wait and the fsync are not interrupted.
func (d *database) SyncWAL(ctx context.Context) error {
	if err := d.checkWritable(ctx); err != nil {
		return err
	}
	// Only the queue head touches the WAL.
	w := d.headAloneLocked(ctx)
	err := d.syncWALLocked()
	d.finishGroupLocked(d.mu.writers[:1], err)
	d.mu.Unlock()
	writerPool.Put(w)
	return err
}

// headAloneLocked queues a writer with no batch and returns, holding d.mu,
// once it heads the queue: between commit groups, where the caller may touch
// the WAL or rotate the memtable. The caller ends its turn with
// finishGroupLocked(d.mu.writers[:1], err) and, after unlocking, puts w back
// in writerPool.
func (d *database) headAloneLocked(ctx context.Context) *writer {
	w := writerPool.Get().(*writer)
	*w = writer{ctx: ctx}
	w.cond.L = &d.mu.Mutex
	d.mu.Lock()
	d.mu.writers = append(d.mu.writers, w)
	for d.mu.writers[0] != w {
		w.cond.Wait()
	}
	return w
}

// syncWALLocked fsyncs the current WAL; the caller is the queue head and
// holds d.mu, which is released for the IO.
func (d *database) syncWALLocked() error {
	if e := d.bgErrorLocked(); e != nil && e.stopsWrites() {
		return e
	}
	if d.commit.log == nil {
		return nil
	}
	d.mu.Unlock()
	err := d.awaitPrevWALSync()
	if err == nil {
		err = d.syncLog()
	}
	d.mu.Lock()
	if err != nil {
		return d.walFailedLocked(err)
	}
	return nil
}

// syncLog fsyncs the current WAL and records the sync in the statistics.
// Only the queue head calls it, without d.mu.
func (d *database) syncLog() error {
	start := time.Now()
	if err := d.commit.log.Sync(); err != nil {
		return errors.Wrapf(err, "engine: syncing WAL %s", d.commit.logNum)
	}
	d.stats.RecordTick(statistics.WALFileSynced, 1)
	d.stats.ReportTimeToHistogram(statistics.WALFileSyncMicros, uint64(time.Since(start).Microseconds()))
	return nil
}

// finishGroupLocked wakes the group's writers with err and hands leadership
// to the next queued writer.
func (d *database) finishGroupLocked(group []*writer, err error) {
	if len(group) > 1 {
		d.mu.groupedWrites = min(d.mu.groupedWrites+1, 8)
	} else {
		d.mu.groupedWrites = max(d.mu.groupedWrites-1, 0)
	}
	for _, g := range group {
		g.err, g.done = err, true
		if g != group[0] {
			g.turn.Store(true)
			g.cond.Signal()
		}
	}
	n := copy(d.mu.writers, d.mu.writers[len(group):])
	clear(d.mu.writers[n:])
	d.mu.writers = d.mu.writers[:n]
	if n > 0 {
		d.mu.writers[0].turn.Store(true)
		d.mu.writers[0].cond.Signal()
	}
}

// makeRoomForWriteLocked makes sure the mutable memtable can take b: it
// delays writes when L0 is filling, waits when flushes or L0 compactions fall
// too far behind, and otherwise switches to a new memtable and WAL when the
// current one is full. A large batch, which becomes a memtable of its own
// and switches memtables after its WAL write (commitLarge), needs an empty
// mutable memtable, whose WAL it takes: it switches first unless the
// memtable is empty, delaying and waiting as a switch does. d.mu is held;
// it is released while waiting.
func (d *database) makeRoomForWriteLocked(ctx context.Context, b *batch.Batch, large bool) error {
	delayed, rotated := false, false
	for {
		if e := d.bgErrorLocked(); e != nil && e.stopsWrites() {
			return e
		}
		if d.mu.closing {
			return base.Mark(errors.New("engine: database is closing"), ErrClosed)
		}
		l0 := d.l0CountLocked()
		switch {
		case !delayed && l0 >= d.opts.Level0SlowdownWritesTrigger:
			// Spread the wait over many writes instead of stopping one for
			// seconds later (LevelDB's 1 ms delay).
			delayed = true
			d.mu.Unlock()
			time.Sleep(time.Millisecond)
			d.stats.RecordTick(statistics.StallMicros, 1000)
			d.mu.Lock()
		case !large && d.mu.mem.ApproximateSize() < d.mu.mem.size && d.mu.mem.Fits(b):
			return nil
		case large && rotated:
			// It waited as a switch does, and adds one more immutable
			// memtable: its memory is the batch's, already allocated, so
			// waiting for that would bound nothing.
			return nil
		case len(d.mu.imm) >= d.opts.MaxWriteBufferNumber-1:
			if err := d.stallLocked(ctx, "memtables wait for a flush"); err != nil {
				return err
			}
		case l0 >= d.opts.Level0StopWritesTrigger:
			if e := d.bgErrorLocked(); e != nil {
				// Compactions are paused for lack of space: waiting for one
				// would last until space is freed.
				return e
			}
			if err := d.stallLocked(ctx, "L0 has too many tables"); err != nil {
				return err
			}
		case large && d.mu.mem.Empty():
			return nil
		case large:
			if err := d.rotateMemtableLocked(nil, nil); err != nil {
				return err
			}
			rotated = true
		default:
			if err := d.rotateMemtableLocked(b, nil); err != nil {
				return err
			}
		}
	}
}

// stallLocked waits for background progress or ctx.
func (d *database) stallLocked(ctx context.Context, why string) error {
	d.maybeScheduleLocked()
	start := time.Now()
	ch := d.mu.changed
	d.mu.Unlock()
	d.notifyStallBegin(why)
	var err error
	select {
	case <-ch:
	case <-ctx.Done():
		err = errors.Wrapf(ctx.Err(), "engine: write stalled (%s)", why)
	}
	stalled := time.Since(start)
	d.notifyStallEnd(why, stalled)
	d.stats.RecordTick(statistics.StallMicros, uint64(stalled.Microseconds()))
	d.stats.ReportTimeToHistogram(statistics.WriteStall, uint64(stalled.Microseconds()))
	d.mu.Lock()
	return err
}

// rotateMemtableLocked makes the mutable memtable immutable and starts a new
// one with a new WAL. Only the write leader calls it (Flush queues as a
// writer to become one). b is the batch that did not fit, or nil, so an
// oversized batch gets a memtable big enough for it. large, when not nil,
// is a large batch's own memtable (commitLarge), written to the current WAL:
// it is queued after the memtable made immutable, before the new one, and
// the WAL is synced in the background.
func (d *database) rotateMemtableLocked(b *batch.Batch, large *memTable) error {
	if d.commit.log != nil {
		// The old WAL's records are complete; sync it so that a crash after
		// later, synced writes cannot lose these earlier ones (a synced
		// write is only meaningful if everything before it is durable too).
		// Before the new WAL exists: if the sync fails, the old one may end
		// in a torn record, which recovery tolerates only in the newest WAL
		// that holds anything. After a large batch, which may have written
		// tens of megabytes to it, the sync runs in the background instead
		// (see syncPrevWAL): the new WAL stays empty until it is done.
		d.mu.Unlock()
		err := d.awaitPrevWALSync()
		if err == nil && large == nil {
			if err = d.commit.log.Sync(); err != nil {
				err = errors.Wrapf(err, "engine: syncing WAL %s", d.commit.logNum)
			}
		}
		d.mu.Lock()
		if err != nil {
			return d.walFailedLocked(err)
		}
	}
	logNum := d.vs.NewFileNum()
	d.mu.Unlock()
	f, err := d.createLog(logNum)
	d.mu.Lock()
	if err != nil {
		return err
	}
	old, oldLog, oldNum := d.commit.logFile, d.commit.log, d.commit.logNum
	wf := newWALFile(f)
	d.commit.log = wal.NewWriter(wf)
	d.commit.logFile = wf
	d.commit.logNum = logNum
	d.commit.logBytes = 0
	if d.mu.mem != nil && !d.mu.mem.Empty() {
		d.mu.imm = append(d.mu.imm, d.mu.mem)
	} else if d.mu.mem != nil {
		d.mu.mem.unref()
	}
	if large != nil {
		d.mu.imm = append(d.mu.imm, large)
	}
	d.mu.mem = d.newMutableMemTableLocked(b, logNum)
	d.updateReadStateLocked()
	d.maybeScheduleLocked()
	if old == nil {
		return nil
	}
	if large != nil {
		d.syncPrevWAL(oldLog, old, oldNum)
		return nil
	}
	d.mu.Unlock()
	err = old.Close()
	d.mu.Lock()
	if err != nil {
		// The WAL was synced: its records are durable; report the failure
		// all the same.
		return errors.Wrap(err, "engine: closing the previous WAL")
	}
	return nil
}

// syncPrevWAL syncs and closes the WAL a large batch was written to, in the
// background: the batch's Write does not wait for the fsync of its tens of
// megabytes. Until it is done, nothing may reach the new WAL (a crash could
// then keep a later write and lose the batch): the queue head waits for it
// (awaitPrevWALSync) before it writes, syncs or switches the WAL, and Close
// waits for it with the background goroutines. A crash before it is done
// may leave the batch's WAL torn with only empty WALs after it, which
// recovery treats as the newest WAL's torn tail.
func (d *database) syncPrevWAL(log *wal.Writer, f *walFile, num manifest.FileNum) {
	done := make(chan error, 1)
	d.commit.prevSync = done
	d.bgDone.Add(1)
	go func() {
		defer d.bgDone.Done()
		if hook := prevWALSyncHook.Load(); hook != nil {
			(*hook)(d)
		}
		err := log.Sync()
		if err != nil {
			err = errors.Wrapf(err, "engine: syncing WAL %s", num)
		}
		if cerr := f.Close(); cerr != nil {
			err = errors.CombineErrors(err, errors.Wrapf(cerr, "engine: closing WAL %s", num))
		}
		done <- err
	}()
}

// prevWALSyncHook, when a test sets it, runs before syncPrevWAL's sync.
var prevWALSyncHook atomic.Pointer[func(d *database)]

// awaitPrevWALSync waits for syncPrevWAL's sync, if one is running, and
// returns its error. Only the queue head calls it, without d.mu.
func (d *database) awaitPrevWALSync() error {
	done := d.commit.prevSync
	if done == nil {
		return nil
	}
	d.commit.prevSync = nil
	return <-done
}

// newMemTable returns an empty memtable, holding the database's reference,
// filled to the write buffer size, whose arena fits that and, when b is not
// nil, at least batch b (a batch larger than the write buffer gets a
// memtable of its own size). Recovery and secondaries replay WALs into such
// memtables; the mutable memtable of a database that takes writes comes from
// newMutableMemTableLocked.
func (d *database) newMemTable(b *batch.Batch, logNum manifest.FileNum) *memTable {
	return d.newMemTableSized(b, int(d.opts.WriteBufferSize), logNum)
}

// minMemTableSize is the size of a database's first mutable memtable. The
// mutable memtables start there and double at each rotation up to
// WriteBufferSize, as Pebble's do (from 256 KiB): a database that holds
// little never maps or touches a whole write buffer, and a skiplist's
// insert costs with its depth, so the first memtables of a fill take writes
// faster (in bench/'s BenchmarkWritePeers, CPU per random put fell by a
// fifth at 64 MiB write buffers). The price is a few small flushes, whose
// L0 tables the first compaction merges.
const minMemTableSize = 256 << 10

// nextMemTableSizeLocked returns the size the next mutable memtable is
// filled to and advances the schedule. d.mu is held (or the database is
// being opened).
func (d *database) nextMemTableSizeLocked() int {
	wbs := int(d.opts.WriteBufferSize)
	size := d.mu.memSize
	if size == 0 {
		size = min(minMemTableSize, wbs)
	}
	d.mu.memSize = min(2*size, wbs)
	return size
}

// newMutableMemTableLocked is newMemTable for the next mutable memtable,
// sized by the growth schedule (nextMemTableSizeLocked).
func (d *database) newMutableMemTableLocked(b *batch.Batch, logNum manifest.FileNum) *memTable {
	return d.newMemTableSized(b, d.nextMemTableSizeLocked(), logNum)
}

// newMemTableSized returns an empty memtable filled to size, whose arena
// fits size plus headroom (see standardArenaSize) and, when b is not nil,
// at least batch b.
func (d *database) newMemTableSized(b *batch.Batch, size int, logNum manifest.FileNum) *memTable {
	arena := size + size/8
	if b != nil {
		arena = max(arena, memtable.ArenaSizeFor(b))
	}
	return d.memTableWithArena(arena, size, logNum)
}

// memTableWithArena returns an empty memtable filled to size, holding the
// database's reference, with an arena of at least arena bytes: a kept one
// from the pool when one is large enough (its pages were given back, so a
// small memtable in a standard arena makes resident only what it fills).
func (d *database) memTableWithArena(arena, size int, logNum manifest.FileNum) *memTable {
	mt := d.arenas.get(arena)
	m := &memTable{MemTable: mt, logNum: logNum, free: &d.arenas, size: size,
		unpooled: mt.Capacity() != d.standardArenaSize()}
	m.SetCompare(d.ucmp())
	m.refs.Store(1)
	return m
}

// createLog creates WAL file logNum and makes its directory entry durable,
// so a synced write to it survives a crash.
func (d *database) createLog(logNum manifest.FileNum) (f vfs.File, err error) {
	name := manifest.LogFileName(d.dirname, logNum)
	f, err = d.fs.Create(name)
	if err != nil {
		return nil, errors.Wrapf(err, "engine: creating WAL %s", name)
	}
	if err := d.syncDir(); err != nil {
		_ = f.Close()
		return nil, err
	}
	d.notifyWALCreated(logNum)
	return f, nil
}

func (d *database) l0CountLocked() int {
	v := d.readState.Load()
	if v == nil {
		return 0
	}
	return v.current.NumFiles(0)
}

// checkWritable rejects writes to a read-only or closed database and writes
// whose context is already done.
func (d *database) checkWritable(ctx context.Context) error {
	if d.sec != nil {
		return base.InvalidArgumentf("engine: the database is open as a secondary instance, which is read-only " +
			"(write through the primary, the process that holds it open)")
	}
	if d.opts.ReadOnly {
		return base.InvalidArgumentf("engine: the database is open read-only")
	}
	if err := d.checkOpen(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return errors.Wrap(err, "engine: write")
	}
	return nil
}
