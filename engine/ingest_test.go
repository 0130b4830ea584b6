package engine

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/compact"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// ingestEntry is one entry of a table a test writes: a Set, a Delete (del)
// or, with end set, a DeleteRange [key, end).
type ingestEntry struct {
	key, value, end string
	del             bool
}

func writeTable(t testing.TB, fs vfs.FS, path string, opts *Options, entries ...ingestEntry) WrittenTable {
	t.Helper()
	o := *opts
	o.FS = fs
	tw, err := NewTableWriter(path, &o)
	require.NoError(t, err)
	for _, e := range entries {
		switch {
		case e.end != "":
			require.NoError(t, tw.DeleteRange([]byte(e.key), []byte(e.end)))
		case e.del:
			require.NoError(t, tw.Delete([]byte(e.key)))
		default:
			require.NoError(t, tw.Set([]byte(e.key), []byte(e.value)))
		}
	}
	info, err := tw.Finish()
	require.NoError(t, err)
	return info
}

func sets(prefix string, keys ...string) []ingestEntry {
	var out []ingestEntry
	for _, k := range keys {
		out = append(out, ingestEntry{key: k, value: prefix + k})
	}
	return out
}

// scanDB returns "key=value" for every key of db (or of snap when not nil).
func scanDB(t testing.TB, db *database, snap *snapshot) []string {
	t.Helper()
	var it *iterator
	var err error
	if snap != nil {
		it, err = snap.NewIterator(context.Background(), nil)
	} else {
		it, err = db.NewIterator(context.Background(), nil)
	}
	require.NoError(t, err)
	var out []string
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, string(it.Key())+"="+string(it.Value()))
	}
	require.NoError(t, it.Error())
	require.NoError(t, it.Close())
	return out
}

func levelOf(t testing.TB, db *database, num manifest.FileNum) int {
	t.Helper()
	rs := mustReadState(t, db)
	defer rs.unref()
	for level, files := range rs.current.Levels {
		for _, f := range files {
			if f.FileNum == num {
				return level
			}
		}
	}
	return -1
}

// ingestedFiles returns the tables of db's current version that an ingest
// added, by number.
func ingestedFiles(t testing.TB, db *database) map[manifest.FileNum]*manifest.FileMetadata {
	t.Helper()
	rs := mustReadState(t, db)
	defer rs.unref()
	out := make(map[manifest.FileNum]*manifest.FileMetadata)
	for _, files := range rs.current.Levels {
		for _, f := range files {
			if f.GlobalSeqNum != 0 {
				out[f.FileNum] = f
			}
		}
	}
	return out
}

// openIngestDB opens a database on a fresh MemFS with smallOptions and
// automatic compactions off, so that the tables a test ingests or flushes
// stay where they land until it compacts, and registers checkDB's cleanup.
// It returns the options (their FS is the MemFS), to write tables with and
// to reopen, and the holder, to point the cleanup at a reopened database.
func openIngestDB(t *testing.T) (*database, *Options, *dbHolder) {
	t.Helper()
	opts := smallOptions(vfs.NewMem())
	opts.DisableAutoCompactions = true
	db, err := openDatabase("/db", opts)
	require.NoError(t, err)
	return db, opts, checkDB(t, db)
}

// TestIngestSemantics ingests tables over older data in the memtable and
// in tables: the ingested entries (sets, deletes, range deletions) shadow
// the older ones, in Get, MultiGet and iterators, a snapshot taken before
// sees none of them, and all of it survives a reopen and a compaction.
func TestIngestSemantics(t *testing.T) {
	ctx := context.Background()
	db, opts, h := openIngestDB(t)
	fs := opts.FS

	for _, k := range []string{"a", "b", "c", "d", "m", "n", "z"} {
		require.NoError(t, db.Put(ctx, []byte(k), []byte("old-"+k)))
	}
	require.NoError(t, db.Flush(ctx))
	// Still in the memtable when the ingest comes: the ingest must flush.
	require.NoError(t, db.Put(ctx, []byte("c"), []byte("mem-c")))
	require.NoError(t, db.Put(ctx, []byte("e"), []byte("mem-e")))
	snap, err := db.NewSnapshot()
	require.NoError(t, err)

	require.NoError(t, fs.MkdirAll("/ext", 0o755))
	t1 := writeTable(t, fs, "/ext/1.sst", opts,
		ingestEntry{key: "a", value: "new-a"},
		ingestEntry{key: "b", del: true},
		ingestEntry{key: "c", value: "new-c"},
		ingestEntry{key: "c0", end: "f"}, // deletes d and e, not its own points
		ingestEntry{key: "d0", value: "new-d0"},
	)
	require.Equal(t, "a", string(t1.Smallest))
	require.Equal(t, "f", string(t1.Largest))
	require.True(t, t1.LargestExclusive)
	require.Equal(t, uint64(4), t1.Entries)
	require.Equal(t, uint64(1), t1.RangeDeletions)
	t2 := writeTable(t, fs, "/ext/2.sst", opts, sets("new-", "x", "y")...)

	// The order of the paths does not matter.
	require.NoError(t, db.Ingest(ctx, []string{"/ext/2.sst", "/ext/1.sst"}))

	want := []string{"a=new-a", "c=new-c", "d0=new-d0", "m=old-m", "n=old-n", "x=new-x", "y=new-y", "z=old-z"}
	require.Equal(t, want, scanDB(t, db, nil))
	wantOld := []string{"a=old-a", "b=old-b", "c=mem-c", "d=old-d", "e=mem-e", "m=old-m", "n=old-n", "z=old-z"}
	require.Equal(t, wantOld, scanDB(t, db, snap))
	v, err := db.Get(ctx, []byte("c"))
	require.NoError(t, err)
	require.Equal(t, "new-c", string(v))
	_, err = db.Get(ctx, []byte("b"))
	require.ErrorIs(t, err, ErrNotFound)
	_, err = db.Get(ctx, []byte("e"))
	require.ErrorIs(t, err, ErrNotFound)
	v, err = snap.Get(ctx, []byte("c"))
	require.NoError(t, err)
	require.Equal(t, "mem-c", string(v))
	vals, err := db.MultiGet(ctx, [][]byte{[]byte("a"), []byte("d"), []byte("x")})
	require.NoError(t, err)
	require.Equal(t, "new-a", string(vals[0]))
	require.Nil(t, vals[1])
	require.Equal(t, "new-x", string(vals[2]))
	vals, err = snap.MultiGet(ctx, [][]byte{[]byte("a"), []byte("x")})
	require.NoError(t, err)
	require.Equal(t, "old-a", string(vals[0]))
	require.Nil(t, vals[1])

	// Writes after the ingest are newer than it.
	require.NoError(t, db.Put(ctx, []byte("x"), []byte("later-x")))
	want[5] = "x=later-x"
	require.Equal(t, want, scanDB(t, db, nil))

	// The sources are kept; the ingested tables carry one sequence number.
	for _, p := range []string{t1.Path, t2.Path} {
		_, err := fs.Stat(p)
		require.NoError(t, err)
	}
	files := ingestedFiles(t, db)
	require.Len(t, files, 2)
	var seqs []uint64
	for _, f := range files {
		seqs = append(seqs, uint64(f.GlobalSeqNum))
	}
	require.Equal(t, seqs[0], seqs[1])
	require.Equal(t, uint64(t1.Size+t2.Size), db.stats.TickerCount(statistics.IngestBytes))
	require.Equal(t, uint64(2), db.stats.TickerCount(statistics.IngestFiles))
	require.NoError(t, db.VerifyFileChecksums(ctx))
	require.NoError(t, db.VerifyChecksum(ctx))
	require.NoError(t, snap.Close())

	// The MANIFEST keeps the global sequence number.
	require.NoError(t, db.Close())
	db, err = openDatabase("/db", opts)
	require.NoError(t, err)
	h.db = db
	require.Len(t, ingestedFiles(t, db), 2)
	require.Equal(t, want, scanDB(t, db, nil))

	// Compaction rewrites them with the rest.
	require.NoError(t, db.Compact(ctx, nil, nil))
	require.Equal(t, want, scanDB(t, db, nil))
	require.Empty(t, ingestedFiles(t, db))
	require.NoError(t, db.Close())
	db, err = openDatabase("/db", opts)
	require.NoError(t, err)
	h.db = db
	require.Equal(t, want, scanDB(t, db, nil))
}

// TestIngestLevel checks where tables go: the deepest level no table of
// that level or above overlaps, L0 when L0 overlaps.
func TestIngestLevel(t *testing.T) {
	ctx := context.Background()
	// No automatic compaction: with two L0 tables (the flush and the
	// ingest below) one would rewrite the ingested table at once, and the
	// test, which looks for it after Ingest returns, lost that race under
	// -race in CI ("no new ingested table").
	o := smallOptions(nil)
	o.DisableAutoCompactions = true
	db, fs := openTestDB(t, o)
	opts := smallOptions(fs)
	require.NoError(t, fs.MkdirAll("/ext", 0o755))
	ingest := func(name string, keys ...string) manifest.FileNum {
		t.Helper()
		before := ingestedFiles(t, db)
		writeTable(t, fs, "/ext/"+name, opts, sets(name+"-", keys...)...)
		require.NoError(t, db.Ingest(ctx, []string{"/ext/" + name}))
		for n := range ingestedFiles(t, db) {
			if before[n] == nil {
				return n
			}
		}
		t.Fatal("no new ingested table")
		return 0
	}
	// An empty database: the last level.
	n1 := ingest("1", "c", "d")
	require.Equal(t, manifest.NumLevels-1, levelOf(t, db, n1))
	// Overlapping it: the level above.
	n2 := ingest("2", "d", "e")
	require.Equal(t, manifest.NumLevels-2, levelOf(t, db, n2))
	// Disjoint from both: the last level again.
	n3 := ingest("3", "x", "y")
	require.Equal(t, manifest.NumLevels-1, levelOf(t, db, n3))
	// A flushed table in L0 over its range: L0.
	require.NoError(t, db.Put(ctx, []byte("b"), []byte("v")))
	require.NoError(t, db.Put(ctx, []byte("f"), []byte("v")))
	require.NoError(t, db.Flush(ctx))
	n4 := ingest("4", "e")
	require.Equal(t, 0, levelOf(t, db, n4))
	v, err := db.Get(ctx, []byte("e"))
	require.NoError(t, err)
	require.Equal(t, "4-e", string(v))
	v, err = db.Get(ctx, []byte("d"))
	require.NoError(t, err)
	require.Equal(t, "2-d", string(v))

	// A checkpoint keeps the ingested tables' sequence number.
	want := scanDB(t, db, nil)
	require.NoError(t, db.Checkpoint(ctx, "/cp"))
	cpOpts := smallOptions(fs)
	cpOpts.DisableAutoCompactions = true
	cp, err := openDatabase("/cp", cpOpts)
	require.NoError(t, err)
	checkDB(t, cp)
	require.Equal(t, want, scanDB(t, cp, nil))
	require.Len(t, ingestedFiles(t, cp), 4)
}

// dirNames lists dir, for comparing a directory before and after.
func dirNames(t testing.TB, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir)
	require.NoError(t, err)
	return names
}

// TestIngestInvalid checks that every bad ingest fails with an error that
// says why, and leaves the database and its directory as they were.
func TestIngestInvalid(t *testing.T) {
	ctx := context.Background()
	db, fs := openTestDB(t, nil)
	opts := smallOptions(fs)
	require.NoError(t, fs.MkdirAll("/ext", 0o755))
	require.NoError(t, db.Put(ctx, []byte("k"), []byte("v")))
	require.NoError(t, db.Flush(ctx))

	writeTable(t, fs, "/ext/ab.sst", opts, sets("", "a", "b")...)
	writeTable(t, fs, "/ext/bc.sst", opts, sets("", "b", "c")...)
	writeTable(t, fs, "/ext/rd.sst", opts, ingestEntry{key: "m", end: "p"})
	writeTable(t, fs, "/ext/p.sst", opts, sets("", "p")...)
	garbage, err := fs.Create("/ext/garbage.sst")
	require.NoError(t, err)
	_, err = garbage.Write([]byte(strings.Repeat("not a table", 100)))
	require.NoError(t, err)
	require.NoError(t, garbage.Close())
	// One of the database's own tables: not external, and its sequence
	// numbers are not 0.
	rs := mustReadState(t, db)
	own := manifest.TableFileName("/db", rs.current.Levels[0][0].FileNum)
	rs.unref()
	require.NoError(t, (&checkpoint{d: db}).copyFile(own, "/ext/own.sst"))
	// A valid table with a flipped byte in a data block.
	writeTable(t, fs, "/ext/corrupt.sst", opts, sets("", "q", "r")...)
	flipByte(t, fs, "/ext/corrupt.sst", 3)

	before := dirNames(t, fs, "/db")
	for _, tc := range []struct {
		paths []string
		is    error
		msg   string
	}{
		{nil, ErrInvalidArgument, "Ingest of no files"},
		{[]string{"/ext/missing.sst"}, os.ErrNotExist, "/ext/missing.sst"},
		{[]string{"/ext/ab.sst", "/ext/missing.sst"}, os.ErrNotExist, "/ext/missing.sst"},
		{[]string{"/ext/garbage.sst"}, ErrCorruption, "/ext/garbage.sst is not a valid table"},
		{[]string{"/ext/corrupt.sst"}, ErrCorruption, "/ext/corrupt.sst is not a valid table"},
		{[]string{"/ext/own.sst"}, ErrInvalidArgument, "was not written by a TableWriter"},
		{[]string{"/ext/ab.sst", "/ext/bc.sst"}, ErrInvalidArgument, "overlap"},
		{[]string{"/ext/ab.sst", "/ext/ab.sst"}, ErrInvalidArgument, "overlap"},
	} {
		t.Run(strings.Join(tc.paths, ","), func(t *testing.T) {
			err := db.Ingest(ctx, tc.paths)
			require.ErrorIs(t, err, tc.is)
			require.ErrorContains(t, err, tc.msg)
			require.Equal(t, before, dirNames(t, fs, "/db"))
			require.Equal(t, []string{"k=v"}, scanDB(t, db, nil))
		})
	}
	// A range deletion's end is exclusive: a table starting there does not
	// overlap it.
	require.NoError(t, db.Ingest(ctx, []string{"/ext/rd.sst", "/ext/p.sst"}))
	require.Equal(t, []string{"k=v", "p=p"}, scanDB(t, db, nil))
}

func flipByte(t testing.TB, fs vfs.FS, path string, off int64) {
	t.Helper()
	f, err := fs.Open(path)
	require.NoError(t, err)
	fi, err := f.Stat()
	require.NoError(t, err)
	data := make([]byte, fi.Size())
	_, err = f.ReadAt(data, 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	data[off] ^= 0xff
	w, err := fs.Create(path)
	require.NoError(t, err)
	_, err = w.Write(data)
	require.NoError(t, err)
	require.NoError(t, w.Close())
}

// TestTableWriterErrors checks the writer's refusals: keys out of order or
// repeated (naming both keys), an empty range, an empty table, use after
// Finish; a refused key leaves the writer usable, and Abort removes the
// file.
func TestTableWriterErrors(t *testing.T) {
	fs := vfs.NewMem()
	opts := &Options{FS: fs}
	tw, err := NewTableWriter("/t.sst", opts)
	require.NoError(t, err)
	require.NoError(t, tw.Set([]byte("b"), []byte("1")))
	for _, k := range []string{"a", "b"} {
		err = tw.Set([]byte(k), nil)
		require.ErrorIs(t, err, ErrInvalidArgument)
		require.ErrorContains(t, err, fmt.Sprintf(`key %q added after "b"`, k))
	}
	err = tw.Delete([]byte("b"))
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.ErrorIs(t, tw.DeleteRange([]byte("c"), []byte("c")), ErrInvalidArgument)
	require.ErrorIs(t, tw.DeleteRange([]byte("c"), nil), ErrInvalidArgument)
	require.NoError(t, tw.Set([]byte("c"), []byte("2")))
	// Overlapping range deletions are merged into one.
	require.NoError(t, tw.DeleteRange([]byte("x"), []byte("z")))
	require.NoError(t, tw.DeleteRange([]byte("w"), []byte("y")))
	info, err := tw.Finish()
	require.NoError(t, err)
	require.Equal(t, uint64(2), info.Entries)
	require.Equal(t, uint64(1), info.RangeDeletions)
	require.Equal(t, "b", string(info.Smallest))
	require.Equal(t, "z", string(info.Largest))
	require.ErrorIs(t, tw.Set([]byte("d"), nil), ErrInvalidArgument)
	_, err = tw.Finish()
	require.ErrorIs(t, err, ErrInvalidArgument)

	tw, err = NewTableWriter("/empty.sst", opts)
	require.NoError(t, err)
	_, err = tw.Finish()
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = fs.Stat("/empty.sst")
	require.ErrorIs(t, err, os.ErrNotExist)

	tw, err = NewTableWriter("/aborted.sst", opts)
	require.NoError(t, err)
	require.NoError(t, tw.Set([]byte("a"), nil))
	require.NoError(t, tw.Abort())
	_, err = fs.Stat("/aborted.sst")
	require.ErrorIs(t, err, os.ErrNotExist)

	_, err = NewTableWriter("", opts)
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = NewTableWriter("/bad.sst", &Options{FS: fs, BlockSize: -1})
	require.Error(t, err)
}

// TestIngestNotOverCompaction checks that an ingest keeps its table out of
// a running compaction's output range: a compaction held in its start hook
// merges L0 tables [a, b] and [y, z]; a table in the gap between its inputs
// overlaps none of them, but must not go to the compaction's output level
// (or below), where the compaction's older outputs would overlap it.
func TestIngestNotOverCompaction(t *testing.T) {
	ctx := context.Background()
	db, opts, _ := openIngestDB(t)
	fs := opts.FS
	for _, pair := range [][2]string{{"a", "b"}, {"y", "z"}} {
		require.NoError(t, db.Put(ctx, []byte(pair[0]), []byte("1")))
		require.NoError(t, db.Put(ctx, []byte(pair[1]), []byte("1")))
		require.NoError(t, db.Flush(ctx))
	}

	started, release := make(chan int, 1), make(chan struct{})
	fn := func(d *database, c *compact.Compaction) {
		if d != db {
			return
		}
		select {
		case started <- c.OutputLevel:
			<-release
		default:
		}
	}
	compactionStartHook.Store(&fn)
	defer compactionStartHook.Store(nil)
	done := make(chan error, 1)
	go func() { done <- db.Compact(ctx, nil, nil) }()
	out := <-started
	require.Greater(t, out, 0)
	require.NoError(t, fs.MkdirAll("/ext", 0o755))
	writeTable(t, fs, "/ext/m.sst", opts, sets("", "m")...)
	require.NoError(t, db.Ingest(ctx, []string{"/ext/m.sst"}))
	files := ingestedFiles(t, db)
	require.Len(t, files, 1)
	for n := range files {
		require.Equal(t, out-1, levelOf(t, db, n), "the compaction writes into L%d", out)
	}
	close(release)
	require.NoError(t, <-done)
	require.NoError(t, db.Check(ctx))
	require.Equal(t, []string{"a=1", "b=1", "m=m", "y=1", "z=1"}, scanDB(t, db, nil))
}

// TestIngestConcurrent ingests tables while writers, flushes and automatic
// compactions run: each ingest spans the writers' keys (so it finds them in
// the memtable and flushes first) and rewrites its own keys, and a reader
// checks that an ingest is never seen in part. In the end every key holds
// its last value, and the structure checks out.
func TestIngestConcurrent(t *testing.T) {
	ctx := context.Background()
	db, fs := openTestDB(t, nil)
	opts := smallOptions(fs)
	require.NoError(t, fs.MkdirAll("/ext", 0o755))
	const rounds, perTable = 12, 40
	done := make(chan struct{})
	errc := make(chan error, 3)
	var last sync.Map // writer key -> value
	go func() {
		var err error
		for i := 0; err == nil; i++ {
			select {
			case <-done:
				errc <- nil
				return
			default:
			}
			k := fmt.Sprintf("m%05d", i%500)
			v := fmt.Sprintf("w%d", i)
			if err = db.Put(ctx, []byte(k), []byte(v)); err == nil {
				last.Store(k, v)
			}
			if i%300 == 0 && err == nil {
				err = db.Flush(ctx)
			}
		}
		errc <- err
	}()
	go func() {
		// Every ingest writes all of its keys with the same round number:
		// a scan must see one round for all of them.
		for {
			select {
			case <-done:
				errc <- nil
				return
			default:
			}
			seen := map[string]bool{}
			for _, kv := range scanDB(t, db, nil) {
				if strings.HasPrefix(kv, "a") || strings.HasPrefix(kv, "z") {
					seen[kv[strings.IndexByte(kv, '=')+1:]] = true
				}
			}
			if len(seen) > 1 {
				errc <- fmt.Errorf("a scan saw parts of several ingests: %v", seen)
				return
			}
		}
	}()
	for r := range rounds {
		var entries []ingestEntry
		for j := range perTable / 2 {
			entries = append(entries, ingestEntry{key: fmt.Sprintf("a%03d", j), value: fmt.Sprintf("r%d", r)})
		}
		for j := range perTable / 2 {
			entries = append(entries, ingestEntry{key: fmt.Sprintf("z%03d", j), value: fmt.Sprintf("r%d", r)})
		}
		p := fmt.Sprintf("/ext/%d.sst", r)
		writeTable(t, fs, p, opts, entries...)
		require.NoError(t, db.Ingest(ctx, []string{p}))
	}
	close(done)
	require.NoError(t, <-errc)
	require.NoError(t, <-errc)
	for _, kv := range scanDB(t, db, nil) {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "m") {
			want, _ := last.Load(k)
			require.Equal(t, want, v, k)
		} else {
			require.Equal(t, fmt.Sprintf("r%d", rounds-1), v, k)
		}
	}
	require.NoError(t, db.Check(ctx))
}

// TestIngestTxConflict checks that an ingest counts as a write for the
// transactions' conflict check: a transaction that began before it and
// writes one of its keys fails to commit, one that began after commits.
func TestIngestTxConflict(t *testing.T) {
	ctx := context.Background()
	db, fs := openTestDB(t, nil)
	require.NoError(t, fs.MkdirAll("/ext", 0o755))
	require.NoError(t, db.Put(ctx, []byte("k"), []byte("old")))
	require.NoError(t, db.Flush(ctx))
	before, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	writeTable(t, fs, "/ext/k.sst", smallOptions(fs), sets("ingested-", "k")...)
	require.NoError(t, db.Ingest(ctx, []string{"/ext/k.sst"}))
	after, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, before.Put(ctx, []byte("k"), []byte("tx1")))
	require.ErrorIs(t, before.Commit(), ErrConflict)
	require.NoError(t, after.Put(ctx, []byte("k"), []byte("tx2")))
	require.NoError(t, after.Commit())
	v, err := db.Get(ctx, []byte("k"))
	require.NoError(t, err)
	require.Equal(t, "tx2", string(v))
}

// TestIngestEvent checks that the listener hears of each ingested table as
// a TableCreated with Reason "ingest", its number and its level.
func TestIngestEvent(t *testing.T) {
	ctx := context.Background()
	db, fs := openTestDB(t, nil)
	rec := &recorder{}
	db.setEventListener(rec.listener())
	require.NoError(t, fs.MkdirAll("/ext", 0o755))
	info := writeTable(t, fs, "/ext/e.sst", smallOptions(fs), sets("", "e")...)
	require.NoError(t, db.Ingest(ctx, []string{"/ext/e.sst"}))
	var num manifest.FileNum
	for n := range ingestedFiles(t, db) {
		num = n
	}
	want := TableInfo{FileNum: uint64(num), Level: manifest.NumLevels - 1, Size: info.Size, Reason: "ingest"}
	require.Eventually(t, func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return slices.Contains(rec.infos, any(want))
	}, 2*time.Minute, time.Millisecond)
}

// TestPickerWaitsForIngest checks the picker's side of an ingest: while an
// ingest's edit is being logged (d.mu.ingesting), no compaction is picked,
// and a manual one is told to wait (busy) rather than that there is
// nothing to do.
func TestPickerWaitsForIngest(t *testing.T) {
	ctx := context.Background()
	db, _, _ := openIngestDB(t)
	for i := range 2 {
		require.NoError(t, db.Put(ctx, key(i), []byte("v")))
		require.NoError(t, db.Flush(ctx))
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	db.mu.ingesting = true
	c, busy := db.pickAndMarkLocked(nil)
	require.Nil(t, c)
	require.False(t, busy)
	c, busy = db.pickAndMarkLocked(&manualCompaction{level: 0})
	require.Nil(t, c)
	require.True(t, busy)
	db.mu.ingesting = false
	c, _ = db.pickAndMarkLocked(&manualCompaction{level: 0})
	require.NotNil(t, c)
	require.Contains(t, db.mu.compactions, c)
	db.unmarkLocked(c)
	require.NotContains(t, db.mu.compactions, c)
}

// TestTableWriterOptions checks that a TableWriter writes with the options'
// table settings, so an ingested table reads like a flushed one: its
// properties name the codec, checksum, block size, filter and prefix
// extractor, and mark it external.
func TestTableWriterOptions(t *testing.T) {
	fs := vfs.NewMem()
	pe, err := ParsePrefixExtractor("fixed:2")
	require.NoError(t, err)
	opts := &Options{FS: fs, Compression: CompressionNone, ChecksumType: ChecksumCRC32C, BlockSize: 1024,
		BloomBitsPerKey: 7, PrefixExtractor: pe}
	writeTable(t, fs, "/t.sst", opts, sets("", "aa1", "aa2", "bb1")...)
	fr, err := fileio.Open(fs, "/t.sst", fileio.Options{})
	require.NoError(t, err)
	r, err := sstable.Open(context.Background(), fr, sstable.ReadEnv{}, sstable.ReaderOptions{})
	require.NoError(t, err)
	defer r.Close()
	p := r.Properties()
	require.Equal(t, uint64(1), p.ExternalVersion)
	require.Equal(t, uint64(1024), p.BlockSize)
	require.Equal(t, uint64(7), p.BloomBitsPerKey)
	require.Equal(t, opts.Compression.internal(), p.Compression)
	require.Equal(t, opts.ChecksumType.internal(), p.Checksum)
	require.Equal(t, pe.String(), p.PrefixExtractorName)
	require.Zero(t, p.LargestSeqNum)
}

// TestIngestSnapshotThroughCompaction checks that a snapshot taken before
// an ingest still reads the older values after a compaction merged the
// ingested table with them.
func TestIngestSnapshotThroughCompaction(t *testing.T) {
	ctx := context.Background()
	db, fs := openTestDB(t, nil)
	require.NoError(t, fs.MkdirAll("/ext", 0o755))
	for _, k := range []string{"a", "b", "c"} {
		require.NoError(t, db.Put(ctx, []byte(k), []byte("old-"+k)))
	}
	require.NoError(t, db.Flush(ctx))
	snap, err := db.NewSnapshot()
	require.NoError(t, err)
	defer snap.Close()
	writeTable(t, fs, "/ext/t.sst", smallOptions(fs),
		ingestEntry{key: "a", value: "new-a"}, ingestEntry{key: "b", del: true}, ingestEntry{key: "b0", end: "d"})
	require.NoError(t, db.Ingest(ctx, []string{"/ext/t.sst"}))
	require.NoError(t, db.Compact(ctx, nil, nil))
	require.Empty(t, ingestedFiles(t, db))
	require.Equal(t, []string{"a=new-a"}, scanDB(t, db, nil))
	require.Equal(t, []string{"a=old-a", "b=old-b", "c=old-c"}, scanDB(t, db, snap))
	v, err := snap.Get(ctx, []byte("c"))
	require.NoError(t, err)
	require.Equal(t, "old-c", string(v))
}
