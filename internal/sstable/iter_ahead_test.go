package sstable

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/internal/sstable/block"
	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

// aheadOpts write small blocks, so that short scans cross many.
var aheadOpts = WriterOptions{BlockSize: 256, Compression: compress.Snappy, Checksum: checksum.CRC32C}

// nextBlock moves it forward until it loads another block, and returns the
// entry it moved to (nil at the end).
func nextBlock(it *Iter) *base.InternalKV {
	cur := it.cur
	kv := it.Next()
	for kv != nil && it.cur == cur {
		kv = it.Next()
	}
	return kv
}

// TestIterLookAhead checks which positions hold a look-ahead pin: a forward
// scan pins the cached block after the one it moved to, unless that block
// lies in another partition, is not cached, or cannot hold keys below upper,
// or the scan reads most of the blocks it visits; seeks and backward moves
// do not look ahead, and an exhausted Iter holds nothing.
func TestIterLookAhead(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(41, 42)), 600, 20)
	data := buildTable(t, aheadOpts, es)
	pdata := buildTable(t, partOpts, es)
	requirePartitioned(t, pdata, 3)
	ctx := context.Background()
	type check func(t *testing.T, it *Iter)
	holdsNext := func(t *testing.T, it *Iter) {
		require.True(t, it.ahead.Valid(), "no look-ahead at block %d", it.ib)
		require.Equal(t, it.x.handle(it.ib+1), it.aheadAt)
	}
	holdsNone := func(t *testing.T, it *Iter) {
		require.False(t, it.ahead.Valid(), "a look-ahead at block %d", it.ib)
	}
	for _, tc := range []struct {
		name        string
		partitioned bool
		cold        bool // the cache starts empty
		noCache     bool
		upper       []byte
		// prepare, when set, runs on the Reader before the scan.
		prepare func(t *testing.T, r *Reader)
		move    func(it *Iter) *base.InternalKV
		want    check
	}{
		{name: "scan", move: func(it *Iter) *base.InternalKV {
			it.First()
			return nextBlock(it)
		}, want: holdsNext},
		{name: "scan-many-blocks", move: func(it *Iter) *base.InternalKV {
			kv := it.First()
			for range 5 {
				kv = nextBlock(it)
			}
			return kv
		}, want: holdsNext},
		{name: "first", move: func(it *Iter) *base.InternalKV { return it.First() }, want: holdsNone},
		{name: "seek", move: func(it *Iter) *base.InternalKV { return it.SeekGE(es[300].key.UserKey) }, want: holdsNone},
		{name: "seek-then-scan", move: func(it *Iter) *base.InternalKV {
			it.SeekGE(es[300].key.UserKey)
			return nextBlock(it)
		}, want: holdsNext},
		{name: "backward", move: func(it *Iter) *base.InternalKV {
			it.Last()
			kv := it.Prev()
			for cur := it.cur; kv != nil && it.cur == cur; {
				kv = it.Prev()
			}
			return kv
		}, want: holdsNone},
		{name: "scan-then-prev-across", move: func(it *Iter) *base.InternalKV {
			it.First()
			nextBlock(it)
			kv := nextBlock(it)
			for cur := it.cur; kv != nil && it.cur == cur; {
				kv = it.Prev()
			}
			return kv
		}, want: holdsNone},
		{name: "last-block", move: func(it *Iter) *base.InternalKV {
			it.SeekLT(es[len(es)-1].key.UserKey) // in the last block or the one before
			kv := it.Next()
			for it.ib+1 < it.x.len() {
				kv = nextBlock(it)
			}
			return kv
		}, want: holdsNone},
		{name: "partition-end", partitioned: true, move: func(it *Iter) *base.InternalKV {
			kv := it.First()
			for it.ib+1 < it.x.len() {
				kv = nextBlock(it)
			}
			return kv
		}, want: holdsNone},
		{name: "partition-scan", partitioned: true, move: func(it *Iter) *base.InternalKV {
			it.First()
			return nextBlock(it)
		}, want: holdsNext},
		{name: "next-block-above-upper", upper: es[320].key.UserKey, move: func(it *Iter) *base.InternalKV {
			kv := it.SeekGE(es[200].key.UserKey)
			for !(it.ib+1 < it.x.len() && it.x.handle(it.ib+1) == it.cur) && kv != nil && it.belowUpper {
				kv = nextBlock(it)
			}
			return kv
		}, want: func(t *testing.T, it *Iter) {
			require.False(t, it.belowUpper, "the scan reached the block of upper")
			holdsNone(t, it)
		}},
		{name: "exhausted", move: func(it *Iter) *base.InternalKV {
			it.First()
			nextBlock(it)
			for it.Next() != nil {
			}
			return nil
		}, want: holdsNone},
		{name: "exhausted-at-upper", upper: es[320].key.UserKey, move: func(it *Iter) *base.InternalKV {
			it.First()
			nextBlock(it)
			for it.Next() != nil {
			}
			return nil
		}, want: holdsNone},
		{name: "cold-cache", cold: true, move: func(it *Iter) *base.InternalKV {
			it.First()
			return nextBlock(it)
		}, want: holdsNone},
		{name: "next-cached-in-a-scan-that-reads", cold: true, prepare: func(t *testing.T, r *Reader) {
			// Block 3 is cached (a Get read it), blocks 0 to 2 are not.
			it, err := r.NewIter(ctx, ReadEnv{VerifyChecksums: true}, nil, nil)
			require.NoError(t, err)
			kv := it.First()
			for range 3 {
				kv = nextBlock(it)
			}
			k := kv.K.UserKey
			require.NoError(t, it.Close())
			_, _, found, pin, err := r.Get(ctx, verifyEnv, k, base.MaxSeqNum)
			require.NoError(t, err)
			require.True(t, found)
			pin.Release()
		}, move: func(it *Iter) *base.InternalKV {
			it.First()
			nextBlock(it)
			kv := nextBlock(it)
			require.Equal(t, 2, it.ib)
			hd, ok := it.r.opts.Cache.Get(it.r.cacheKey(it.x.handle(3)))
			require.True(t, ok, "block 3 is cached")
			hd.Release()
			return kv
		}, want: holdsNone},
		{name: "no-cache", noCache: true, move: func(it *Iter) *base.InternalKV {
			it.First()
			return nextBlock(it)
		}, want: holdsNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := data
			if tc.partitioned {
				d = pdata
			}
			cfg := openConfig{cache: cache.New(8 << 20)}
			if tc.noCache {
				cfg.cache = nil
			}
			r := openTable(t, d, cfg)
			if tc.prepare != nil {
				tc.prepare(t, r)
			}
			if !tc.cold && !tc.noCache {
				warm, err := r.NewIter(ctx, verifyEnv, nil, nil)
				require.NoError(t, err)
				_, err = scan(warm, false)
				require.NoError(t, err)
			}
			it, err := r.NewIter(ctx, verifyEnv, nil, tc.upper)
			require.NoError(t, err)
			kv := tc.move(it)
			tc.want(t, it)
			if kv != nil {
				// The look-ahead does not change what the Iter returns: the
				// entries from kv on are the table's.
				want := inRange(es, nil, tc.upper)
				k := slices.IndexFunc(want, func(e entry) bool { return base.CompareInternal(e.key, kv.K) == 0 })
				require.GreaterOrEqual(t, k, 0)
				var got []entry
				for ; kv != nil; kv = it.Next() {
					got = append(got, entry{kv.K.Clone(), bytes.Clone(kv.V)})
				}
				require.NoError(t, it.Error())
				requireSameEntries(t, want[k:], got)
			}
			require.NoError(t, it.Close())
		})
	}
}

// TestIterLookAheadTickers checks that a scan records one block cache hit,
// and the block's bytes, per block it moves to, however many it looked up
// ahead: tickers are those of an Iter without a look-ahead.
func TestIterLookAheadTickers(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(43, 44)), 600, 20)
	for _, tc := range []struct {
		name   string
		opts   WriterOptions
		blocks int // blocks to move through before Close; 0: all
	}{
		{"whole", aheadOpts, 0},
		{"close-mid-scan", aheadOpts, 4},
		{"partitioned", partOpts, 0},
		{"partitioned-close-mid-scan", partOpts, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := statistics.New(statistics.LevelAll)
			c := cache.New(8 << 20)
			r := openTable(t, buildTable(t, tc.opts, es), openConfig{cache: c, stats: st})
			warm, err := r.NewIter(context.Background(), verifyEnv, nil, nil)
			require.NoError(t, err)
			_, err = scan(warm, false)
			require.NoError(t, err)
			st.Reset()

			it, err := r.NewIter(context.Background(), verifyEnv, nil, nil)
			require.NoError(t, err)
			visits, bytes := 0, uint64(0)
			for kv := it.First(); kv != nil; kv = nextBlock(it) {
				visits++
				hd, ok := c.Get(r.cacheKey(it.cur))
				require.True(t, ok)
				bytes += uint64(len(hd.Value()))
				hd.Release()
				if visits == tc.blocks {
					break
				}
			}
			require.NoError(t, it.Close())
			require.Greater(t, visits, 3)
			require.Equal(t, uint64(visits), st.TickerCount(statistics.BlockCacheDataHit))
			require.Equal(t, uint64(visits), st.TickerCount(statistics.BlockCacheHit)-st.TickerCount(statistics.BlockCacheIndexHit))
			require.Zero(t, st.TickerCount(statistics.BlockCacheDataMiss))
			require.Equal(t, bytes, st.TickerCount(statistics.BlockCacheBytesRead)-indexBytesRead(t, r, st))
		})
	}
}

// indexBytesRead is the part of BlockCacheBytesRead that index partitions
// account for: none here, where they are not cached (CacheIndexAndFilterBlocks
// off).
func indexBytesRead(t *testing.T, r *Reader, st *statistics.Statistics) uint64 {
	t.Helper()
	require.False(t, r.opts.CacheIndexAndFilterBlocks)
	require.Zero(t, st.TickerCount(statistics.BlockCacheIndexHit))
	return 0
}

// TestIterLookAheadReleased checks that the look-ahead's pin is released
// however the Iter leaves the scan: closed mid-block, moved backward, sought
// elsewhere, exhausted at upper or at the end, or stopped by a done context.
// As TestPartitionHandlesReleased does, it relies on the cache poisoning a
// freed entry's buffer in invariants builds; it also checks, in every build,
// that the Iter holds no look-ahead once it is exhausted or failed.
func TestIterLookAheadReleased(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(45, 46)), 600, 20)
	mid := es[300].key.UserKey
	for _, tc := range []struct {
		name  string
		upper []byte
		// stop moves the scanning Iter, whose context cancel cancels, and
		// reports whether it is exhausted or failed.
		stop    func(it *Iter, cancel func()) bool
		wantErr error
	}{
		{name: "close-mid-block", stop: func(it *Iter, _ func()) bool { it.Next(); return false }},
		{name: "prev", stop: func(it *Iter, _ func()) bool {
			for cur := it.cur; it.cur == cur; {
				it.Prev()
			}
			return false
		}},
		{name: "seek-back", stop: func(it *Iter, _ func()) bool { it.SeekGE(es[0].key.UserKey); return false }},
		{name: "seek-ahead", stop: func(it *Iter, _ func()) bool { it.SeekGE(mid); return false }},
		{name: "seek-lt", stop: func(it *Iter, _ func()) bool { it.SeekLT(mid); return false }},
		{name: "last", stop: func(it *Iter, _ func()) bool { it.Last(); return false }},
		{name: "end", stop: func(it *Iter, _ func()) bool {
			for it.Next() != nil {
			}
			return true
		}},
		{name: "upper", upper: mid, stop: func(it *Iter, _ func()) bool {
			for it.Next() != nil {
			}
			return true
		}},
		{name: "seek-above-upper", upper: mid, stop: func(it *Iter, _ func()) bool {
			return it.SeekGE(es[400].key.UserKey) == nil
		}},
		{name: "context-done", stop: func(it *Iter, cancel func()) bool {
			cancel()
			for it.Next() != nil {
			}
			return true
		}, wantErr: context.Canceled},
	} {
		for _, opts := range []struct {
			name string
			w    WriterOptions
		}{{"flat", aheadOpts}, {"partitioned", partOpts}} {
			t.Run(tc.name+"/"+opts.name, func(t *testing.T) {
				data := buildTable(t, opts.w, es)
				c := cache.New(8 << 20)
				r := openTable(t, data, openConfig{cache: c})
				hs := warmBlocks(t, r)

				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				it, err := r.NewIter(ctx, verifyEnv, nil, tc.upper)
				require.NoError(t, err)
				it.First()
				nextBlock(it)
				nextBlock(it)
				require.True(t, it.ahead.Valid(), "the scan looks ahead")
				if tc.stop(it, cancel) {
					require.False(t, it.ahead.Valid(), "an exhausted or failed Iter holds a look-ahead")
				}
				err = it.Close()
				if tc.wantErr != nil {
					require.True(t, errors.Is(err, tc.wantErr), "%v", err)
				} else {
					require.NoError(t, err)
				}
				requireDataUnpinned(t, r, c, hs)
			})
		}
	}
}

// warmBlocks scans r once, filling the cache, and returns the handles of
// its data blocks.
func warmBlocks(t *testing.T, r *Reader) []block.Handle {
	t.Helper()
	it, err := r.NewIter(context.Background(), verifyEnv, nil, nil)
	require.NoError(t, err)
	var hs []block.Handle
	for kv := it.First(); kv != nil; kv = nextBlock(it) {
		hs = append(hs, it.cur)
	}
	require.NoError(t, it.Close())
	require.Greater(t, len(hs), 10)
	return hs
}

// requireDataUnpinned checks, in invariants builds, that no handle to the
// cached data blocks hs of r is still held: it takes every one's value,
// evicts the file, and requires each buffer to be poisoned (freed).
func requireDataUnpinned(t *testing.T, r *Reader, c *cache.Cache, hs []block.Handle) {
	t.Helper()
	if !invariants.Enabled {
		return
	}
	var values [][]byte
	for _, h := range hs {
		if hd, ok := c.Get(r.cacheKey(h)); ok {
			values = append(values, hd.Value())
			hd.Release()
		}
	}
	require.Len(t, values, len(hs))
	r.EvictFromCache()
	for _, v := range values {
		for _, b := range v {
			if b != 0xDB {
				t.Fatal("a data block is still referenced after its file's eviction: a handle leaked")
			}
		}
	}
}

// TestIterRefillStopsAtCachedBlock checks that a scan that finds most of its
// blocks cached reads a block it misses alone when its look-ahead holds the
// next one, rather than a readahead refill that copies the cached block
// too: over blocks of which one in five is missing, the file bytes the scan
// reads are exactly those of the missing blocks.
func TestIterRefillStopsAtCachedBlock(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(47, 48)), 1500, 20)
	data := buildTable(t, aheadOpts, es)
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		missing func(b, n int) bool // block b of n is not cached
	}{
		// From block 10 on, so that the scan has found enough of its
		// blocks cached to look ahead (PrefetchBuffer.MostlyCached).
		{"one-in-five", func(b, n int) bool { return b >= 10 && b%5 == 2 && b < n-2 }},
		{"pairs", func(b, n int) bool { return b >= 10 && (b%10 == 3 || b%10 == 4) && b < n-2 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cache.New(8 << 20)
			r := openTable(t, data, openConfig{cache: c})
			// Load the blocks to cache one by one, in the order of the
			// index (a user key's versions may span two blocks, so a Get
			// or a seek by key could load the block before).
			fill, err := r.NewIter(ctx, verifyEnv, nil, nil)
			require.NoError(t, err)
			hs := r.index.handles
			n := len(hs)
			require.Greater(t, n, 40)
			var want, pairs int64
			for b := range n {
				if tc.missing(b, n) {
					want += int64(hs[b].Length) + block.TrailerLen
					if tc.missing(b+1, n) {
						pairs++
					}
					continue
				}
				fill.ib = b
				require.True(t, fill.loadBlock())
			}
			require.NoError(t, fill.Close())

			start := r.file.BytesRead()
			it, err := r.NewIter(ctx, verifyEnv, nil, nil)
			require.NoError(t, err)
			got, err := scan(it, false)
			require.NoError(t, err)
			requireSameEntries(t, es, got)
			require.NoError(t, it.Close())
			read := r.file.BytesRead() - start
			if pairs == 0 {
				require.Equal(t, want, read)
			} else {
				// A missing block followed by another missing one is
				// refilled with readahead, which may read past the pair.
				require.GreaterOrEqual(t, read, want)
				require.Less(t, read, want+pairs*8<<10)
			}
		})
	}
}

// TestIterLookAheadMissTickers checks the tickers of a scan over blocks of
// which some are not cached: one data block miss per missing block (whose
// look-up the look-ahead made) and one hit, with its bytes, per cached one,
// at every statistics level that records tickers.
func TestIterLookAheadMissTickers(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(49, 50)), 1500, 20)
	data := buildTable(t, aheadOpts, es)
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		missing func(b int) bool
		level   statistics.Level
	}{
		{"one-in-five", func(b int) bool { return b >= 10 && b%5 == 2 }, statistics.LevelExceptDetailedTimers},
		{"one-in-five/all", func(b int) bool { return b >= 10 && b%5 == 2 }, statistics.LevelAll},
		{"runs", func(b int) bool { return b%9 < 3 }, statistics.LevelExceptHistogramOrTimers},
		{"last", func(b int) bool { return b >= 10 && b%7 == 0 }, statistics.LevelExceptDetailedTimers},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := statistics.New(tc.level)
			c := cache.New(8 << 20)
			r := openTable(t, data, openConfig{cache: c, stats: st})
			fill, err := r.NewIter(ctx, verifyEnv, nil, nil)
			require.NoError(t, err)
			hs := r.index.handles
			var hits, misses int
			for b := range hs {
				if tc.missing(b) {
					misses++
					continue
				}
				hits++
				fill.ib = b
				require.True(t, fill.loadBlock())
			}
			require.NoError(t, fill.Close())
			var hitBytes uint64
			for b, h := range hs {
				if !tc.missing(b) {
					hd, ok := c.Get(r.cacheKey(h))
					require.True(t, ok)
					hitBytes += uint64(len(hd.Value()))
					hd.Release()
				}
			}
			st.Reset()

			it, err := r.NewIter(ctx, verifyEnv, nil, nil)
			require.NoError(t, err)
			got, err := scan(it, false)
			require.NoError(t, err)
			requireSameEntries(t, es, got)
			require.NoError(t, it.Close())
			require.Equal(t, uint64(hits), st.TickerCount(statistics.BlockCacheDataHit))
			require.Equal(t, uint64(misses), st.TickerCount(statistics.BlockCacheDataMiss))
			require.Equal(t, uint64(hits), st.TickerCount(statistics.BlockCacheHit))
			require.Equal(t, uint64(misses), st.TickerCount(statistics.BlockCacheMiss))
			require.Equal(t, hitBytes, st.TickerCount(statistics.BlockCacheBytesRead))
			require.Equal(t, uint64(misses), st.TickerCount(statistics.BlockCacheAdd))
		})
	}
}
