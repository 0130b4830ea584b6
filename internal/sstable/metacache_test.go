package sstable

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/bloom"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/internal/sstable/block"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// TestCacheIndexAndFilterBlocks checks where the index and filter live with
// and without the option, what a Get costs in cache lookups and file reads,
// and that an evicted index and filter are read again, tagged with the
// activity of the read that needed them.
func TestCacheIndexAndFilterBlocks(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(21, 22)), 400, 20)
	data := buildTable(t, WriterOptions{BlockSize: 256, BloomBitsPerKey: 10, Compression: compress.Snappy,
		Checksum: checksum.CRC32C}, es)
	key := es[len(es)/2].key.UserKey
	ctx := context.Background()
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("on=%t", on), func(t *testing.T) {
			c := cache.New(1 << 20)
			stats := statistics.New(statistics.LevelAll)
			var reads, getReads atomic.Int64
			r := openTable(t, data, openConfig{cache: c, stats: stats, cacheMeta: on,
				wrap: func(fs vfs.FS) vfs.FS {
					return errorfs.WrapObserver(fs, func(op errorfs.Op) {
						if op.Kind == errorfs.OpFileRead {
							reads.Add(1)
							if op.IO.Activity == ioctx.ActivityGet {
								getReads.Add(1)
							}
						}
					})
				}})
			// Open puts the index and the filter in the cache, or keeps
			// them.
			if on {
				require.Equal(t, 2, c.Len())
				require.Nil(t, r.index)
				require.Nil(t, r.filter)
			} else {
				require.Zero(t, c.Len())
				require.NotNil(t, r.index)
				require.NotNil(t, r.filter)
			}

			get := func(env ReadEnv) {
				t.Helper()
				_, _, found, pin, err := r.Get(ctx, env, key, base.MaxSeqNum)
				require.NoError(t, err)
				require.True(t, found)
				pin.Release()
			}
			get(verifyEnv) // cache the data block
			stats.Reset()
			before := reads.Load()
			get(verifyEnv)
			require.Equal(t, before, reads.Load(), "a Get of a cached block reads nothing")
			lookups := uint64(1) // the data block
			if on {
				lookups += 2 // filter and index
				require.Equal(t, uint64(1), stats.TickerCount(statistics.BlockCacheIndexHit))
			} else {
				require.Zero(t, stats.TickerCount(statistics.BlockCacheIndexHit))
			}
			require.Equal(t, lookups, stats.TickerCount(statistics.BlockCacheHit))
			require.Zero(t, stats.TickerCount(statistics.BlockCacheMiss))

			// Evicted, they are read again by the read that needs them,
			// with its activity.
			r.EvictFromCache()
			stats.Reset()
			before, beforeGet := reads.Load(), getReads.Load()
			get(ReadEnv{IO: ioctx.IOOptions{Activity: ioctx.ActivityGet}, VerifyChecksums: true, FillCache: true})
			wantReads := int64(1) // the data block
			if on {
				wantReads += 2
				require.Equal(t, 3, c.Len())
			}
			require.Equal(t, wantReads, reads.Load()-before)
			require.Equal(t, wantReads, getReads.Load()-beforeGet)
			require.Equal(t, uint64(wantReads), stats.TickerCount(statistics.BlockCacheMiss))
			require.Equal(t, uint64(wantReads), stats.TickerCount(statistics.BlockCacheAdd))

			// MayContain uses a cached filter, and errs on the side of
			// "may" when the filter is not cached.
			require.True(t, r.MayContain(bloom.Hash(key)))
			absent := 0
			for i := range 100 {
				if !r.MayContain(bloom.Hash(fmt.Appendf(nil, "absent%d", i))) {
					absent++
				}
			}
			require.Greater(t, absent, 80)
			r.EvictFromCache()
			if on {
				require.True(t, r.MayContain(bloom.Hash([]byte("absent0"))))
			}
		})
	}
}

// TestCacheIndexAndFilterPinned checks that an open iterator keeps using
// the index it pinned after the cache has dropped it (the view stays valid
// until Close releases it).
func TestCacheIndexAndFilterPinned(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(23, 24)), 300, 20)
	data := buildTable(t, WriterOptions{BlockSize: 256, BloomBitsPerKey: 10, Checksum: checksum.XXHash64}, es)
	c := cache.New(1 << 20)
	r := openTable(t, data, openConfig{cache: c, cacheMeta: true})
	ctx := context.Background()
	checkGet(t, r, verifyEnv, es, es[7].key.UserKey, base.MaxSeqNum)
	checkMultiGet(t, r, verifyEnv, es, rand.New(rand.NewPCG(1, 1)))

	it, err := r.NewIter(ctx, verifyEnv, nil, nil)
	require.NoError(t, err)
	require.NotNil(t, it.First())
	r.EvictFromCache()
	require.Zero(t, c.Len())
	got, err := scan(it, false)
	require.NoError(t, err)
	requireSameEntries(t, es, got)
	require.NoError(t, it.Close())
	// In invariants builds a released buffer is poisoned and a second
	// Release panics, so a view used after its release fails the scan.
	_ = invariants.Enabled
}

// TestCacheIndexAndFilterCorruption checks that an index or filter block
// found corrupt when it is loaded into the cache by a Get (after Open read
// it intact) is reported like any corrupt block: marked corruption, with
// the file, the offset and both checksums.
func TestCacheIndexAndFilterCorruption(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(25, 26)), 300, 20)
	data := buildTable(t, WriterOptions{BlockSize: 256, BloomBitsPerKey: 10, Compression: compress.Snappy,
		Checksum: checksum.CRC32C}, es)
	probe := openTable(t, data, openConfig{})
	for _, tc := range []struct {
		name string
		h    block.Handle
		m    metaBlock
	}{
		{"index", probe.footer.Index, wholeIndex},
		{"filter", probe.filterH, wholeFilter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cache.New(1 << 20)
			fs := &flipper{FS: memWith(t, data), off: int64(tc.h.Offset + tc.h.Length/2)}
			r := openTable(t, data, openConfig{cache: c, cacheMeta: true, wrap: func(vfs.FS) vfs.FS { return fs }})
			r.EvictFromCache()
			fs.armed.Store(true)
			_, _, _, _, err := r.Get(context.Background(), verifyEnv, es[3].key.UserKey, base.MaxSeqNum)
			require.Error(t, err)
			require.True(t, base.IsCorruption(err), "%v", err)
			msg := err.Error()
			require.Contains(t, msg, testFile)
			require.Contains(t, msg, tc.name)
			require.Contains(t, msg, fmt.Sprintf("offset %d", tc.h.Offset))
			require.Contains(t, msg, "checksum mismatch")
			require.True(t, strings.Contains(msg, "stored =") && strings.Contains(msg, "computed ="), msg)
			_, cached := c.Get(r.metaCacheKey(tc.h, tc.m))
			require.False(t, cached, "nothing corrupt is cached")
		})
	}
}

// flipper flips one bit of the byte at off in every read once armed.
type flipper struct {
	vfs.FS
	off   int64
	armed atomic.Bool
}

func (fl *flipper) Open(name string) (vfs.File, error) {
	f, err := fl.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return &flippedFile{File: f, fl: fl}, nil
}

type flippedFile struct {
	vfs.File
	fl *flipper
}

func (f *flippedFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	if f.fl.armed.Load() && f.fl.off >= off && f.fl.off < off+int64(n) {
		p[f.fl.off-off] ^= 0x10
	}
	return n, err
}

// TestMemoryFlatInTables opens one table of small blocks (so that its index
// and filter are large next to its data) as more and more distinct tables,
// and measures the Go heap in use after a GC: with the index and filter in
// the Reader it grows by their size with every table; in the block cache it
// stays within the cache's budget plus a small constant per Reader. Run with
// -v to see the figures.
func TestMemoryFlatInTables(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector's shadow memory distorts the heap figures")
	}
	nEntries, steps := 40000, []int{16, 32, 64}
	if testing.Short() {
		nEntries, steps = 10000, []int{8, 16, 32}
	}
	rng := rand.New(rand.NewPCG(31, 32))
	es := make([]entry, nEntries)
	for i := range es {
		es[i] = entry{key: base.MakeInternalKey(fmt.Appendf(nil, "key%013d", i), base.SeqNum(i+1), base.KindSet),
			value: fmt.Appendf(nil, "value%027d", rng.IntN(1e9))}
	}
	data := buildTable(t, WriterOptions{BlockSize: 256, BloomBitsPerKey: 10, Compression: compress.None,
		Checksum: checksum.CRC32C}, es)
	fs := memWith(t, data)
	probe := openTable(t, data, openConfig{})
	perTable := probe.index.memSize() + len(probe.filter)
	const cacheSize = 4 << 20
	t.Logf("table: %d KiB of data in %d blocks; index %d KiB + filter %d KiB in memory",
		len(data)>>10, probe.index.len(), probe.index.memSize()>>10, len(probe.filter)>>10)

	heapInUse := func() int64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	// grow opens n copies of the table with the option on or off and
	// returns how much the heap grew.
	grow := func(on bool, n int) int64 {
		c := cache.New(cacheSize)
		id := c.NewID()
		before := heapInUse()
		readers := make([]*Reader, n)
		for i := range readers {
			f, err := fileio.Open(fs, testFile, fileio.Options{})
			require.NoError(t, err)
			r, err := Open(context.Background(), f, verifyEnv, ReaderOptions{
				Cache: c, CacheID: id, FileNum: uint64(i + 1), CacheIndexAndFilterBlocks: on,
			})
			require.NoError(t, err)
			readers[i] = r
			checkGet(t, r, verifyEnv, es, es[i*97%len(es)].key.UserKey, base.MaxSeqNum)
		}
		after := heapInUse()
		for _, r := range readers {
			require.NoError(t, r.Close())
		}
		runtime.KeepAlive(c)
		return after - before
	}
	var offs, ons []int64
	for _, n := range steps {
		off, on := grow(false, n), grow(true, n)
		t.Logf("%3d tables (%4d MiB of data): heap +%6d KiB with the index and filter in the Reader, +%6d KiB in a %d MiB cache",
			n, n*len(data)>>20, off>>10, on>>10, cacheSize>>20)
		offs, ons = append(offs, off), append(ons, on)
		// Off: every table's index and filter stay on the heap. The live
		// heap also moves with what earlier tests' cleanups free while
		// this one measures, so the check allows a quarter.
		require.Greater(t, off, int64(n*perTable*3/4), "off, %d tables", n)
		// On: the cache's budget plus a few KiB per Reader.
		require.Less(t, on, int64(cacheSize+n*8<<10), "on, %d tables", n)
	}
	// Doubling the tables twice: off grows with them, on does not.
	last := len(steps) - 1
	require.Greater(t, offs[last]-offs[0], int64((steps[last]-steps[0])*perTable*3/4))
	require.Less(t, ons[last]-ons[0], int64((steps[last]-steps[0])*8<<10+cacheSize/4))
}

// FuzzIndexFlat decodes arbitrary bytes as an index block into the flat
// form the block cache holds: either a corruption error, or a view whose
// separators and handles are the block's entries, in order.
func FuzzIndexFlat(f *testing.F) {
	f.Add(indexBlock([][]byte{encSep("a", 1), encSep("b", 2)}))
	f.Add(indexBlock([][]byte{encSep("user/001", 5), encSep("user/002", 1), encSep("user/0021", 9)}))
	f.Add(indexBlock(nil))
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, form := range indexForms {
			checkIndexFlat(t, data, form.encode, form.abbr)
		}
	})
}

// checkIndexFlat is FuzzIndexFlat's check of one flat form.
func checkIndexFlat(t *testing.T, data []byte, encode func([]byte, func(int) []byte) ([]byte, error), withAbbr bool) {
	{
		buf, err := encode(data, func(n int) []byte { return make([]byte, n, n+3) })
		if err != nil {
			requireCorruption(t, err)
			return
		}
		x := viewIndexTable(buf)
		require.Equal(t, withAbbr && x.len() > 0, x.abbr != nil)
		var it block.Iter
		require.NoError(t, it.Init(base.CompareEncoded, data))
		i := 0
		for ok := it.First(); ok; ok = it.Next() {
			require.Less(t, i, x.len())
			require.Equal(t, it.Key(), x.sep(i))
			h, err := decodeHandleExact(it.Value())
			require.NoError(t, err)
			require.Equal(t, h, x.handles[i])
			require.True(t, bytes.HasPrefix(x.userKey(i), x.common))
			if withAbbr {
				require.Equal(t, abbreviate(x.userKey(i)[len(x.common):]), x.abbr[i])
			}
			i++
		}
		require.Equal(t, x.len(), i)
	}
}

// TestGetAllocsCachedIndexAndFilter checks that a Get, a MultiGet and an
// iterator seek whose index, filter and data block are cached allocate
// nothing with the index and filter in the cache either.
func TestGetAllocsCachedIndexAndFilter(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	es := genEntries(rand.New(rand.NewPCG(43, 44)), 2000, 50)
	// Partitioned: the MultiGet's two keys are in different partitions.
	for _, partition := range []int{0, 128} {
		t.Run(fmt.Sprintf("partition=%d", partition), func(t *testing.T) {
			data := buildTable(t, WriterOptions{BloomBitsPerKey: 10, Compression: compress.Snappy,
				Checksum: checksum.XXHash64, IndexPartitionSize: partition}, es)
			r := openTable(t, data, openConfig{cache: cache.New(16 << 20), stats: statistics.New(statistics.LevelAll), cacheMeta: true})
			if partition > 0 {
				requirePartitioned(t, data, 2)
				require.NotEqual(t, r.partitionOf(appendSearchKey(nil, es[10].key.UserKey, base.MaxSeqNum)),
					r.partitionOf(appendSearchKey(nil, es[1500].key.UserKey, base.MaxSeqNum)))
			}
			checkGetAllocsCachedMeta(t, r, es)
		})
	}
}

func checkGetAllocsCachedMeta(t *testing.T, r *Reader, es []entry) {
	checkGetAllocs(t, r, es)
	ctx := context.Background()
	t.Run("multiget", func(t *testing.T) {
		keys := []MultiGetKey{{Key: es[10].key.UserKey, Seq: base.MaxSeqNum}, {Key: es[1500].key.UserKey, Seq: base.MaxSeqNum}}
		for i := range keys {
			keys[i].Hash = bloom.Hash(keys[i].Key)
		}
		mget := func() {
			for i := range keys {
				keys[i].Done = false
			}
			if err := r.MultiGet(ctx, verifyEnv, keys); err != nil {
				t.Fatal(err)
			}
			for i := range keys {
				if !keys[i].Found {
					t.Fatalf("key %q not found", keys[i].Key)
				}
				keys[i].Pin.Release()
			}
		}
		mget()
		require.Zero(t, testing.AllocsPerRun(1000, mget))
	})
}
