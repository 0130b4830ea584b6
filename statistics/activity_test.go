package statistics_test

import (
	"testing"

	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

func TestFileReadHistogram(t *testing.T) {
	for _, tc := range []struct {
		a    ioctx.Activity
		want statistics.Histogram
	}{
		{ioctx.ActivityFlush, statistics.FileReadFlushMicros},
		{ioctx.ActivityCompaction, statistics.FileReadCompactionMicros},
		{ioctx.ActivityDBOpen, statistics.FileReadDBOpenMicros},
		{ioctx.ActivityGet, statistics.FileReadGetMicros},
		{ioctx.ActivityMultiGet, statistics.FileReadMultiGetMicros},
		{ioctx.ActivityDBIterator, statistics.FileReadDBIteratorMicros},
		{ioctx.ActivityVerifyDBChecksum, statistics.FileReadVerifyDBChecksumMicros},
		{ioctx.ActivityVerifyFileChecksums, statistics.FileReadVerifyFileChecksumsMicros},
		// RocksDB has no per-activity histogram for these: aggregate only.
		{ioctx.ActivityUnknown, statistics.HistogramNone},
		{ioctx.ActivityGetEntity, statistics.HistogramNone},
		{ioctx.ActivityMultiGetEntity, statistics.HistogramNone},
		{ioctx.ActivityGetFileChecksumsFromCurrentManifest, statistics.HistogramNone},
		{ioctx.ActivityLazyResolve, statistics.HistogramNone},
		{ioctx.NumActivities, statistics.HistogramNone},
	} {
		require.Equal(t, tc.want, statistics.FileReadHistogram(tc.a.RocksDBValue()), tc.a.String())
	}
}

// TestFileReadHistogramRocksDBValues pins the mapping to RocksDB's own
// numbering, which drivers outside this module may pass without ioctx.
func TestFileReadHistogramRocksDBValues(t *testing.T) {
	want := map[uint8]statistics.Histogram{
		0: statistics.FileReadFlushMicros,
		1: statistics.FileReadCompactionMicros,
		2: statistics.FileReadDBOpenMicros,
		3: statistics.FileReadGetMicros,
		4: statistics.FileReadMultiGetMicros,
		5: statistics.FileReadDBIteratorMicros,
		6: statistics.FileReadVerifyDBChecksumMicros,
		7: statistics.FileReadVerifyFileChecksumsMicros,
	}
	for v := range 256 {
		h, ok := want[uint8(v)]
		if !ok {
			h = statistics.HistogramNone
		}
		require.Equal(t, h, statistics.FileReadHistogram(uint8(v)), "RocksDB IOActivity %d", v)
	}
}
