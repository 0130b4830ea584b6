package sstable

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/internal/sstable/block"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// TestGetFillCacheCoversMeta pins that a Get without ReadEnv.FillCache (a
// one-off lookup, a verification pass) leaves the block cache as it found
// it when the table keeps its index and filter there
// (CacheIndexAndFilterBlocks): an index or filter, whole or a partition,
// that the cache does not hold is read into the Get's own memory, as
// RocksDB's fill_cache=false covers index and filter blocks. Get used to
// insert both, evicting the working set with meta blocks. The answers are
// the model's either way; a cached index or filter is still used; and a Get
// with FillCache inserts them as before.
func TestGetFillCacheCoversMeta(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(93, 94)), 800, 30)
	flatOpts := partOpts
	flatOpts.IndexPartitionSize = 0
	noFilter := partOpts
	noFilter.BloomBitsPerKey = 0
	for _, tc := range []struct {
		name string
		opts WriterOptions
	}{
		{"partitioned", partOpts},
		{"whole index", flatOpts},
		{"partitioned without filter", noFilter},
	} {
		for _, mmap := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/mmap=%t", tc.name, mmap), func(t *testing.T) {
				testGetFillCacheCoversMeta(t, buildTable(t, tc.opts, es), es, mmap)
			})
		}
	}
}

func testGetFillCacheCoversMeta(t *testing.T, data []byte, es []entry, mmap bool) {
	noFill := ReadEnv{VerifyChecksums: true}
	fill := ReadEnv{VerifyChecksums: true, FillCache: true}
	stats := statistics.New(statistics.LevelAll)
	c := cache.New(4 << 20)
	r := openTable(t, data, openConfig{cache: c, cacheMeta: true, stats: stats, mmap: mmap})
	r.EvictFromCache()
	adds := stats.TickerCount(statistics.BlockCacheAdd)
	metaHits := func() uint64 {
		return stats.TickerCount(statistics.BlockCacheIndexHit) + stats.TickerCount(statistics.BlockCacheFilterHit)
	}

	// Every key, at every version, absent keys between and beyond them
	// and keys the filter rules out.
	getAll := func(env ReadEnv) {
		t.Helper()
		for i, e := range es {
			checkGet(t, r, env, es, e.key.UserKey, base.MaxSeqNum)
			checkGet(t, r, env, es, e.key.UserKey, e.key.SeqNum())
			if i%7 == 0 {
				checkGet(t, r, env, es, append(e.key.UserKey, 'x'), base.MaxSeqNum)
				checkGet(t, r, env, es, fmt.Appendf(nil, "nothing-like-%d", i), base.MaxSeqNum)
			}
		}
		checkGet(t, r, env, es, []byte("zzz"), base.MaxSeqNum)
	}
	// Without FillCache, from an empty cache: every index and filter
	// missed, and none inserted.
	misses := stats.TickerCount(statistics.BlockCacheIndexMiss)
	getAll(noFill)
	require.Zero(t, c.Len(), "entries the Gets without FillCache put in the cache")
	require.Zero(t, c.Size())
	require.Equal(t, adds, stats.TickerCount(statistics.BlockCacheAdd))
	require.Greater(t, stats.TickerCount(statistics.BlockCacheIndexMiss), misses,
		"the Gets looked their index up in the cache")

	// One Get that fills the cache: the meta blocks of the first key's
	// partition (or the whole table's) and its data block are cached. The
	// Gets without FillCache use them and leave the cache as it was.
	checkGet(t, r, fill, es, es[0].key.UserKey, base.MaxSeqNum)
	length, size := c.Len(), c.Size()
	require.Positive(t, length)
	adds = stats.TickerCount(statistics.BlockCacheAdd)
	hits := metaHits()
	getAll(noFill)
	require.Equal(t, length, c.Len(), "entries in the cache after Gets without FillCache")
	require.Equal(t, size, c.Size(), "bytes in the cache after Gets without FillCache")
	require.Equal(t, adds, stats.TickerCount(statistics.BlockCacheAdd))
	require.Greater(t, metaHits(), hits, "the Gets used the index and filter the cache holds")

	// With FillCache the Gets insert every index and filter they use.
	getAll(fill)
	require.Greater(t, c.Len(), length)
	key := appendSearchKey(nil, es[len(es)-1].key.UserKey, base.MaxSeqNum)
	part := r.partitionOf(key)
	hd, ok := c.Get(r.metaCacheKey(r.indexHandle(part), metaBlock{index: true, part: part}))
	require.True(t, ok, "the last key's index is cached")
	hd.Release()
	if r.hasFilter {
		hd, ok := c.Get(r.metaCacheKey(r.filterHandle(part), metaBlock{part: part}))
		require.True(t, ok, "the last key's filter is cached")
		hd.Release()
	}
}

// TestGetNoFillAllocs checks that a Get without FillCache that misses the
// index and filter in the cache allocates nothing once its pooled state
// holds buffers large enough: found, absent, and filtered out.
func TestGetNoFillAllocs(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	es := genEntries(rand.New(rand.NewPCG(95, 96)), 2000, 30)
	for _, v := range []struct {
		partition int
		comp      compress.Type
	}{{0, compress.Snappy}, {128, compress.Snappy}, {0, compress.Zstd}, {128, compress.Zstd}} {
		partition := v.partition
		opts := partOpts
		opts.IndexPartitionSize = partition
		opts.Compression = v.comp
		data := buildTable(t, opts, es)
		c := cache.New(4 << 20)
		r := openTable(t, data, openConfig{cache: c, cacheMeta: true})
		r.EvictFromCache()
		ctx := context.Background()
		noFill := ReadEnv{VerifyChecksums: true}
		for _, tc := range []struct {
			name  string
			key   []byte
			found bool
		}{
			{"found", es[1000].key.UserKey, true},
			{"absent", []byte("key000999x"), false},
			{"filtered", []byte("nothing-like-it"), false},
		} {
			t.Run(fmt.Sprintf("%s/partition=%d/%s", v.comp, partition, tc.name), func(t *testing.T) {
				get := func() {
					_, _, found, pin, err := r.Get(ctx, noFill, tc.key, base.MaxSeqNum)
					if err != nil || found != tc.found {
						t.Fatalf("Get(%q) = %t, %v", tc.key, found, err)
					}
					pin.Release()
				}
				get() // grow the pooled buffers
				require.Zero(t, testing.AllocsPerRun(1000, get))
				require.Zero(t, c.Len(), "nothing cached")
			})
		}
	}
}

// TestGetNoFillConcurrent runs Gets without FillCache from several
// goroutines on a table whose index and filter partitions are not cached
// (run with -race): each Get decodes them into its own pooled memory, which
// no other Get may see while it uses them.
func TestGetNoFillConcurrent(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(97, 98)), 1500, 30)
	data := buildTable(t, partOpts, es)
	c := cache.New(4 << 20)
	r := openTable(t, data, openConfig{cache: c, cacheMeta: true})
	r.EvictFromCache()
	noFill := ReadEnv{VerifyChecksums: true}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 99))
			for range 500 {
				e := es[rng.IntN(len(es))]
				checkGet(t, r, noFill, es, e.key.UserKey, base.MaxSeqNum)
			}
		})
	}
	wg.Wait()
	require.Zero(t, c.Len())
}

// TestGetNoFillCorruption checks that a damaged index or filter that a Get
// without FillCache reads past the cache fails the Get as corruption naming
// the file, the block and the checksums, and that nothing is cached.
func TestGetNoFillCorruption(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(25, 26)), 300, 20)
	data := buildTable(t, partOpts, es)
	probe := openTable(t, data, openConfig{})
	key := es[3].key.UserKey
	part := probe.partitionOf(appendSearchKey(nil, key, base.MaxSeqNum))
	for _, tc := range []struct {
		name string
		h    block.Handle
	}{
		{partName("index", part), probe.indexHandle(part)},
		{partName("filter", part), probe.filterHandle(part)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cache.New(1 << 20)
			fs := &flipper{FS: memWith(t, data), off: int64(tc.h.Offset + tc.h.Length/2)}
			r := openTable(t, data, openConfig{cache: c, cacheMeta: true, wrap: func(vfs.FS) vfs.FS { return fs }})
			r.EvictFromCache()
			fs.armed.Store(true)
			_, _, _, _, err := r.Get(context.Background(), ReadEnv{VerifyChecksums: true}, key, base.MaxSeqNum)
			require.True(t, base.IsCorruption(err), "%v", err)
			msg := err.Error()
			for _, want := range []string{testFile, tc.name, fmt.Sprintf("offset %d", tc.h.Offset), "checksum mismatch", "stored =", "computed ="} {
				require.Contains(t, msg, want)
			}
			require.Zero(t, c.Len())
		})
	}
}

// BenchmarkGetNoFillMeta measures a Get without FillCache of a present key
// in a partitioned table whose index and filter partitions live in the
// block cache: with them cached (fill=warm, what a Get with FillCache leaves
// behind) and with none cached, so that every Get reads and decodes its
// filter and index partition into its pooled state (fill=off) and the
// data block too.
func BenchmarkGetNoFillMeta(b *testing.B) {
	es := genEntries(rand.New(rand.NewPCG(1, 2)), 20000, 100)
	data := buildTable(b, partOpts, es)
	ctx := context.Background()
	for _, warm := range []bool{true, false} {
		b.Run(fmt.Sprintf("warm=%t", warm), func(b *testing.B) {
			c := cache.New(64 << 20)
			r := openTable(b, data, openConfig{cache: c, cacheMeta: true})
			r.EvictFromCache()
			rng := rand.New(rand.NewPCG(1, 2))
			keys := make([][]byte, 4096)
			for i := range keys {
				keys[i] = es[rng.IntN(len(es))].key.UserKey
			}
			if warm {
				for _, k := range keys {
					_, _, _, pin, _ := r.Get(ctx, verifyEnv, k, base.MaxSeqNum)
					pin.Release()
				}
			}
			noFill := ReadEnv{VerifyChecksums: true}
			b.ReportAllocs()
			loopGets(b, r, noFill, keys)
			if !warm && c.Len() != 0 {
				b.Fatalf("%d entries cached", c.Len())
			}
		})
	}
}

// BenchmarkGetFillMetaMiss measures a Get with FillCache of a present key
// in a partitioned table whose index and filter partitions live in a block
// cache too small to keep them: most Gets load a partition, whose read
// buffer comes from a pool (metaScratches), then the cache's own buffer.
func BenchmarkGetFillMetaMiss(b *testing.B) {
	es := genEntries(rand.New(rand.NewPCG(1, 2)), 20000, 100)
	data := buildTable(b, partOpts, es)
	c := cache.New(64 << 10)
	r := openTable(b, data, openConfig{cache: c, cacheMeta: true})
	r.EvictFromCache()
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([][]byte, 4096)
	for i := range keys {
		keys[i] = es[rng.IntN(len(es))].key.UserKey
	}
	b.ReportAllocs()
	loopGets(b, r, verifyEnv, keys)
}
