package sstable

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/bloom"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

// TestGetPerfAndTag: a Get and a MultiGet fill the request's PerfContext
// (tables, filter checks and hits, cache hits and misses, blocks read) and
// the tag's block-cache tickers.
func TestGetPerfAndTag(t *testing.T) {
	tag := testTag(t, "sstable-test-perf", ioctx.TagOptions{})
	es := genEntries(rand.New(rand.NewPCG(45, 46)), 2000, 50)
	data := buildTable(t, WriterOptions{BloomBitsPerKey: 10, Compression: compress.Snappy, Checksum: checksum.XXHash64}, es)
	stats := statistics.New(statistics.LevelAll)
	r := openTable(t, data, openConfig{cache: cache.New(16 << 20), stats: stats})
	ctx := context.Background()
	perf := &ioctx.PerfContext{}
	env := verifyEnv
	env.IO = ioctx.IOOptions{Activity: ioctx.ActivityGet, Tag: tag, Perf: perf}

	get := func(key []byte) bool {
		_, _, found, pin, err := r.Get(ctx, env, key, base.MaxSeqNum)
		require.NoError(t, err)
		pin.Release()
		return found
	}
	require.True(t, get(es[1000].key.UserKey)) // a miss, then read
	require.True(t, get(es[1000].key.UserKey)) // a hit
	require.False(t, get([]byte("nothing-like-it")))
	c := perf.Counts()
	require.Equal(t, uint64(3), c.TablesConsulted)
	require.Equal(t, uint64(3), c.FilterChecks)
	require.Equal(t, uint64(2), c.FilterHits, "the third key is filtered out (10 bits per key: a false positive is unlikely)")
	require.Equal(t, uint64(1), c.BlockCacheMisses)
	require.Equal(t, uint64(1), c.BlockCacheHits)
	require.Equal(t, uint64(1), c.BlocksRead)
	require.Positive(t, c.BlockReadBytes)
	require.Equal(t, uint64(1), c.FileReads)

	ts := stats.Tag(tag.RocksDBValue(), tag.String())
	require.Equal(t, uint64(1), ts.TickerCount(statistics.TagBlockCacheHit))
	require.Equal(t, uint64(1), ts.TickerCount(statistics.TagBlockCacheMiss))
	// (The tag's bytes and read times are the file reader's to record, with
	// its own statistics, which tryOpen does not give it.)

	perf.Reset()
	keys := []MultiGetKey{{Key: es[10].key.UserKey, Seq: base.MaxSeqNum}, {Key: es[1000].key.UserKey, Seq: base.MaxSeqNum}}
	for i := range keys {
		keys[i].Hash = bloom.Hash(keys[i].Key)
	}
	env.IO.Activity = ioctx.ActivityMultiGet
	require.NoError(t, r.MultiGet(ctx, env, keys))
	for i := range keys {
		require.True(t, keys[i].Found)
		keys[i].Pin.Release()
	}
	c = perf.Counts()
	require.Equal(t, uint64(2), c.TablesConsulted, "one per key, as two Gets count")
	require.Equal(t, uint64(2), c.FilterChecks)
	require.Equal(t, uint64(1), c.BlockCacheHits, "es[1000]'s block is cached")
	require.Equal(t, uint64(1), c.BlockCacheMisses)
	require.Equal(t, uint64(1), c.BlocksRead, "the MultiRead's block counts as the single read's does")
	require.Positive(t, c.BlockReadBytes)
	require.LessOrEqual(t, c.BlockReadBytes, c.FileReadBytes)
}

// TestGetWithPerfAndTagDoesNotAllocate: a cached Get that fills a sink and
// its tag's statistics allocates nothing.
func TestGetWithPerfAndTagDoesNotAllocate(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	tag := testTag(t, "sstable-test-alloc", ioctx.TagOptions{})
	es := genEntries(rand.New(rand.NewPCG(47, 48)), 2000, 50)
	data := buildTable(t, WriterOptions{BloomBitsPerKey: 10, Compression: compress.Snappy, Checksum: checksum.XXHash64}, es)
	r := openTable(t, data, openConfig{cache: cache.New(16 << 20), stats: statistics.New(statistics.LevelAll)})
	env := verifyEnv
	env.IO = ioctx.IOOptions{Activity: ioctx.ActivityGet, Tag: tag, Perf: &ioctx.PerfContext{}}
	get := func() {
		_, _, found, pin, err := r.Get(context.Background(), env, es[1000].key.UserKey, base.MaxSeqNum)
		if err != nil || !found {
			t.Fatalf("Get = %t, %v", found, err)
		}
		pin.Release()
	}
	get()
	require.Zero(t, testing.AllocsPerRun(1000, get))
}

// tagSeq numbers the tags the tests register: the registry is per process
// and never forgets, so a test run again (-count) needs fresh names.
var tagSeq atomic.Int64

// testTag registers a tag named prefix plus a number unique in the process.
func testTag(t testing.TB, prefix string, opts ioctx.TagOptions) ioctx.Tag {
	t.Helper()
	tag, err := ioctx.RegisterTag(fmt.Sprintf("%s-%d", prefix, tagSeq.Add(1)), opts)
	require.NoError(t, err)
	return tag
}
