package engine

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/ratelimit"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
)

// openReadEnv tags the reads made while opening: table opens and the check
// of tables written from recovered WALs (RocksDB's kDBOpen).
var openReadEnv = sstable.ReadEnv{
	IO:              ioctx.IOOptions{Activity: ioctx.ActivityDBOpen},
	VerifyChecksums: true,
	FillCache:       true,
}

// resolveOptions returns a copy of opts (the defaults when nil) with every
// zero field defaulted, and checks it: Open and NewTableWriter take the same
// options and must refuse the same ones.
func resolveOptions(opts *Options) (Options, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	o.EnsureDefaults()
	return o, o.Validate()
}

// openDatabase opens the database in dirname, creating it unless opts says not to.
// opts may be nil for the defaults; it is not modified or retained.
//
// Opening loads the state the MANIFEST records, checks that every table it
// names exists with the recorded size and opens it (reads tagged DBOpen),
// replays the WAL files written since the last flush into new L0 tables
// (applying opts.WALRecoveryMode to damage; by default only an incomplete
// final record, the trace of a crash during a write, is dropped), records
// the result in a new MANIFEST, and starts the background flush and
// compaction goroutines. A LOCK file keeps a second openDatabase of the same
// directory, by this process or another, from succeeding until Close.
//
// An openDatabase that fails leaves every file as it was: everything is
// checked before CURRENT changes, and the files made before that are
// removed, the LOCK file included if this call created it (one that existed
// before is left alone). A directory without CURRENT that holds a
// database's files is refused rather than overwritten. After a recovery
// that was not clean (a torn MANIFEST tail, WAL data dropped by a lenient
// mode) nothing is deleted that the recovered state cannot account for:
// such files are renamed aside (NNNNNN.sst.orphan, NNNNNN.log.corrupt, ...)
// and reported to opts.Logger.
func openDatabase(dirname string, opts *Options) (_ *database, err error) {
	o, err := resolveOptions(opts)
	if err != nil {
		return nil, err
	}
	d := &database{dirname: dirname, opts: o, fs: o.FS}
	if o.Secondary {
		d.opts.ReadOnly = true // everything read-only refuses, a secondary refuses too
	}
	if d.fs == nil {
		d.fs = vfs.Default
	}
	d.opts.FS = d.fs
	switch {
	case o.DisableStatistics:
		d.stats = nil
	case o.Statistics != nil:
		d.stats = o.Statistics
	case o.StatsLevel != nil:
		d.stats = statistics.New(*o.StatsLevel)
	default:
		d.stats = statistics.New(statistics.DefaultLevel)
	}
	d.opts.Statistics = d.stats
	if o.RateLimiter == nil && o.RateLimit > 0 {
		mode := ratelimit.ModeAll
		if o.RateLimitMode != nil {
			mode = *o.RateLimitMode
		}
		l, err := ratelimit.New(ratelimit.Options{
			BytesPerSecond: o.RateLimit, RefillPeriod: o.RateLimitRefillPeriod, Fairness: o.RateLimitFairness,
			Mode: mode, AutoTuned: o.RateLimitAutoTuned,
		})
		if err != nil {
			return nil, base.Mark(errors.Wrap(err, "engine: rate limiter"), ErrInvalidArgument)
		}
		d.opts.RateLimiter, d.ownedLimiter = l, l
	}
	if o.BlockCacheSize > 0 {
		d.cache = cache.NewWithOptions(o.BlockCacheSize, cache.Options{
			HighPriorityPoolRatio: max(o.HighPriorityPoolRatio, 0),
			GoHeap:                o.BlockCacheOnGoHeap,
		})
		d.cacheID = d.cache.NewID()
	}
	d.mu.changed = make(chan struct{})
	d.mu.pendingOutputs = make(map[manifest.FileNum]struct{})
	d.flushWork = make(chan struct{}, 1)
	d.compactWork = make(chan struct{}, 1)
	d.setEventListener(o.EventListener)

	// lockCreated: LOCK did not exist before this call took the lock.
	var lockCreated bool
	defer func() {
		if err != nil {
			d.freeMemTables()
			if lockCreated {
				d.removeLock()
			}
			d.closeResources()
			d.closeEvents()
		}
	}()
	newTables := func() {
		d.tables = newTableCache(d.fs, dirname, fileio.Options{
			Stats: d.stats, Limiter: d.opts.RateLimiter, Mmap: d.opts.MmapReads,
		}, d.cache, d.cacheID, d.stats, d.opts.MaxOpenFiles)
		d.tables.cacheIndexAndFilterBlocks = d.opts.CacheIndexAndFilterBlocks
		d.tables.comparer = d.opts.Comparer
	}
	if d.opts.Secondary {
		// No LOCK, no recovery, no background work: see secondary.go. The
		// merge operator is checked as a primary's open checks it.
		if err := d.checkMergeOperatorFile(); err != nil {
			return nil, err
		}
		newTables()
		if err := d.openSecondary(); err != nil {
			return nil, err
		}
		return d, nil
	}
	if lockCreated, err = d.lockAndLoad(); err != nil {
		return nil, err
	}
	if err := d.checkMergeOperatorFile(); err != nil {
		return nil, err
	}
	newTables()

	if err := d.checkTables(); err != nil {
		return nil, err
	}
	ctx := context.Background()
	if err := d.openTables(ctx); err != nil {
		return nil, err
	}
	r := &recovery{d: d, mode: d.opts.WALRecoveryMode}
	if err := r.run(ctx); err != nil {
		r.abandon()
		return nil, err
	}
	r.report()
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

// lockAndLoad creates or checks the directory, takes the LOCK and loads the
// MANIFEST (manifest.Load, which writes nothing), or prepares a new database
// whose MANIFEST the commit creates. lockCreated reports, even with an
// error, that the lock is held on a LOCK file this call created.
func (d *database) lockAndLoad() (lockCreated bool, err error) {
	exists, err := d.hasCurrent()
	if err != nil {
		return false, err
	}
	if !exists {
		// Checked before the LOCK is created, so that a refusal changes
		// nothing, and again under it.
		if err := d.refuseWithoutCurrent(); err != nil {
			return false, err
		}
	}
	switch {
	case exists && d.opts.ErrorIfExists:
		return false, base.Mark(errors.Newf("engine: database %q already exists (error_if_exists)", d.dirname),
			ErrInvalidArgument)
	case !exists && (d.opts.ErrorIfMissing || d.opts.ReadOnly):
		return false, base.Mark(errors.Newf("engine: database %q does not exist (create_if_missing=false)", d.dirname),
			ErrInvalidArgument)
	}
	if !exists {
		if err := d.fs.MkdirAll(d.dirname, 0o755); err != nil {
			return false, errors.Wrapf(err, "engine: creating %s", d.dirname)
		}
		// The new directory's own entry must be durable too, or a crash can
		// take the whole database with it.
		if err := syncDir(d.fs, filepath.Dir(filepath.Clean(d.dirname))); err != nil {
			return false, err
		}
	}
	if lockCreated, err = d.lock(); err != nil {
		return false, err
	}
	// Another process may have created the database before the lock was
	// ours.
	if exists, err = d.hasCurrent(); err != nil {
		return lockCreated, err
	}
	switch {
	case exists && d.opts.ReadOnly:
		d.vs, err = manifest.RecoverReadOnly(d.fs, d.dirname, manifest.WithComparer(d.opts.Comparer))
	case exists:
		d.vs, err = manifest.Load(d.fs, d.dirname, manifest.WithComparer(d.opts.Comparer))
	default:
		if err := d.refuseWithoutCurrent(); err != nil {
			return lockCreated, err
		}
		d.vs, err = d.newVersionSet()
	}
	if err != nil {
		return lockCreated, errors.Wrapf(err, "engine: loading the MANIFEST of %q", d.dirname)
	}
	d.vs.SetMaxManifestFileSize(d.opts.MaxManifestFileSize)
	d.mu.lastSeq = d.vs.LastSeqNum()
	return lockCreated, nil
}

// hasCurrent reports whether the directory has a CURRENT file.
func (d *database) hasCurrent() (bool, error) {
	current := manifest.CurrentFileName(d.dirname)
	_, err := d.fs.Stat(current)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, errors.Wrapf(err, "engine: checking %s", current)
	}
	return err == nil, nil
}

// newVersionSet prepares the MANIFEST of a new database in a directory
// without CURRENT, past the numbers of any files an interrupted creation
// left there.
func (d *database) newVersionSet() (*manifest.VersionSet, error) {
	vs := manifest.New(d.fs, d.dirname, manifest.WithComparer(d.opts.Comparer))
	names, err := d.fs.List(d.dirname)
	if err != nil {
		return nil, errors.Wrapf(err, "engine: listing %s", d.dirname)
	}
	for _, name := range names {
		if _, num, ok := manifest.ParseFileName(name); ok {
			vs.MarkFileNumUsed(num)
		}
	}
	return vs, nil
}

// refuseWithoutCurrent fails if the directory, which has no CURRENT, holds
// what only a database holds: a table, a WAL with data, or a MANIFEST that
// records data. Creating a database there would write MANIFEST-000001 over
// the old one and then delete every table it does not name. What an
// interrupted creation leaves (a MANIFEST of an empty database, an empty
// WAL, a temporary file, LOCK) is not refused, nor are files whose names are
// not a database's.
//
// The error is marked ErrCorruption, not ErrInvalidArgument: the names are
// ones only a shale database writes, so this is a database that lost its
// CURRENT, which is damage, rather than a wrong directory.
func (d *database) refuseWithoutCurrent() error {
	names, err := d.fs.List(d.dirname)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return errors.Wrapf(err, "engine: listing %s", d.dirname)
	}
	var found []string
	for _, name := range names {
		kind, num, ok := manifest.ParseFileName(name)
		if !ok {
			continue
		}
		switch kind {
		case manifest.FileKindTable:
		case manifest.FileKindLog:
			st, err := d.fs.Stat(filepath.Join(d.dirname, name))
			if err == nil && st.Size() == 0 {
				continue
			}
		case manifest.FileKindManifest:
			if manifest.IsEmptyManifest(d.fs, d.dirname, num) {
				continue
			}
		default:
			continue
		}
		found = append(found, name)
	}
	if len(found) == 0 {
		return nil
	}
	const show = 8
	list := strings.Join(found[:min(len(found), show)], ", ")
	if len(found) > show {
		list += fmt.Sprintf(" and %d more", len(found)-show)
	}
	return base.CorruptionErrorf("engine: directory %q has no CURRENT but holds %s: refusing to create a database over it "+
		"(restore CURRENT, or move those files away)", d.dirname, list)
}

// lock takes the directory's LOCK. Only a lock another holder has is "in
// use". A read-only open that may not write the directory (no permission, a
// read-only filesystem) opens without the lock, as RocksDB's read-only opens
// always do: it writes nothing, so it cannot harm a writer, though a writer's
// changes can make its reads fail.
//
// created reports that the lock was taken and LOCK did not exist just
// before: this Open made it, and removes it if it fails (removeLock). If
// another opener created LOCK between the check and the lock, and let it
// go, created may be true of a LOCK that is not this Open's: removing it is
// still harmless, since nobody else holds it and the next Lock creates it
// again. A LOCK that existed before the check is never removed.
func (d *database) lock() (created bool, err error) {
	name := manifest.LockFileName(d.dirname)
	_, statErr := d.fs.Stat(name)
	missing := errors.Is(statErr, os.ErrNotExist)
	lock, err := d.fs.Lock(name)
	if err == nil {
		d.dirLock = lock
		return missing, nil
	}
	denied := errors.Is(err, fs.ErrPermission)
	readOnlyFS := errors.Is(err, syscall.EROFS)
	switch {
	case errors.Is(err, vfs.ErrLocked):
		return false, errors.Wrapf(err, "engine: database %q is in use", d.dirname)
	case d.opts.ReadOnly && (denied || readOnlyFS):
		return false, nil
	case denied:
		return false, errors.Wrapf(err, "engine: cannot lock database %q: permission denied", d.dirname)
	case readOnlyFS:
		return false, errors.Wrapf(err, "engine: cannot lock database %q: read-only file system (open it with read_only=true)",
			d.dirname)
	}
	return false, errors.Wrapf(err, "engine: cannot lock database %q", d.dirname)
}

// removeLock removes the LOCK file of an Open that created it and failed,
// so that the failed Open leaves the directory as it found it. It runs while
// the lock is still held (closeResources releases it afterwards), so no
// other opener can hold it. The order matters: released first, the file
// could be locked by another opener between the release and the removal,
// which would then hold a lock on a file no longer named LOCK while a third
// opener locks a new one. Removed first, an opener that opened the old file
// before the removal and locks it after the release holds a lock on an
// unnamed file too; vfs's Lock checks, once it holds the lock, that the name
// still leads to the file it locked, and tries again if not.
func (d *database) removeLock() {
	if d.dirLock == nil {
		return
	}
	name := manifest.LockFileName(d.dirname)
	if err := d.fs.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
		d.logger().Warn("engine: a failed Open could not remove the LOCK file it created",
			"db", d.dirname, "file", name, "error", err.Error())
	}
}

// checkTables checks that every table the MANIFEST names exists with the
// size the MANIFEST records (RocksDB's paranoid checks at open), reporting
// every mismatch in one error marked ErrCorruption.
func (d *database) checkTables() error {
	v := d.vs.Current()
	defer v.Unref()
	var problems []string
	for level, files := range v.Levels {
		for _, f := range files {
			name := manifest.TableFileName(d.dirname, f.FileNum)
			st, err := d.fs.Stat(name)
			switch {
			case errors.Is(err, os.ErrNotExist):
				problems = append(problems, fmt.Sprintf("L%d table %s is missing", level, name))
			case err != nil:
				return errors.Wrapf(err, "engine: checking table %s", name)
			case st.Size() != int64(f.Size):
				problems = append(problems, fmt.Sprintf("L%d table %s has %d bytes, expected %d",
					level, name, st.Size(), f.Size))
			}
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return base.CorruptionErrorf("engine: MANIFEST-%s of %q does not match the tables: %s",
		d.vs.ManifestFileNum(), d.dirname, strings.Join(problems, "; "))
}

// freeMemTables releases the memtables of an Open that failed, and the
// arenas kept for reuse.
func (d *database) freeMemTables() {
	d.mu.Lock()
	for _, m := range d.mu.imm {
		m.unref()
	}
	if d.mu.mem != nil {
		d.mu.mem.unref()
	}
	d.mu.mem, d.mu.imm = nil, nil
	d.mu.Unlock()
	d.arenas.close()
}

// openTables opens every table of the current version, reading each one's
// footer, index, filter and properties with activity DBOpen. With a bound on
// open files, only as many as the bound are opened.
func (d *database) openTables(ctx context.Context) error {
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

// Close flushes the memtables if they hold DisableWAL writes, stops
// background work, syncs the WAL and releases the database.
// Calls made after Close return ErrClosed; calls in progress must have
// returned (the façade ensures it).
func (d *database) Close() error {
	// Writes made without the WAL exist only in memtables: flush them first,
	// as RocksDB's close does when it holds unpersisted data, so that a
	// clean Close loses no acknowledged write.
	var flushErr error
	if d.unlogged.Load() && !d.closedFlag.Load() {
		if flushErr = d.Flush(context.Background()); errors.Is(flushErr, ErrClosed) {
			flushErr = nil // a concurrent Close got there first, and says so below
		}
	}
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

	// A large batch's WAL may have been synced in the background
	// (syncPrevWAL) after the last write: its failure is Close's to report,
	// or the batch's loss would go unsaid.
	err := d.awaitPrevWALSync()
	if d.commit.log != nil {
		err = errors.CombineErrors(err, d.commit.log.Sync())
		err = errors.CombineErrors(err, d.commit.logFile.Close())
		d.commit.log = nil
	}
	d.mu.Lock()
	d.mu.closed = true
	if rs := d.readState.Swap(nil); rs != nil {
		// Readers that load nil from now on get ErrClosed; those that
		// hold rs keep it until they release it.
		rs.unref()
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
	d.closeEvents()
	err = errors.CombineErrors(flushErr, err)
	return errors.CombineErrors(err, d.closeResources())
}

// closeResources releases what Open acquired, in reverse order.
func (d *database) closeResources() error {
	var err error
	if d.ownedLimiter != nil {
		d.ownedLimiter.Close()
	}
	d.closeSecondary()
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
func (d *database) flushLoop() {
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

func (d *database) compactLoop() {
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
func (d *database) syncDir() error { return syncDir(d.fs, d.dirname) }

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
