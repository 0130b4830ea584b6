package sstable

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/bloom"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

func TestFilterUseScore(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answers  func(i int) bool // the filter's answer to lookup i: may
		n        int
		wantSkip bool
	}{
		{"new table", nil, 0, false},
		{"hits", func(int) bool { return true }, 400, true},
		{"misses", func(int) bool { return false }, 400, false},
		{"half", func(i int) bool { return i%2 == 0 }, 400, false},
		// One absent key in twenty is too few to pay for the filter.
		{"few misses", func(i int) bool { return i%20 != 0 }, 400, true},
		{"too few hits yet", func(int) bool { return true }, 50, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var u filterUse
			for i := range tc.n {
				u.note(tc.answers(i))
			}
			skips, samples := 0, 0
			for range filterSampleEvery * 4 {
				skip, sample := u.skip()
				require.False(t, skip && sample)
				if skip {
					skips++
				}
				if sample {
					samples++
				}
			}
			if tc.wantSkip {
				// All but the samples.
				require.Equal(t, filterSampleEvery*4-4, skips)
				require.Equal(t, 4, samples)
			} else {
				require.Zero(t, skips)
				require.Zero(t, samples)
			}
		})
	}
}

// TestLookupFilterSkip: Gets of keys a partitioned table holds come to skip
// its cached filter (no cache lookup for it but the samples'), Gets of
// absent keys bring it back, and every answer is right throughout, by Get
// and MultiGet.
func TestLookupFilterSkip(t *testing.T) {
	var es []entry
	for i := range 2000 {
		es = append(es, entry{base.MakeInternalKey(fmt.Appendf(nil, "key%06d", i), 1, base.KindSet), fmt.Appendf(nil, "value%d", i)})
	}
	data := buildTable(t, WriterOptions{BlockSize: 256, BloomBitsPerKey: 10, Compression: compress.Snappy,
		Checksum: checksum.CRC32C, IndexPartitionSize: 512}, es)
	ctx := context.Background()
	for _, cacheMeta := range []bool{false, true} {
		t.Run(fmt.Sprintf("cacheMeta=%t", cacheMeta), func(t *testing.T) {
			stats := statistics.New(statistics.LevelAll)
			r := openTable(t, data, openConfig{cache: cache.New(8 << 20), stats: stats, cacheMeta: cacheMeta})
			rng := rand.New(rand.NewPCG(1, 2))
			var keysLooked int // by the last filterLookups
			get := func(present bool) {
				t.Helper()
				keysLooked++
				e := es[rng.IntN(len(es))]
				key := e.key.UserKey
				if !present {
					key = fmt.Appendf(nil, "%s~absent", key)
				}
				v, _, found, pin, err := r.Get(ctx, verifyEnv, key, base.MaxSeqNum)
				require.NoError(t, err)
				require.Equal(t, present, found, "%q", key)
				if present {
					require.Equal(t, e.value, v)
				}
				pin.Release()
			}
			multiGet := func(present bool) {
				t.Helper()
				keys := make([]MultiGetKey, 8)
				idx := make([]int, len(keys))
				for i := range idx {
					idx[i] = rng.IntN(len(es))
				}
				slices.Sort(idx)
				idx = slices.Compact(idx)
				keys = keys[:len(idx)]
				keysLooked += len(keys)
				for i, j := range idx {
					keys[i].Key = es[j].key.UserKey
					if !present {
						keys[i].Key = fmt.Appendf(nil, "%s~absent", keys[i].Key)
					}
					keys[i].Seq = base.MaxSeqNum
					keys[i].Hash = bloom.Hash(keys[i].Key)
				}
				require.NoError(t, r.MultiGet(ctx, verifyEnv, keys))
				for i := range keys {
					require.NoError(t, keys[i].Err)
					require.Equal(t, present, keys[i].Found, "%q", keys[i].Key)
					if present {
						require.Equal(t, es[idx[i]].value, keys[i].Value)
					}
					keys[i].Pin.Release()
				}
			}
			filterLookups := func(do func(bool), present bool, n int) uint64 {
				stats.Reset()
				keysLooked = 0
				for range n {
					do(present)
				}
				return stats.TickerCount(statistics.BlockCacheFilterHit) + stats.TickerCount(statistics.BlockCacheFilterMiss)
			}
			for _, do := range []func(bool){get, multiGet} {
				// Absent keys: the filter is read for each (each partition
				// a MultiGet reaches).
				used := filterLookups(do, false, 640)
				// Keys present: the table learns to skip it.
				filterLookups(do, true, 600)
				skipping := filterLookups(do, true, 640)
				// A skipped filter counts in no filter statistic, as a
				// table without one: only the sampled lookups, which read
				// it, count as positives and true positives.
				positives := stats.TickerCount(statistics.BloomFilterFullPositive)
				require.Equal(t, positives, stats.TickerCount(statistics.BloomFilterFullTruePositive))
				if cacheMeta {
					// One lookup in 32 samples the filter.
					require.Less(t, positives, uint64(keysLooked/8), "positives of %d keys present, once skipping", keysLooked)
				} else {
					require.Equal(t, uint64(keysLooked), positives, "a filter the Reader holds is always used")
				}
				// Absent keys again: the samples bring the filter back.
				filterLookups(do, false, 200)
				back := filterLookups(do, false, 640)
				if !cacheMeta {
					// A filter the Reader holds costs no read: always used.
					require.Zero(t, used+skipping+back)
					continue
				}
				require.Greater(t, used, uint64(600))
				require.Less(t, skipping, used/8, "filter lookups of keys present, once skipping")
				require.Greater(t, back, used*9/10, "filter lookups of absent keys, once back")
				require.Greater(t, stats.TickerCount(statistics.BloomFilterUseful), uint64(500),
					"absent keys are answered by the filter again")
			}
		})
	}
}

// TestMetaLargerThanCacheShard: with CacheIndexAndFilterBlocks, a table
// whose whole index or filter is larger than a cache shard keeps both in the
// Reader, as without the option: in the cache it would be evicted as soon as
// inserted, and every lookup would read and decode it again. A cache that
// holds them keeps them there.
func TestMetaLargerThanCacheShard(t *testing.T) {
	var es []entry
	for i := range 20000 {
		es = append(es, entry{base.MakeInternalKey(fmt.Appendf(nil, "key%06d", i), 1, base.KindSet), fmt.Appendf(nil, "value%d", i)})
	}
	data := buildTable(t, WriterOptions{BlockSize: 256, BloomBitsPerKey: 10, Compression: compress.Snappy,
		Checksum: checksum.CRC32C}, es)
	ctx := context.Background()
	// A cache of 4 shards (the fewest), each holding the table's larger
	// metadata block 1.5 times: it fits a shard, but not half of one.
	probe := openTable(t, data, openConfig{cache: cache.New(64 << 20), cacheMeta: true})
	require.True(t, probe.metaInCache)
	beyondHalf := 4 * int64(probe.metaLoaded*3/2+cache.EntryOverhead)
	for _, tc := range []struct {
		capacity int64
		inCache  bool
	}{
		{64 << 10, false}, // 16 KiB shards
		{beyondHalf, false},
		{64 << 20, true},
	} {
		t.Run(fmt.Sprint(tc.capacity), func(t *testing.T) {
			stats := statistics.New(statistics.LevelAll)
			c := cache.New(tc.capacity)
			r := openTable(t, data, openConfig{cache: c, stats: stats, cacheMeta: true})
			require.Equal(t, tc.inCache, r.metaInCache)
			if !tc.inCache {
				require.Greater(t, r.metaLoaded, c.MaxValueSize()/metaShardShare, "the test's table must outgrow the share")
				if tc.capacity == beyondHalf {
					require.LessOrEqual(t, r.metaLoaded, c.MaxValueSize(), "the case is a table that fits a shard")
				}
				require.NotNil(t, r.filter)
			}
			stats.Reset()
			rng := rand.New(rand.NewPCG(3, 4))
			for range 200 {
				e := es[rng.IntN(len(es))]
				for _, present := range []bool{true, false} {
					key := e.key.UserKey
					if !present {
						key = fmt.Appendf(nil, "%s~absent", key)
					}
					v, _, found, pin, err := r.Get(ctx, verifyEnv, key, base.MaxSeqNum)
					require.NoError(t, err)
					require.Equal(t, present, found, "%q", key)
					if present {
						require.Equal(t, e.value, v)
					}
					pin.Release()
				}
			}
			metaLookups := stats.TickerCount(statistics.BlockCacheIndexHit) + stats.TickerCount(statistics.BlockCacheIndexMiss) +
				stats.TickerCount(statistics.BlockCacheFilterHit) + stats.TickerCount(statistics.BlockCacheFilterMiss)
			if tc.inCache {
				require.Positive(t, metaLookups)
			} else {
				require.Zero(t, metaLookups, "the Reader's own index and filter")
			}
			require.Greater(t, stats.TickerCount(statistics.BloomFilterUseful), uint64(150), "the filter answers absent keys")
		})
	}
}
