package manifest

import (
	"io"
	"os"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/wal"
	"github.com/shaledb/shale/vfs"
)

// maxSecondaryAttempts bounds how often LoadSecondary and CatchUp read
// CURRENT again after the MANIFEST it named vanished: each time means the
// primary rotated its MANIFEST in between, which takes it an fsync or more.
const maxSecondaryAttempts = 100

// follower is the state of a VersionSet that follows the MANIFEST another
// process is writing (LoadSecondary): the MANIFEST it reads, kept open so
// that the primary deleting it after a rotation does not cut a read short,
// and the end of the last complete record read.
type follower struct {
	num  FileNum
	file vfs.File
	off  int64
}

// LoadSecondary is Load for a secondary instance: a read-only VersionSet of
// a database that another process, the primary, holds open and keeps
// changing. It writes nothing, takes no lock and marks no file number used.
// The MANIFEST's tail may be a record the primary is appending: an
// incomplete or damaged last record, with nothing intact after it, is not
// an error, it is left for CatchUp to read once complete. Damage with an
// intact record after it is corruption, as in Load.
//
// LogAndApply and Start on the result fail with an error marked
// base.ErrInvalidArgument; CatchUp reads what the primary appended since.
// As for Load, WithComparer gives the key order, and a MANIFEST that
// records another fails the load (and a CatchUp onto such a MANIFEST).
func LoadSecondary(fs vfs.FS, dir string, opts ...Option) (*VersionSet, error) {
	vs := newVersionSet(fs, dir, opts)
	vs.m.readOnly = true
	vs.sec = &follower{}
	if _, err := vs.CatchUp(); err != nil {
		_ = vs.Close()
		return nil, err
	}
	return vs, nil
}

// IsSecondary reports whether vs came from LoadSecondary.
func (vs *VersionSet) IsSecondary() bool { return vs.sec != nil }

// CatchUp brings a VersionSet from LoadSecondary up to the MANIFEST as the
// primary has written it so far: it reads the records appended since the
// last call, or, when CURRENT names a newer MANIFEST (the primary rotated
// it), that MANIFEST from its start. The new state becomes current, with
// the counters (log number, last sequence number, next file number) the
// records set. changed reports whether anything was read. Versions from
// before stay valid for whoever references them.
//
// Calls serialize with each other; readers (Current and the counters) never
// wait for them. On error the VersionSet keeps its state, and a later
// CatchUp may succeed.
func (vs *VersionSet) CatchUp() (changed bool, err error) {
	vs.logMu.Lock()
	defer vs.logMu.Unlock()
	if vs.sec == nil {
		return false, base.InvalidArgumentf("manifest: CatchUp on a VersionSet that is not a secondary's")
	}
	if vs.m.closed {
		return false, base.Mark(errors.New("manifest: CatchUp on a closed VersionSet"), base.ErrClosed)
	}
	for attempt := 0; ; attempt++ {
		num, err := readCurrent(vs.fs, vs.dir)
		if err != nil {
			return false, err
		}
		if num == vs.sec.num {
			return vs.followLocked()
		}
		name := ManifestFileName(vs.dir, num)
		f, err := vs.fs.Open(name)
		if errors.Is(err, os.ErrNotExist) && attempt < maxSecondaryAttempts {
			// Rotated again, and this one deleted, since CURRENT was read.
			continue
		}
		if errors.Is(err, os.ErrNotExist) {
			// CURRENT has named it all along: damage, as for Load.
			return false, base.MarkCorruption(errors.Wrapf(err, "manifest: CURRENT names %s, which is missing", name))
		}
		if err != nil {
			return false, errors.Wrapf(err, "manifest: opening %s, which CURRENT names", name)
		}
		if err := vs.switchLocked(num, f); err != nil {
			_ = f.Close()
			return false, err
		}
		return true, nil
	}
}

// switchLocked replays MANIFEST num, open as f, from its start, and makes it
// the one followed.
func (vs *VersionSet) switchLocked(num FileNum, f vfs.File) error {
	st, err := f.Stat()
	if err != nil {
		return errors.Wrapf(err, "manifest: stat %s", ManifestFileName(vs.dir, num))
	}
	c := counters{}
	v, off, n, err := vs.readEdits(f, ManifestFileName(vs.dir, num), 0, st.Size(),
		&Version{Cmp: vs.comparer.UserCompare()}, &c)
	if err != nil {
		return err
	}
	if n == 0 || !c.haveLog || !c.haveNext || !c.haveLast {
		// CURRENT names a MANIFEST only once its first record, a snapshot
		// with every counter, is synced.
		return base.CorruptionErrorf("manifest: %s lacks a log number, next file number or last seqnum "+
			"(%d bytes, %d of them valid records)", ManifestFileName(vs.dir, num), st.Size(), off)
	}
	if err := v.CheckConsistency(); err != nil {
		return base.MarkCorruption(errors.Wrapf(err, "manifest: %s", ManifestFileName(vs.dir, num)))
	}
	if vs.sec.file != nil {
		_ = vs.sec.file.Close()
	}
	vs.sec.num, vs.sec.file, vs.sec.off = num, f, off
	vs.manifestNum.Store(uint64(num))
	vs.applyCounters(&c)
	if vs.mu.current == nil {
		vs.installFirst(v)
	} else {
		vs.install(v)
	}
	return nil
}

// followLocked reads the records appended to the followed MANIFEST since the
// last read.
func (vs *VersionSet) followLocked() (bool, error) {
	st, err := vs.sec.file.Stat()
	if err != nil {
		return false, errors.Wrapf(err, "manifest: stat %s", ManifestFileName(vs.dir, vs.sec.num))
	}
	if st.Size() <= vs.sec.off {
		return false, nil
	}
	cur := vs.mu.current // only CatchUp changes it, under logMu
	c := counters{}
	v, off, n, err := vs.readEdits(vs.sec.file, ManifestFileName(vs.dir, vs.sec.num), vs.sec.off, st.Size(), cur, &c)
	if err != nil || n == 0 {
		return false, err
	}
	vs.sec.off = off
	vs.applyCounters(&c)
	vs.install(v)
	return true, nil
}

// counters are what the edits read by one CatchUp set.
type counters struct {
	haveLog, haveNext, haveLast bool
	logNum, nextNum             FileNum
	lastSeq                     base.SeqNum
	// comparerName is the comparer an edit named (tag 1), if any.
	comparerName string
}

func (vs *VersionSet) applyCounters(c *counters) {
	if c.haveLog {
		vs.logNumber.Store(uint64(c.logNum))
		vs.replayLogNumber.Store(uint64(c.logNum))
	}
	if c.haveNext {
		vs.nextFileNum.Store(uint64(c.nextNum))
	}
	if c.haveLast {
		vs.lastSeqNum.Store(uint64(c.lastSeq))
	}
}

// readEdits applies the complete records of f between start and end to
// base, returning the version they make (base itself when there are none),
// the end of the last complete record and how many were read. A torn tail
// stops the read without an error: the primary is appending it.
func (vs *VersionSet) readEdits(f vfs.File, name string, start, end int64, base0 *Version, c *counters) (*Version, int64, int, error) {
	r := wal.NewReaderAt(f, start, end, wal.TolerateCorruptedTailRecords)
	b := newVersionBuilder(base0)
	var e VersionEdit
	n := 0
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, 0, 0, errors.Wrapf(err, "manifest: reading %s", name)
		}
		if err := e.Decode(rec); err != nil {
			return nil, 0, 0, errors.Wrapf(err, "manifest: %s: record ending at offset %d", name, r.Offset())
		}
		if err := b.apply(&e); err != nil {
			return nil, 0, 0, base.MarkCorruption(errors.Wrapf(err, "manifest: %s: record ending at offset %d", name, r.Offset()))
		}
		n++
		if e.ComparerName != "" {
			c.comparerName = e.ComparerName
		}
		if e.HasLogNumber {
			c.logNum, c.haveLog = e.LogNumber, true
		}
		if e.HasNextFileNumber {
			c.nextNum, c.haveNext = e.NextFileNumber, true
		}
		if e.HasLastSeqNum {
			c.lastSeq, c.haveLast = e.LastSeqNum, true
		}
	}
	if n == 0 {
		return base0, r.Offset(), 0, nil
	}
	// The primary records a non-bytewise order in a MANIFEST's first edit:
	// one read from its start names it or is bytewise. Checked before the
	// new version's order is, which another order would fail as damage.
	if start == 0 || c.comparerName != "" {
		if err := vs.checkComparer(name, c.comparerName); err != nil {
			return nil, 0, 0, err
		}
	}
	v, changed := b.build()
	if err := checkChanged(v, changed); err != nil {
		return nil, 0, 0, base.MarkCorruption(errors.Wrapf(err, "manifest: %s", name))
	}
	return v, r.Offset(), n, nil
}
