package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"runtime"
	"slices"
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/crc"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
)

// Ingest adds the tables at paths, written by TableWriter, to the database
// atomically (RocksDB's IngestExternalFile, Pebble's DB.Ingest): after it
// returns nil every entry of every table is visible, with one new sequence
// number newer than every write before the call; on an error nothing
// changed. Snapshots taken before the call do not see the tables.
//
// The steps, each of which leaves the database as it was when it fails:
//
//  1. Validate every file (loadIngestFile, the files in parallel): it opens as a table, every block's
//     checksum verifies and its keys are in order (sstable.Reader.Check, the
//     whole-file verification), it is marked external
//     (shale.external.sst.version) and all its sequence numbers are 0. The
//     tables' key ranges must not overlap one another.
//  2. Link each file into the database directory under a new file number
//     (a hard link, or a copy where the filesystem cannot link: another
//     device, say), first as NNNNNN.dbtmp, synced, then renamed to the
//     table's name; then sync the directory. The source files are kept
//     (RocksDB's move_files=false). A crash before the rename leaves only
//     .dbtmp files, which Open deletes; after it, tables the MANIFEST does
//     not name, which Open sets aside as NNNNNN.sst.orphan (see
//     obsolete.go). An error removes every file this call made.
//  3. Stop writes (become the head of the write queue). If a memtable holds
//     keys or range tombstones in the tables' range, switch memtables and
//     wait for every memtable to be flushed, so the ingested keys, newer,
//     are not read after the memtables' older ones.
//  4. Under manifestMu, assign the next sequence number G, place each table
//     at the deepest level L such that no table of levels 0 to L overlaps
//     it and no running compaction writes into L over its range (L0 when
//     none), log one version edit adding them all (each with
//     GlobalSeqNum G, MANIFEST tag 102) and install it; no compaction is
//     picked meanwhile. Then make G visible to reads.
//
// Each table is reported to the listener as TableCreated with Reason
// "ingest", and counted in the tickers shale.ingest.bytes and
// shale.ingest.files.
//
// The table readers give every entry of the tables the sequence number G
// (sstable.ReaderOptions.GlobalSeqNum), in reads, iterators, range
// deletions and compactions. A failure to write the MANIFEST edit is the
// one ambiguous outcome, as for a flush: the edit may be durable, so the
// files stay and nothing is deleted until a reopen, which finds either the
// whole ingest or none of it.
func (d *database) Ingest(ctx context.Context, paths []string) error {
	if err := d.checkWritable(ctx); err != nil {
		return err
	}
	if len(paths) == 0 {
		return base.InvalidArgumentf("engine: Ingest of no files")
	}
	in := &ingestion{d: d, files: make([]*ingestFile, len(paths))}
	// Validating reads every byte of every file: the files are read in
	// parallel, each by one goroutine. The first error in paths' order is
	// returned.
	errs := make([]error, len(paths))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			in.files[i], errs[i] = d.loadIngestFile(ctx, p)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	ucmp := d.ucmp()
	slices.SortFunc(in.files, func(a, b *ingestFile) int { return base.CompareInternalWith(ucmp, a.smallest, b.smallest) })
	for i := 1; i < len(in.files); i++ {
		a, b := in.files[i-1], in.files[i]
		if c := base.CompareUser(ucmp, a.largest.UserKey, b.smallest.UserKey); c > 0 || (c == 0 && !a.largest.IsExclusiveSentinel()) {
			return base.InvalidArgumentf("engine: Ingest: the key ranges of %s [%q, %q] and %s [%q, %q] overlap",
				a.path, a.smallest.UserKey, a.largest.UserKey, b.path, b.smallest.UserKey, b.largest.UserKey)
		}
	}
	defer in.cleanup()
	if err := in.link(); err != nil {
		return err
	}
	return in.apply(ctx)
}

// ingestFile is one table of an ingest.
type ingestFile struct {
	path string
	size uint64
	// smallest and largest are the table's bounds with sequence number 0
	// (a range tombstone's exclusive end as the sentinel, as a flush's
	// table has them); apply gives them the ingest's sequence number.
	smallest, largest base.InternalKey
	hasRangeDels      bool
	checksum          uint32

	// fileNum is the table's number in the database, level the level the
	// ingest placed it in.
	fileNum manifest.FileNum
	level   int
}

// ingestReadEnv is how an ingest reads the files it validates: tagged
// Unknown (RocksDB has no activity for it), at the caller's priority, every
// block verified, and kept out of the block cache (the files are not the
// database's yet).
var ingestReadEnv = sstable.ReadEnv{
	IO:              ioctx.IOOptions{Activity: ioctx.ActivityUnknown, RateLimiterPriority: ioctx.PriorityUser},
	VerifyChecksums: true,
}

// loadIngestFile validates the table at path and describes it.
func (d *database) loadIngestFile(ctx context.Context, path string) (_ *ingestFile, err error) {
	fr, err := fileio.Open(d.fs, path, fileio.Options{Stats: d.stats})
	if err != nil {
		return nil, errors.Wrapf(err, "engine: Ingest: opening %s", path)
	}
	// The table must be in the database's order: Open refuses one that
	// records another comparer (ErrInvalidArgument, naming both).
	r, err := sstable.Open(ctx, fr, ingestReadEnv, sstable.ReaderOptions{Stats: d.stats, Comparer: d.opts.Comparer})
	if err != nil {
		if errors.Is(err, base.ErrInvalidArgument) {
			return nil, errors.Wrapf(err, "engine: Ingest: %s", path)
		}
		return nil, errors.Wrapf(err, "engine: Ingest: %s is not a valid table", path)
	}
	defer func() { err = errors.CombineErrors(err, r.Close()) }()
	if err := r.Check(ctx, ingestReadEnv); err != nil {
		return nil, errors.Wrapf(err, "engine: Ingest: %s is not a valid table", path)
	}
	props := r.Properties()
	if props.ExternalVersion != 1 {
		return nil, base.InvalidArgumentf("engine: Ingest: %s was not written by a TableWriter "+
			"(its shale.external.sst.version property is %d, want 1)", path, props.ExternalVersion)
	}
	if props.SmallestSeqNum != 0 || props.LargestSeqNum != 0 {
		return nil, base.InvalidArgumentf("engine: Ingest: %s has sequence numbers %d-%d, want 0",
			path, props.SmallestSeqNum, props.LargestSeqNum)
	}
	it, err := r.NewIter(ctx, ingestReadEnv, nil, nil)
	if err != nil {
		return nil, errors.Wrapf(err, "engine: Ingest: reading %s", path)
	}
	var first, last *base.InternalKV
	if kv := it.First(); kv != nil {
		first = &base.InternalKV{K: kv.K.Clone()}
		if kv = it.Last(); kv != nil {
			last = &base.InternalKV{K: kv.K.Clone()}
		}
	}
	err = errors.CombineErrors(it.Error(), it.Close())
	if err == nil && first != nil && last == nil {
		err = base.CorruptionErrorf("engine: Ingest: %s has a first key but no last", path)
	}
	if err != nil {
		return nil, errors.Wrapf(err, "engine: Ingest: reading %s", path)
	}
	f := &ingestFile{path: path, size: uint64(fr.Size()), hasRangeDels: r.RangeDeletions() != nil}
	ok := first != nil
	if ok {
		f.smallest, f.largest = first.K, last.K
	}
	if frags := r.RangeDeletions().Fragments(); len(frags) > 0 {
		lo := base.MakeInternalKey(bytes.Clone(frags[0].Start), 0, base.KindRangeDelete)
		hi := base.MakeRangeDeleteSentinel(bytes.Clone(frags[len(frags)-1].End))
		if !ok || base.CompareInternalWith(d.ucmp(), lo, f.smallest) < 0 {
			f.smallest = lo
		}
		if !ok || base.CompareInternalWith(d.ucmp(), hi, f.largest) > 0 {
			f.largest = hi
		}
		ok = true
	}
	if !ok {
		return nil, base.InvalidArgumentf("engine: Ingest: %s is empty", path)
	}
	if !d.opts.DisableFileChecksums {
		if f.checksum, err = d.fileCRC(path); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// fileCRC returns the unmasked CRC-32C of the whole file, the checksum the
// MANIFEST records (manifest.ChecksumFuncCRC32C).
func (d *database) fileCRC(path string) (uint32, error) {
	f, err := d.fs.Open(path)
	if err != nil {
		return 0, errors.Wrapf(err, "engine: Ingest: opening %s", path)
	}
	defer f.Close()
	buf := make([]byte, checkpointCopyChunk)
	var sum crc.CRC
	for off := int64(0); ; {
		n, err := f.ReadAt(buf, off)
		sum = sum.Update(buf[:n])
		off += int64(n)
		if err == io.EOF {
			return uint32(sum), nil
		}
		if err != nil {
			return 0, errors.Wrapf(err, "engine: Ingest: reading %s at offset %d", path, off)
		}
	}
}

// ingestion is one Ingest call's state once its files are validated.
type ingestion struct {
	d     *database
	files []*ingestFile
	// outputs hold the reservations of the tables' numbers, and abandon
	// (delete) the tables until installEdit takes them over.
	outputs tableOutputs
	// tmps are the temporary names link may have created and not yet
	// renamed.
	tmps map[manifest.FileNum]string
	// bytes is the tables' total size, for the statistics.
	bytes uint64
}

// link gives every file a new number and links it into the directory:
// first as NNNNNN.dbtmp, which a crash leaves for Open to delete, synced,
// then renamed to the table's name.
func (in *ingestion) link() error {
	d := in.d
	cp := &checkpoint{d: d}
	in.tmps = make(map[manifest.FileNum]string)
	for _, f := range in.files {
		tw := &tableWriter{d: d, fileNum: d.vs.NewFileNum()}
		tw.name = manifest.TableFileName(d.dirname, tw.fileNum)
		d.mu.Lock()
		d.mu.pendingOutputs[tw.fileNum] = struct{}{}
		d.mu.Unlock()
		in.outputs = append(in.outputs, tw)
		f.fileNum = tw.fileNum
		tmp := manifest.TempFileName(d.dirname, tw.fileNum)
		in.tmps[tw.fileNum] = tmp // linkOrCopy may leave a partial copy
		if err := cp.linkOrCopy(f.path, tmp); err != nil {
			return errors.Wrapf(err, "engine: Ingest: linking %s into %s", f.path, d.dirname)
		}
		if err := syncFile(d, tmp); err != nil {
			return err
		}
		if fi, err := d.fs.Stat(tmp); err != nil {
			return errors.Wrapf(err, "engine: Ingest: %s", tmp)
		} else if uint64(fi.Size()) != f.size {
			return base.InvalidArgumentf("engine: Ingest: %s changed while it was ingested (%d bytes, then %d)",
				f.path, f.size, fi.Size())
		}
		if err := d.fs.Rename(tmp, tw.name); err != nil {
			return errors.Wrapf(err, "engine: Ingest: renaming %s", tmp)
		}
		delete(in.tmps, tw.fileNum)
	}
	return nil
}

// syncFile makes the file name durable: a hard link shares the source's
// data, which its writer may not have synced.
func syncFile(d *database, name string) error {
	f, err := d.fs.Open(name)
	if err != nil {
		return errors.Wrapf(err, "engine: Ingest: opening %s", name)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return errors.Wrapf(err, "engine: Ingest: syncing %s", name)
}

// cleanup removes what a failed ingest made before installEdit took the
// tables over: their temporary names and the tables (abandon); after that
// it does nothing.
func (in *ingestion) cleanup() {
	for _, tmp := range in.tmps {
		in.d.removeCreated(tmp)
	}
	in.outputs.abandon()
}

// apply makes the linked tables part of the database (steps 3 and 4 of
// Ingest): installEdit logs and installs the edit that editLocked builds.
func (in *ingestion) apply(ctx context.Context) (err error) {
	d := in.d
	w := d.headAloneLocked(ctx)
	defer func() {
		d.finishGroupLocked(d.mu.writers[:1], err)
		d.mu.Unlock()
		writerPool.Put(w)
	}()
	if e := d.bgErrorLocked(); e != nil && e.stopsWrites() {
		return e
	}
	if d.mu.manifestFailed {
		return errors.New("engine: Ingest: an earlier MANIFEST write failed; reopen the database")
	}
	if err := in.flushOverlappingLocked(ctx); err != nil {
		return err
	}
	// No write can commit until this call leaves the head of the queue.
	d.mu.Unlock()
	err = d.installEdit(&versionUpdate{ingest: in, outputs: in.outputs}, nil)
	d.mu.Lock()
	return err
}

// editLocked assigns the ingest's sequence number and builds its edit, for
// logAndApply, which holds manifestMu and d.mu: the version it places the
// tables in is the one the edit applies to.
func (in *ingestion) editLocked() *manifest.VersionEdit {
	d := in.d
	v := d.readState.Load().current
	d.mu.lastSeq++
	seq := d.mu.lastSeq
	edit := &manifest.VersionEdit{}
	for _, f := range in.files {
		meta := &manifest.FileMetadata{
			FileNum:        f.fileNum,
			Size:           f.size,
			Smallest:       withSeq(f.smallest, seq),
			Largest:        withSeq(f.largest, seq),
			SmallestSeqNum: seq,
			LargestSeqNum:  seq,
			HasRangeDels:   f.hasRangeDels,
			GlobalSeqNum:   seq,
		}
		if !d.opts.DisableFileChecksums {
			meta.FileChecksum = binary.BigEndian.AppendUint32(nil, f.checksum)
			meta.FileChecksumFunc = manifest.ChecksumFuncCRC32C
		}
		f.level = d.ingestLevelLocked(v, meta)
		edit.AddFile(f.level, meta)
		in.bytes += f.size
	}
	return edit
}

// report records a successful ingest in the statistics, and reports each
// table to the listener (TableCreated, Reason "ingest").
func (in *ingestion) report() {
	in.d.stats.RecordTick(statistics.IngestBytes, in.bytes)
	in.d.stats.RecordTick(statistics.IngestFiles, uint64(len(in.files)))
	for _, f := range in.files {
		in.d.notifyTableCreated(TableInfo{FileNum: uint64(f.fileNum), Level: f.level, Size: f.size, Reason: "ingest"})
	}
}

// withSeq returns k with sequence number seq, unless it is a range
// tombstone's exclusive end, which has none.
func withSeq(k base.InternalKey, seq base.SeqNum) base.InternalKey {
	if k.IsExclusiveSentinel() {
		return k
	}
	return base.MakeInternalKey(k.UserKey, seq, k.Kind())
}

// bounds returns the smallest and largest user keys of the ingest.
func (in *ingestion) bounds() (lo, hi []byte) {
	return in.files[0].smallest.UserKey, in.files[len(in.files)-1].largest.UserKey
}

// flushOverlappingLocked flushes every memtable when one holds keys or range
// tombstones in the ingest's range (RocksDB flushes the memtable on such an
// overlap too): a read consults the memtables before the tables, so older
// entries left there would shadow the ingested ones. d.mu is held, and
// released while it waits; the caller heads the write queue.
func (in *ingestion) flushOverlappingLocked(ctx context.Context) error {
	d := in.d
	lo, hi := in.bounds()
	overlaps := false
	for _, m := range append([]*memTable{d.mu.mem}, d.mu.imm...) {
		if in.memOverlaps(m, lo, hi) {
			overlaps = true
			break
		}
	}
	if !overlaps {
		return nil
	}
	if !d.mu.mem.Empty() {
		if err := d.rotateMemtableLocked(nil, nil); err != nil {
			return err
		}
	}
	target := d.mu.flushesDone + uint64(len(d.mu.imm))
	for d.mu.flushesDone < target {
		if e := d.bgErrorLocked(); e != nil && e.stopsWrites() {
			return e
		}
		d.maybeScheduleLocked()
		ch := d.mu.changed
		d.mu.Unlock()
		var err error
		select {
		case <-ch:
		case <-ctx.Done():
			err = errors.Wrap(ctx.Err(), "engine: Ingest: waiting for a flush")
		}
		d.mu.Lock()
		if err != nil {
			return err
		}
	}
	return nil
}

// memOverlaps reports whether m has an entry or a range tombstone in
// [lo, hi] (hi exclusive when the ingest ends at a range deletion's end;
// counting it in is conservative).
func (in *ingestion) memOverlaps(m *memTable, lo, hi []byte) bool {
	if m == nil || m.Empty() {
		return false
	}
	ucmp := in.d.ucmp()
	it := m.NewIter(lo, nil)
	if kv := it.SeekGE(lo); kv != nil && base.CompareUser(ucmp, kv.K.UserKey, hi) <= 0 {
		return true
	}
	// The fragments that end after lo, in the memtable's order; the first
	// overlaps [lo, hi] when it starts by hi. (No successor of hi makes the
	// range half-open: under a custom comparer there may be none.)
	frags := m.RangeDeletions().Overlapping(lo, nil)
	return len(frags) > 0 && base.CompareUser(ucmp, frags[0].Start, hi) <= 0
}

// ingestLevelLocked returns the level for an ingested table (RocksDB's
// rule): the deepest level L such that no table of levels 0 to L overlaps
// f and no running compaction writes into L over f's range (its outputs,
// older than f, would then sit above or beside it); L0 when even L1 fails.
// d.mu and manifestMu are held, and no compaction is picked until the
// table is installed (d.mu.ingesting).
func (d *database) ingestLevelLocked(v *manifest.Version, f *manifest.FileMetadata) int {
	lo, hi := f.Smallest.UserKey, f.Largest.UserKey
	if len(v.Overlaps(0, lo, hi)) > 0 || d.compactionOutputOverlapsLocked(0, lo, hi) {
		return 0
	}
	target := 0
	for level := 1; level < manifest.NumLevels; level++ {
		if len(v.Overlaps(level, lo, hi)) > 0 || d.compactionOutputOverlapsLocked(level, lo, hi) {
			break
		}
		target = level
	}
	return target
}

// compactionOutputOverlapsLocked reports whether a running compaction
// writes into level over [lo, hi]: its outputs span at most its inputs'
// whole key range.
func (d *database) compactionOutputOverlapsLocked(level int, lo, hi []byte) bool {
	ucmp := d.ucmp()
	for c := range d.mu.compactions {
		if c.OutputLevel != level {
			continue
		}
		var first, last []byte
		for _, files := range c.Inputs {
			for _, f := range files {
				if first == nil || base.CompareUser(ucmp, f.Smallest.UserKey, first) < 0 {
					first = f.Smallest.UserKey
				}
				if last == nil || base.CompareUser(ucmp, f.Largest.UserKey, last) > 0 {
					last = f.Largest.UserKey
				}
			}
		}
		if first != nil && base.CompareUser(ucmp, first, hi) <= 0 && base.CompareUser(ucmp, last, lo) >= 0 {
			return true
		}
	}
	return false
}
