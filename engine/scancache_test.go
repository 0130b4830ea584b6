package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

// scanCacheDB opens a database whose data (about 1.2 MiB in 512-byte blocks
// of incompressible values) is several times its 256 KiB block cache, with
// every table in one level and the cache empty: compaction and the
// read-back of new tables do not fill it.
func scanCacheDB(t *testing.T) (*database, *statistics.Statistics, int) {
	t.Helper()
	const keys = 8000
	opts := smallOptions(nil)
	opts.Statistics = statistics.New(statistics.LevelExceptDetailedTimers)
	opts.DisableAutoCompactions = true
	db, _ := openTestDB(t, opts)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	value := make([]byte, 128)
	for i := range keys {
		for j := range value {
			value[j] = byte(rng.Uint32())
		}
		require.NoError(t, db.Put(ctx, scanCacheKey(i), value))
	}
	require.NoError(t, db.Flush(ctx))
	require.NoError(t, db.Compact(ctx, nil, nil))
	require.Zero(t, db.cache.Len(), "the cache after the load")
	return db, opts.Statistics, keys
}

func scanCacheKey(i int) []byte { return fmt.Appendf(nil, "key%06d", i) }

// cacheDelta runs f and returns the block cache hits and misses it ticked.
func cacheDelta(st *statistics.Statistics, f func()) (hits, misses uint64) {
	h0, m0 := st.TickerCount(statistics.BlockCacheHit), st.TickerCount(statistics.BlockCacheMiss)
	f()
	return st.TickerCount(statistics.BlockCacheHit) - h0, st.TickerCount(statistics.BlockCacheMiss) - m0
}

// scanAll iterates over [lower, upper) forward or backward and returns the
// number of keys.
func scanAll(t *testing.T, db *database, lower, upper []byte, forward bool) int {
	t.Helper()
	it, err := db.NewIterator(context.Background(), &iterOptions{LowerBound: lower, UpperBound: upper})
	require.NoError(t, err)
	var n int
	if forward {
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
	} else {
		for ok := it.Last(); ok; ok = it.Prev() {
			n++
		}
	}
	require.NoError(t, it.Error())
	require.NoError(t, it.Close())
	return n
}

// TestScanKeepsPointReadBlocks checks that a full scan of a database
// several times larger than the block cache, forward or backward, leaves
// the blocks a hot set of Gets brought in and hit before the scan in the
// cache: the Gets after it all hit. With the cache's plain CLOCK the scan
// evicted every one of them.
func TestScanKeepsPointReadBlocks(t *testing.T) {
	for _, forward := range []bool{true, false} {
		t.Run(fmt.Sprintf("forward=%t", forward), func(t *testing.T) {
			db, st, keys := scanCacheDB(t)
			ctx := context.Background()
			var hot [][]byte
			for i := 0; i < keys; i += 200 {
				hot = append(hot, scanCacheKey(i))
			}
			gets := func() {
				for _, k := range hot {
					_, err := db.Get(ctx, k)
					require.NoError(t, err)
				}
			}
			hits, misses := cacheDelta(st, gets)
			require.Equal(t, [2]uint64{0, uint64(len(hot))}, [2]uint64{hits, misses}, "hits and misses of the first Gets")
			hits, misses = cacheDelta(st, gets)
			require.Equal(t, [2]uint64{uint64(len(hot)), 0}, [2]uint64{hits, misses}, "hits and misses of the second Gets")

			var n int
			_, misses = cacheDelta(st, func() { n = scanAll(t, db, nil, nil, forward) })
			require.Equal(t, keys, n)
			require.Greater(t, misses, uint64(1000), "the scan's misses: the data is larger than the cache")

			hits, misses = cacheDelta(st, gets)
			require.Equal(t, [2]uint64{uint64(len(hot)), 0}, [2]uint64{hits, misses}, "hits and misses of the Gets after the scan")
		})
	}
}

// TestScanRangeTwiceHits checks that a range smaller than the cache,
// scanned twice, is cached for the second scan: scanned blocks go in on
// probation, not at the point of eviction.
func TestScanRangeTwiceHits(t *testing.T) {
	db, st, _ := scanCacheDB(t)
	lower, upper := scanCacheKey(1000), scanCacheKey(1400) // about 60 KiB
	hits, misses := cacheDelta(st, func() { require.Equal(t, 400, scanAll(t, db, lower, upper, true)) })
	require.Zero(t, hits, "first scan")
	require.NotZero(t, misses, "first scan")
	hits, misses = cacheDelta(st, func() { require.Equal(t, 400, scanAll(t, db, lower, upper, true)) })
	require.Zero(t, misses, "second scan")
	require.NotZero(t, hits, "second scan")
}
