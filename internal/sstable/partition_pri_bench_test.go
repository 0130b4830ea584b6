package sstable

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// BenchmarkGetPartitionedPriority is BenchmarkGetPartitioned's partitioned
// case (a table 128 times the cache, as issue 15's 4 GiB to 32 MiB) over
// the cache's high-priority pool ratio, reporting the block cache misses
// per Get by kind: the index and filter partitions a Get reads again,
// besides its data block. Ratio 0 is the cache without the pool: index and
// filter blocks compete with data blocks in one CLOCK ring.
func BenchmarkGetPartitionedPriority(b *testing.B) {
	path := writePartBenchTable(b, b.TempDir(), true)
	for _, ratio := range []float64{0, 0.5, 0.9} {
		b.Run(fmt.Sprintf("ratio=%v", ratio), func(b *testing.B) {
			f, err := fileio.Open(vfs.Default, path, fileio.Options{})
			require.NoError(b, err)
			c := cache.NewWithOptions(partBenchCache, cache.Options{HighPriorityPoolRatio: ratio})
			st := statistics.New(statistics.LevelExceptDetailedTimers)
			r, err := Open(context.Background(), f, verifyEnv, ReaderOptions{Cache: c, CacheID: c.NewID(), FileNum: 1,
				CacheIndexAndFilterBlocks: true, Stats: st})
			require.NoError(b, err)
			defer r.Close()
			rng := rand.New(rand.NewPCG(3, 4))
			keys := make([][]byte, 1<<14)
			for i := range keys {
				keys[i] = largeKey(make([]byte, 16), rng.IntN(partBenchKeys), 0)
			}
			ctx := context.Background()
			get := func(k []byte) {
				_, _, found, pin, err := r.Get(ctx, verifyEnv, k, base.MaxSeqNum)
				if err != nil || !found {
					b.Fatalf("Get(%x) = %t, %v", k, found, err)
				}
				pin.Release()
			}
			for _, k := range keys[:4096] { // warm the cache
				get(k)
			}
			ticks := func() [3]uint64 {
				return [3]uint64{st.TickerCount(statistics.BlockCacheIndexMiss),
					st.TickerCount(statistics.BlockCacheFilterMiss), st.TickerCount(statistics.BlockCacheDataMiss)}
			}
			before := ticks()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				get(keys[i%len(keys)])
				i++
			}
			after := ticks()
			n := float64(b.N)
			b.ReportMetric(float64(after[0]-before[0])/n, "index-misses/op")
			b.ReportMetric(float64(after[1]-before[1])/n, "filter-misses/op")
			b.ReportMetric(float64(after[2]-before[2])/n, "data-misses/op")
		})
	}
}
