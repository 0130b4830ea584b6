package sstable

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/cpubench"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// partBenchKeys is the number of entries of the partitioned-index
// benchmark's table: 16-byte keys and 256-byte values (issue 15's shape),
// about 64 MiB, 16k data blocks, an index of about 600 KiB and a filter of
// about 300 KiB.
const partBenchKeys = 240_000

// partBenchCache is the block cache of the partitioned-index benchmark:
// smaller than the table's index and filter, as a 32 MiB cache is next to
// the 36 MB of metadata of issue 15's 4 GiB of data.
const partBenchCache = 512 << 10

// writePartBenchTable writes the benchmark's table, partitioned with 4 KiB
// partitions or not, to a file in dir and returns its path. The entries are
// largeTable's, written straight to the file.
func writePartBenchTable(b *testing.B, dir string, partitioned bool) string {
	b.Helper()
	path := filepath.Join(dir, testFile)
	f, err := os.Create(path)
	require.NoError(b, err)
	bw := bufio.NewWriterSize(f, 1<<20)
	opts := largeWriterOptions
	if partitioned {
		opts.IndexPartitionSize = 4096
	}
	w := NewWriter(bw, opts)
	require.NoError(b, addLargeEntries(w, partBenchKeys))
	_, err = w.Close()
	require.NoError(b, err)
	require.NoError(b, bw.Flush())
	require.NoError(b, f.Close())
	return path
}

// BenchmarkGetPartitioned measures Get of random present keys of one 64 MiB
// table whose index and filter (about 0.9 MB) do not fit the 512 KiB block
// cache they live in (cache_meta=true: CacheIndexAndFilterBlocks), with a
// partitioned index and filter (4 KiB partitions) and without. Without
// partitions nearly every Get reads, verifies and decodes the whole index or
// filter again; with them, at most a 4 KiB partition of each. It reports
// the table's index and filter sizes as metrics. Each sub-benchmark writes
// its table (a few seconds).
func BenchmarkGetPartitioned(b *testing.B) {
	for _, partitioned := range []bool{false, true} {
		b.Run(fmt.Sprintf("partitioned=%t/cache_meta=true", partitioned), func(b *testing.B) {
			path := writePartBenchTable(b, b.TempDir(), partitioned)
			f, err := fileio.Open(vfs.Default, path, fileio.Options{})
			require.NoError(b, err)
			c := cache.New(partBenchCache)
			r, err := Open(context.Background(), f, verifyEnv, ReaderOptions{Cache: c, CacheID: c.NewID(), FileNum: 1,
				CacheIndexAndFilterBlocks: true})
			require.NoError(b, err)
			defer r.Close()
			require.Equal(b, partitioned, r.top != nil)
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
			for _, k := range keys[:1024] { // warm the cache
				get(k)
			}
			b.ReportAllocs()
			stop := cpubench.Start(b)
			i := 0
			for b.Loop() {
				get(keys[i%len(keys)])
				i++
			}
			stop()
			// After the loop, which resets the metrics.
			b.ReportMetric(float64(r.props.IndexSize), "index-bytes")
			b.ReportMetric(float64(r.props.FilterSize), "filter-bytes")
		})
	}
}
