package sstable

import (
	"context"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/cpubench"
	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

// BenchmarkIterNextLarge measures Next over the large table (see
// largeTable), wrapping around to First at its end, as the engine's bench
// scan does. cache=most is as large as the table's file, which with the
// decompressed blocks' and the entries' overhead leaves about one block in
// nine that the scan visits to miss the cache and be read from the file (in
// bench/, 32 MiB of data over a 32 MiB cache, about one in six); cache=full
// holds them all. It reports the share of visited blocks that missed
// (miss/block).
func BenchmarkIterNextLarge(b *testing.B) {
	data, err := largeTable()
	require.NoError(b, err)
	for _, cc := range []struct {
		name string
		size int64
	}{
		{"cache=most", int64(len(data))},
		{"cache=full", 64 << 20},
	} {
		b.Run(cc.name, func(b *testing.B) {
			st := statistics.New(statistics.LevelExceptDetailedTimers)
			r := openLarge(b, cache.New(cc.size))
			r.opts.Stats = st
			it, err := r.NewIter(context.Background(), verifyEnv, nil, nil)
			require.NoError(b, err)
			defer it.Close()
			// Point reads fill the cache, as the bench's load and Get rounds
			// do before its scan: they insert blocks at normal priority,
			// which the scan's misses (on probation) do not evict.
			var kbuf [16]byte
			for k := range largeKeys {
				_, _, _, pin, err := r.Get(context.Background(), verifyEnv, largeKey(kbuf[:], k, 0), base.MaxSeqNum)
				require.NoError(b, err)
				pin.Release()
			}
			for kv := it.First(); kv != nil; kv = it.Next() {
			}
			it.First()
			st.Reset()
			b.ReportAllocs()
			stop := cpubench.Start(b)
			for b.Loop() {
				if it.Next() == nil {
					it.First()
				}
			}
			stop()
			hits, misses := st.TickerCount(statistics.BlockCacheDataHit), st.TickerCount(statistics.BlockCacheDataMiss)
			if hits+misses > 0 {
				b.ReportMetric(float64(misses)/float64(hits+misses), "miss/block")
			}
		})
	}
}
