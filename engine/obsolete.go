package engine

import (
	"maps"
	"os"
	"path/filepath"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/manifest"
)

// Deleting the database's files has one owner: this file, as Pebble's
// cleanupManager is the only deleter of obsolete files. Every deletion of a
// table, WAL or MANIFEST of the database goes through one of
//
//   - deleteObsoleteFiles: the cleanup that follows a flush and a compaction
//     (installEdit), Open (after recovery) and Close;
//   - removeAbandonedTable: an output a flush, compaction or recovery gave up
//     before any edit named it (tableWriter.abandon);
//   - removeCreated: a file a failed Open created and nothing names
//     (recovery.abandon),
//
// and every file is set aside instead (setAside) by the same rule, written
// here once:
//
// Never delete what the MANIFEST cannot account for. A table is deleted only
// if no version still referenced holds it (the current one, and those that
// read states, iterators, snapshots' reads and checkpoints hold), no flush
// or compaction is writing it (d.mu.pendingOutputs: its file number is
// reserved from before its file exists until an edit names it or it is
// abandoned), and it is known to be obsolete (d.mu.obsoleteTables): an
// installed edit deleted it (a compaction's input), Open found it deleted by
// a replayed edit or proved it redundant (recovery.keepOrphans), or it is an
// abandoned output whose deletion failed. Any other table found in the
// directory is one the MANIFEST cannot account for (copied in from another
// database, say): it is renamed NNNNNN.sst.orphan and logged, never deleted.
// A WAL is deleted once numbered below every WAL recovery could replay, a
// MANIFEST once CURRENT names a newer one, a temporary file only at Open.
// After a failed MANIFEST edit (d.mu.manifestFailed) nothing is deleted
// until a reopen: the edit may or may not be durable.
//
// Open's decisions about the tables the loaded MANIFEST does not name are
// made by recovery.keepOrphans, which sets aside those it cannot account for
// (with setAside, undone if the Open fails) and hands the ones it can to
// noteObsoleteTables.

// deleteObsoleteFiles deletes the files the rule above finds obsolete and
// sets aside the tables it cannot account for. Cleanups run one at a time,
// so a file is deleted, and its TableDeleted reported, once; atOpen also
// deletes temporary files a crash left behind (before anything can be
// writing one).
func (d *database) deleteObsoleteFiles(atOpen bool) {
	d.cleanMu.Lock()
	defer d.cleanMu.Unlock()
	names, err := d.fs.List(d.dirname)
	if err != nil {
		return
	}
	d.mu.Lock()
	if d.mu.manifestFailed {
		d.mu.Unlock()
		return
	}
	// The reservations are read before the versions: a table whose
	// reservation has ended is in a version by then (a tableWriter is
	// released after its edit), whereas reading the versions first could
	// miss a table installed, and released, between the two reads.
	live := maps.Clone(d.mu.pendingOutputs)
	// Not LogNumber: the WAL the last edit made obsolete stays until
	// another edit follows, in case a torn tail takes that edit away.
	minLog := d.vs.ReplayLogNumber()
	for _, m := range d.mu.imm {
		minLog = min(minLog, m.logNum)
	}
	if d.mu.mem != nil {
		minLog = min(minLog, d.mu.mem.logNum)
	}
	d.mu.Unlock()
	maps.Copy(live, d.vs.LiveFileNums())
	// The obsolete tables are read after the versions: a table becomes
	// obsolete (noteObsoleteLocked) before the read state lets go of the
	// version holding it, so a table found in no version is in the set by
	// then if it is ever to be, and is not taken for one the MANIFEST
	// cannot account for. Likewise an abandoned output is in the set
	// before its reservation ends.
	d.mu.Lock()
	obsolete := maps.Clone(d.mu.obsoleteTables)
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
			if _, ok := obsolete[num]; !ok {
				d.keepUnaccounted(num, name)
				continue
			}
			delete(obsolete, num)
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
		d.removeObsoleteFile(kind, num, name)
	}
}

// removeObsoleteFile deletes the obsolete file name (of kind and number
// num) for deleteObsoleteFiles, and reports a table's deletion. A table
// that is gone leaves the set of obsolete tables; one whose deletion failed
// stays, for the next cleanup.
func (d *database) removeObsoleteFile(kind manifest.FileKind, num manifest.FileNum, name string) {
	err := d.fs.Remove(filepath.Join(d.dirname, name))
	if kind != manifest.FileKindTable {
		return
	}
	d.notifyTableDeleted(num, err)
	if err == nil || errors.Is(err, os.ErrNotExist) {
		d.mu.Lock()
		delete(d.mu.obsoleteTables, num)
		d.mu.Unlock()
	}
}

// keepUnaccounted sets aside table num (file name), which the MANIFEST
// cannot account for, and logs it. A table an abandoned output removed
// between the listing and now is gone, and nothing is said.
func (d *database) keepUnaccounted(num manifest.FileNum, name string) {
	from := filepath.Join(d.dirname, name)
	to, err := d.setAside(from)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		d.logger().Warn("engine: could not set aside a table the MANIFEST does not name; it is kept as it is",
			"db", d.dirname, "file", from, "error", err.Error())
	default:
		d.logger().Warn("engine: the MANIFEST does not name "+from+": kept as "+to,
			"db", d.dirname, "file", from, "kept_as", to,
			"because", "no version holds it, no flush or compaction is writing it, and no edit deleted it")
	}
}

// setAside renames file from, which the MANIFEST cannot account for, to
// from+".orphan", a name no Open replays, uses or deletes, and returns the
// new name.
func (d *database) setAside(from string) (string, error) {
	to := from + orphanSuffix
	if err := d.fs.Rename(from, to); err != nil {
		return "", errors.Wrapf(err, "engine: keeping %s aside", from)
	}
	return to, nil
}

// noteObsoleteLocked records the tables edit deleted, which it did not add
// again elsewhere (a trivial move keeps its table), as obsolete: the cleanup
// deletes each once no version holds it. installEdit calls it once the edit
// is applied, before the read state lets go of the older version. d.mu is
// held.
func (d *database) noteObsoleteLocked(edit *manifest.VersionEdit) {
	if len(edit.DeletedFiles) == 0 {
		return
	}
	added := make(map[manifest.FileNum]bool, len(edit.NewFiles))
	for _, nf := range edit.NewFiles {
		added[nf.Meta.FileNum] = true
	}
	for df := range edit.DeletedFiles {
		if !added[df.FileNum] {
			d.noteObsoleteTableLocked(df.FileNum)
		}
	}
}

// noteObsoleteTables records tables Open found obsolete (see
// recovery.keepOrphans), for the cleanup that follows it.
func (d *database) noteObsoleteTables(nums []manifest.FileNum) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, num := range nums {
		d.noteObsoleteTableLocked(num)
	}
}

func (d *database) noteObsoleteTableLocked(num manifest.FileNum) {
	if d.mu.obsoleteTables == nil {
		d.mu.obsoleteTables = make(map[manifest.FileNum]struct{})
	}
	d.mu.obsoleteTables[num] = struct{}{}
}

// removeAbandonedTable deletes table num (file name), an output no edit
// names that its writer gives up, with its reader in the table cache. The
// writer still holds its reservation: a deletion that fails makes the table
// obsolete before the reservation ends, so the next cleanup deletes it.
// Nothing is reported: no TableCreated was either.
func (d *database) removeAbandonedTable(num manifest.FileNum, name string) {
	d.tables.evict(num)
	if err := d.fs.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
		d.mu.Lock()
		d.noteObsoleteTableLocked(num)
		d.mu.Unlock()
	}
}

// removeCreated deletes a file a failed Open created (a WAL, a copy of a
// damaged WAL) while undoing what it did: CURRENT names nothing it made.
func (d *database) removeCreated(name string) {
	_ = d.fs.Remove(name)
}
