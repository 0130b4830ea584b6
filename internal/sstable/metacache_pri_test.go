package sstable

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

// TestMetaCacheHighPriority checks that the index and filter partitions a
// Reader keeps in the block cache go in with cache.PriorityHigh: in a cache
// whose high-priority share holds them all, though the data blocks are many
// times the cache, random Gets evict none of them once they are loaded (no
// index or filter miss), while nearly every Get misses its data block. With
// the partitions in the main ring, each data block inserted would push them
// out like any other block.
func TestMetaCacheHighPriority(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(5, 6)), 60000, 400)
	data := buildTable(t, WriterOptions{BloomBitsPerKey: 10, Compression: compress.Snappy,
		Checksum: checksum.XXHash64, IndexPartitionSize: 1024}, es)
	st := statistics.New(statistics.LevelExceptDetailedTimers)
	c := cache.New(512 << 10)
	r := openTable(t, data, openConfig{cache: c, cacheMeta: true, stats: st})
	require.NotNil(t, r.top, "the table must be partitioned")
	require.Less(t, 2*int64(r.props.IndexSize+r.props.FilterSize), c.Capacity()/2,
		"the partitions (index decoded up to about twice its size) must fit the high-priority share")
	require.Greater(t, int64(len(data)), 4*c.Capacity(), "the data must be several times the cache")

	ctx := context.Background()
	get := func(k []byte) {
		_, _, found, pin, err := r.Get(ctx, verifyEnv, k, base.MaxSeqNum)
		require.NoError(t, err)
		require.True(t, found, "Get(%q)", k)
		pin.Release()
	}
	for _, e := range es { // load every partition
		get(e.key.UserKey)
	}
	miss := func() [3]uint64 {
		return [3]uint64{st.TickerCount(statistics.BlockCacheIndexMiss),
			st.TickerCount(statistics.BlockCacheFilterMiss), st.TickerCount(statistics.BlockCacheDataMiss)}
	}
	before := miss()
	rng := rand.New(rand.NewPCG(7, 8))
	const gets = 4000
	for range gets {
		get(es[rng.IntN(len(es))].key.UserKey)
	}
	after := miss()
	require.Zero(t, after[0]-before[0], "index partition misses")
	// Gets of keys present come to skip the filter (filterUse): its only
	// misses are the samples', which go in at normal priority.
	require.LessOrEqual(t, after[1]-before[1], uint64(gets/filterSampleEvery), "filter partition misses")
	require.Greater(t, after[2]-before[2], uint64(gets/2), "data block misses")
}

// TestDecodeIndexForAllocs holds the allocations of decoding an index
// block on a cache miss, partition and whole index, to their budgets (what
// reading and verifying the block takes; the flat buffer comes from the
// cache's Alloc, recycled once warm): in particular alloc, the method
// value the miss path passes, must not escape, which would add one.
func TestDecodeIndexForAllocs(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	es := genEntries(rand.New(rand.NewPCG(9, 10)), 4000, 50)
	for _, tc := range []struct{ partition, budget int }{{0, 5}, {256, 6}} {
		partition := tc.partition
		data := buildTable(t, WriterOptions{BloomBitsPerKey: 10, Compression: compress.Snappy,
			Checksum: checksum.XXHash64, IndexPartitionSize: partition}, es)
		c := cache.New(16 << 20)
		r := openTable(t, data, openConfig{cache: c, cacheMeta: true})
		part, h := -1, r.footer.Index
		if partition > 0 {
			require.NotNil(t, r.top)
			part, h = 0, r.top.x.handles[0]
		}
		ctx := context.Background()
		decode := func() {
			buf, err := r.decodeIndexFor(ctx, verifyEnv.IO, h, part, c.Alloc)
			require.NoError(t, err)
			c.Set(cache.Key{ID: 1 << 40, Offset: 1}, buf).Release() // recycle the buffer as an eviction would
		}
		require.LessOrEqual(t, testing.AllocsPerRun(100, decode), float64(tc.budget), "partition=%d", partition)
	}
}
