package engine

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/batch"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/internal/vfs"
	"github.com/shaledb/shale/internal/wal"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
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
	// damaged is set when WAL data was dropped because of damage (an
	// incomplete final record of the newest WAL is not damage).
	damaged                      bool
	droppedRecords, droppedBytes uint64
	// notes describe what was dropped or kept aside, for the logger.
	notes []note
	// walSeqs are the sequence numbers each replayed WAL held, first to
	// last: a table whose entries lie within one of them holds nothing the
	// replay did not recover.
	walSeqs [][2]base.SeqNum
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
	// seqs are the sequence numbers replayed from this WAL, if any.
	var seqs [2]base.SeqNum
	replayed := false
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
		if err := r.apply(ctx, &b); err != nil {
			return errors.Wrapf(err, "engine: replaying WAL %s", name)
		}
		if n := b.Count(); n > 0 {
			first, last := b.SeqNum(), b.SeqNum()+base.SeqNum(n)-1
			if !replayed {
				seqs, replayed = [2]base.SeqNum{first, last}, true
			}
			seqs = [2]base.SeqNum{min(seqs[0], first), max(seqs[1], last)}
		}
	}
	if replayed {
		r.walSeqs = append(r.walSeqs, seqs)
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
		return r.dropped(num, corruptSuffix, 1, uint64(size-off), []any{"offset", off, "reason", reason.Error()},
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
	// Count its records for the report.
	rd := wal.NewReader(io.NewSectionReader(f, 0, st.Size()), wal.PointInTime)
	var recs uint64
	for {
		if _, err := rd.Next(); err != nil {
			break
		}
		recs++
	}
	return r.dropped(num, skippedSuffix, recs, uint64(st.Size()), nil,
		"point-in-time recovery did not replay WAL %s, which follows a damaged one", name)
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

// keepOrphans renames aside the tables the recovered state does not hold
// unless they are provably garbage, so that no Open deletes data that may
// exist nowhere else; it logs each one. A table is garbage if a replayed
// edit deleted it, or, after a clean recovery, if redundant says so. After
// a recovery that was not clean (a torn MANIFEST tail, dropped WAL data)
// every other table is kept, being perhaps what the lost edit added or the
// only copy of dropped writes, and so are MANIFESTs newer than the loaded
// one, which may hold the lost edit. deleteObsoleteFiles deletes the rest.
func (r *recovery) keepOrphans(ctx context.Context) error {
	d := r.d
	torn := d.vs.TornTail()
	clean := torn == nil && !r.damaged
	v := d.vs.Current()
	live := make(map[manifest.FileNum]bool)
	var maxLiveSeq base.SeqNum
	for _, files := range v.Levels {
		for _, f := range files {
			live[f.FileNum] = true
			maxLiveSeq = max(maxLiveSeq, f.LargestSeqNum)
		}
	}
	v.Unref()
	for _, nf := range r.edit.NewFiles {
		live[nf.Meta.FileNum] = true
	}
	names, err := d.fs.List(d.dirname)
	if err != nil {
		return errors.Wrapf(err, "engine: listing %s", d.dirname)
	}
	why := "the MANIFEST does not name it, and its data may exist nowhere else"
	switch {
	case torn != nil:
		why = "recovery dropped a torn MANIFEST tail: " + torn.Error()
	case r.damaged:
		why = "recovery dropped damaged WAL records"
	}
	for _, name := range names {
		kind, num, ok := manifest.ParseFileName(name)
		switch {
		case !ok:
			continue
		case kind == manifest.FileKindTable:
			if live[num] || d.vs.DeletedByEdit(num) {
				continue
			}
			if clean {
				redundant, err := r.redundant(ctx, num, maxLiveSeq)
				if err != nil {
					return err
				}
				if redundant {
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
		to := from + orphanSuffix
		if err := d.fs.Rename(from, to); err != nil {
			return errors.Wrapf(err, "engine: keeping %s aside", from)
		}
		r.renamed = append(r.renamed, [2]string{from, to})
		r.notef([]any{"file", from, "kept_as", to, "because", why},
			"the recovered state does not name %s: kept as %s", from, to)
	}
	return nil
}

// redundant reports whether table num, which the recovered state does not
// hold, holds nothing that recovery did not keep, after a clean recovery:
//
//   - its entries lie within the sequence numbers of one replayed WAL: the
//     output of a flush a crash interrupted, whose writes were replayed.
//   - it was made after the MANIFEST's last edit (its number is at or above
//     the recorded next file number) and either does not open (a table
//     whose writing a crash cut short) or holds no entry newer than the
//     newest live table's: the output of a compaction a crash interrupted,
//     whose inputs are still live. (A flush output is newer than every table
//     the MANIFEST recorded before it. An older table that is no newer might
//     be a compaction input whose deletion an older MANIFEST recorded, or a
//     table a damaged MANIFEST forgot: it is kept.)
//
// Anything else, such as a table added by MANIFEST records that were lost
// whole (which a clean recovery cannot notice), is kept.
func (r *recovery) redundant(ctx context.Context, num manifest.FileNum, maxLiveSeq base.SeqNum) (bool, error) {
	d := r.d
	afterLastEdit := num >= d.vs.RecordedNextFileNum()
	name := manifest.TableFileName(d.dirname, num)
	f, err := fileio.Open(d.fs, name, fileio.Options{Stats: d.stats})
	if err != nil {
		return false, errors.Wrapf(err, "engine: opening table %s, which the MANIFEST does not name", name)
	}
	t, err := sstable.Open(ctx, f, openReadEnv, sstable.ReaderOptions{FileNum: uint64(num), Stats: d.stats})
	if err != nil {
		if base.IsCorruption(err) {
			return afterLastEdit, nil
		}
		return false, errors.Wrapf(err, "engine: opening table %s, which the MANIFEST does not name", name)
	}
	p := t.Properties()
	lo, hi, n := p.SmallestSeqNum, p.LargestSeqNum, p.NumEntries
	_ = t.Close()
	for _, s := range r.walSeqs {
		if n > 0 && s[0] <= lo && hi <= s[1] {
			return true, nil
		}
	}
	return afterLastEdit && (n == 0 || lo <= maxLiveSeq), nil
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
	d.mu.mem = d.newMemTable(nil, logNum)
	r.tables.release()
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
		_ = d.fs.Remove(r.created[i])
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
}
