package wal

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReaderAtFollowsGrowingLog reads a log as a follower of a writer does:
// up to whatever prefix exists, every cut point included (mid-header,
// mid-payload, mid-record across blocks), then on from the reported Offset
// once more bytes exist. Every record comes out exactly once, in order, and a
// cut never turns into corruption.
func TestReaderAtFollowsGrowingLog(t *testing.T) {
	recs := patternRecords(10, 0, BlockSize-2*headerSize-3, 5, 3*BlockSize+17, 1, 700, BlockSize, 9)
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, r := range recs {
		_, err := w.WriteRecord(r)
		require.NoError(t, err)
	}
	require.NoError(t, w.Flush())
	log := buf.Bytes()

	for _, step := range []int{97, 1000, 4093, BlockSize - 1, BlockSize + 5} {
		var got [][]byte
		off := int64(0)
		for end := 0; ; {
			end = min(end+step, len(log))
			rd := NewReaderAt(bytes.NewReader(log[:end]), off, int64(end), TolerateCorruptedTailRecords)
			for {
				rec, err := rd.Next()
				if err == io.EOF {
					break
				}
				require.NoError(t, err, "step %d end %d", step, end)
				got = append(got, bytes.Clone(rec))
			}
			if _, reason := rd.Stopped(); reason != nil {
				require.True(t, rd.TailIncomplete(), "step %d end %d: %v", step, end, reason)
			}
			off = rd.Offset()
			if end == len(log) {
				break
			}
		}
		require.Equal(t, len(recs), len(got), "step %d", step)
		for i := range recs {
			require.Equal(t, recs[i], got[i], "step %d record %d", step, i)
		}
		require.Equal(t, int64(len(log)), off)
	}
}

// FuzzReaderAt reads arbitrary bytes from an arbitrary offset: no panic,
// and from any record boundary a full read reports, NewReaderAt returns
// exactly the records a full read returns after it.
func FuzzReaderAt(f *testing.F) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, r := range patternRecords(10, BlockSize, 3, 70000, 0) {
		_, _ = w.WriteRecord(r)
	}
	_ = w.Flush()
	f.Add(buf.Bytes(), int64(17))
	f.Add(buf.Bytes()[:BlockSize+100], int64(BlockSize-3))
	f.Add([]byte("garbage"), int64(3))
	f.Fuzz(func(t *testing.T, data []byte, start int64) {
		if start < 0 || start > int64(len(data)) {
			start = 0
		}
		rd := NewReaderAt(bytes.NewReader(data), start, int64(len(data)), TolerateCorruptedTailRecords)
		for {
			if _, err := rd.Next(); err != nil {
				break
			}
		}
		// Full read, remembering boundaries and what follows each.
		full := NewReader(bytes.NewReader(data), TolerateCorruptedTailRecords)
		var recs [][]byte
		var ends []int64
		for {
			rec, err := full.Next()
			if err != nil {
				break
			}
			recs = append(recs, bytes.Clone(rec))
			ends = append(ends, full.Offset())
		}
		if len(ends) == 0 {
			return
		}
		i := int(uint64(start) % uint64(len(ends)))
		rd = NewReaderAt(bytes.NewReader(data), ends[i], int64(len(data)), TolerateCorruptedTailRecords)
		for j := i + 1; j < len(recs); j++ {
			rec, err := rd.Next()
			require.NoError(t, err)
			require.Equal(t, recs[j], rec)
		}
	})
}
