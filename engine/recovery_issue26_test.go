package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/vfs"
	"github.com/shaledb/shale/internal/wal"
	"github.com/shaledb/shale/statistics"
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
