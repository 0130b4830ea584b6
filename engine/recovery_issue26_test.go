package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/wal"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// TestPointInTimeCountsEveryDroppedRecord writes 1,000 one-key batches, flips
// a byte in the middle of the WAL and opens it with point_in_time_recovery:
// shale.wal.recovery.dropped.records must count every WAL record the open
// did not replay (the damaged one and all those after it, which
// point-in-time recovery never reads), not the one damaged place (issue 26:
// 500 records dropped, 1 reported).
func TestPointInTimeCountsEveryDroppedRecord(t *testing.T) {
	const n = 1000
	origFS, logName, orig, starts := walOf(t, n)

	for _, tc := range []struct {
		name string
		// edit damages the WAL; exact says whether every dropped record can
		// be counted (the framing after the damage is intact), or only a
		// lower bound.
		edit  func(d []byte) []byte
		exact bool
	}{
		// A payload byte: the chunk's checksum fails, its length holds.
		{name: "payload", exact: true,
			edit: func(d []byte) []byte { d[starts[n/2]+9] ^= 0x01; return d }},
		// A length byte: the rest of the block cannot be framed, so its
		// records are counted as one damaged place.
		{name: "length", exact: false,
			edit: func(d []byte) []byte { d[starts[n/2]+4] ^= 0x40; return d }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := origFS.CrashClone()
			writeAll(t, fs, logName, tc.edit(bytes.Clone(orig)))
			o := smallOptions(fs)
			o.WriteBufferSize = 4 << 20
			o.WALRecoveryMode = WALRecoveryPointInTime
			o.Statistics = statistics.New(statistics.DefaultLevel)
			var log recLog
			o.Logger = log.logger()
			db, err := openDatabase("/db", o)
			require.NoError(t, err)
			got := recPresent(t, db, n)
			require.NoError(t, db.Close())
			readable := 0
			for _, ok := range got {
				if ok {
					readable++
				}
			}
			require.Equal(t, n/2, readable, "point in time: the records before the damage")
			dropped := o.Statistics.TickerCount(statistics.WALRecoveryDroppedRecords)
			if tc.exact {
				require.EqualValues(t, n-readable, dropped, "every record not recovered is counted")
			} else {
				// The records of the damaged block after the bad length
				// cannot be framed; every one after that block is counted.
				block := (starts[n/2] / wal.BlockSize) + 1
				after := 0
				for _, s := range starts {
					if s >= block*wal.BlockSize {
						after++
					}
				}
				require.LessOrEqual(t, dropped, uint64(n-readable))
				require.GreaterOrEqual(t, dropped, uint64(after+1))
			}
			require.Contains(t, log.String(), "records=")
		})
	}
}

// walOf makes a database whose one WAL holds n one-key batches, keys 0 to
// n-1, and returns it with the WAL's name, bytes and record offsets.
func walOf(t *testing.T, n int) (fs *vfs.MemFS, logName string, data []byte, starts []int64) {
	t.Helper()
	mem := vfs.NewMem()
	o := smallOptions(mem)
	o.WriteBufferSize = 4 << 20 // nothing is flushed: every write is in the WAL
	db, err := openDatabase("/db", o)
	require.NoError(t, err)
	recKeys(t, db, 0, n)
	require.NoError(t, db.Close())
	logName = newestLog(t, mem)
	data = recRead(t, mem, logName)
	starts = recordStarts(t, data)
	require.Len(t, starts, n)
	// Each record is one batch of one key.
	for i, s := range starts[:2] {
		require.EqualValues(t, 1, binary.LittleEndian.Uint32(data[s+7+8:]), "record %d holds one key", i)
	}
	return mem, logName, data, starts
}

// TestFailedOpenLeavesNoLock checks, on disk, that an Open that fails on a
// directory without LOCK (a checkpoint, a copied database) leaves the
// directory as it found it: the LOCK it created is removed (issue 26). A
// LOCK that was there before stays.
func TestFailedOpenLeavesNoLock(t *testing.T) {
	ctx := context.Background()
	o := smallOptions(nil)
	o.FS = nil
	o.WriteBufferSize = 4 << 20
	src := filepath.Join(t.TempDir(), "db")
	db, err := openDatabase(src, o)
	require.NoError(t, err)
	recKeys(t, db, 0, 100)
	cp := filepath.Join(t.TempDir(), "cp")
	require.NoError(t, db.Checkpoint(ctx, cp))
	recKeys(t, db, 100, 300) // in the WAL only
	require.NoError(t, db.Close())
	require.NoError(t, os.Remove(filepath.Join(src, manifest.LockFileName(""))))

	for _, tc := range []struct {
		name string
		// prepare makes a copy of a directory whose Open fails.
		dir  string
		mode WALRecoveryMode
		edit func(t *testing.T, dir string)
	}{
		{name: "checkpoint-missing-table", dir: cp, edit: func(t *testing.T, dir string) {
			tables := recFiles(t, vfs.Default, dir, manifest.FileKindTable)
			require.NotEmpty(t, tables)
			require.NoError(t, os.Remove(tables[0]))
		}},
		{name: "bad-wal-absolute-consistency", dir: src, mode: WALRecoveryAbsoluteConsistency,
			edit: func(t *testing.T, dir string) {
				name := recNewestLog(t, dir)
				data := recRead(t, vfs.Default, name)
				starts := recordStarts(t, data)
				require.Len(t, starts, 200)
				data[starts[100]+9] ^= 0x01
				require.NoError(t, os.WriteFile(name, data, 0o644))
			}},
	} {
		for _, hadLock := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/lock=%t", tc.name, hadLock), func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "copy")
				copyDir(t, tc.dir, dir)
				tc.edit(t, dir)
				lock := filepath.Join(dir, "LOCK")
				if hadLock {
					require.NoError(t, os.WriteFile(lock, []byte("not ours"), 0o644))
				}
				before := recDir(t, vfs.Default, dir)
				_, hasLock := before["LOCK"]
				require.Equal(t, hadLock, hasLock)
				o := smallOptions(nil)
				o.FS = nil
				o.WALRecoveryMode = tc.mode
				_, err := openDatabase(dir, o)
				require.ErrorIs(t, err, ErrCorruption)
				requireSameDir(t, before, recDir(t, vfs.Default, dir), "a failed Open changes nothing: %v", err)
			})
		}
	}
}

// recNewestLog returns the newest WAL of the database in dir.
func recNewestLog(t *testing.T, dir string) string {
	t.Helper()
	var newest string
	var newestNum manifest.FileNum
	for _, name := range recFiles(t, vfs.Default, dir, manifest.FileKindLog) {
		if _, num, _ := manifest.ParseFileName(filepath.Base(name)); num >= newestNum {
			newest, newestNum = name, num
		}
	}
	require.NotEmpty(t, newest)
	return newest
}

// copyDir copies the regular files of directory from into a new directory
// to.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(to, 0o755))
	entries, err := os.ReadDir(from)
	require.NoError(t, err)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(to, e.Name()), data, 0o644))
	}
}

// TestOpenKeepsTablesItCannotAccountFor checks that Open deletes a table
// the MANIFEST does not name only when it can show that the table holds
// nothing the recovered state does not: a table copied in from another
// database is kept aside as NNNNNN.sst.orphan and logged, whatever its
// number and sequence numbers (issue 26: numbered at or above the next file
// number, it was deleted without a word), while the output of an Open that
// crashed after writing the table of its replayed WAL, and before its
// MANIFEST edit, is deleted.
func TestOpenKeepsTablesItCannotAccountFor(t *testing.T) {
	ctx := context.Background()
	mem := vfs.NewMem()
	o := smallOptions(mem)
	o.DisableAutoCompactions = true
	o.WriteBufferSize = 4 << 20

	// This database: keys 0..99 in a table (sequence numbers 1..100), keys
	// 100..299 in the WAL (101..300).
	db, err := openDatabase("/db", o)
	require.NoError(t, err)
	recKeys(t, db, 0, 100)
	require.NoError(t, db.Flush(ctx))
	recKeys(t, db, 100, 300)
	// A range tombstone in the WAL, over keys that were never written: the
	// table written from the WAL holds it, and the proof must cover it.
	require.NoError(t, db.DeleteRange(ctx, []byte("zz0"), []byte("zz9")))
	require.NoError(t, db.Close())

	// Another database, with other values for the same keys: a table of
	// sequence numbers 1..150 (older than this database's newest table)
	// and one of 151..250 (within the replayed WAL's).
	other, err := openDatabase("/other", o)
	require.NoError(t, err)
	for i := range 250 {
		require.NoError(t, other.Put(ctx, key(i), []byte(fmt.Sprintf("foreign-%d", i))))
		if i == 149 {
			require.NoError(t, other.Flush(ctx))
		}
	}
	require.NoError(t, other.Flush(ctx))
	require.NoError(t, other.Close())
	foreign := recFiles(t, mem, "/other", manifest.FileKindTable)
	require.Len(t, foreign, 2)
	require.NoError(t, syncDir(mem, "/db"))

	next := func(fs vfs.FS) manifest.FileNum {
		vs, err := manifest.Load(fs, "/db")
		require.NoError(t, err)
		defer vs.Close()
		return vs.RecordedNextFileNum()
	}(mem)

	t.Run("foreign", func(t *testing.T) {
		fs := mem.CrashClone()
		var copies []string
		for i, f := range foreign {
			for _, num := range []manifest.FileNum{next + 50 + manifest.FileNum(i), 99 + manifest.FileNum(i)} {
				name := manifest.TableFileName("/db", num)
				writeAll(t, fs, name, recRead(t, fs, f))
				copies = append(copies, name)
			}
		}
		require.NoError(t, syncDir(fs, "/db"))
		var log recLog
		o := smallOptions(fs)
		o.Logger = log.logger()
		db, err := openDatabase("/db", o)
		require.NoError(t, err)
		require.Equal(t, slices.Repeat([]bool{true}, 300), recPresent(t, db, 300), "the foreign tables are not read")
		require.NoError(t, db.Close())
		for i, name := range copies {
			require.False(t, recHas(t, fs, name), "%s is set aside", name)
			require.True(t, bytes.Equal(recRead(t, mem, foreign[i/2]), recRead(t, fs, name+orphanSuffix)),
				"%s is kept as %s", name, name+orphanSuffix)
			require.Contains(t, log.String(), name+orphanSuffix)
		}
	})

	t.Run("interrupted-recovery", func(t *testing.T) {
		// An Open that wrote the table of the replayed WAL and crashed
		// before its MANIFEST edit: run the Open on a copy, and put the
		// table it wrote into the directory as it was.
		fs := mem.CrashClone()
		before := recFiles(t, fs, "/db", manifest.FileKindTable)
		done := mem.CrashClone()
		db, err := openDatabase("/db", smallOptions(done))
		require.NoError(t, err)
		require.NotZero(t, func() int {
			v := db.vs.Current()
			defer v.Unref()
			n := 0
			for _, f := range v.Levels[0] {
				if f.HasRangeDels {
					n++
				}
			}
			return n
		}(), "the table written from the WAL holds the range tombstone")
		require.NoError(t, db.Close())
		var written []string
		for _, name := range recFiles(t, done, "/db", manifest.FileKindTable) {
			if !slices.Contains(before, name) {
				written = append(written, name)
				writeAll(t, fs, name, recRead(t, done, name))
			}
		}
		require.Len(t, written, 1)
		_, num, _ := manifest.ParseFileName(filepath.Base(written[0]))
		require.GreaterOrEqual(t, num, next)
		require.NoError(t, syncDir(fs, "/db"))

		var log recLog
		o := smallOptions(fs)
		o.Logger = log.logger()
		db, err = openDatabase("/db", o)
		require.NoError(t, err)
		require.Equal(t, slices.Repeat([]bool{true}, 300), recPresent(t, db, 300))
		require.NoError(t, db.Close())
		require.False(t, recHas(t, fs, written[0]), "the interrupted output, whose data the WAL holds, is deleted")
		require.False(t, recHas(t, fs, written[0]+orphanSuffix))
		require.NotContains(t, log.String(), written[0]+orphanSuffix)
		require.Contains(t, log.String(), "removing a table the MANIFEST does not name")
		require.Contains(t, log.String(), written[0])
	})
}
