package sstable

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

// TestIterFillCacheCoversIndex pins that an Iter reading without
// ReadEnv.FillCache (as compactions read) puts nothing in the block cache,
// index blocks and partitions included, when the table keeps its index in
// the cache (CacheIndexAndFilterBlocks): it reads an index the cache does
// not hold into a buffer of its own, as RocksDB's fill_cache=false does. It
// used to insert every index partition it crossed, so a compaction filled
// the cache with the partitions of all its inputs. With FillCache the
// Iter inserts them, and either way it uses those the cache holds.
func TestIterFillCacheCoversIndex(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(91, 92)), 800, 30)
	flatOpts := partOpts
	flatOpts.IndexPartitionSize = 0
	for _, tc := range []struct {
		name string
		opts WriterOptions
	}{
		{"partitioned", partOpts},
		{"whole index", flatOpts},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := buildTable(t, tc.opts, es)
			ctx := context.Background()
			scan := func(r *Reader, env ReadEnv) {
				t.Helper()
				for _, backward := range []bool{false, true} {
					it, err := r.NewIter(ctx, env, nil, nil)
					require.NoError(t, err)
					var got []entry
					for kv := first(it, backward); kv != nil; kv = next(it, backward) {
						got = append(got, entry{kv.K.Clone(), bytes.Clone(kv.V)})
					}
					require.NoError(t, it.Close())
					if backward {
						got = reversed(got)
					}
					requireSameEntries(t, es, got)
				}
			}
			noFill := ReadEnv{VerifyChecksums: true}
			fill := ReadEnv{VerifyChecksums: true, FillCache: true}

			stats := statistics.New(statistics.LevelAll)
			c := cache.New(1 << 20)
			r := openTable(t, data, openConfig{cache: c, cacheMeta: true, stats: stats})
			// Open caches a whole index; drop it, so the scans miss it.
			r.EvictFromCache()
			require.Zero(t, c.Len())
			indexMisses := stats.TickerCount(statistics.BlockCacheIndexMiss)
			adds := stats.TickerCount(statistics.BlockCacheAdd)
			scan(r, noFill)
			require.Zero(t, c.Len(), "entries the scans without FillCache put in the cache")
			require.Equal(t, adds, stats.TickerCount(statistics.BlockCacheAdd))
			require.Greater(t, stats.TickerCount(statistics.BlockCacheIndexMiss), indexMisses,
				"the scans looked their index up in the cache")

			// With FillCache the scans insert the index, and a scan
			// without it then finds the index there.
			scan(r, fill)
			require.Positive(t, c.Len())
			misses := stats.TickerCount(statistics.BlockCacheIndexMiss)
			hits := stats.TickerCount(statistics.BlockCacheIndexHit)
			scan(r, noFill)
			require.Equal(t, misses, stats.TickerCount(statistics.BlockCacheIndexMiss), "index misses with the index cached")
			require.Greater(t, stats.TickerCount(statistics.BlockCacheIndexHit), hits)
		})
	}
}
