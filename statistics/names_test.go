package statistics

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNames(t *testing.T) {
	// The full lists, in order, are pinned by testdata/statistics_string.golden;
	// this pins the constants the read path and the docs name.
	for _, tc := range []struct {
		got, want string
	}{
		{BlockCacheMiss.String(), "shale.block.cache.miss"},
		{BlockCacheHit.String(), "shale.block.cache.hit"},
		{IterBytesRead.String(), "shale.db.iter.bytes.read"},
		{NumberMultiGetCalls.String(), "shale.number.multiget.get"},
		{CompactionKeyDropNewerEntry.String(), "shale.compaction.key.drop.new"},
		{VerifyChecksumReadBytes.String(), "shale.verify_checksum.read.bytes"},
		{NumberRateLimiterDrains.String(), "shale.number.rate_limiter.drains"},
		{TxnConflicts.String(), "shale.txn.conflicts"},
		{Ticker(NumTickers).String(), "shale.ticker(76)"},
		{IngestBytes.String(), "shale.ingest.bytes"},
		{IngestFiles.String(), "shale.ingest.files"},
		{MergeOperationTimeNanos.String(), "shale.merge.operation.time.nanos"},
		{NumberMergeFailures.String(), "shale.number.merge.failures"},
		{BloomFilterPrefixChecked.String(), "shale.bloom.filter.prefix.checked"},
		{BloomFilterPrefixUseful.String(), "shale.bloom.filter.prefix.useful"},
		{WALRecoveryDroppedBytes.String(), "shale.wal.recovery.dropped.bytes"},
		{Ticker(1000).String(), "shale.ticker(1000)"},
		{DBGet.String(), "shale.db.get.micros"},
		{CompactionTime.String(), "shale.compaction.times.micros"},
		{WriteStall.String(), "shale.db.write.stall"},
		{SSTReadMicros.String(), "shale.sst.read.micros"},
		{FileReadFlushMicros.String(), "shale.file.read.flush.micros"},
		{FileReadCompactionMicros.String(), "shale.file.read.compaction.micros"},
		{FileReadDBOpenMicros.String(), "shale.file.read.db.open.micros"},
		{FileReadGetMicros.String(), "shale.file.read.get.micros"},
		{FileReadMultiGetMicros.String(), "shale.file.read.multiget.micros"},
		{FileReadDBIteratorMicros.String(), "shale.file.read.db.iterator.micros"},
		{FileReadVerifyDBChecksumMicros.String(), "shale.file.read.verify.db.checksum.micros"},
		{FileReadVerifyFileChecksumsMicros.String(), "shale.file.read.verify.file.checksums.micros"},
		{FlushTime.String(), "shale.db.flush.micros"},
		{NumFilesInSingleCompaction.String(), "shale.numfiles.in.singlecompaction"},
		{RateLimiterWaitMicros.String(), "shale.rate.limiter.wait.micros"},
		{RateLimiterRequestsRead.String(), "shale.rate.limiter.requests.read"},
		{RateLimiterDelayedRequestsWrite.String(), "shale.rate.limiter.delayed.requests.write"},
		{HistogramNone.String(), "shale.histogram(28)"},
	} {
		require.Equal(t, tc.want, tc.got)
	}
	require.Equal(t, 76, int(NumTickers))
	require.Equal(t, 28, int(NumHistograms))
	require.Equal(t, NumHistograms, HistogramNone)

	seen := map[string]bool{}
	for tk := range NumTickers {
		n := tk.String()
		require.True(t, strings.HasPrefix(n, "shale."), n)
		require.False(t, seen[n], "duplicate %s", n)
		seen[n] = true
	}
	for h := range NumHistograms {
		n := h.String()
		require.True(t, strings.HasPrefix(n, "shale."), n)
		require.False(t, seen[n], "duplicate %s", n)
		seen[n] = true
	}
}

// TestHistogramClasses pins every histogram's class and gate (spec §4.2 and
// the brief): T = time, recorded from level 3; D = detailed time, from 4;
// S = size or count, from 2.
func TestHistogramClasses(t *testing.T) {
	want := map[Histogram]byte{
		DBGet: 'T', DBWrite: 'T', CompactionTime: 'T', TableOpenIOMicros: 'T', DBMultiGet: 'T',
		DBSeek: 'T', WriteStall: 'T', SSTReadMicros: 'T',
		FileReadFlushMicros: 'T', FileReadCompactionMicros: 'T', FileReadDBOpenMicros: 'T',
		FileReadGetMicros: 'D', FileReadMultiGetMicros: 'D', FileReadDBIteratorMicros: 'D',
		FileReadVerifyDBChecksumMicros: 'D', FileReadVerifyFileChecksumsMicros: 'D',
		SSTWriteMicros: 'T', WALFileSyncMicros: 'T', FlushTime: 'T',
		BytesPerRead: 'S', BytesPerWrite: 'S', BytesPerMultiGet: 'S', NumFilesInSingleCompaction: 'S',
		MultiGetIOBatchSize: 'S', AsyncReadBytes: 'S',
		CompressionTimesNanos: 'D', DecompressionTimesNanos: 'D', RateLimiterWaitMicros: 'T',
	}
	require.Len(t, want, int(NumHistograms))
	userRead := map[Histogram]bool{
		FileReadGetMicros: true, FileReadMultiGetMicros: true, FileReadDBIteratorMicros: true,
		FileReadVerifyDBChecksumMicros: true, FileReadVerifyFileChecksumsMicros: true,
	}
	for h := range NumHistograms {
		var level Level
		switch want[h] {
		case 'S':
			level = 2
		case 'T':
			level = 3
		case 'D':
			level = 4
		}
		require.Equal(t, level, h.MinLevel(), "%s", h)
		require.Equal(t, want[h] != 'S', h.IsTime(), "%s", h)
		require.Equal(t, userRead[h], h.IsUserFileRead(), "%s", h)
	}
	require.False(t, HistogramNone.IsUserFileRead())
	require.False(t, HistogramNone.IsTime())
	require.Greater(t, HistogramNone.MinLevel(), LevelAll)

	for tk := range NumTickers {
		want := Level(1)
		if tk == DBMutexWaitMicros {
			want = 5
		}
		require.Equal(t, want, tk.MinLevel(), "%s", tk)
	}
	require.Greater(t, NumTickers.MinLevel(), LevelAll)
}
