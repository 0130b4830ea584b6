package engine

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"io"
	"log/slog"
	"path/filepath"
	"slices"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/batch"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/merging"
	"github.com/shaledb/shale/internal/rangedel"
	"github.com/shaledb/shale/internal/readpath"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/internal/wal"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
)

// Suffixes of the files a recovery keeps aside. ParseFileName knows none of
// them, so no later Open replays, uses or deletes such a file.
const (
	// corruptSuffix marks a copy of a WAL a lenient recovery mode dropped
	// damaged records from.
	corruptSuffix = ".corrupt"
	// skippedSuffix marks a copy of a WAL that point-in-time recovery did
	// not replay, because an earlier WAL was damaged.
	skippedSuffix = ".skipped"
	// orphanSuffix marks a table or MANIFEST that a recovery which was not
	// clean found but could not account for.
	orphanSuffix = ".orphan"
)

// recovery is the part of Open between loading the MANIFEST and starting the
// database: it replays the WALs and commits the result as a new MANIFEST.
//
// Nothing the database relies on changes before the commit (the rename of
// CURRENT in manifest.VersionSet.Start): the files made before it are new
// (tables written from the WALs, copies of damaged WALs, the new WAL) and
// abandon removes them, and the only other change, renaming the files of an
// unclean recovery aside, abandon undoes. So an Open that fails leaves every
// file as it was.
type recovery struct {
	d    *database
	mode WALRecoveryMode
	// edit records the tables written from the WALs, the new WAL and the
	// last sequence number.
	edit manifest.VersionEdit
	// mem is the memtable being filled from the WALs.
	mem *memTable

	// tables are the tables written from the WALs; the commit releases
	// their reservations, abandon deletes them.
	tables tableOutputs
	// created are the other files made so far; renamed the renames, as
	// {from, to}. abandon undoes both, newest first.
	created []string
	renamed [][2]string
	// logFile is the new WAL until the commit hands it to the DB.
	logFile vfs.File
	// published is set once CURRENT may name the new MANIFEST: from then
	// on nothing may be undone.
	published bool

	// stopped is set when point-in-time recovery met damage: later WALs
	// are not replayed.
	stopped bool
	// newestNum is the newest WAL that holds anything (see newestWAL).
	newestNum manifest.FileNum
	// damaged is set when WAL data was dropped because of damage (an
	// incomplete final record of the newest WAL is not damage).
	damaged                      bool
	droppedRecords, droppedBytes uint64
	// notes describe what was dropped or kept aside, for the logger.
	notes []note
	// removed are the tables keepOrphans proved redundant, for the log;
	// obsolete those and the tables a replayed edit deleted, which the
	// commit hands to the cleanup (noteObsoleteTables) to delete.
	removed  []string
	obsolete []manifest.FileNum
	// proof gathers, during the replay, what keepOrphans needs to show that
	// a table the MANIFEST does not name holds nothing recovery does not.
	proof unaccountedProof
}

// note is one thing a recovery dropped or kept, logged as a warning.
type note struct {
	msg   string
	attrs []any
}

func (r *recovery) notef(attrs []any, format string, args ...any) {
	r.notes = append(r.notes, note{msg: fmt.Sprintf(format, args...), attrs: attrs})
}

// logger returns the logger recovery reports go to.
func (d *database) logger() *slog.Logger {
	if d.opts.Logger != nil {
		return d.opts.Logger
	}
	return slog.Default()
}

// run replays the WALs and, unless the open is read-only, commits.
func (r *recovery) run(ctx context.Context) error {
	if err := r.replayWALs(ctx); err != nil {
		return err
	}
	if r.d.opts.ReadOnly {
		return nil
	}
	return r.commit(ctx)
}

// replayWALs replays the WAL files the MANIFEST does not cover, oldest
// first, writing what they hold to L0 tables (kept in memory by a read-only
// open).
func (r *recovery) replayWALs(ctx context.Context) error {
	d := r.d
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

	if !d.opts.ReadOnly {
		if err := r.proof.init(ctx, d, names); err != nil {
			return err
		}
	}
	r.mem = d.newMemTable(nil, 0)
	defer func() {
		if r.mem != nil {
			r.mem.unref()
			r.mem = nil
		}
	}()
	newest, err := r.newestWAL(logs)
	if err != nil {
		return err
	}
	if len(logs) > 0 {
		r.newestNum = logs[newest]
	}
	for i, num := range logs {
		var err error
		if r.stopped {
			err = r.skipWAL(num)
		} else {
			err = r.replayWAL(ctx, num, i >= newest)
		}
		if err != nil {
			return err
		}
	}
	if err := r.flush(ctx); err != nil {
		return err
	}
	if d.opts.ReadOnly {
		d.mu.mem, r.mem = r.mem, nil
	}
	return nil
}

// newestWAL returns the index in logs of the newest WAL that holds
// anything: the one whose tail the last writes before a crash were going
// to, where a torn record is a crash's trace rather than damage. WALs after
// it are empty: created, but not yet written, as when a crash comes while a
// large batch's WAL is synced in the background (syncPrevWAL) after the
// next one was created. 0 when every WAL is empty.
func (r *recovery) newestWAL(logs []manifest.FileNum) (int, error) {
	d := r.d
	for i := len(logs) - 1; i > 0; i-- {
		name := manifest.LogFileName(d.dirname, logs[i])
		st, err := d.fs.Stat(name)
		if err != nil {
			return 0, errors.Wrapf(err, "engine: stat WAL %s", name)
		}
		if st.Size() > 0 {
			return i, nil
		}
	}
	return 0, nil
}

// flush writes the memtable being filled to an L0 table and starts another;
// a read-only open keeps it in memory instead.
func (r *recovery) flush(ctx context.Context) error {
	d := r.d
	if r.mem.Empty() {
		return nil
	}
	if d.opts.ReadOnly {
		d.mu.imm = append(d.mu.imm, r.mem)
		r.mem = d.newMemTable(nil, 0)
		return nil
	}
	tw, err := d.flushMemTable(ctx, r.mem.MemTable, ioctx.ActivityDBOpen, nil, r.tables.metas())
	if err != nil {
		return err
	}
	if tw != nil {
		r.tables = append(r.tables, tw)
		r.edit.AddFile(0, tw.meta)
	}
	r.mem.unref()
	r.mem = d.newMemTable(nil, 0)
	return nil
}

// replayWAL applies the batches of WAL num to the memtable, flushing when
// it fills, and applies the recovery mode to the damage it meets.
func (r *recovery) replayWAL(ctx context.Context, num manifest.FileNum, newest bool) error {
	d := r.d
	name := manifest.LogFileName(d.dirname, num)
	f, err := d.fs.Open(name)
	if err != nil {
		return errors.Wrapf(err, "engine: opening WAL %s", name)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return errors.Wrapf(err, "engine: stat WAL %s", name)
	}
	size := st.Size()
	rd := wal.NewReader(io.NewSectionReader(f, 0, size), r.mode.internal())
	var b batch.Batch
	// A record whose checksum holds but whose batch does not decode is
	// damage too: badBatch is the first such, skipped what
	// skip_any_corrupted_records dropped of them.
	var badBatch error
	var badBatchStart int64
	var skippedRecs, skippedBytes uint64
records:
	for {
		start := rd.Offset()
		rec, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if base.IsCorruption(err) {
				return base.MarkCorruption(errors.Wrapf(err, "engine: WAL %s is damaged (wal_recovery_mode=%s)", name, r.mode))
			}
			return errors.Wrapf(err, "engine: replaying WAL %s", name)
		}
		if err := b.SetRepr(rec); err != nil {
			switch r.mode {
			case WALRecoverySkipAnyCorruptedRecords:
				skippedRecs++
				skippedBytes += uint64(len(rec))
				continue
			case WALRecoveryPointInTime:
				badBatch, badBatchStart = err, start
				break records
			default:
				return base.MarkCorruption(errors.Wrapf(err, "engine: WAL %s: the record at offset %d (wal_recovery_mode=%s)",
					name, start, r.mode))
			}
		}
		r.proof.noteBatch(&b)
		if err := r.apply(ctx, &b); err != nil {
			return errors.Wrapf(err, "engine: replaying WAL %s", name)
		}
	}

	off, reason := rd.Stopped()
	switch r.mode {
	case WALRecoveryTolerateCorruptedTailRecords, WALRecoveryAbsoluteConsistency:
		switch {
		case reason == nil:
			return nil
		case !newest:
			// Older WALs were synced before the next one took writes, so a
			// torn record there is damage, not a crash's trace.
			return base.CorruptionErrorf("engine: WAL %s is damaged at offset %d but is not the newest WAL "+
				"(wal_recovery_mode=%s): %v", name, off, r.mode, reason)
		case !rd.TailIncomplete():
			return base.CorruptionErrorf("engine: WAL %s is damaged at offset %d, and not by a torn write: %v; "+
				"wal_recovery_mode=%s drops only an incomplete final record (point_in_time_recovery opens "+
				"the database without the writes from the damage on)", name, off, reason, r.mode)
		}
		// A torn tail: its write was never acknowledged as synced.
		return nil
	case WALRecoveryPointInTime:
		if badBatch != nil {
			off, reason = badBatchStart, badBatch
		}
		if reason == nil || (newest && badBatch == nil && rd.TailIncomplete()) {
			return nil
		}
		r.stopped = true
		recs, err := countRecords(f, size, off, newest)
		if err != nil {
			return errors.Wrapf(err, "engine: counting the records of WAL %s", name)
		}
		return r.dropped(num, corruptSuffix, recs, uint64(size-off), []any{"offset", off, "reason", reason.Error()},
			"point-in-time recovery stopped at damage in WAL %s at offset %d, dropping the rest of it and every later WAL",
			name, off)
	default: // WALRecoverySkipAnyCorruptedRecords
		recs, bytes := rd.Dropped()
		tornTailOnly := newest && recs == 1 && reason != nil && rd.TailIncomplete()
		if (recs == 0 || tornTailOnly) && skippedRecs == 0 {
			return nil
		}
		attrs := []any{"damaged_places", recs}
		if reason != nil {
			attrs = append(attrs, "last_damage", reason.Error())
		}
		if skippedRecs > 0 {
			attrs = append(attrs, "undecodable_records", skippedRecs)
		}
		return r.dropped(num, corruptSuffix, uint64(recs)+skippedRecs, uint64(bytes)+skippedBytes, attrs,
			"skipped damaged records of WAL %s", name)
	}
}

// apply applies batch b to the memtable, flushing first when it is full.
// A large batch, which the write path made a memtable of its own
// (commitLarge), is replayed like any other, into an ordinary memtable sized
// for it: recovery runs once per open, and the record is the WAL reader's
// buffer, valid only until the next record, so keeping it as a memtable
// would need a copy anyway.
func (r *recovery) apply(ctx context.Context, b *batch.Batch) error {
	d := r.d
	if b.Count() == 0 {
		return nil
	}
	if !r.mem.Fits(b) || r.mem.ApproximateSize() >= int(d.opts.WriteBufferSize) {
		if err := r.flush(ctx); err != nil {
			return err
		}
		if !r.mem.Fits(b) {
			r.mem.unref()
			r.mem = d.newMemTable(b, 0)
		}
	}
	seq := b.SeqNum()
	if err := r.mem.Apply(b, seq); err != nil {
		return err
	}
	if last := seq + base.SeqNum(b.Count()) - 1; last > d.mu.lastSeq {
		d.mu.lastSeq = last
	}
	return nil
}

// skipWAL drops WAL num whole: point-in-time recovery stopped in an earlier
// one.
func (r *recovery) skipWAL(num manifest.FileNum) error {
	d := r.d
	name := manifest.LogFileName(d.dirname, num)
	f, err := d.fs.Open(name)
	if err != nil {
		return errors.Wrapf(err, "engine: opening WAL %s", name)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return errors.Wrapf(err, "engine: stat WAL %s", name)
	}
	recs, err := countRecords(f, st.Size(), 0, num == r.newestNum)
	if err != nil {
		return errors.Wrapf(err, "engine: counting the records of WAL %s", name)
	}
	return r.dropped(num, skippedSuffix, recs, uint64(st.Size()), nil,
		"point-in-time recovery did not replay WAL %s, which follows a damaged one", name)
}

// countRecords counts the records of the first size bytes of WAL f that end
// after offset from: what point-in-time recovery drops when it stops at
// from, without reading further. Where the framing holds (damage inside a
// chunk's payload, a record whose batch does not decode), every record is
// counted. Where it does not (a damaged header, whose length cannot be
// trusted), the reader drops the rest of that block or region as
// skip_any_corrupted_records does, and each such damaged place counts as
// one record, though it may have held more: the count is then a lower
// bound. An incomplete final record of the newest WAL is not counted (a
// crash's trace, never acknowledged), as elsewhere.
func countRecords(f io.ReaderAt, size, from int64, newest bool) (uint64, error) {
	rd := wal.NewReader(io.NewSectionReader(f, 0, size), wal.SkipAnyCorrupted)
	var recs uint64
	for {
		_, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
		if rd.Offset() > from {
			recs++
		}
	}
	// Every damaged place lies after from: recovery read a clean log up to
	// it.
	places, _ := rd.Dropped()
	if _, reason := rd.Stopped(); newest && reason != nil && rd.TailIncomplete() {
		places--
	}
	return recs + uint64(places), nil
}

// dropped records that recovery dropped records and bytes of WAL num because
// of damage: it counts them, notes them for the log, and keeps a copy of the
// WAL under the name num.log+suffix (a read-only open only reports).
func (r *recovery) dropped(num manifest.FileNum, suffix string, recs, bytes uint64, attrs []any, format string, args ...any) error {
	r.damaged = true
	r.droppedRecords += recs
	r.droppedBytes += bytes
	name := manifest.LogFileName(r.d.dirname, num)
	attrs = append(attrs, "wal", name, "records", recs, "bytes", bytes, "wal_recovery_mode", r.mode.String())
	if !r.d.opts.ReadOnly {
		kept := name + suffix
		if err := r.copyFile(name, kept); err != nil {
			return err
		}
		attrs = append(attrs, "kept_as", kept)
	}
	r.notef(attrs, format, args...)
	return nil
}

// copyFile copies from to a new file to, durably (the commit syncs the
// directory).
func (r *recovery) copyFile(from, to string) (err error) {
	fs := r.d.fs
	src, err := fs.Open(from)
	if err != nil {
		return errors.Wrapf(err, "engine: opening %s", from)
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return errors.Wrapf(err, "engine: stat %s", from)
	}
	dst, err := fs.Create(to)
	if err != nil {
		return errors.Wrapf(err, "engine: creating %s", to)
	}
	r.created = append(r.created, to)
	_, err = io.Copy(dst, io.NewSectionReader(src, 0, st.Size()))
	if err == nil {
		err = dst.Sync()
	}
	err = errors.CombineErrors(err, dst.Close())
	return errors.Wrapf(err, "engine: copying %s to %s", from, to)
}

// keepOrphans applies, at Open, the one rule for files the MANIFEST cannot
// account for: never delete what the MANIFEST cannot account for, unless
// Open can prove that the file is redundant, that is, that everything it
// holds the recovered state holds too. Every table the recovered state does
// not name is renamed aside (NNNNNN.sst.orphan) and logged, except:
//
//   - a table a replayed MANIFEST edit deleted (a compaction input whose
//     removal a crash interrupted): the MANIFEST accounts for it;
//   - after a clean recovery, a table that redundant proves holds only
//     entries recovery keeps elsewhere: an interrupted flush's or
//     compaction's output (or one of Open's own, from the WALs).
//
// Neither its number nor its sequence numbers alone prove anything: a table
// copied in from another database may have any number, and its sequence
// numbers may overlap this database's by chance. After a recovery that was
// not clean (a torn MANIFEST tail, dropped WAL data) every other table is
// kept, being perhaps what the lost edit added or the only copy of dropped
// writes, and so are MANIFESTs newer than the loaded one, which may hold the
// lost edit. The tables it does not set aside and the recovered state does
// not name are the obsolete ones, which the commit hands to the cleanup
// (noteObsoleteTables); the cleanup deletes no other (see obsolete.go for
// the rule, and why it lives there once).
func (r *recovery) keepOrphans(ctx context.Context) error {
	d := r.d
	torn := d.vs.TornTail()
	clean := torn == nil && !r.damaged
	live := currentFileNums(d)
	for _, nf := range r.edit.NewFiles {
		live[nf.Meta.FileNum] = true
	}
	names, err := d.fs.List(d.dirname)
	if err != nil {
		return errors.Wrapf(err, "engine: listing %s", d.dirname)
	}
	why := "the MANIFEST does not name it, and Open cannot show that its data is held elsewhere"
	switch {
	case torn != nil:
		why = "recovery dropped a torn MANIFEST tail: " + torn.Error()
	case r.damaged:
		why = "recovery dropped damaged WAL records"
	}
	var lv *liveEntries
	defer func() {
		if lv != nil {
			lv.close()
		}
	}()
	for _, name := range names {
		kind, num, ok := manifest.ParseFileName(name)
		switch {
		case !ok:
			continue
		case kind == manifest.FileKindTable:
			if live[num] {
				continue
			}
			if d.vs.DeletedByEdit(num) {
				r.obsolete = append(r.obsolete, num)
				continue
			}
			if clean {
				if lv == nil {
					lv = newLiveEntries(ctx, d)
				}
				redundant, err := r.redundant(ctx, num, lv)
				if err != nil {
					return err
				}
				if redundant {
					r.removed = append(r.removed, filepath.Join(d.dirname, name))
					r.obsolete = append(r.obsolete, num)
					continue
				}
			}
		case kind == manifest.FileKindManifest:
			// Older MANIFESTs are superseded; a newer one may hold the
			// lost edit.
			if clean || num <= d.vs.ManifestFileNum() {
				continue
			}
		default:
			continue
		}
		from := filepath.Join(d.dirname, name)
		to, err := d.setAside(from)
		if err != nil {
			return err
		}
		r.renamed = append(r.renamed, [2]string{from, to})
		r.notef([]any{"file", from, "kept_as", to, "because", why},
			"the recovered state does not name %s: kept as %s", from, to)
	}
	return nil
}

// redundant reports whether table num, which the recovered state does not
// hold, provably holds nothing that recovery does not keep: it opens, holds
// at least one entry, and each of its entries is one recovery keeps, with
// the same user key, sequence number, kind and value: either one the
// replayed WALs held (an interrupted flush's output: its writes were
// replayed; seen as a keyed 64-bit hash, see unaccountedProof) or one a
// live table holds (an interrupted compaction's output: its inputs are
// still live). Each of its range tombstones must be covered by tombstones
// of the same sequence number from those sources. Sequence numbers are
// unique within a database, so a table of another database fails at its
// first entry unless it is a copy of this one's data. A table that does not
// open (cut short by a crash, or not a table) proves nothing and is kept.
func (r *recovery) redundant(ctx context.Context, num manifest.FileNum, lv *liveEntries) (bool, error) {
	d := r.d
	name := manifest.TableFileName(d.dirname, num)
	f, err := fileio.Open(d.fs, name, fileio.Options{Stats: d.stats})
	if err != nil {
		return false, errors.Wrapf(err, "engine: opening table %s, which the MANIFEST does not name", name)
	}
	t, err := sstable.Open(ctx, f, proofReadEnv, sstable.ReaderOptions{FileNum: uint64(num), Stats: d.stats, Comparer: d.opts.Comparer})
	if err != nil {
		if base.IsCorruption(err) {
			return false, nil
		}
		return false, errors.Wrapf(err, "engine: opening table %s, which the MANIFEST does not name", name)
	}
	defer t.Close()
	ok, err := r.proof.tableHeldElsewhere(ctx, t, lv)
	if err != nil {
		if base.IsCorruption(err) {
			return false, nil
		}
		return false, errors.Wrapf(err, "engine: reading table %s, which the MANIFEST does not name", name)
	}
	return ok, nil
}

// commit records the recovered state (the loaded version, the tables written
// from the WALs, a new WAL) as a new MANIFEST and points CURRENT at it, and
// hands the new WAL to the DB.
func (r *recovery) commit(ctx context.Context) error {
	d := r.d
	if err := r.keepOrphans(ctx); err != nil {
		return err
	}
	logNum := d.vs.NewFileNum()
	name := manifest.LogFileName(d.dirname, logNum)
	f, err := d.fs.Create(name)
	if err != nil {
		return errors.Wrapf(err, "engine: creating WAL %s", name)
	}
	r.created = append(r.created, name)
	r.logFile = f
	r.edit.SetLogNumber(logNum)
	r.edit.SetLastSeqNum(d.mu.lastSeq)
	// Start syncs the directory, making the new WAL's entry durable, and the
	// recovered tables', before CURRENT names them.
	published, err := d.vs.Start(&r.edit)
	r.published = published
	if err != nil {
		return errors.Wrap(err, "engine: recording the recovered state in a new MANIFEST")
	}
	wf := newWALFile(f)
	r.logFile = nil
	d.commit.log = wal.NewWriter(wf)
	d.commit.logFile = wf
	d.commit.logNum = logNum
	d.mu.mem = d.newMutableMemTableLocked(nil, logNum)
	r.tables.release()
	d.noteObsoleteTables(r.obsolete)
	return nil
}

// abandon undoes what a failed recovery did, unless CURRENT may already
// name the new state: then every file stays.
func (r *recovery) abandon() {
	d := r.d
	if r.logFile != nil {
		_ = r.logFile.Close()
		r.logFile = nil
	}
	if r.published {
		r.tables.release()
		return
	}
	r.tables.abandon()
	for i := len(r.created) - 1; i >= 0; i-- {
		d.removeCreated(r.created[i])
	}
	for i := len(r.renamed) - 1; i >= 0; i-- {
		_ = d.fs.Rename(r.renamed[i][1], r.renamed[i][0])
	}
}

// report counts and logs what the recovery dropped and kept aside.
func (r *recovery) report() {
	d := r.d
	d.stats.RecordTick(statistics.WALRecoveryDroppedRecords, r.droppedRecords)
	d.stats.RecordTick(statistics.WALRecoveryDroppedBytes, r.droppedBytes)
	if torn := d.vs.TornTail(); torn != nil {
		d.logger().Warn("engine: recovery dropped a torn MANIFEST tail", "db", d.dirname, "reason", torn.Error())
	}
	for _, n := range r.notes {
		d.logger().Warn("engine: "+n.msg, append([]any{"db", d.dirname}, n.attrs...)...)
	}
	for _, name := range r.removed {
		d.logger().Info("engine: removing a table the MANIFEST does not name, whose every entry recovery holds "+
			"elsewhere (the output of a flush or compaction a crash interrupted)", "db", d.dirname, "file", name)
	}
}

// proofReadEnv tags the reads that check a table the MANIFEST does not name
// (DBOpen) and keeps them out of the block cache.
var proofReadEnv = sstable.ReadEnv{
	IO:              ioctx.IOOptions{Activity: ioctx.ActivityDBOpen},
	VerifyChecksums: true,
}

// maxProofEntries bounds how many WAL entries the replay keeps hashes of
// for unaccountedProof (16 bytes each). Past it, nothing is proven from the
// WALs, and the tables that needed it are kept aside: safe, if wasteful.
const maxProofEntries = 4 << 20

// unaccountedProof is what keepOrphans needs from the replay to prove that
// a table the loaded MANIFEST does not name holds only entries the replayed
// WALs held. Before the replay, init finds those tables and the sequence
// numbers they hold; during it, noteBatch keeps, for each WAL entry at one of
// those sequence numbers, a 64-bit hash of its kind, user key and value,
// keyed by a seed chosen at each Open (so no file can be made to collide on
// purpose), and a copy of each range deletion. Nothing is kept when there is
// no such table, which is every Open but one after a crash.
type unaccountedProof struct {
	// ranges are the sequence numbers the tables hold, smallest to largest
	// of each.
	ranges [][2]base.SeqNum
	seed   maphash.Seed
	h      maphash.Hash
	points []seqHash // sorted by sequence number once sorted is set
	sorted bool
	dels   []rangedel.Tombstone
	// overflow is set when more than maxProofEntries were seen.
	overflow bool
}

// seqHash is the hash of the WAL entry at one sequence number.
type seqHash struct {
	seq base.SeqNum
	h   uint64
}

// init finds, in the directory listing names, the tables the loaded state
// does not name and a replayed edit did not delete, and notes the sequence
// numbers they hold. A table that does not open is left out: nothing can
// prove it redundant.
func (p *unaccountedProof) init(ctx context.Context, d *database, names []string) error {
	live := currentFileNums(d)
	for _, name := range names {
		kind, num, ok := manifest.ParseFileName(name)
		if !ok || kind != manifest.FileKindTable || live[num] || d.vs.DeletedByEdit(num) {
			continue
		}
		path := manifest.TableFileName(d.dirname, num)
		f, err := fileio.Open(d.fs, path, fileio.Options{Stats: d.stats})
		if err != nil {
			return errors.Wrapf(err, "engine: opening table %s, which the MANIFEST does not name", path)
		}
		t, err := sstable.Open(ctx, f, proofReadEnv, sstable.ReaderOptions{FileNum: uint64(num), Stats: d.stats, Comparer: d.opts.Comparer})
		if err != nil {
			if base.IsCorruption(err) {
				continue
			}
			return errors.Wrapf(err, "engine: opening table %s, which the MANIFEST does not name", path)
		}
		props := t.Properties()
		lo, hi := props.SmallestSeqNum, props.LargestSeqNum
		if props.NumEntries == 0 {
			lo, hi = base.MaxSeqNum, 0
		}
		for _, tomb := range t.RangeDeletions().Tombstones(nil) {
			lo, hi = min(lo, tomb.Seq), max(hi, tomb.Seq)
		}
		_ = t.Close()
		if lo <= hi {
			p.ranges = append(p.ranges, [2]base.SeqNum{lo, hi})
		}
	}
	p.seed = maphash.MakeSeed()
	p.h.SetSeed(p.seed)
	return nil
}

// holdsSeq reports whether one of the tables may hold sequence number s.
func (p *unaccountedProof) holdsSeq(s base.SeqNum) bool {
	for _, r := range p.ranges {
		if r[0] <= s && s <= r[1] {
			return true
		}
	}
	return false
}

// hash returns the hash of an entry's kind, user key and value.
func (p *unaccountedProof) hash(kind base.Kind, key, value []byte) uint64 {
	p.h.Reset()
	_ = p.h.WriteByte(byte(kind))
	var n [binary.MaxVarintLen64]byte
	_, _ = p.h.Write(n[:binary.PutUvarint(n[:], uint64(len(key)))])
	_, _ = p.h.Write(key)
	_, _ = p.h.Write(value)
	return p.h.Sum64()
}

// noteBatch notes the entries of replayed batch b that one of the tables
// may hold. Its records take sequence numbers b.SeqNum(), b.SeqNum()+1, ...
// in order, range deletions included, as in the memtable.
func (p *unaccountedProof) noteBatch(b *batch.Batch) {
	n := b.Count()
	if len(p.ranges) == 0 || p.overflow || n == 0 {
		return
	}
	first, last := b.SeqNum(), b.SeqNum()+base.SeqNum(n)-1
	overlaps := false
	for _, r := range p.ranges {
		overlaps = overlaps || (r[0] <= last && first <= r[1])
	}
	if !overlaps {
		return
	}
	rd := b.Reader()
	for s := first; ; s++ {
		kind, key, value, ok, err := rd.Next()
		if err != nil || !ok {
			// The replay reports a malformed batch.
			return
		}
		if !p.holdsSeq(s) {
			continue
		}
		if kind == base.KindRangeDelete {
			p.dels = append(p.dels, rangedel.Tombstone{Start: bytes.Clone(key), End: bytes.Clone(value), Seq: s})
			continue
		}
		if len(p.points) >= maxProofEntries {
			p.overflow, p.points = true, nil
			return
		}
		p.points = append(p.points, seqHash{seq: s, h: p.hash(kind, key, value)})
		p.sorted = false
	}
}

// walHolds reports whether a replayed WAL held the entry.
func (p *unaccountedProof) walHolds(k base.InternalKey, value []byte) bool {
	if p.overflow || len(p.points) == 0 {
		return false
	}
	if !p.sorted {
		slices.SortFunc(p.points, func(a, b seqHash) int { return cmp.Compare(a.seq, b.seq) })
		p.sorted = true
	}
	i, found := slices.BinarySearchFunc(p.points, k.SeqNum(), func(e seqHash, s base.SeqNum) int {
		return cmp.Compare(e.seq, s)
	})
	return found && p.points[i].h == p.hash(k.Kind(), k.UserKey, value)
}

// tableHeldElsewhere reports whether table t holds at least one entry, and
// every entry it holds is one the replayed WALs or the live tables hold too
// (see recovery.redundant).
func (p *unaccountedProof) tableHeldElsewhere(ctx context.Context, t *sstable.Reader, lv *liveEntries) (bool, error) {
	it, err := t.NewIter(ctx, proofReadEnv, nil, nil)
	if err != nil {
		return false, err
	}
	lv.rewind()
	entries := 0
	for kv := it.First(); kv != nil; kv = it.Next() {
		entries++
		if p.walHolds(kv.K, kv.V) {
			continue
		}
		held, err := lv.holds(kv.K, kv.V)
		if err != nil || !held {
			return false, errors.CombineErrors(err, it.Close())
		}
	}
	if err := it.Close(); err != nil {
		return false, err
	}
	tombs := t.RangeDeletions().Tombstones(nil)
	for _, tomb := range tombs {
		if covered(lv.d.ucmp(), tomb, p.dels) {
			continue
		}
		liveDels, err := lv.tombstones()
		if err != nil {
			return false, err
		}
		if !covered(lv.d.ucmp(), tomb, liveDels) {
			return false, nil
		}
	}
	return entries+len(tombs) > 0, nil
}

// covered reports whether the tombstones of dels at t's sequence number
// cover all of t's span.
func covered(cmp base.Compare, t rangedel.Tombstone, dels []rangedel.Tombstone) bool {
	var same []rangedel.Tombstone
	for _, d := range dels {
		if d.Seq == t.Seq {
			same = append(same, d)
		}
	}
	slices.SortFunc(same, func(a, b rangedel.Tombstone) int { return base.CompareUser(cmp, a.Start, b.Start) })
	cur := t.Start
	for _, d := range same {
		if base.CompareUser(cmp, d.Start, cur) > 0 {
			break
		}
		if base.CompareUser(cmp, d.End, cur) > 0 {
			cur = d.End
		}
		if base.CompareUser(cmp, cur, t.End) >= 0 {
			return true
		}
	}
	return base.CompareUser(cmp, cur, t.End) >= 0
}

// liveEntries looks entries up in the live tables of the loaded state, for
// recovery.redundant: a merged iterator over every level, moved forward as
// the table being checked is read in order.
type liveEntries struct {
	ctx context.Context
	d   *database
	v   *manifest.Version
	it  base.InternalIterator // nil when there is no live table
	cur *base.InternalKV
	// positioned: cur is where the iterator is (false before the first
	// seek of each table checked).
	positioned bool
	dels       []rangedel.Tombstone
	delsRead   bool
}

func newLiveEntries(ctx context.Context, d *database) *liveEntries {
	l := &liveEntries{ctx: ctx, d: d, v: d.vs.Current()}
	var iters []base.InternalIterator
	for level, files := range l.v.Levels {
		switch {
		case len(files) == 0:
		case level == 0:
			for i := range files {
				iters = append(iters, readpath.NewCompactionIterCmp(ctx, proofReadEnv, d.tables, 0, files[i:i+1], d.ucmp()))
			}
		default:
			iters = append(iters, readpath.NewCompactionIterCmp(ctx, proofReadEnv, d.tables, level, files, d.ucmp()))
		}
	}
	if len(iters) > 0 {
		m := merging.NewIter(iters...)
		m.SetCompare(d.ucmp())
		l.it = m
	}
	return l
}

// rewind makes the next holds seek: a new table is being checked.
func (l *liveEntries) rewind() { l.positioned = false }

// holds reports whether a live table holds the entry k with value v. The
// keys asked about must increase between rewinds.
func (l *liveEntries) holds(k base.InternalKey, v []byte) (bool, error) {
	if l.it == nil {
		return false, nil
	}
	if !l.positioned || l.cur == nil || !bytes.Equal(l.cur.K.UserKey, k.UserKey) || base.CompareInternalWith(l.d.ucmp(), l.cur.K, k) > 0 {
		l.cur, l.positioned = l.it.SeekGE(k.UserKey), true
	}
	for l.cur != nil && base.CompareInternalWith(l.d.ucmp(), l.cur.K, k) < 0 {
		l.cur = l.it.Next()
	}
	if l.cur == nil {
		return false, l.it.Error()
	}
	return base.CompareInternalWith(l.d.ucmp(), l.cur.K, k) == 0 && bytes.Equal(l.cur.V, v), nil
}

// tombstones returns the range tombstones of the live tables.
func (l *liveEntries) tombstones() ([]rangedel.Tombstone, error) {
	if l.delsRead {
		return l.dels, nil
	}
	l.delsRead = true
	for level, files := range l.v.Levels {
		for _, f := range files {
			if !f.HasRangeDels {
				continue
			}
			ref, err := l.d.tables.Acquire(l.ctx, proofReadEnv, f, level)
			if err != nil {
				return nil, err
			}
			n := len(l.dels)
			l.dels = ref.Reader.RangeDeletions().Tombstones(l.dels)
			for j := n; j < len(l.dels); j++ {
				l.dels[j].Start = bytes.Clone(l.dels[j].Start)
				l.dels[j].End = bytes.Clone(l.dels[j].End)
			}
			ref.Release()
		}
	}
	return l.dels, nil
}

func (l *liveEntries) close() {
	if l.it != nil {
		_ = l.it.Close()
	}
	l.v.Unref()
}

// currentFileNums returns the file numbers of the tables the current version
// names. Recovery asks about the current version only (unlike
// VersionSet.LiveFileNums, which adds every version a reader still holds):
// the map is new and belongs to the caller, which may add to it.
func currentFileNums(d *database) map[manifest.FileNum]bool {
	v := d.vs.Current()
	defer v.Unref()
	live := make(map[manifest.FileNum]bool)
	for _, files := range v.Levels {
		for _, f := range files {
			live[f.FileNum] = true
		}
	}
	return live
}
