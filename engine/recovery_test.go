package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/wal"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// recDir maps every file name of a directory to its contents: what a failed
// Open must leave exactly as it found it.
func recDir(t testing.TB, fs vfs.FS, dir string) map[string]string {
	t.Helper()
	names, err := fs.List(dir)
	require.NoError(t, err)
	m := make(map[string]string, len(names))
	for _, n := range names {
		m[n] = string(recRead(t, fs, filepath.Join(dir, n)))
	}
	return m
}

// recRead returns the contents of a file, which may be empty.
func recRead(t testing.TB, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name)
	require.NoError(t, err)
	defer f.Close()
	data, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<40))
	require.NoError(t, err)
	return data
}

// requireSameDir fails if two recDir results differ, naming the files that
// differ rather than printing their contents.
func requireSameDir(t testing.TB, before, after map[string]string, msgAndArgs ...any) {
	t.Helper()
	var diff []string
	for n, b := range before {
		a, ok := after[n]
		switch {
		case !ok:
			diff = append(diff, n+" removed")
		case a != b:
			diff = append(diff, fmt.Sprintf("%s changed (%d bytes, was %d)", n, len(a), len(b)))
		}
	}
	for n := range after {
		if _, ok := before[n]; !ok {
			diff = append(diff, n+" added")
		}
	}
	slices.Sort(diff)
	require.Empty(t, diff, msgAndArgs...)
}

// recHas reports whether the directory listing has a file of that name.
func recHas(t testing.TB, fs vfs.FS, name string) bool {
	t.Helper()
	_, err := fs.Stat(name)
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	require.NoError(t, err)
	return true
}

// recFiles returns the names in dir whose kind is kind.
func recFiles(t testing.TB, fs vfs.FS, dir string, kind manifest.FileKind) []string {
	t.Helper()
	names, err := fs.List(dir)
	require.NoError(t, err)
	var out []string
	for _, n := range names {
		if k, _, ok := manifest.ParseFileName(n); ok && k == kind {
			out = append(out, filepath.Join(dir, n))
		}
	}
	return out
}

// recLog is a logger whose lines a test can read.
type recLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *recLog) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(lockedWriter{l}, nil))
}

func (l *recLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

type lockedWriter struct{ l *recLog }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	return w.l.buf.Write(p)
}

// recKeys writes keys [from, to) with values derived from them.
func recKeys(t testing.TB, db *database, from, to int) {
	t.Helper()
	ctx := context.Background()
	for i := from; i < to; i++ {
		require.NoError(t, db.Put(ctx, key(i), recValue(i)))
	}
}

func recValue(i int) []byte { return []byte(fmt.Sprintf("value-%d-%s", i, strings.Repeat("x", i%40))) }

// recPresent returns which of keys [0, n) db has, checking each value.
func recPresent(t testing.TB, db *database, n int) []bool {
	t.Helper()
	ctx := context.Background()
	got := make([]bool, n)
	for i := range n {
		v, err := db.Get(ctx, key(i))
		if errors.Is(err, ErrNotFound) {
			continue
		}
		require.NoError(t, err, "key %d", i)
		require.Equal(t, string(recValue(i)), string(v), "key %d", i)
		got[i] = true
	}
	return got
}

// recordStarts returns the offset where each record of a log or MANIFEST
// starts, and its size.
func recordStarts(t testing.TB, data []byte) []int64 {
	t.Helper()
	r := wal.NewReader(bytes.NewReader(data), wal.AbsoluteConsistency)
	starts := []int64{}
	for {
		start := r.Offset()
		if _, err := r.Next(); err == io.EOF {
			return starts
		} else {
			require.NoError(t, err)
		}
		starts = append(starts, start)
	}
}

// TestOpenRefusesDirectoryWithoutCurrent checks that a directory holding a
// database's files but no CURRENT is not taken for an empty one: Open fails
// with corruption naming the files, and changes nothing. What an
// interrupted creation leaves, and other programs' files, are no obstacle.
func TestOpenRefusesDirectoryWithoutCurrent(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	db, err := openDatabase("/db", smallOptions(fs))
	require.NoError(t, err)
	recKeys(t, db, 0, 100)
	require.NoError(t, db.Flush(ctx))
	recKeys(t, db, 100, 120)
	require.NoError(t, db.Close())
	require.NoError(t, fs.Remove(manifest.CurrentFileName("/db")))
	before := recDir(t, fs, "/db")

	for _, o := range []*Options{smallOptions(fs), {FS: fs, ReadOnly: true}, {FS: fs, ErrorIfMissing: true}} {
		_, err = openDatabase("/db", o)
		require.ErrorIs(t, err, ErrCorruption)
		require.ErrorContains(t, err, `directory "/db" has no CURRENT but holds`)
		require.ErrorContains(t, err, ".sst")
		require.ErrorContains(t, err, "MANIFEST-")
		require.ErrorContains(t, err, "refusing to create a database over it")
		requireSameDir(t, before, recDir(t, fs, "/db"), "a refused Open changes nothing")
	}

	// A WAL with data is a database's too.
	fs2 := vfs.NewMem()
	db, err = openDatabase("/db", smallOptions(fs2))
	require.NoError(t, err)
	recKeys(t, db, 0, 10)
	require.NoError(t, db.Close())
	for _, n := range append(recFiles(t, fs2, "/db", manifest.FileKindManifest), manifest.CurrentFileName("/db")) {
		require.NoError(t, fs2.Remove(n))
	}
	_, err = openDatabase("/db", smallOptions(fs2))
	require.ErrorIs(t, err, ErrCorruption)
	require.ErrorContains(t, err, ".log")

	// An interrupted creation: the MANIFEST of an empty database, a
	// temporary file, an empty WAL; and a file of another program.
	fs3 := vfs.NewMem()
	require.NoError(t, fs3.MkdirAll("/db", 0o755))
	vs, err := manifest.Create(fs3, "/db")
	require.NoError(t, err)
	require.NoError(t, vs.Close())
	require.NoError(t, fs3.Remove(manifest.CurrentFileName("/db")))
	writeAll(t, fs3, manifest.TempFileName("/db", 1), []byte("MANIFEST-000001\n"))
	writeAll(t, fs3, manifest.LogFileName("/db", 2), nil)
	writeAll(t, fs3, "/db/notes.txt", []byte("not shale's"))
	db, err = openDatabase("/db", smallOptions(fs3))
	require.NoError(t, err, "an interrupted creation is completed")
	recKeys(t, db, 0, 5)
	require.NoError(t, db.Close())
	require.Equal(t, "not shale's", string(recRead(t, fs3, "/db/notes.txt")))
}

// TestTornManifestTailKeepsFlushedData loses the last MANIFEST record (a
// flush's) to a torn write: the WAL the flush made obsolete is still there
// and is replayed, and the table the lost record named is kept aside, named
// in a warning, not deleted.
func TestTornManifestTailKeepsFlushedData(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	db, err := openDatabase("/db", smallOptions(fs))
	require.NoError(t, err)
	recKeys(t, db, 0, 300)
	require.NoError(t, db.Flush(ctx))
	require.NoError(t, db.Close())
	tables := recFiles(t, fs, "/db", manifest.FileKindTable)
	require.Len(t, tables, 1)
	flushed := recRead(t, fs, tables[0])

	manifests := recFiles(t, fs, "/db", manifest.FileKindManifest)
	require.Len(t, manifests, 1)
	data := recRead(t, fs, manifests[0])
	starts := recordStarts(t, data)
	require.GreaterOrEqual(t, len(starts), 2)
	last := starts[len(starts)-1]
	writeAll(t, fs, manifests[0], data[:last+(int64(len(data))-last)/2])

	var log recLog
	o := smallOptions(fs)
	o.Logger = log.logger()
	db, err = openDatabase("/db", o)
	require.NoError(t, err)
	require.Equal(t, slices.Repeat([]bool{true}, 300), recPresent(t, db, 300), "every flushed key survives")
	require.NoError(t, db.Check(ctx))
	require.NoError(t, db.Close())

	kept := tables[0] + orphanSuffix
	require.True(t, bytes.Equal(flushed, recRead(t, fs, kept)), "the table the lost edit named is kept aside")
	require.Contains(t, log.String(), "torn MANIFEST tail")
	require.Contains(t, log.String(), kept)

	// The next Open is clean and leaves the kept file alone.
	db, err = openDatabase("/db", smallOptions(fs))
	require.NoError(t, err)
	require.NoError(t, db.Close())
	require.True(t, bytes.Equal(flushed, recRead(t, fs, kept)))
}

// walDamage is a way to damage the newest WAL, given its bytes and the
// offsets where its records start.
type walDamage struct {
	name string
	edit func(data []byte, starts []int64) []byte
	// first is the first record (= key) the damage touches; keys before it
	// must survive in every mode that opens.
	first func(starts []int64) int
	// torn: the damage is an incomplete final record, which the default
	// mode drops.
	torn bool
	// skipKeeps: the records after the damaged ones that
	// skip_any_corrupted_records still finds, counted from the end.
	skipKeeps int
}

// TestWALRecoveryModes damages the newest WAL in several ways and opens it
// in each recovery mode: the default drops only an incomplete final record,
// absolute_consistency drops nothing, the lenient modes drop and count the
// damage and keep the WAL as a .corrupt copy; a failed Open changes nothing.
func TestWALRecoveryModes(t *testing.T) {
	const n = 3000 // synced writes, a bit over 5 blocks of WAL
	origFS := vfs.NewMem()
	o := smallOptions(origFS)
	o.WriteBufferSize = 4 << 20 // nothing is flushed: every write is in the WAL
	o.Sync = true
	db, err := openDatabase("/db", o)
	require.NoError(t, err)
	recKeys(t, db, 0, n)
	require.NoError(t, db.Close())
	logName := newestLog(t, origFS)
	orig := recRead(t, origFS, logName)
	starts := recordStarts(t, orig)
	require.Len(t, starts, n)
	require.Greater(t, len(orig), 3*wal.BlockSize)
	end := int64(len(orig))
	lastRecord := func([]int64) int { return n - 1 }

	damages := []walDamage{
		{name: "cut-last-payload", torn: true, first: lastRecord,
			edit: func(d []byte, s []int64) []byte { return d[:end-3] }},
		{name: "cut-last-header", torn: true, first: lastRecord,
			edit: func(d []byte, s []int64) []byte { return d[:s[n-1]+4] }},
		{name: "zeros-appended", torn: true, first: func([]int64) int { return n },
			edit: func(d []byte, s []int64) []byte { return append(d, make([]byte, 40000)...) }},
		{name: "checksum-of-last-record", first: lastRecord,
			edit: func(d []byte, s []int64) []byte { d[end-2] ^= 0x08; return d }},
		// The writes in the last blocks were synced, then the blocks were
		// overwritten: today's 1,001 lost writes.
		{name: "garbage-last-blocks", first: func(s []int64) int { return recordAt(s, end-2*wal.BlockSize) },
			edit: func(d []byte, s []int64) []byte {
				rng := rand.New(rand.NewPCG(1, 2))
				for i := end - 2*wal.BlockSize; i < end; i++ {
					d[i] = byte(rng.Uint32()) | 0x80
				}
				return d
			}},
		{name: "flip-middle", first: func(s []int64) int { return n / 2 }, skipKeeps: n/2 - 1,
			edit: func(d []byte, s []int64) []byte { d[s[n/2]+9] ^= 0x01; return d }},
		{name: "zeroed-middle-block", first: func(s []int64) int { return recordAt(s, 2*wal.BlockSize) },
			skipKeeps: n - recordAt(starts, 3*wal.BlockSize) - 1,
			edit:      func(d []byte, s []int64) []byte { clear(d[2*wal.BlockSize : 3*wal.BlockSize]); return d }},
	}
	modes := []WALRecoveryMode{WALRecoveryTolerateCorruptedTailRecords, WALRecoveryAbsoluteConsistency,
		WALRecoveryPointInTime, WALRecoverySkipAnyCorruptedRecords}
	for _, dm := range damages {
		for _, mode := range modes {
			t.Run(dm.name+"/"+mode.String(), func(t *testing.T) {
				fs := origFS.CrashClone()
				damaged := dm.edit(bytes.Clone(orig), starts)
				writeAll(t, fs, logName, damaged)
				before := recDir(t, fs, "/db")
				first := dm.first(starts)

				var log recLog
				o := smallOptions(fs)
				o.WriteBufferSize = 4 << 20
				o.WALRecoveryMode = mode
				o.Logger = log.logger()
				o.Statistics = statistics.New(statistics.DefaultLevel)
				db, err := openDatabase("/db", o)
				fails := mode == WALRecoveryAbsoluteConsistency ||
					(mode == WALRecoveryTolerateCorruptedTailRecords && !dm.torn)
				if fails {
					require.ErrorIs(t, err, ErrCorruption)
					require.ErrorContains(t, err, logName)
					require.ErrorContains(t, err, "offset")
					requireSameDir(t, before, recDir(t, fs, "/db"), "a failed Open changes nothing")
					return
				}
				require.NoError(t, err)
				got := recPresent(t, db, n)
				require.NoError(t, db.Close())
				require.Equal(t, slices.Repeat([]bool{true}, first), got[:first], "the writes before the damage")
				droppedRecs := o.Statistics.TickerCount(statistics.WALRecoveryDroppedRecords)
				droppedBytes := o.Statistics.TickerCount(statistics.WALRecoveryDroppedBytes)
				kept := logName + corruptSuffix
				if dm.torn {
					require.Zero(t, droppedRecs, "an incomplete final record is not damage")
					require.Zero(t, droppedBytes)
					require.False(t, recHas(t, fs, kept))
					return
				}
				require.Positive(t, droppedRecs)
				require.Positive(t, droppedBytes)
				require.True(t, bytes.Equal(damaged, recRead(t, fs, kept)), "the damaged WAL is kept")
				require.Contains(t, log.String(), kept)
				require.Contains(t, log.String(), "records=")
				survivors := 0
				for _, ok := range got[first:] {
					if ok {
						survivors++
					}
				}
				if mode == WALRecoveryPointInTime {
					require.Zero(t, survivors, "point in time: nothing after the damage")
				} else {
					require.Equal(t, dm.skipKeeps, survivors, "skip: the records after the damage")
				}
			})
		}
	}
}

// recordAt returns the index of the record that holds offset off.
func recordAt(starts []int64, off int64) int {
	i, _ := slices.BinarySearch(starts, off+1)
	return i - 1
}

// TestPointInTimeSkipsLaterWALs damages the older of two WALs that both
// need replaying: the default mode refuses, point-in-time recovery stops at
// the damage and keeps the later WAL aside unreplayed, and
// skip_any_corrupted_records replays everything but the damaged record.
func TestPointInTimeSkipsLaterWALs(t *testing.T) {
	origFS := vfs.NewMem()
	o := smallOptions(origFS)
	o.WriteBufferSize = 4 << 20
	o.Sync = true
	db, err := openDatabase("/db", o)
	require.NoError(t, err)
	recKeys(t, db, 0, 200)
	require.NoError(t, db.Close())
	older := newestLog(t, origFS)
	starts := recordStarts(t, recRead(t, origFS, older))
	require.Len(t, starts, 200)

	// A second WAL, as a rotation makes, with keys 200..399 at the next
	// sequence numbers.
	_, num, _ := manifest.ParseFileName(filepath.Base(older))
	newer := manifest.LogFileName("/db", num+10)
	var buf bytes.Buffer
	w := wal.NewWriter(&buf)
	seq := baseSeq(t, origFS)
	for i := 200; i < 400; i++ {
		b := newWriteBatch()
		b.Put(key(i), recValue(i))
		b.b.SetSeqNum(seq + base.SeqNum(i-200+1))
		_, err := w.WriteRecord(b.b.Repr())
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	writeAll(t, origFS, newer, buf.Bytes())
	require.NoError(t, syncDir(origFS, "/db"))
	data := recRead(t, origFS, older)
	data[starts[100]+10] ^= 0x01 // record 100 of the older WAL
	writeAll(t, origFS, older, data)

	for _, tc := range []struct {
		mode    WALRecoveryMode
		present func(i int) bool
		kept    []string
	}{
		{WALRecoveryTolerateCorruptedTailRecords, nil, nil},
		{WALRecoveryPointInTime, func(i int) bool { return i < 100 }, []string{older + corruptSuffix, newer + skippedSuffix}},
		{WALRecoverySkipAnyCorruptedRecords, func(i int) bool { return i != 100 }, []string{older + corruptSuffix}},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			fs := origFS.CrashClone()
			before := recDir(t, fs, "/db")
			o := smallOptions(fs)
			o.WALRecoveryMode = tc.mode
			o.Statistics = statistics.New(statistics.DefaultLevel)
			var log recLog
			o.Logger = log.logger()
			db, err := openDatabase("/db", o)
			if tc.present == nil {
				require.ErrorIs(t, err, ErrCorruption)
				require.ErrorContains(t, err, older)
				requireSameDir(t, before, recDir(t, fs, "/db"))
				return
			}
			require.NoError(t, err)
			got := recPresent(t, db, 400)
			require.NoError(t, db.Close())
			for i, ok := range got {
				require.Equal(t, tc.present(i), ok, "key %d", i)
			}
			for _, k := range tc.kept {
				require.True(t, recHas(t, fs, k), "%s is kept", k)
				require.Contains(t, log.String(), k)
			}
			recs := o.Statistics.TickerCount(statistics.WALRecoveryDroppedRecords)
			if tc.mode == WALRecoveryPointInTime {
				require.Equal(t, uint64(100+200), recs,
					"every record not replayed: the damaged one and those after it, and the later WAL's")
			} else {
				require.Equal(t, uint64(1), recs)
			}
		})
	}
}

// baseSeq returns the last sequence number of the database in /db.
func baseSeq(t testing.TB, fs vfs.FS) base.SeqNum {
	o := smallOptions(fs)
	o.ReadOnly = true
	db, err := openDatabase("/db", o)
	require.NoError(t, err)
	defer db.Close()
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.mu.lastSeq
}

// TestOpenChecksTableSizes checks that Open compares every table with the
// MANIFEST (RocksDB's paranoid checks) and fails naming the file, the size
// expected and the size found, or the missing file; and changes nothing.
func TestOpenChecksTableSizes(t *testing.T) {
	ctx := context.Background()
	origFS := vfs.NewMem()
	db, err := openDatabase("/db", smallOptions(origFS))
	require.NoError(t, err)
	recKeys(t, db, 0, 200)
	require.NoError(t, db.Flush(ctx))
	recKeys(t, db, 200, 400)
	require.NoError(t, db.Flush(ctx))
	require.NoError(t, db.Close())
	tables := recFiles(t, origFS, "/db", manifest.FileKindTable)
	require.Len(t, tables, 2)
	size := len(recRead(t, origFS, tables[1]))

	for _, tc := range []struct {
		name   string
		damage func(fs *vfs.MemFS)
		want   []string
	}{
		{"longer", func(fs *vfs.MemFS) { writeAll(t, fs, tables[1], append(recRead(t, fs, tables[1]), 0)) },
			[]string{tables[1], fmt.Sprintf("has %d bytes, expected %d", size+1, size)}},
		{"shorter", func(fs *vfs.MemFS) { writeAll(t, fs, tables[1], recRead(t, fs, tables[1])[:size-10]) },
			[]string{tables[1], fmt.Sprintf("has %d bytes, expected %d", size-10, size)}},
		{"missing", func(fs *vfs.MemFS) { require.NoError(t, fs.Remove(tables[0])) },
			[]string{tables[0] + " is missing"}},
		{"both", func(fs *vfs.MemFS) {
			require.NoError(t, fs.Remove(tables[0]))
			writeAll(t, fs, tables[1], nil)
		}, []string{tables[0] + " is missing", fmt.Sprintf("has 0 bytes, expected %d", size)}},
	} {
		for _, readOnly := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/read_only=%t", tc.name, readOnly), func(t *testing.T) {
				fs := origFS.CrashClone()
				tc.damage(fs)
				before := recDir(t, fs, "/db")
				o := smallOptions(fs)
				o.ReadOnly = readOnly
				_, err := openDatabase("/db", o)
				require.ErrorIs(t, err, ErrCorruption)
				for _, w := range tc.want {
					require.ErrorContains(t, err, w)
				}
				requireSameDir(t, before, recDir(t, fs, "/db"))
			})
		}
	}
}

// TestFailedOpenChangesNothing fails Open in many ways and checks that every
// file is left byte for byte as it was, and that the database then opens
// once the cause is gone.
func TestFailedOpenChangesNothing(t *testing.T) {
	ctx := context.Background()
	origFS := vfs.NewMem()
	o := smallOptions(origFS)
	o.Sync = true
	db, err := openDatabase("/db", o)
	require.NoError(t, err)
	recKeys(t, db, 0, 300)
	require.NoError(t, db.Flush(ctx))
	recKeys(t, db, 300, 600)
	require.NoError(t, db.Close())
	table := recFiles(t, origFS, "/db", manifest.FileKindTable)[0]
	logName := newestLog(t, origFS)
	manifestName := recFiles(t, origFS, "/db", manifest.FileKindManifest)[0]
	modify := func(name string, f func([]byte) []byte) func(*vfs.MemFS) {
		return func(fs *vfs.MemFS) { writeAll(t, fs, name, f(recRead(t, fs, name))) }
	}
	flip := func(off func(int) int) func([]byte) []byte {
		return func(b []byte) []byte { b[off(len(b))] ^= 0x10; return b }
	}

	for _, tc := range []struct {
		name   string
		damage func(*vfs.MemFS)
		inject errorfs.Predicate // fails an operation of the Open instead
	}{
		{name: "missing table", damage: func(fs *vfs.MemFS) { require.NoError(t, fs.Remove(table)) }},
		{name: "table size", damage: modify(table, func(b []byte) []byte { return append(b, 1, 2, 3) })},
		{name: "table footer", damage: modify(table, flip(func(n int) int { return n - 1 }))},
		{name: "WAL mid-log", damage: modify(logName, flip(func(n int) int { return n / 2 }))},
		{name: "WAL last record", damage: modify(logName, flip(func(n int) int { return n - 1 }))},
		{name: "MANIFEST mid-log", damage: modify(manifestName, flip(func(n int) int { return 20 }))},
		{name: "MANIFEST last record", damage: modify(manifestName, flip(func(n int) int { return n - 1 }))},
		{name: "CURRENT", damage: modify(manifest.CurrentFileName("/db"), func([]byte) []byte { return []byte("MANIFEST-9\n") })},
		// IO failures on the way to the commit.
		{name: "creating the new WAL", inject: errorfs.And(errorfs.OnKind(errorfs.OpCreate), errorfs.PathMatch("*.log"))},
		{name: "writing the new MANIFEST", inject: errorfs.And(errorfs.OnKind(errorfs.OpFileWrite), errorfs.PathMatch("MANIFEST-*"))},
		{name: "renaming CURRENT", inject: errorfs.OnKind(errorfs.OpRename)},
		{name: "writing a recovered table", inject: errorfs.And(errorfs.OnKind(errorfs.OpFileWrite), errorfs.PathMatch("*.sst"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := origFS.CrashClone()
			var fs vfs.FS = mem
			if tc.damage != nil {
				tc.damage(mem)
			} else {
				fs = errorfs.Wrap(mem, tc.inject)
			}
			before := recDir(t, mem, "/db")
			o := smallOptions(fs)
			_, err := openDatabase("/db", o)
			require.Error(t, err)
			if tc.damage != nil {
				require.ErrorIs(t, err, ErrCorruption)
			} else {
				require.ErrorIs(t, err, errorfs.ErrInjected)
			}
			requireSameDir(t, before, recDir(t, mem, "/db"), "a failed Open changes nothing")
			if tc.inject != nil {
				db, err := openDatabase("/db", smallOptions(mem))
				require.NoError(t, err, "the database opens once the failure is gone")
				require.Equal(t, slices.Repeat([]bool{true}, 600), recPresent(t, db, 600))
				require.NoError(t, db.Close())
			}
		})
	}
}

// TestReadOnlyOpenOfUnwritableDirectory opens, read-only, a database whose
// directory this process may not write (every write fails with EACCES, or
// EROFS): it opens without the LOCK and reads everything. A writable open
// says why it cannot lock, and only a held lock is "in use".
func TestReadOnlyOpenOfUnwritableDirectory(t *testing.T) {
	ctx := context.Background()
	mem := vfs.NewMem()
	db, err := openDatabase("/db", smallOptions(mem))
	require.NoError(t, err)
	recKeys(t, db, 0, 100)
	require.NoError(t, db.Flush(ctx))
	recKeys(t, db, 100, 200)
	require.NoError(t, db.Close())

	for _, errno := range []syscall.Errno{syscall.EACCES, syscall.EROFS} {
		t.Run(errno.Error(), func(t *testing.T) {
			fs := errorfs.Wrap(mem, errorfs.InjectError(errno, errorfs.Writes()))
			o := smallOptions(fs)
			o.ReadOnly = true
			db, err := openDatabase("/db", o)
			require.NoError(t, err)
			require.Equal(t, slices.Repeat([]bool{true}, 200), recPresent(t, db, 200))
			require.NoError(t, db.Close())
			require.Zero(t, fs.Injected()-1, "only the LOCK was tried")

			_, err = openDatabase("/db", smallOptions(fs))
			require.ErrorIs(t, err, errno)
			require.NotContains(t, err.Error(), "in use")
			if errno == syscall.EACCES {
				require.ErrorContains(t, err, "permission denied")
			} else {
				require.ErrorContains(t, err, "read-only file system")
			}
		})
	}

	held, err := openDatabase("/db", smallOptions(mem))
	require.NoError(t, err)
	o := smallOptions(mem)
	o.ReadOnly = true
	_, err = openDatabase("/db", o)
	require.ErrorIs(t, err, vfs.ErrLocked)
	require.ErrorContains(t, err, "in use")
	require.NoError(t, held.Close())
}

// TestReadOnlyOpenOfReadOnlyFiles does the same on disk with chmod, where
// the OS allows a test to be refused (not as root, which bypasses
// permissions).
func TestReadOnlyOpenOfReadOnlyFiles(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root bypasses file permissions; TestReadOnlyOpenOfUnwritableDirectory covers this with errorfs")
	}
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "db")
	o := smallOptions(nil)
	o.FS = nil
	db, err := openDatabase(dir, o)
	require.NoError(t, err)
	recKeys(t, db, 0, 100)
	require.NoError(t, db.Flush(ctx))
	recKeys(t, db, 100, 150)
	require.NoError(t, db.Close())
	require.NoError(t, os.Remove(filepath.Join(dir, "LOCK")))
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, n := range names {
		require.NoError(t, os.Chmod(filepath.Join(dir, n.Name()), 0o444))
	}
	require.NoError(t, os.Chmod(dir, 0o555))
	t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })

	o.ReadOnly = true
	db, err = openDatabase(dir, o)
	require.NoError(t, err)
	require.Equal(t, slices.Repeat([]bool{true}, 150), recPresent(t, db, 150))
	require.NoError(t, db.Close())

	o.ReadOnly = false
	_, err = openDatabase(dir, o)
	require.ErrorContains(t, err, "permission denied")
	require.NotContains(t, err.Error(), "in use")
}

// TestWALRecoveryModeOption checks the option's validation and spelling.
func TestWALRecoveryModeOption(t *testing.T) {
	_, err := openDatabase("/db", &Options{FS: vfs.NewMem(), WALRecoveryMode: 9})
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.ErrorContains(t, err, "wal_recovery_mode 9")
	for m := WALRecoveryTolerateCorruptedTailRecords; m <= WALRecoverySkipAnyCorruptedRecords; m++ {
		got, err := ParseWALRecoveryMode(m.String())
		require.NoError(t, err)
		require.Equal(t, m, got)
	}
	_, err = ParseWALRecoveryMode("kPointInTimeRecovery")
	require.ErrorIs(t, err, ErrInvalidArgument)
}

// TestOpenDeletesOnlyRedundantTables checks what a clean Open does with
// tables the MANIFEST does not name: it deletes what it can show holds
// nothing it did not recover otherwise (an interrupted flush's output, whose
// WAL it replayed; an interrupted compaction's, whose inputs are live) and
// keeps the rest as *.orphan, such as a table whose MANIFEST records were
// lost whole, or an unreadable one, whatever its number (it may be a crash's
// half-written table, or anything else).
func TestOpenDeletesOnlyRedundantTables(t *testing.T) {
	ctx := context.Background()
	mem := vfs.NewMem()
	o := smallOptions(mem)
	o.DisableAutoCompactions = true
	db, err := openDatabase("/db", o)
	require.NoError(t, err)
	recKeys(t, db, 0, 100)
	require.NoError(t, db.Flush(ctx))
	recKeys(t, db, 100, 200)
	require.NoError(t, db.Flush(ctx))
	recKeys(t, db, 200, 250)
	require.NoError(t, db.Close())
	require.NoError(t, syncDir(mem, "/db"), "clones start from the live state")
	tables := recFiles(t, mem, "/db", manifest.FileKindTable)
	require.Len(t, tables, 2)
	manifestName := recFiles(t, mem, "/db", manifest.FileKindManifest)[0]
	data := recRead(t, mem, manifestName)
	starts := recordStarts(t, data)
	require.Len(t, starts, 3, "the snapshot and two flushes")

	// The MANIFEST loses both flush records whole: nothing tells it from
	// a clean one. The second table's keys are in the WAL the last flush
	// left; the first table's are nowhere else.
	fs := mem.CrashClone()
	writeAll(t, fs, manifestName, data[:starts[1]])
	var log recLog
	o = smallOptions(fs)
	o.Logger = log.logger()
	db, err = openDatabase("/db", o)
	require.NoError(t, err)
	got := recPresent(t, db, 250)
	require.NoError(t, db.Close())
	require.Equal(t, slices.Repeat([]bool{false}, 100), got[:100], "the first table is not part of the database")
	require.Equal(t, slices.Repeat([]bool{true}, 150), got[100:])
	require.True(t, bytes.Equal(recRead(t, mem, tables[0]), recRead(t, fs, tables[0]+orphanSuffix)), "but it is kept")
	require.Contains(t, log.String(), tables[0]+orphanSuffix)
	require.False(t, recHas(t, fs, tables[1]), "the second table, whose keys the WAL held, is deleted")
	require.False(t, recHas(t, fs, tables[1]+orphanSuffix))

	// Copies of the live tables under new numbers (a compaction's outputs
	// whose edit never came), and garbage tables: one numbered after the
	// MANIFEST's last edit (a write a crash cut short), one before it.
	fs = mem.CrashClone()
	next := func() manifest.FileNum {
		vs, err := manifest.Load(fs, "/db")
		require.NoError(t, err)
		defer vs.Close()
		return vs.RecordedNextFileNum()
	}()
	copyName := manifest.TableFileName("/db", next+5)
	writeAll(t, fs, copyName, recRead(t, fs, tables[1]))
	partial := manifest.TableFileName("/db", next+6)
	writeAll(t, fs, partial, []byte("half a table"))
	old := manifest.TableFileName("/db", 1)
	require.Less(t, manifest.FileNum(1), next)
	writeAll(t, fs, old, []byte("a table nobody accounts for"))
	require.NoError(t, syncDir(fs, "/db"))
	db, err = openDatabase("/db", smallOptions(fs))
	require.NoError(t, err)
	require.Equal(t, slices.Repeat([]bool{true}, 250), recPresent(t, db, 250))
	require.NoError(t, db.Close())
	require.False(t, recHas(t, fs, copyName), "an interrupted compaction's output is deleted")
	require.False(t, recHas(t, fs, copyName+orphanSuffix))
	require.True(t, recHas(t, fs, partial+orphanSuffix),
		"an unreadable table after the last edit is kept: nothing proves it a crash's half-written table")
	require.True(t, recHas(t, fs, old+orphanSuffix), "an unreadable table from before the last edit is kept")
}
