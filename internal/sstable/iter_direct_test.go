package sstable

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// TestIterSeekReadsIntoCache checks the direct reads (loadDataDirect): a
// block a seek reads on its own is read once, exactly, straight into the
// cache's memory, and so are the first exactReads blocks of a scan; a
// compressed block's read buffer goes back to the cache's allocator; and
// once a scan has read ahead through the readahead buffer, a seek to a
// block that buffer holds reads nothing, and one to a block beyond it reads
// that block alone again.
func TestIterSeekReadsIntoCache(t *testing.T) {
	for _, comp := range []compress.Type{compress.None, compress.Snappy} {
		t.Run(comp.String(), func(t *testing.T) {
			es := genEntries(rand.New(rand.NewPCG(31, 32)), 2000, 40)
			data := buildTable(t, WriterOptions{BlockSize: 512, Compression: comp, Checksum: checksum.CRC32C}, es)
			type read struct {
				off int64
				n   int
			}
			var reads []read
			c := cache.New(1 << 20)
			r := openTable(t, data, openConfig{cache: c, wrap: func(fs vfs.FS) vfs.FS {
				return errorfs.WrapObserver(fs, func(op errorfs.Op) {
					if op.Kind == errorfs.OpFileRead {
						reads = append(reads, read{op.Offset, op.Len})
					}
				})
			}})
			ctx := context.Background()

			// Seeks to keys in distinct blocks: one exact read each.
			it, err := r.NewIter(ctx, verifyEnv, nil, nil)
			require.NoError(t, err)
			for _, j := range []int{1500, 100, 900} {
				reads = reads[:0]
				k := es[j].key.UserKey
				kv := it.SeekGE(k)
				require.NotNil(t, kv)
				require.Equal(t, string(es[j].key.UserKey), string(kv.K.UserKey))
				h := it.cur
				require.Equal(t, []read{{int64(h.Offset), int(h.Length) + 5}}, reads, "SeekGE(%s)", k)
				if c.HasOffHeap() && len(kv.V) > 0 {
					require.True(t, c.OffHeap(kv.V), "SeekGE(%s): the block is not in the cache's region", k)
				}
				// Cached now: a second seek reads nothing.
				reads = reads[:0]
				require.NotNil(t, it.SeekGE(k))
				require.Empty(t, reads)
			}
			require.NoError(t, it.Close())
			require.LessOrEqual(t, c.OffHeapInUse(), int64(c.Len()), "more off-heap buffers in use than cached blocks")

			// A scan from the start reads its first blocks one by one,
			// exactly, then reads ahead; a seek into a block the readahead
			// brought in (and not yet visited, so not cached) is served
			// from the buffer.
			it, err = r.NewIter(ctx, verifyEnv, nil, nil)
			require.NoError(t, err)
			reads = reads[:0]
			kv := it.SeekGE(es[0].key.UserKey)
			blocks := []read{{int64(it.cur.Offset), int(it.cur.Length) + 5}}
			for kv != nil && len(blocks) <= exactReads {
				if kv = it.Next(); kv != nil && int64(it.cur.Offset) != blocks[len(blocks)-1].off {
					blocks = append(blocks, read{int64(it.cur.Offset), int(it.cur.Length) + 5})
				}
			}
			require.Equal(t, blocks, reads, "the scan's first blocks were not read exactly")
			for n := 0; kv != nil && n < 60; n++ {
				kv = it.Next()
			}
			require.NotNil(t, kv)
			last := reads[len(reads)-1]
			require.Greater(t, last.n, int(it.cur.Length)+5, "the scan did not read ahead: %v", reads)
			end := last.off + int64(last.n)
			var target []byte
			for j := range es {
				x := it.x.seekGE(appendSearchKey(nil, es[j].key.UserKey, base.MaxSeqNum))
				if h := it.x.handle(x); int64(h.Offset) > int64(it.cur.Offset) &&
					int64(h.Offset)+int64(h.Length)+5 <= end && x > it.ib+1 {
					target = es[j].key.UserKey
					break
				}
			}
			require.NotNil(t, target, "no block beyond the next one in the readahead chunk")
			reads = reads[:0]
			kv = it.SeekGE(target)
			require.NotNil(t, kv)
			require.Empty(t, reads, "a seek into the readahead chunk read the file")
			// A seek beyond the chunk reads its block alone again,
			// straight into the cache.
			far := es[len(es)-3].key.UserKey
			kv = it.SeekGE(far)
			require.NotNil(t, kv)
			require.Equal(t, []read{{int64(it.cur.Offset), int(it.cur.Length) + 5}}, reads, "SeekGE(%s) after a scan", far)
			if c.HasOffHeap() && len(kv.V) > 0 {
				require.True(t, c.OffHeap(kv.V), "SeekGE(%s) after a scan: the block is not in the cache's region", far)
			}
			require.NoError(t, it.Close())
			require.LessOrEqual(t, c.OffHeapInUse(), int64(c.Len()), "more off-heap buffers in use than cached blocks")
		})
	}
}

// TestIterSeekDirectCorruption checks that a seek's direct read of a damaged
// block fails with a corruption error naming the block, caches nothing and
// gives its buffer back, however often it is retried.
func TestIterSeekDirectCorruption(t *testing.T) {
	for _, comp := range []compress.Type{compress.None, compress.Snappy} {
		t.Run(comp.String(), func(t *testing.T) {
			es := genEntries(rand.New(rand.NewPCG(33, 34)), 300, 40)
			data := buildTable(t, WriterOptions{BlockSize: 512, Compression: comp, Checksum: checksum.CRC32C}, es)
			r0 := openTable(t, data, openConfig{})
			bad := bytes.Clone(data)
			bad[r0.dataEnd/2] ^= 0x10
			c := cache.New(1 << 20)
			r := openTable(t, bad, openConfig{cache: c})
			failed := 0
			for j := range es {
				it, err := r.NewIter(context.Background(), verifyEnv, nil, nil)
				require.NoError(t, err)
				kv := it.SeekGE(es[j].key.UserKey)
				if err := it.Close(); err != nil {
					require.Nil(t, kv)
					require.True(t, base.IsCorruption(err), "%v", err)
					require.Contains(t, err.Error(), "block checksum mismatch")
					failed++
				}
			}
			require.Positive(t, failed)
			require.LessOrEqual(t, c.OffHeapInUse(), int64(c.Len()), "buffers of failed reads were not given back")
		})
	}
}

// TestIterSeekDirectAgainstModel runs random moves, bounds included, on a
// table read through a block cache far smaller than it, so that seeks keep
// reading blocks on their own (directly into the cache) between scans that
// read ahead, and compares every result with the model.
func TestIterSeekDirectAgainstModel(t *testing.T) {
	for _, comp := range []compress.Type{compress.None, compress.Snappy} {
		for _, meta := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/meta=%t", comp, meta), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(35, uint64(comp)))
				es := genEntries(rng, 1500, 60)
				data := buildTable(t, WriterOptions{BlockSize: 512, Compression: comp, Checksum: checksum.CRC32C}, es)
				c := cache.New(16 << 10)
				r := openTable(t, data, openConfig{cache: c, cacheMeta: meta})
				checkIterOps(t, r, verifyEnv, es, rng, 300)
				require.LessOrEqual(t, c.OffHeapInUse(), int64(c.Len()), "more off-heap buffers in use than cached blocks")
			})
		}
	}
}

// TestIterSeekDirectTickers checks the tickers of seeks read directly: a
// data block miss and an add when the block was read, a hit with its bytes
// when it was cached, as for any other block read.
func TestIterSeekDirectTickers(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(37, 38)), 1000, 40)
	data := buildTable(t, WriterOptions{BlockSize: 512, Checksum: checksum.CRC32C}, es)
	st := statistics.New(statistics.LevelAll)
	c := cache.New(1 << 20)
	r := openTable(t, data, openConfig{cache: c, stats: st})
	ctx := context.Background()
	for round, want := range []struct{ hit, miss, add uint64 }{{0, 1, 1}, {1, 0, 0}} {
		st.Reset()
		it, err := r.NewIter(ctx, verifyEnv, nil, nil)
		require.NoError(t, err)
		kv := it.SeekGE(es[500].key.UserKey)
		require.NotNil(t, kv)
		hd, ok := c.Get(r.cacheKey(it.cur))
		require.True(t, ok)
		n := uint64(len(hd.Value()))
		hd.Release()
		require.NoError(t, it.Close())
		require.Equal(t, want.hit, st.TickerCount(statistics.BlockCacheDataHit), "round %d", round)
		require.Equal(t, want.miss, st.TickerCount(statistics.BlockCacheDataMiss), "round %d", round)
		require.Equal(t, want.add, st.TickerCount(statistics.BlockCacheAdd), "round %d", round)
		require.Equal(t, want.hit*n, st.TickerCount(statistics.BlockCacheBytesRead), "round %d", round)
	}
}
