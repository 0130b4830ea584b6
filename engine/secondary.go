package engine

import (
	"cmp"
	"context"
	"io"
	"os"
	"slices"
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/batch"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/wal"
	"github.com/shaledb/shale/vfs"
)

// A secondary instance (Options.Secondary, DSN secondary=true; RocksDB's
// DB::OpenAsSecondary) reads a database that another process, the primary,
// holds open and writes. It takes no LOCK and writes nothing in the
// database's directory: it follows the MANIFEST that CURRENT names
// (manifest.LoadSecondary), opens the WALs the MANIFEST does not cover
// read-only and replays them into memtables of its own, and does both again,
// from where it stopped, on each CatchUp.
//
// The primary appends to its MANIFEST and WAL while the secondary reads
// them: an incomplete last record is the primary's write in progress, and
// reading stops before it until the next CatchUp. The primary also deletes
// files at any time: a MANIFEST after a rotation, WALs once flushed, tables
// once compacted. Every file the secondary reads from is kept open from its
// first read (on Linux an open file stays readable after its deletion), so
// what can vanish is only a file it has not opened yet. One CatchUp reads
// the MANIFEST, then the WALs, then opens the tables, then reads the
// MANIFEST again: the primary deletes a WAL or a table only after a
// MANIFEST edit that makes it obsolete, so when that second read finds
// nothing new, nothing the view needs had vanished before it was opened.
// When it does find something new, the round is repeated. A table evicted
// from a bounded table cache (max_open_files) is opened again when read,
// and if the primary has deleted it by then, the read fails with an error
// that says so and matches os.ErrNotExist; CatchUp then moves past it.

// maxCatchUpRounds bounds the rounds of one CatchUp when the primary's
// MANIFEST changes during each (a flush or compaction finishing each
// time). Each round but the first reads only what was appended meanwhile.
const maxCatchUpRounds = 100

// secondary is the state of a secondary instance.
type secondary struct {
	// mu serializes CatchUp and Checkpoint, which must see the WALs and
	// the version agree.
	mu sync.Mutex
	// wals are the WALs being followed, ascending, each open since its
	// first read.
	wals []*secondaryWAL
	// mems are the memtables the WALs were replayed into, oldest first,
	// each tagged with its WAL's number (memTable.logNum). They are the
	// database's d.mu.imm and d.mu.mem (the last one), which own them.
	mems []*memTable
	// lastSeq is the last sequence number replayed from the WALs.
	lastSeq base.SeqNum
}

// secondaryWAL is a WAL being followed.
type secondaryWAL struct {
	num manifest.FileNum
	f   vfs.File
	// off is the end of the last complete record replayed.
	off int64
}

// errSecondaryRetry reports that a file the view needs vanished before it
// was opened: the primary has moved on, and the MANIFEST says how.
var errSecondaryRetry = errors.New("engine: a file vanished; the MANIFEST has changed")

// openSecondary is openDatabase for a secondary instance, after the
// options are resolved: it loads the primary's state and replays its WALs,
// writing nothing.
func (d *database) openSecondary() error {
	exists, err := d.hasCurrent()
	if err != nil {
		return err
	}
	if !exists {
		return base.Mark(errors.Newf("engine: database %q does not exist: a secondary instance opens only "+
			"an existing database", d.dirname), ErrInvalidArgument)
	}
	if d.vs, err = manifest.LoadSecondary(d.fs, d.dirname, manifest.WithComparer(d.opts.Comparer)); err != nil {
		return errors.Wrapf(err, "engine: loading the MANIFEST of %q as a secondary instance", d.dirname)
	}
	d.sec = &secondary{}
	d.tables.secondary = true
	return d.catchUp(context.Background(), true)
}

// CatchUp brings a secondary instance up to the primary's MANIFEST and WALs
// as written so far (see secondary). On a database that is not a secondary
// it does nothing.
func (d *database) CatchUp(ctx context.Context) error {
	if d.sec == nil {
		return nil
	}
	if err := d.checkOpen(); err != nil {
		return err
	}
	return d.catchUp(ctx, false)
}

// catchUp runs rounds until one ends with the MANIFEST as it began (see
// secondary), then installs the result for readers. first: the version
// was just loaded, by an Open that discards everything if this fails.
//
// A CatchUp that fails installs what it reached too, so that readers and
// Checkpoint (which copies the WAL prefixes replayed) keep seeing the same
// view. That view is consistent whatever the failure: the version's tables
// hold every write of the WALs below its log number, and the memtables a
// prefix, in order, of the WALs from there on (a WAL is read only after the
// one before it ended cleanly, and a vanished one stops the round).
func (d *database) catchUp(ctx context.Context, first bool) error {
	s := d.sec
	s.mu.Lock()
	defer s.mu.Unlock()
	err := d.catchUpRounds(ctx, first)
	if err == nil || !first {
		d.installSecondary()
	}
	return err
}

func (d *database) catchUpRounds(ctx context.Context, first bool) error {
	if !first {
		if _, err := d.vs.CatchUp(); err != nil {
			return errors.Wrapf(err, "engine: catching up with the MANIFEST of %q", d.dirname)
		}
	}
	for round := 0; ; round++ {
		if err := ctx.Err(); err != nil {
			return errors.Wrap(err, "engine: CatchUp")
		}
		err := d.secondaryRound(ctx)
		if err != nil && !errors.Is(err, errSecondaryRetry) {
			return err
		}
		changed, cerr := d.vs.CatchUp()
		if cerr != nil {
			return errors.Wrapf(cerr, "engine: catching up with the MANIFEST of %q", d.dirname)
		}
		if err == nil && !changed {
			break
		}
		if round >= maxCatchUpRounds {
			return errors.Newf("engine: the primary of %q changed its MANIFEST during each of %d rounds of CatchUp; "+
				"try again", d.dirname, maxCatchUpRounds)
		}
	}
	return nil
}

// secondaryRound drops what the current version's tables now hold, replays
// the WALs it does not cover from where the last round stopped, and opens
// the version's tables. It returns errSecondaryRetry when a file vanished
// before it was opened.
func (d *database) secondaryRound(ctx context.Context) error {
	s := d.sec
	logNum := d.vs.LogNumber()
	// Flushed WALs: their records are in the version's tables.
	s.wals = slices.DeleteFunc(s.wals, func(w *secondaryWAL) bool {
		if w.num < logNum {
			_ = w.f.Close()
			return true
		}
		return false
	})
	var dropped []*memTable
	d.mu.Lock()
	s.mems = slices.DeleteFunc(s.mems, func(m *memTable) bool {
		if m.logNum < logNum {
			dropped = append(dropped, m)
			return true
		}
		return false
	})
	d.setSecondaryMemsLocked()
	d.mu.Unlock()
	for _, m := range dropped {
		m.unref()
	}

	names, err := d.fs.List(d.dirname)
	if err != nil {
		return errors.Wrapf(err, "engine: listing %s", d.dirname)
	}
	var nums []manifest.FileNum
	for _, w := range s.wals {
		nums = append(nums, w.num) // followed, perhaps deleted since
	}
	for _, name := range names {
		if kind, num, ok := manifest.ParseFileName(name); ok && kind == manifest.FileKindLog && num >= logNum &&
			!slices.Contains(nums, num) {
			nums = append(nums, num)
		}
	}
	slices.Sort(nums)
	for _, num := range nums {
		i := slices.IndexFunc(s.wals, func(w *secondaryWAL) bool { return w.num == num })
		if i < 0 {
			name := manifest.LogFileName(d.dirname, num)
			f, err := d.fs.Open(name)
			if errors.Is(err, os.ErrNotExist) {
				return errSecondaryRetry
			}
			if err != nil {
				return errors.Wrapf(err, "engine: opening WAL %s", name)
			}
			s.wals = append(s.wals, &secondaryWAL{num: num, f: f})
			slices.SortFunc(s.wals, func(a, b *secondaryWAL) int { return cmp.Compare(a.num, b.num) })
			i = slices.IndexFunc(s.wals, func(w *secondaryWAL) bool { return w.num == num })
		}
		complete, err := d.followWAL(s.wals[i])
		if err != nil {
			return err
		}
		if !complete {
			// Its last record is being written; later WALs must wait, or
			// the view could hold a write without an earlier one.
			break
		}
	}
	return d.openSecondaryTables(ctx)
}

// followWAL replays the records appended to w since the last read.
// complete reports that the read ended cleanly, not in a record the
// primary is still writing.
func (d *database) followWAL(w *secondaryWAL) (complete bool, err error) {
	name := manifest.LogFileName(d.dirname, w.num)
	st, err := w.f.Stat()
	if err != nil {
		return false, errors.Wrapf(err, "engine: stat WAL %s", name)
	}
	if st.Size() <= w.off {
		return true, nil
	}
	rd := wal.NewReaderAt(w.f, w.off, st.Size(), wal.TolerateCorruptedTailRecords)
	var b batch.Batch
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if base.IsCorruption(err) {
				return false, base.MarkCorruption(errors.Wrapf(err, "engine: WAL %s is damaged", name))
			}
			return false, errors.Wrapf(err, "engine: reading WAL %s", name)
		}
		if err := b.SetRepr(rec); err != nil {
			return false, base.MarkCorruption(errors.Wrapf(err, "engine: WAL %s: the record at offset %d", name, w.off))
		}
		if err := d.applySecondary(w.num, &b); err != nil {
			return false, errors.Wrapf(err, "engine: replaying WAL %s", name)
		}
		w.off = rd.Offset()
	}
	_, reason := rd.Stopped()
	return reason == nil, nil
}

// applySecondary applies a replayed batch of WAL num to the newest
// memtable, starting another when it is full or holds another WAL's
// records. Its writes stay invisible until installSecondary raises
// visibleSeq past them.
func (d *database) applySecondary(num manifest.FileNum, b *batch.Batch) error {
	if b.Count() == 0 {
		return nil
	}
	s := d.sec
	var m *memTable
	if n := len(s.mems); n > 0 {
		m = s.mems[n-1]
	}
	if m == nil || m.logNum != num || !m.Fits(b) || m.ApproximateSize() >= int(d.opts.WriteBufferSize) {
		m = d.newMemTable(nil, num)
		if !m.Fits(b) {
			m.unref()
			m = d.newMemTable(b, num)
		}
		d.mu.Lock()
		s.mems = append(s.mems, m)
		d.setSecondaryMemsLocked()
		d.mu.Unlock()
	}
	seq := b.SeqNum()
	if err := m.Apply(b, seq); err != nil {
		return err
	}
	if last := seq + base.SeqNum(b.Count()) - 1; last > s.lastSeq {
		s.lastSeq = last
	}
	return nil
}

// setSecondaryMemsLocked makes the secondary's memtables the database's, so
// that Close and a failed Open release them and properties count them.
// d.mu must be held.
func (d *database) setSecondaryMemsLocked() {
	s := d.sec
	d.mu.mem, d.mu.imm = nil, nil
	if n := len(s.mems); n > 0 {
		d.mu.mem = s.mems[n-1]
		d.mu.imm = s.mems[: n-1 : n-1]
	}
}

// openSecondaryTables opens every table of the current version, so that
// the primary deleting one later does not take it from the view. With a
// bounded table cache (max_open_files) nothing is opened ahead: the tables
// are opened when read.
func (d *database) openSecondaryTables(ctx context.Context) error {
	if d.opts.MaxOpenFiles > 0 {
		return nil
	}
	v := d.vs.Current()
	defer v.Unref()
	for level := range v.Levels {
		for _, f := range v.Levels[level] {
			ref, err := d.tables.Acquire(ctx, openReadEnv, f, level)
			if errors.Is(err, os.ErrNotExist) {
				return errSecondaryRetry
			}
			if err != nil {
				return err
			}
			ref.Release()
		}
	}
	return nil
}

// installSecondary publishes the state catchUp reached to readers, and
// closes the tables no version in use names any more.
func (d *database) installSecondary() {
	v := d.vs.Current()
	seq := d.sec.lastSeq
	for _, files := range v.Levels {
		for _, f := range files {
			seq = max(seq, f.LargestSeqNum)
		}
	}
	v.Unref()
	d.mu.Lock()
	if d.mu.mem == nil {
		// Readers expect a mutable memtable; this one stays empty.
		d.sec.mems = append(d.sec.mems, d.newMemTable(nil, d.vs.LogNumber()))
		d.setSecondaryMemsLocked()
	}
	// visibleSeq first: a reader that loads the new state then reads
	// visibleSeq must not read the new state at an older sequence number
	// (the primary's compactions may have dropped what that one saw).
	// The old state read at the new number is the old view.
	if s := base.SeqNum(d.visibleSeq.Load()); seq < s {
		seq = s
	}
	d.visibleSeq.Store(uint64(seq))
	d.mu.lastSeq = seq
	d.updateReadStateLocked()
	d.mu.Unlock()

	live := d.vs.LiveFileNums()
	d.tables.mu.Lock()
	var gone []manifest.FileNum
	for num := range d.tables.entries {
		if _, ok := live[num]; !ok {
			gone = append(gone, num)
		}
	}
	d.tables.mu.Unlock()
	for _, num := range gone {
		d.tables.evict(num)
	}
}

// closeSecondary closes the files a secondary follows.
func (d *database) closeSecondary() {
	if d.sec == nil {
		return
	}
	d.sec.mu.Lock()
	defer d.sec.mu.Unlock()
	for _, w := range d.sec.wals {
		_ = w.f.Close()
	}
	d.sec.wals = nil
}

// errTableRemoved is the error of a secondary's read of a table that its
// version names and that the primary deleted before the secondary opened
// it.
func errTableRemoved(num manifest.FileNum, err error) error {
	return errors.Wrapf(err, "engine: table %s.sst was removed by the primary (a compaction replaced it) "+
		"before this secondary instance opened it; call CatchUp", num)
}

var _ driver.CatchUpper = (*conn)(nil)

// CatchUp is database.CatchUp (driver.CatchUpper).
func (c *conn) CatchUp(ctx context.Context) error { return c.db.CatchUp(ctx) }

// copySecondaryLogs is checkpoint.copyLogs for a secondary instance: it
// copies, of each WAL the secondary follows, the prefix it replayed, from
// the file it holds open (the primary may have deleted it since), so that
// the checkpoint holds exactly the secondary's view. sec.mu is held.
func (cp *checkpoint) copySecondaryLogs(ctx context.Context, _ manifest.FileNum) (manifest.FileNum, error) {
	var maxNum manifest.FileNum
	for _, w := range cp.d.sec.wals {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		dst := manifest.LogFileName(cp.dir, w.num)
		out, err := cp.d.fs.Create(dst)
		if err != nil {
			return 0, errors.Wrapf(err, "engine: creating %s", dst)
		}
		_, err = io.Copy(out, io.NewSectionReader(w.f, 0, w.off))
		if err == nil {
			err = out.Sync()
		}
		err = errors.CombineErrors(err, out.Close())
		if err != nil {
			return 0, errors.Wrapf(err, "engine: copying WAL %s into %s", w.num, dst)
		}
		maxNum = max(maxNum, w.num)
	}
	return maxNum, nil
}

// secondaryVerifyErr explains a verification's failure to open a table on
// a secondary: verifications open each table anew (as RocksDB's do), and
// the primary may have deleted one since the last CatchUp.
func (d *database) secondaryVerifyErr(err error) error {
	if err == nil || d.sec == nil || !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return errors.Wrap(err, "engine: a table was removed by the primary (a compaction replaced it) since this "+
		"secondary instance's last CatchUp; call CatchUp and verify again")
}
