package engine

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/batch"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/internal/vfs"
	"github.com/shaledb/shale/internal/wal"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
)

// openReadEnv tags the reads made while opening: table opens and the check
// of tables written from recovered WALs (RocksDB's kDBOpen).
var openReadEnv = sstable.ReadEnv{
	IO:              ioctx.IOOptions{Activity: ioctx.ActivityDBOpen},
	VerifyChecksums: true,
	FillCache:       true,
}

// Open opens the database in dirname, creating it unless opts says not to.
// opts may be nil for the defaults; it is not modified or retained.
//
// Opening recovers the state the MANIFEST records, opens every table (reads
// tagged DBOpen), replays the WAL files written since the last flush into
// new L0 tables (tolerating a torn last record, the trace of a crash during
// a write), and starts the background flush and compaction goroutines. A
// LOCK file keeps a second Open of the same directory, by this process or
// another, from succeeding until Close.
func Open(dirname string, opts *Options) (_ *DB, err error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	d := &DB{dirname: dirname, opts: o, fs: o.FS}
	if d.fs == nil {
		d.fs = vfs.Default
	}
	d.opts.FS = d.fs
	switch {
	case o.DisableStatistics:
		d.stats = nil
	case o.Statistics != nil:
		d.stats = o.Statistics
	default:
		d.stats = statistics.New(statistics.DefaultLevel)
	}
	d.opts.Statistics = d.stats
	if o.BlockCacheSize > 0 {
		d.cache = cache.New(o.BlockCacheSize)
		d.cacheID = d.cache.NewID()
	}
	d.mu.changed = make(chan struct{})
	d.mu.pendingOutputs = make(map[manifest.FileNum]struct{})
	d.flushWork = make(chan struct{}, 1)
	d.compactWork = make(chan struct{}, 1)

	defer func() {
		if err != nil {
			d.closeResources()
		}
	}()
	if err := d.lockAndLoad(); err != nil {
		return nil, err
	}
	d.tables = newTableCache(d.fs, dirname, fileio.Options{
		Stats: d.stats, Limiter: d.opts.RateLimiter, Mmap: d.opts.MmapReads,
	}, d.cache, d.cacheID, d.stats, d.opts.MaxOpenFiles)

	ctx := context.Background()
	if err := d.openTables(ctx); err != nil {
		return nil, err
	}
	if err := d.recoverWALs(ctx); err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.updateReadStateLocked()
	d.mu.Unlock()
	d.visibleSeq.Store(uint64(d.mu.lastSeq))

	if !d.opts.ReadOnly {
		d.deleteObsoleteFiles(true)
		d.bgDone.Add(2)
		go d.flushLoop()
		go d.compactLoop()
		d.mu.Lock()
		d.maybeScheduleLocked()
		d.mu.Unlock()
	}
	return d, nil
}

// lockAndLoad creates or checks the directory, takes the LOCK and loads or
// creates the MANIFEST.
func (d *DB) lockAndLoad() error {
	current := manifest.CurrentFileName(d.dirname)
	_, statErr := d.fs.Stat(current)
	exists := statErr == nil
	if statErr != nil && !errors.Is(statErr, os.ErrNotExist) {
		return errors.Wrapf(statErr, "engine: checking %s", current)
	}
	switch {
	case exists && d.opts.ErrorIfExists:
		return base.Mark(errors.Newf("engine: database %q already exists (error_if_exists)", d.dirname),
			ErrInvalidArgument)
	case !exists && (d.opts.ErrorIfMissing || d.opts.ReadOnly):
		return base.Mark(errors.Newf("engine: database %q does not exist (create_if_missing=false)", d.dirname),
			ErrInvalidArgument)
	}
	if !exists {
		if err := d.fs.MkdirAll(d.dirname, 0o755); err != nil {
			return errors.Wrapf(err, "engine: creating %s", d.dirname)
		}
		// The new directory's own entry must be durable too, or a crash can
		// take the whole database with it.
		if err := syncDir(d.fs, filepath.Dir(filepath.Clean(d.dirname))); err != nil {
			return err
		}
	}
	lock, err := d.fs.Lock(manifest.LockFileName(d.dirname))
	if err != nil {
		return errors.Wrapf(err, "engine: database %q is in use", d.dirname)
	}
	d.dirLock = lock
	if exists {
		if d.opts.ReadOnly {
			d.vs, err = manifest.RecoverReadOnly(d.fs, d.dirname)
		} else {
			d.vs, err = manifest.Recover(d.fs, d.dirname)
		}
	} else {
		d.vs, err = manifest.Create(d.fs, d.dirname)
	}
	if err != nil {
		return errors.Wrapf(err, "engine: loading the MANIFEST of %q", d.dirname)
	}
	d.vs.SetMaxManifestFileSize(d.opts.MaxManifestFileSize)
	d.mu.lastSeq = d.vs.LastSeqNum()
	return nil
}

// openTables opens every table of the current version, reading each one's
// footer, index, filter and properties with activity DBOpen. With a bound on
// open files, only as many as the bound are opened.
func (d *DB) openTables(ctx context.Context) error {
	v := d.vs.Current()
	defer v.Unref()
	opened := 0
	for level := range v.Levels {
		for _, f := range v.Levels[level] {
			if d.opts.MaxOpenFiles > 0 && opened >= d.opts.MaxOpenFiles {
				return nil
			}
			ref, err := d.tables.Acquire(ctx, openReadEnv, f, level)
			if err != nil {
				return err
			}
			ref.Release()
			opened++
		}
	}
	return nil
}

// recoverWALs replays the WAL files the MANIFEST does not cover, oldest
// first, flushes what they held to L0 tables and starts a new WAL. Only the
// newest WAL may end in a torn record; damage anywhere else is corruption.
func (d *DB) recoverWALs(ctx context.Context) error {
	names, err := d.fs.List(d.dirname)
	if err != nil {
		return errors.Wrapf(err, "engine: listing %s", d.dirname)
	}
	var logs []manifest.FileNum
	for _, name := range names {
		if kind, num, ok := manifest.ParseFileName(name); ok && kind == manifest.FileKindLog && num >= d.vs.LogNumber() {
			logs = append(logs, num)
		}
	}
	slices.Sort(logs)

	var edit manifest.VersionEdit
	mem := d.newMemTable(nil, 0)
	flush := func() error {
		if mem.Empty() {
			return nil
		}
		if d.opts.ReadOnly {
			// Keep the recovered writes in memory: a read-only open writes
			// nothing.
			d.mu.imm = append(d.mu.imm, mem)
			mem = d.newMemTable(nil, 0)
			return nil
		}
		meta, err := d.writeMemTable(ctx, mem.MemTable, ioctx.ActivityDBOpen, nil)
		if err != nil {
			return err
		}
		if meta != nil {
			edit.AddFile(0, meta)
		}
		mem.unref()
		mem = d.newMemTable(nil, 0)
		return nil
	}
	for i, num := range logs {
		if err := d.replayWAL(num, i == len(logs)-1, &mem, flush); err != nil {
			return err
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if d.opts.ReadOnly {
		d.mu.mem = mem
		return nil
	}
	mem.unref()

	logNum := d.vs.NewFileNum()
	f, err := d.createLog(logNum)
	if err != nil {
		return err
	}
	wf := newWALFile(f)
	d.commit.log = wal.NewWriter(wf)
	d.commit.logFile = wf
	d.commit.logNum = logNum
	d.mu.mem = d.newMemTable(nil, logNum)

	edit.SetLogNumber(logNum)
	edit.SetLastSeqNum(d.mu.lastSeq)
	// createLog synced the directory, which made the recovered tables'
	// entries durable too, before the MANIFEST names them.
	if err := d.vs.LogAndApply(&edit); err != nil {
		return errors.Wrap(err, "engine: recording WAL recovery in the MANIFEST")
	}
	for _, nf := range edit.NewFiles {
		delete(d.mu.pendingOutputs, nf.Meta.FileNum)
	}
	return nil
}

// replayWAL applies the batches of WAL num to *mem, flushing through flush
// when a memtable fills.
func (d *DB) replayWAL(num manifest.FileNum, newest bool, mem **memTable, flush func() error) error {
	name := manifest.LogFileName(d.dirname, num)
	f, err := d.fs.Open(name)
	if err != nil {
		return errors.Wrapf(err, "engine: opening WAL %s", name)
	}
	defer f.Close()
	r := wal.NewReader(io.NewSectionReader(f, 0, 1<<62), wal.TolerateCorruptedTailRecords)
	var b batch.Batch
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return errors.Wrapf(err, "engine: replaying WAL %s", name)
		}
		if err := b.SetRepr(rec); err != nil {
			return errors.Wrapf(err, "engine: replaying WAL %s at offset %d", name, r.Offset())
		}
		seq := b.SeqNum()
		if b.Count() == 0 {
			continue
		}
		if !(*mem).Fits(&b) || (*mem).ApproximateSize() >= int(d.opts.WriteBufferSize) {
			if err := flush(); err != nil {
				return err
			}
			if !(*mem).Fits(&b) {
				(*mem).unref()
				*mem = d.newMemTable(&b, 0)
			}
		}
		if err := (*mem).Apply(&b, seq); err != nil {
			return errors.Wrapf(err, "engine: replaying WAL %s", name)
		}
		if last := seq + base.SeqNum(b.Count()) - 1; last > d.mu.lastSeq {
			d.mu.lastSeq = last
		}
	}
	if off, reason := r.Stopped(); reason != nil && !newest {
		// Older WALs were synced before the next one took writes, so a torn
		// record there is damage, not a crash's trace.
		return base.CorruptionErrorf("engine: WAL %s is damaged at offset %d but is not the newest: %v", name, off, reason)
	}
	return nil
}

// Close stops background work, syncs the WAL and releases the database.
// Calls made after Close return ErrClosed; calls in progress must have
// returned (the façade ensures it).
func (d *DB) Close() error {
	d.mu.Lock()
	if d.mu.closed {
		d.mu.Unlock()
		return base.Mark(errors.New("engine: database already closed"), ErrClosed)
	}
	d.mu.closing = true
	d.closedFlag.Store(true)
	d.notifyLocked()
	close(d.flushWork)
	close(d.compactWork)
	d.mu.Unlock()
	d.bgDone.Wait()

	var err error
	if d.commit.log != nil {
		err = d.commit.log.Sync()
		err = errors.CombineErrors(err, d.commit.logFile.Close())
		d.commit.log = nil
	}
	d.mu.Lock()
	d.mu.closed = true
	if d.readState.val != nil {
		d.readState.val.unref()
		d.readState.val = nil
	}
	for _, m := range d.mu.imm {
		m.unref()
	}
	if d.mu.mem != nil {
		d.mu.mem.unref()
	}
	d.mu.mem, d.mu.imm = nil, nil
	d.mu.Unlock()
	d.arenas.close()
	if err == nil && !d.opts.ReadOnly {
		d.deleteObsoleteFiles(false)
	}
	return errors.CombineErrors(err, d.closeResources())
}

// closeResources releases what Open acquired, in reverse order.
func (d *DB) closeResources() error {
	var err error
	if d.tables != nil {
		d.tables.close()
	}
	if d.vs != nil {
		err = errors.CombineErrors(err, d.vs.Close())
	}
	if d.dirLock != nil {
		err = errors.CombineErrors(err, d.dirLock.Close())
		d.dirLock = nil
	}
	return err
}

// flushLoop and compactLoop run background work until Close.
func (d *DB) flushLoop() {
	defer d.bgDone.Done()
	ctx := context.Background()
	for range d.flushWork {
		for {
			did, err := d.flushOne(ctx)
			if !did || err != nil {
				break
			}
		}
	}
}

func (d *DB) compactLoop() {
	defer d.bgDone.Done()
	ctx := context.Background()
	for range d.compactWork {
		for {
			did, err := d.compactOne(ctx)
			if !did || err != nil {
				break
			}
		}
	}
}

// syncDir makes directory entry changes in the database directory durable.
func (d *DB) syncDir() error { return syncDir(d.fs, d.dirname) }

func syncDir(fs vfs.FS, dirname string) error {
	dir, err := fs.OpenDir(dirname)
	if err != nil {
		return errors.Wrapf(err, "engine: opening directory %s", dirname)
	}
	err = dir.Sync()
	err = errors.CombineErrors(err, dir.Close())
	if err != nil {
		return errors.Wrapf(err, "engine: syncing directory %s", dirname)
	}
	return nil
}

// removeFiles deletes tables that were written but never installed.
func (d *DB) removeFiles(metas []*manifest.FileMetadata) {
	for _, m := range metas {
		d.tables.evict(m.FileNum)
		_ = d.fs.Remove(manifest.TableFileName(d.dirname, m.FileNum))
	}
}

// deleteObsoleteFiles deletes tables no live version references and that no
// flush or compaction is writing, WALs older than the oldest one recovery
// would replay, MANIFESTs other than the current one, and, at open (before
// anything can be writing one), temporary files a crash left behind.
func (d *DB) deleteObsoleteFiles(atOpen bool) {
	names, err := d.fs.List(d.dirname)
	if err != nil {
		return
	}
	live := d.vs.LiveFileNums()
	d.mu.Lock()
	if d.mu.manifestFailed {
		d.mu.Unlock()
		return
	}
	for n := range d.mu.pendingOutputs {
		live[n] = struct{}{}
	}
	minLog := d.vs.LogNumber()
	for _, m := range d.mu.imm {
		minLog = min(minLog, m.logNum)
	}
	if d.mu.mem != nil {
		minLog = min(minLog, d.mu.mem.logNum)
	}
	d.mu.Unlock()
	curManifest := d.vs.ManifestFileNum()
	for _, name := range names {
		kind, num, ok := manifest.ParseFileName(name)
		if !ok {
			continue
		}
		switch kind {
		case manifest.FileKindTable:
			if _, ok := live[num]; ok {
				continue
			}
			d.tables.evict(num)
		case manifest.FileKindLog:
			if num >= minLog {
				continue
			}
		case manifest.FileKindManifest:
			if num >= curManifest {
				continue
			}
		case manifest.FileKindTemp:
			if !atOpen {
				continue
			}
		default:
			continue
		}
		_ = d.fs.Remove(filepath.Join(d.dirname, name))
	}
}
