package sstable

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/bloom"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/internal/sstable/block"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// fillCacheKeys returns MultiGet batches over es, in order: every user key
// (at seq, or at a random sequence number when seq is 0), each followed by
// an absent key just after it, and every fifth by a key the filter rules
// out, batch keys to a batch, so that a batch holds several keys of a
// partition (the filter of which must survive the read of its index) and
// crosses partitions.
func fillCacheKeys(es []entry, rng *rand.Rand, seq base.SeqNum, batch int) [][]MultiGetKey {
	var all []MultiGetKey
	add := func(k []byte, s base.SeqNum) {
		all = append(all, MultiGetKey{Key: k, Hash: bloom.Hash(k), Seq: s})
	}
	for i, k := range multiGetKeys(es, base.MaxSeqNum) {
		s := seq
		if s == 0 {
			s = base.SeqNum(rng.IntN(1100))
		}
		add(k.Key, s)
		add(append(bytes.Clone(k.Key), 'x'), base.MaxSeqNum)
		if i%5 == 0 {
			// Sorts after k's absent key: "x" < "y".
			add(fmt.Appendf(bytes.Clone(k.Key), "y-nothing-%d", i), base.MaxSeqNum)
		}
	}
	add([]byte("zzz"), base.MaxSeqNum)
	var batches [][]MultiGetKey
	for len(all) > 0 {
		n := min(batch, len(all))
		batches = append(batches, all[:n:n])
		all = all[n:]
	}
	return batches
}

// multiGetAll runs the batches with env and checks every answer against the
// model.
func multiGetAll(t *testing.T, r *Reader, env ReadEnv, es []entry, batches [][]MultiGetKey) {
	t.Helper()
	for _, keys := range batches {
		for i := range keys {
			keys[i].Done = false
		}
		require.NoError(t, r.MultiGet(context.Background(), env, keys))
		checkMultiGetResults(t, keys, es)
		releaseKeys(keys)
	}
}

// TestMultiGetFillCacheCoversMeta is TestGetFillCacheCoversMeta for
// MultiGet: without ReadEnv.FillCache, on a table that keeps its index and
// filter in the block cache, a MultiGet reads an index or filter (whole or
// a partition) that the cache does not hold into its pooled state and
// leaves the cache as it found it (entries, bytes, BlockCacheAdd), with the
// model's answers. It used to insert them, evicting the working set with
// meta blocks as a one-off Get no longer did. Cached ones are still used,
// and with FillCache they are inserted as before.
func TestMultiGetFillCacheCoversMeta(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(193, 194)), 800, 30)
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
				testMultiGetFillCacheCoversMeta(t, buildTable(t, tc.opts, es), es, mmap)
			})
		}
	}
}

func testMultiGetFillCacheCoversMeta(t *testing.T, data []byte, es []entry, mmap bool) {
	noFill := ReadEnv{VerifyChecksums: true}
	fill := ReadEnv{VerifyChecksums: true, FillCache: true}
	stats := statistics.New(statistics.LevelAll)
	c := cache.New(4 << 20)
	r := openTable(t, data, openConfig{cache: c, cacheMeta: true, stats: stats, mmap: mmap})
	r.EvictFromCache()
	rng := rand.New(rand.NewPCG(5, 6))
	batches := append(fillCacheKeys(es, rng, base.MaxSeqNum, 40), fillCacheKeys(es, rng, 0, 40)...)
	metaHits := func() uint64 {
		return stats.TickerCount(statistics.BlockCacheIndexHit) + stats.TickerCount(statistics.BlockCacheFilterHit)
	}

	// Without FillCache, from an empty cache: every index and filter
	// missed, and none inserted.
	adds := stats.TickerCount(statistics.BlockCacheAdd)
	misses := stats.TickerCount(statistics.BlockCacheIndexMiss)
	multiGetAll(t, r, noFill, es, batches)
	require.Zero(t, c.Len(), "entries the MultiGets without FillCache put in the cache")
	require.Zero(t, c.Size())
	require.Equal(t, adds, stats.TickerCount(statistics.BlockCacheAdd))
	require.Greater(t, stats.TickerCount(statistics.BlockCacheIndexMiss), misses,
		"the MultiGets looked their index up in the cache")

	// One MultiGet that fills the cache: the meta blocks of the first
	// batch's partitions (or the whole table's) and its data blocks are
	// cached. The MultiGets without FillCache use them and leave the cache
	// as it was.
	multiGetAll(t, r, fill, es, batches[:1])
	length, size := c.Len(), c.Size()
	require.Positive(t, length)
	adds = stats.TickerCount(statistics.BlockCacheAdd)
	hits := metaHits()
	multiGetAll(t, r, noFill, es, batches)
	require.Equal(t, length, c.Len(), "entries in the cache after MultiGets without FillCache")
	require.Equal(t, size, c.Size(), "bytes in the cache after MultiGets without FillCache")
	require.Equal(t, adds, stats.TickerCount(statistics.BlockCacheAdd))
	require.Greater(t, metaHits(), hits, "the MultiGets used the index and filter the cache holds")

	// With FillCache the MultiGets insert every index and filter they use.
	multiGetAll(t, r, fill, es, batches)
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

// overlaps reports whether a and b share memory.
func overlaps(a, b []byte) bool {
	if cap(a) == 0 || cap(b) == 0 {
		return false
	}
	pa, pb := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return pa < pb+uintptr(cap(b)) && pb < pa+uintptr(cap(a))
}

// TestMultiGetNoFillScratch checks what MultiGet's scratch may hold and
// when, on a partitioned table with a filter none of whose meta blocks is
// cached: a partition's filter, read into the scratch, is not overwritten
// by the read of its index (MultiGet holds both while it looks up a
// partition's keys), and once the call is over nothing points into the
// scratch: the keys' values stay right when its buffers are overwritten.
func TestMultiGetNoFillScratch(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(195, 196)), 800, 30)
	data := buildTable(t, partOpts, es)
	ctx := context.Background()
	noFill := ReadEnv{VerifyChecksums: true}
	// The Reader's own filter and index partitions, to compare with.
	probe := openTable(t, data, openConfig{})
	for _, mmap := range []bool{false, true} {
		t.Run(fmt.Sprintf("mmap=%t", mmap), func(t *testing.T) {
			c := cache.New(4 << 20)
			r := openTable(t, data, openConfig{cache: c, cacheMeta: true, mmap: mmap})
			r.EvictFromCache()
			require.NotNil(t, r.top)

			t.Run("filter and index apart", func(t *testing.T) {
				var s metaScratch
				for part := range r.top.len() {
					m := mgMeta{r: r, ctx: ctx, io: noFill.IO, part: -2, own: r.scratchFor(&noFill, &s)}
					require.NotNil(t, m.own)
					m.moveTo(part)
					require.NoError(t, m.pinFilter())
					filter := bytes.Clone(m.filter)
					require.NoError(t, m.pinIndex())
					require.False(t, m.fh.Valid() || m.ih.Valid(), "partition %d: pinned in the cache", part)
					require.Equal(t, probe.ownFilter(part), filter, "partition %d: filter", part)
					require.Equal(t, filter, m.filter, "partition %d: the filter changed when the index was read", part)
					require.False(t, overlaps(m.filter, m.own.index), "partition %d: filter and index share memory", part)
					require.Equal(t, partHandles(&probe.parts[part]), partHandles(m.x), "partition %d: index", part)
					m.release()
				}
				require.Zero(t, c.Len())
			})

			t.Run("nothing points into it after", func(t *testing.T) {
				for _, keys := range fillCacheKeys(es, rand.New(rand.NewPCG(7, 8)), 0, 60) {
					ms := new(mgState)
					require.NoError(t, r.multiGet(ctx, &noFill, ms, keys))
					require.Zero(t, ms.meta, "the meta pass left its state behind")
					for _, b := range []*[]byte{&ms.scratch.raw, &ms.scratch.dec, &ms.scratch.filter, &ms.scratch.index} {
						v := (*b)[:cap(*b)]
						for i := range v {
							v[i] = 0xDB
						}
					}
					require.NotZero(t, cap(ms.scratch.index), "the index was read into the scratch")
					checkMultiGetResults(t, keys, es)
					releaseKeys(keys)
				}
				require.Zero(t, c.Len())
			})
		})
	}
}

// TestMultiGetNoFillAllocs checks that a MultiGet without FillCache that
// misses every index and filter in the cache (and reads its data blocks,
// which it does not cache either) allocates nothing once its pooled state
// holds buffers large enough.
func TestMultiGetNoFillAllocs(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	es := genEntries(rand.New(rand.NewPCG(197, 198)), 2000, 30)
	for _, partition := range []int{0, 128} {
		t.Run(fmt.Sprintf("partition=%d", partition), func(t *testing.T) {
			opts := partOpts
			opts.IndexPartitionSize = partition
			c := cache.New(4 << 20)
			r := openTable(t, buildTable(t, opts, es), openConfig{cache: c, cacheMeta: true})
			r.EvictFromCache()
			all := multiGetKeys(es, base.MaxSeqNum)
			keys := []MultiGetKey{all[10], all[11], all[400], all[900]}
			absent := append(bytes.Clone(all[900].Key), 'x')
			keys = append(keys, MultiGetKey{Key: absent, Hash: bloom.Hash(absent), Seq: base.MaxSeqNum})
			ctx := context.Background()
			noFill := ReadEnv{VerifyChecksums: true}
			mget := func() {
				for i := range keys {
					keys[i].Done = false
				}
				if err := r.MultiGet(ctx, noFill, keys); err != nil {
					t.Fatal(err)
				}
				for i := range keys {
					if keys[i].Found != (i < 4) || keys[i].Err != nil {
						t.Fatalf("key %q: found %t, %v", keys[i].Key, keys[i].Found, keys[i].Err)
					}
					keys[i].Pin.Release()
				}
			}
			mget() // grow the pooled buffers
			require.Zero(t, testing.AllocsPerRun(1000, mget))
			require.Zero(t, c.Len(), "nothing cached")
		})
	}
}

// TestMultiGetNoFillConcurrent runs MultiGets without FillCache from several
// goroutines on a table whose index and filter partitions are not cached
// (run with -race): each call reads them into the scratch of its own pooled
// state, which no other call may see while it uses it.
func TestMultiGetNoFillConcurrent(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(199, 200)), 1500, 30)
	data := buildTable(t, partOpts, es)
	c := cache.New(4 << 20)
	r := openTable(t, data, openConfig{cache: c, cacheMeta: true})
	r.EvictFromCache()
	noFill := ReadEnv{VerifyChecksums: true}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 201))
			batches := fillCacheKeys(es, rng, 0, 1+rng.IntN(30))
			for range 3 {
				rng.Shuffle(len(batches), func(i, j int) { batches[i], batches[j] = batches[j], batches[i] })
				multiGetAll(t, r, noFill, es, batches)
			}
		})
	}
	wg.Wait()
	require.Zero(t, c.Len())
}

// TestMultiGetNoFillCorruption checks that a damaged index or filter
// partition that a MultiGet without FillCache reads past the cache fails
// the call as corruption naming the file, the block and the checksums,
// with nothing cached.
func TestMultiGetNoFillCorruption(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(202, 203)), 300, 20)
	data := buildTable(t, partOpts, es)
	probe := openTable(t, data, openConfig{})
	all := multiGetKeys(es, base.MaxSeqNum)
	keys := all[2:6]
	part := probe.partitionOf(appendSearchKey(nil, keys[0].Key, base.MaxSeqNum))
	require.Equal(t, part, probe.partitionOf(appendSearchKey(nil, keys[len(keys)-1].Key, base.MaxSeqNum)))
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
			err := r.MultiGet(context.Background(), ReadEnv{VerifyChecksums: true}, keys)
			require.True(t, base.IsCorruption(err), "%v", err)
			msg := err.Error()
			for _, want := range []string{testFile, tc.name, fmt.Sprintf("offset %d", tc.h.Offset), "checksum mismatch", "stored =", "computed ="} {
				require.Contains(t, msg, want)
			}
			require.Zero(t, c.Len())
		})
	}
}

// BenchmarkMultiGetNoFillMeta is BenchmarkGetNoFillMeta for MultiGet: a
// 16-key MultiGet without FillCache on a partitioned table, with the index
// and filter partitions it needs cached (warm) and with none cached (each
// read into the call's pooled scratch). Data blocks are cached when warm
// and read otherwise.
func BenchmarkMultiGetNoFillMeta(b *testing.B) {
	es := genEntries(rand.New(rand.NewPCG(1, 2)), 20000, 100)
	data := buildTable(b, partOpts, es)
	all := multiGetKeys(es, base.MaxSeqNum)
	ctx := context.Background()
	for _, warm := range []bool{true, false} {
		b.Run(fmt.Sprintf("warm=%t", warm), func(b *testing.B) {
			c := cache.New(64 << 20)
			r := openTable(b, data, openConfig{cache: c, cacheMeta: true})
			r.EvictFromCache()
			rng := rand.New(rand.NewPCG(1, 2))
			batches := make([][]MultiGetKey, 256)
			for i := range batches {
				seen := map[int]bool{}
				for len(seen) < 16 {
					seen[rng.IntN(len(all))] = true
				}
				for _, k := range slices.Sorted(maps.Keys(seen)) {
					batches[i] = append(batches[i], all[k])
				}
			}
			mget := func(env ReadEnv, keys []MultiGetKey) {
				for i := range keys {
					keys[i].Done = false
				}
				if err := r.MultiGet(ctx, env, keys); err != nil {
					b.Fatal(err)
				}
				for i := range keys {
					if !keys[i].Found {
						b.Fatalf("key %q not found: %v", keys[i].Key, keys[i].Err)
					}
					keys[i].Pin.Release()
				}
			}
			if warm {
				for _, keys := range batches {
					mget(verifyEnv, keys)
				}
			}
			noFill := ReadEnv{VerifyChecksums: true}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				mget(noFill, batches[i%len(batches)])
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(16*b.N), "ns/key")
			if !warm && c.Len() != 0 {
				b.Fatalf("%d entries cached", c.Len())
			}
		})
	}
}
