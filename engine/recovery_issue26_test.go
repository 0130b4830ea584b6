package engine

import (
	"bytes"
	"encoding/binary"
	"testing"

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
