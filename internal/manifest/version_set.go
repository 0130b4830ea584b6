package manifest

import (
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/wal"
	"github.com/shaledb/shale/vfs"
)

// DefaultMaxManifestFileSize is the MANIFEST size past which LogAndApply
// starts a new MANIFEST holding a snapshot of the current state.
const DefaultMaxManifestFileSize = 4 << 20

// maxCurrentSize bounds what Recover reads of CURRENT, which holds one short
// line.
const maxCurrentSize = 4 << 10

// VersionSet is the MANIFEST and the versions it describes: the current
// version, every older version a reader still references, and the counters
// that are recorded with each edit (next file number, last sequence number,
// log number).
//
// Concurrency: every method is safe for concurrent use. LogAndApply and
// Close serialize among themselves on a lock held during MANIFEST IO; no
// other method takes that lock, so readers (Current, Version.Ref/Unref,
// LiveFileNums) and the counters never wait for a MANIFEST write.
type VersionSet struct {
	fs  vfs.FS
	dir string

	nextFileNum     atomic.Uint64
	lastSeqNum      atomic.Uint64
	logNumber       atomic.Uint64
	replayLogNumber atomic.Uint64 // see ReplayLogNumber
	manifestNum     atomic.Uint64
	maxManifestSize atomic.Int64

	// tornTail is what Load dropped at the MANIFEST's end, or nil. Set
	// before the VersionSet is shared; read-only after.
	tornTail error
	// deletedByEdit holds the tables an edit Load replayed deleted (and
	// none re-added); recordedNext the next file number the MANIFEST
	// last recorded. Set by Load; read-only after.
	deletedByEdit map[FileNum]struct{}
	recordedNext  FileNum
	// sec is the state of a secondary's VersionSet (LoadSecondary), nil
	// otherwise. Guarded by logMu.
	sec *follower
	// comparer is the database's key order (WithComparer); never nil.
	comparer *base.Comparer

	// logMu serializes LogAndApply and Close, and guards m. It is held
	// across MANIFEST writes and syncs.
	logMu sync.Mutex
	m     struct {
		file         vfs.File
		w            *wal.Writer
		snapshotSize int64  // bytes of the snapshot that starts the MANIFEST
		buf          []byte // encoding buffer, reused
		err          error  // the write failure that ended this VersionSet
		closed       bool
		readOnly     bool // opened by RecoverReadOnly: no MANIFEST is open
		pending      bool // from Load or New, before Start: no MANIFEST is open
	}

	// mu guards the current version and the list of live versions. It is
	// held only for pointer updates, never during IO.
	mu struct {
		sync.Mutex
		current *Version
		// live is the sentinel of a circular list of the versions with
		// references, current included.
		live Version
	}
}

func newVersionSet(fs vfs.FS, dir string, opts []Option) *VersionSet {
	vs := &VersionSet{fs: fs, dir: dir, comparer: base.DefaultComparer}
	for _, o := range opts {
		o(vs)
	}
	vs.maxManifestSize.Store(DefaultMaxManifestFileSize)
	vs.nextFileNum.Store(1)
	vs.mu.live.prev, vs.mu.live.next = &vs.mu.live, &vs.mu.live
	return vs
}

// Create makes the MANIFEST and CURRENT of a new, empty database in dir,
// which must exist: MANIFEST-000001 holding an empty version, and CURRENT
// naming it, published atomically (written to a temporary file, synced,
// renamed, directory synced). It fails with an error satisfying
// errors.Is(err, os.ErrExist) if dir already has a CURRENT file.
//
// On error, CURRENT either does not exist (the directory is still not a
// database) or names a complete MANIFEST of the empty database.
func Create(fs vfs.FS, dir string, opts ...Option) (*VersionSet, error) {
	cur := CurrentFileName(dir)
	if _, err := fs.Stat(cur); err == nil {
		return nil, errors.Wrapf(os.ErrExist, "manifest: %s", cur)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, errors.Wrapf(err, "manifest: checking for %s", cur)
	}
	vs := newVersionSet(fs, dir, opts)
	v := &Version{Cmp: vs.comparer.UserCompare()}
	if _, err := vs.startManifest(vs.NewFileNum(), v, 0, 0); err != nil {
		return nil, err
	}
	vs.installFirst(v)
	return vs, nil
}

// Recover opens the database in dir: it loads the MANIFEST that CURRENT
// names (see Load), and then starts a new MANIFEST holding a snapshot of that
// state and points CURRENT at it (Start), so that later appends never follow
// a torn tail. Recover deletes nothing: see the package doc for which files
// the engine may delete.
func Recover(fs vfs.FS, dir string, opts ...Option) (*VersionSet, error) {
	vs, err := Load(fs, dir, opts...)
	if err != nil {
		return nil, err
	}
	if _, err := vs.Start(&VersionEdit{}); err != nil {
		return nil, err
	}
	return vs, nil
}

// Load reads the database in dir without writing anything: it reads
// CURRENT, replays the MANIFEST it names and checks the resulting version
// (Version.CheckConsistency). The result is not writable until Start
// succeeds, so an engine can check everything the MANIFEST names, and replay
// its WALs, before it changes a file.
//
// A torn last record of the MANIFEST is dropped: an incomplete final record
// (wal's Reader.TailIncomplete), the trace of a crash during an append,
// which therefore never returned success. TornTail reports it. Any other
// damage, also at the very end (a complete record whose checksum fails, say),
// is an error marked base.ErrCorruption naming the MANIFEST and the offset,
// as are an undecodable edit, an edit that does not apply (deleting a file
// that is not there) and an inconsistent result. A missing CURRENT gives an
// error satisfying errors.Is(err, os.ErrNotExist); a CURRENT naming a missing
// MANIFEST is corruption.
//
// Every file number found in dir (tables, logs, MANIFESTs, temporary files)
// is marked used, so NewFileNum never reuses the number of a file a crash
// left behind.
func Load(fs vfs.FS, dir string, opts ...Option) (*VersionSet, error) {
	num, err := readCurrent(fs, dir)
	if err != nil {
		return nil, err
	}
	vs := newVersionSet(fs, dir, opts)
	v, err := vs.replay(num)
	if err != nil {
		return nil, err
	}
	vs.MarkFileNumUsed(num)
	names, err := fs.List(dirName(dir))
	if err != nil {
		return nil, errors.Wrapf(err, "manifest: listing %s", dirName(dir))
	}
	for _, name := range names {
		// CURRENT and LOCK parse with number 0, which is harmless.
		if _, n, ok := ParseFileName(name); ok {
			vs.MarkFileNumUsed(n)
		}
	}
	vs.manifestNum.Store(uint64(num))
	vs.replayLogNumber.Store(vs.logNumber.Load())
	vs.m.pending = true
	vs.installFirst(v)
	return vs, nil
}

// RecoverReadOnly is Load for a read-only open: the result never becomes
// writable. LogAndApply and Start on it fail with an error marked
// base.ErrInvalidArgument.
func RecoverReadOnly(fs vfs.FS, dir string, opts ...Option) (*VersionSet, error) {
	vs, err := Load(fs, dir, opts...)
	if err != nil {
		return nil, err
	}
	vs.m.pending = false
	vs.m.readOnly = true
	return vs, nil
}

// New returns the VersionSet of a new, empty database in dir, writing
// nothing: Start creates its MANIFEST and CURRENT. The caller checks that dir
// holds no database (Create does).
func New(fs vfs.FS, dir string, opts ...Option) *VersionSet {
	vs := newVersionSet(fs, dir, opts)
	vs.m.pending = true
	vs.installFirst(&Version{Cmp: vs.comparer.UserCompare()})
	return vs
}

// Start makes a VersionSet from Load or New writable: it applies e to the
// loaded state (as LogAndApply would, filling in the counters), writes the
// result as the snapshot of a new MANIFEST, syncs it and the directory, and
// points CURRENT at it. e may be empty.
//
// published reports whether CURRENT was renamed to name the new MANIFEST.
// Until then nothing the database relies on has changed: on an error before
// it, the new MANIFEST is removed and the VersionSet stays unstarted (Start
// may be tried again). An error after it (the directory sync failed) leaves
// the new state possibly durable, so the caller must keep the files e adds;
// the VersionSet is then unusable, as after a failed LogAndApply.
//
// The directory sync that precedes the rename also makes the entries of the
// files e adds durable, so the caller need not sync the directory itself.
func (vs *VersionSet) Start(e *VersionEdit) (published bool, err error) {
	vs.logMu.Lock()
	defer vs.logMu.Unlock()
	if vs.m.closed {
		return false, base.Mark(errors.New("manifest: Start on a closed VersionSet"), base.ErrClosed)
	}
	if !vs.m.pending {
		return false, base.InvalidArgumentf("manifest: Start on a VersionSet that is not freshly loaded")
	}
	v, err := vs.prepareLocked(e)
	if err != nil {
		return false, err
	}
	if published, err := vs.startManifest(vs.NewFileNum(), v, e.LogNumber, e.LastSeqNum); err != nil {
		if published {
			vs.m.pending = false
			vs.m.err = err // sticky: LogAndApply fails
		}
		return published, err
	}
	vs.m.pending = false
	vs.logNumber.Store(uint64(e.LogNumber))
	vs.replayLogNumber.Store(uint64(e.LogNumber))
	vs.SetLastSeqNum(e.LastSeqNum)
	vs.install(v)
	return true, nil
}

// TornTail returns the damage at which Load stopped replaying the MANIFEST
// (an incomplete final record, dropped), or nil if the replay reached a
// clean end. A torn tail means the recovered state may lack the last edit
// the database was making: files that edit added are unknown to it.
func (vs *VersionSet) TornTail() error { return vs.tornTail }

// DeletedByEdit reports whether an edit that Load replayed deleted table
// num (and none re-added it): a compaction input, say, whose removal a crash
// interrupted. Such a table is garbage whatever else recovery found.
func (vs *VersionSet) DeletedByEdit(num FileNum) bool {
	_, ok := vs.deletedByEdit[num]
	return ok
}

// RecordedNextFileNum returns the next file number the MANIFEST that Load
// replayed last recorded: files numbered at or above it were made after the
// last edit that reached the MANIFEST (or by edits it lost).
func (vs *VersionSet) RecordedNextFileNum() FileNum { return vs.recordedNext }

// IsEmptyManifest reports whether MANIFEST num in dir describes a database
// that never held data: every complete record decodes to an edit that adds
// no table and records last sequence number 0 (a MANIFEST with no complete
// record qualifies, and so does a torn last one). It is what an interrupted
// creation of a database leaves behind. Anything it cannot read or decode
// counts as not empty.
func IsEmptyManifest(fs vfs.FS, dir string, num FileNum) bool {
	f, err := fs.Open(ManifestFileName(dir, num))
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false
	}
	r := wal.NewReader(io.NewSectionReader(f, 0, st.Size()), wal.PointInTime)
	var e VersionEdit
	for {
		rec, err := r.Next()
		if err == io.EOF {
			_, reason := r.Stopped()
			return reason == nil || r.TailIncomplete()
		}
		if err != nil || e.Decode(rec) != nil || len(e.NewFiles) > 0 || e.LastSeqNum != 0 {
			return false
		}
	}
}

// readCurrent returns the number of the MANIFEST that dir's CURRENT names.
func readCurrent(fs vfs.FS, dir string) (_ FileNum, err error) {
	name := CurrentFileName(dir)
	f, err := fs.Open(name)
	if err != nil {
		return 0, errors.Wrapf(err, "manifest: opening %s", name)
	}
	defer closeRead(f, name, &err)
	buf := make([]byte, maxCurrentSize+1)
	n, err := f.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return 0, errors.Wrapf(err, "manifest: reading %s", name)
	}
	content := string(buf[:n])
	line, ok := strings.CutSuffix(content, "\n")
	kind, num, okName := ParseFileName(line)
	if !ok || !okName || kind != FileKindManifest || n > maxCurrentSize {
		if n > 64 {
			content = content[:64] + "..."
		}
		return 0, base.CorruptionErrorf("manifest: %s holds %q, not a MANIFEST name and a newline", name, content)
	}
	return num, nil
}

// replay reads MANIFEST num and returns the version it describes, setting
// the counters.
func (vs *VersionSet) replay(num FileNum) (_ *Version, err error) {
	name := ManifestFileName(vs.dir, num)
	f, err := vs.fs.Open(name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, base.MarkCorruption(errors.Wrapf(err, "manifest: CURRENT names %s, which is missing", name))
		}
		return nil, errors.Wrapf(err, "manifest: opening %s", name)
	}
	defer closeRead(f, name, &err)
	st, err := f.Stat()
	if err != nil {
		return nil, errors.Wrapf(err, "manifest: stat %s", name)
	}
	r := wal.NewReader(io.NewSectionReader(f, 0, st.Size()), wal.TolerateCorruptedTailRecords)
	b := newVersionBuilder(&Version{Cmp: vs.comparer.UserCompare()})
	var e VersionEdit
	recordedCmp := ""
	var haveLog, haveNext, haveLast bool
	deleted := make(map[FileNum]struct{})
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			// The reader's errors name the offset; corruption stays marked.
			return nil, errors.Wrapf(err, "manifest: replaying %s", name)
		}
		if err := e.Decode(rec); err != nil {
			return nil, errors.Wrapf(err, "manifest: %s: record ending at offset %d", name, r.Offset())
		}
		if e.ComparerName != "" {
			recordedCmp = e.ComparerName
		}
		if err := b.apply(&e); err != nil {
			return nil, base.MarkCorruption(errors.Wrapf(err, "manifest: %s: record ending at offset %d", name, r.Offset()))
		}
		for d := range e.DeletedFiles {
			deleted[d.FileNum] = struct{}{}
		}
		if e.HasLogNumber {
			vs.logNumber.Store(uint64(e.LogNumber))
			haveLog = true
		}
		if e.HasNextFileNumber {
			vs.nextFileNum.Store(uint64(e.NextFileNumber))
			vs.recordedNext = e.NextFileNumber
			haveNext = true
		}
		if e.HasLastSeqNum {
			vs.lastSeqNum.Store(uint64(e.LastSeqNum))
			haveLast = true
		}
	}
	if off, reason := r.Stopped(); reason != nil {
		if !r.TailIncomplete() {
			// A crash during an append leaves an incomplete record; this
			// is damage to one that was complete (RocksDB's rule).
			return nil, base.MarkCorruption(errors.Wrapf(reason,
				"manifest: %s is damaged after its valid prefix of %d bytes, and not by a torn write", name, off))
		}
		vs.tornTail = errors.Wrapf(reason, "manifest: %s", name)
	}
	if !haveLog || !haveNext || !haveLast {
		return nil, base.CorruptionErrorf("manifest: %s lacks a log number, next file number or last seqnum "+
			"(%d bytes, %d of them valid records)", name, st.Size(), r.Offset())
	}
	if err := vs.checkComparer(name, recordedCmp); err != nil {
		return nil, err
	}
	v, _ := b.build()
	if err := v.CheckConsistency(); err != nil {
		return nil, base.MarkCorruption(errors.Wrapf(err, "manifest: %s", name))
	}
	for _, files := range v.Levels {
		for _, f := range files {
			delete(deleted, f.FileNum) // moved, not deleted
		}
	}
	vs.deletedByEdit = deleted
	// Numbers in use must never be handed out again, whatever the recorded
	// next file number says.
	vs.MarkFileNumUsed(FileNum(vs.logNumber.Load()))
	for _, files := range v.Levels {
		for _, f := range files {
			vs.MarkFileNumUsed(f.FileNum)
		}
	}
	return v, nil
}

// closeRead closes a file opened for reading, reporting a failure in *err
// unless an error is already there: a failing close is rare, but hiding it
// would hide a failing device.
func closeRead(f vfs.File, name string, err *error) {
	if cerr := f.Close(); cerr != nil && *err == nil {
		*err = errors.Wrapf(cerr, "manifest: closing %s", name)
	}
}

// snapshotEdit returns an edit that recreates v and the counters from
// nothing: the first record of every MANIFEST.
func snapshotEdit(v *Version, logNum, nextFileNum FileNum, lastSeq base.SeqNum) *VersionEdit {
	e := &VersionEdit{}
	e.SetLogNumber(logNum)
	e.SetNextFileNumber(nextFileNum)
	e.SetLastSeqNum(lastSeq)
	for level, files := range v.Levels {
		for _, f := range files {
			e.AddFile(level, f)
		}
	}
	return e
}

// startManifest writes MANIFEST-num holding a snapshot of v and the
// counters, syncs it, and points CURRENT at it. On success it becomes the
// MANIFEST LogAndApply appends to. logMu must be held, or vs not yet shared.
//
// On failure before CURRENT was renamed, the new MANIFEST is removed (best
// effort: a leftover is garbage that no CURRENT names). After the rename it
// is kept, because CURRENT may name it.
func (vs *VersionSet) startManifest(num FileNum, v *Version, logNum FileNum, lastSeq base.SeqNum) (renamed bool, err error) {
	name := ManifestFileName(vs.dir, num)
	snap := snapshotEdit(v, logNum, FileNum(vs.nextFileNum.Load()), lastSeq)
	if !vs.comparer.IsBytewise() {
		snap.ComparerName = vs.comparer.Name
	}
	vs.m.buf = snap.Encode(vs.m.buf[:0])
	f, err := vs.fs.Create(name)
	if err != nil {
		return false, errors.Wrapf(err, "manifest: creating %s", name)
	}
	w := wal.NewWriter(f)
	err = func() error {
		if _, err := w.WriteRecord(vs.m.buf); err != nil {
			return err
		}
		if err := w.Sync(); err != nil {
			return err
		}
		// CURRENT must not name a MANIFEST whose directory entry a crash
		// could lose.
		if err := vs.syncDir(); err != nil {
			return err
		}
		renamed, err = vs.setCurrent(num)
		return err
	}()
	if err != nil {
		_ = f.Close()
		if !renamed {
			_ = vs.fs.Remove(name)
		}
		return renamed, errors.Wrapf(err, "manifest: starting %s", name)
	}
	vs.m.file, vs.m.w, vs.m.snapshotSize = f, w, w.Size()
	vs.manifestNum.Store(uint64(num))
	return true, nil
}

// setCurrent points CURRENT at MANIFEST-num: it writes a temporary file,
// syncs it, renames it over CURRENT and syncs the directory. renamed reports
// whether the rename happened, after which CURRENT may name the new MANIFEST
// even if an error is returned.
func (vs *VersionSet) setCurrent(num FileNum) (renamed bool, err error) {
	tmp := TempFileName(vs.dir, num)
	f, err := vs.fs.Create(tmp)
	if err != nil {
		return false, errors.Wrapf(err, "manifest: creating %s", tmp)
	}
	_, err = io.WriteString(f, manifestPrefix+num.String()+"\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = vs.fs.Rename(tmp, CurrentFileName(vs.dir))
	}
	if err != nil {
		_ = vs.fs.Remove(tmp)
		return false, errors.Wrapf(err, "manifest: writing %s", tmp)
	}
	return true, vs.syncDir()
}

func (vs *VersionSet) syncDir() error {
	name := dirName(vs.dir)
	d, err := vs.fs.OpenDir(name)
	if err != nil {
		return errors.Wrapf(err, "manifest: opening directory %s", name)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return errors.Wrapf(err, "manifest: syncing directory %s", name)
}

func dirName(dir string) string {
	if dir == "" {
		return "."
	}
	return dir
}

// SetMaxManifestFileSize sets the size past which LogAndApply starts a new
// MANIFEST (RocksDB's max_manifest_file_size); n <= 0 restores
// DefaultMaxManifestFileSize. A MANIFEST is also kept until it is twice the
// size of the snapshot it starts with, so a large database does not rewrite
// its snapshot on every edit.
func (vs *VersionSet) SetMaxManifestFileSize(n int64) {
	if n <= 0 {
		n = DefaultMaxManifestFileSize
	}
	vs.maxManifestSize.Store(n)
}

// LogAndApply writes e to the MANIFEST, syncs it, and then installs the
// version it makes as the current one: readers see either the old version or
// the new one, and the new one only once it is durable.
//
// Requirements: the edit must apply to the current version (it deletes only
// files there, adds only files not there) and leave it consistent, or
// LogAndApply returns an error marked base.ErrInvalidArgument and writes
// nothing; the engine ensures this by building edits against Current while
// the files involved are marked CompactionInProgress. Calls serialize on an
// internal lock held across the write and sync, so the caller must not hold
// its DB mutex, or any lock readers need, during the call.
//
// LogAndApply fills in the counters as LevelDB does: the log number is
// kept if e has none (a smaller one than the current is an error), the next
// file number is the VersionSet's (raised first past every file number e
// names), and the last sequence number is the larger of e's and
// LastSeqNum's. So e is modified. Its FileMetadata become the version's.
//
// When the MANIFEST has grown past SetMaxManifestFileSize, the new state is
// written as the snapshot of a new MANIFEST, and CURRENT is switched to it.
//
// If a write or sync fails, the version is not installed and the error is
// returned, now and from every later LogAndApply: a MANIFEST that could not
// be written is not trusted (after a failed fsync the kernel may have
// dropped the data). The edit may or may not be durable, so the engine must
// keep the files of both the old and the new version, stop background work,
// and leave recovery to a reopen, which finds one state or the other.
func (vs *VersionSet) LogAndApply(e *VersionEdit) error {
	vs.logMu.Lock()
	defer vs.logMu.Unlock()
	if vs.m.closed {
		return base.Mark(errors.New("manifest: LogAndApply on a closed VersionSet"), base.ErrClosed)
	}
	if vs.m.readOnly {
		return base.InvalidArgumentf("manifest: LogAndApply on a VersionSet recovered read-only")
	}
	if vs.m.pending {
		return base.InvalidArgumentf("manifest: LogAndApply before Start")
	}
	if vs.m.err != nil {
		return errors.Wrap(vs.m.err, "manifest: an earlier MANIFEST write failed; reopen to recover")
	}
	v, err := vs.prepareLocked(e)
	if err != nil {
		return err
	}
	if err := vs.writeLocked(e, v); err != nil {
		vs.m.err = err
		return err
	}

	// Until another record follows this one, a torn tail could take it
	// away and with it the new log number: recovery would then replay from
	// the old one.
	vs.replayLogNumber.Store(vs.logNumber.Load())
	vs.logNumber.Store(uint64(e.LogNumber))
	vs.SetLastSeqNum(e.LastSeqNum)
	vs.install(v)
	return nil
}

// prepareLocked fills in e's counters (see LogAndApply) and returns the
// version e makes of the current one, checked; the version is not installed.
// logMu must be held.
func (vs *VersionSet) prepareLocked(e *VersionEdit) (*Version, error) {
	curLog := FileNum(vs.logNumber.Load())
	switch {
	case !e.HasLogNumber:
		e.SetLogNumber(curLog)
	case e.LogNumber < curLog:
		return nil, base.InvalidArgumentf("manifest: edit's log number %s is below the current %s", e.LogNumber, curLog)
	default:
		vs.MarkFileNumUsed(e.LogNumber)
	}
	for _, nf := range e.NewFiles {
		if nf.Meta != nil {
			vs.MarkFileNumUsed(nf.Meta.FileNum)
		}
	}
	if e.HasNextFileNumber && e.NextFileNumber > 0 {
		vs.MarkFileNumUsed(e.NextFileNumber - 1)
	}
	e.SetNextFileNumber(FileNum(vs.nextFileNum.Load()))
	if last := vs.LastSeqNum(); !e.HasLastSeqNum || e.LastSeqNum < last {
		e.SetLastSeqNum(last)
	}

	cur := vs.mu.current // only LogAndApply and Start change it, under logMu
	b := newVersionBuilder(cur)
	if err := b.apply(e); err != nil {
		return nil, base.Mark(err, base.ErrInvalidArgument)
	}
	v, changed := b.build()
	if err := checkChanged(v, changed); err != nil {
		return nil, base.Mark(errors.Wrap(err, "manifest: edit would make an inconsistent version"), base.ErrInvalidArgument)
	}
	return v, nil
}

// writeLocked makes e durable: appended to the MANIFEST, or, when the
// MANIFEST is due for rotation, as part of a snapshot of v in a new one.
func (vs *VersionSet) writeLocked(e *VersionEdit, v *Version) error {
	if size := vs.m.w.Size(); size >= max(vs.maxManifestSize.Load(), 2*vs.m.snapshotSize) {
		oldFile, oldW := vs.m.file, vs.m.w
		if _, err := vs.startManifest(vs.NewFileNum(), v, e.LogNumber, e.LastSeqNum); err != nil {
			return err
		}
		// CURRENT names the new MANIFEST now; the old one is garbage (the
		// engine deletes it, see the package doc). A failure to close it
		// still fails the edit, so that no injected error goes unseen.
		err := oldW.Close()
		if cerr := oldFile.Close(); err == nil {
			err = cerr
		}
		return errors.Wrap(err, "manifest: closing the previous MANIFEST")
	}
	vs.m.buf = e.Encode(vs.m.buf[:0])
	if _, err := vs.m.w.WriteRecord(vs.m.buf); err != nil {
		return errors.Wrapf(err, "manifest: writing MANIFEST-%s", FileNum(vs.manifestNum.Load()))
	}
	if err := vs.m.w.Sync(); err != nil {
		return errors.Wrapf(err, "manifest: syncing MANIFEST-%s", FileNum(vs.manifestNum.Load()))
	}
	return nil
}

// installFirst makes v, the first version, current.
func (vs *VersionSet) installFirst(v *Version) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	vs.linkLocked(v)
	vs.mu.current = v
}

// install makes v current and drops the VersionSet's reference to the old
// current version.
func (vs *VersionSet) install(v *Version) {
	vs.mu.Lock()
	vs.linkLocked(v)
	old := vs.mu.current
	vs.mu.current = v
	vs.mu.Unlock()
	old.Unref()
}

// linkLocked gives v its first reference, the VersionSet's, and adds it to
// the live list. vs.mu must be held.
func (vs *VersionSet) linkLocked(v *Version) {
	v.vs = vs
	v.refs.Store(1)
	head := &vs.mu.live
	v.prev, v.next = head.prev, head
	head.prev.next = v
	head.prev = v
}

// unlinkVersion removes v, whose last reference was dropped, from the live
// list.
func (vs *VersionSet) unlinkVersion(v *Version) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	v.prev.next = v.next
	v.next.prev = v.prev
	v.prev, v.next = nil, nil
}

// Current returns the current version with a reference added for the
// caller, who must Unref it. It never waits for LogAndApply's IO.
func (vs *VersionSet) Current() *Version {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	v := vs.mu.current
	v.Ref()
	return v
}

// LiveFileNums returns the file numbers of the tables in every version that
// is still referenced: the current one and any older one a reader holds.
// The engine deletes a table only if its number is not in the set, so no
// reader loses a file it can see. Tables being written and not yet installed
// by LogAndApply are not in the set; the engine protects those itself. The
// map is new and belongs to the caller.
func (vs *VersionSet) LiveFileNums() map[FileNum]struct{} {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	live := make(map[FileNum]struct{})
	for v := vs.mu.live.next; v != &vs.mu.live; v = v.next {
		for _, files := range v.Levels {
			for _, f := range files {
				live[f.FileNum] = struct{}{}
			}
		}
	}
	return live
}

// NumLiveVersions returns the number of versions still referenced, the
// current one included.
func (vs *VersionSet) NumLiveVersions() int {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	n := 0
	for v := vs.mu.live.next; v != &vs.mu.live; v = v.next {
		n++
	}
	return n
}

// NewFileNum allocates a file number.
func (vs *VersionSet) NewFileNum() FileNum { return FileNum(vs.nextFileNum.Add(1) - 1) }

// MarkFileNumUsed makes sure NewFileNum never returns n or anything below
// it, as for a WAL found on disk during recovery.
func (vs *VersionSet) MarkFileNumUsed(n FileNum) {
	for {
		next := vs.nextFileNum.Load()
		if next > uint64(n) || vs.nextFileNum.CompareAndSwap(next, uint64(n)+1) {
			return
		}
	}
}

// NextFileNum returns the number NewFileNum would return next.
func (vs *VersionSet) NextFileNum() FileNum { return FileNum(vs.nextFileNum.Load()) }

// LastSeqNum returns the last sequence number assigned, as last set by
// SetLastSeqNum or recovered from the MANIFEST.
func (vs *VersionSet) LastSeqNum() base.SeqNum { return base.SeqNum(vs.lastSeqNum.Load()) }

// SetLastSeqNum raises the last sequence number to s. It never lowers it: a
// smaller s (from a writer that finished after a later one) is ignored. The
// value is recorded with the next LogAndApply.
func (vs *VersionSet) SetLastSeqNum(s base.SeqNum) {
	for {
		cur := vs.lastSeqNum.Load()
		if cur >= uint64(s) || vs.lastSeqNum.CompareAndSwap(cur, uint64(s)) {
			return
		}
	}
}

// LogNumber returns the number of the oldest WAL that may hold data not in
// tables.
func (vs *VersionSet) LogNumber() FileNum { return FileNum(vs.logNumber.Load()) }

// ReplayLogNumber returns the number of the oldest WAL a recovery could
// replay: LogNumber, or, should the MANIFEST's last record be lost to a torn
// tail, the log number before it. WALs numbered below it are obsolete. So
// the WAL a flush made obsolete is kept until another edit follows the
// flush's, and a MANIFEST that loses the flush's record still finds the
// flushed writes in a WAL.
func (vs *VersionSet) ReplayLogNumber() FileNum {
	return min(FileNum(vs.replayLogNumber.Load()), FileNum(vs.logNumber.Load()))
}

// ManifestFileNum returns the number of the MANIFEST that CURRENT names and
// LogAndApply appends to.
func (vs *VersionSet) ManifestFileNum() FileNum { return FileNum(vs.manifestNum.Load()) }

// Close closes the MANIFEST. Everything LogAndApply applied is already
// durable, so Close does not sync. Later LogAndApply calls fail with an
// error marked base.ErrClosed; versions stay usable, and references to them
// may still be dropped. A second Close does nothing.
func (vs *VersionSet) Close() error {
	vs.logMu.Lock()
	defer vs.logMu.Unlock()
	if vs.m.closed {
		return nil
	}
	vs.m.closed = true
	if vs.sec != nil && vs.sec.file != nil {
		err := vs.sec.file.Close()
		vs.sec.file = nil
		return errors.Wrapf(err, "manifest: closing MANIFEST-%s", vs.sec.num)
	}
	if vs.m.readOnly || vs.m.pending || vs.m.file == nil {
		return nil
	}
	var err error
	if vs.m.err == nil {
		// After a failure the writer returns its sticky error; only the
		// file needs closing then.
		err = vs.m.w.Close()
	}
	if cerr := vs.m.file.Close(); err == nil {
		err = cerr
	}
	return errors.Wrapf(err, "manifest: closing MANIFEST-%s", FileNum(vs.manifestNum.Load()))
}
