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
	"github.com/stretchr/testify/require"
)

// incompressibleEntries is genEntries with random values, except those of
// the entries in [from, to), which compress well: a table written with
// snappy then stores most blocks uncompressed and those few compressed.
func incompressibleEntries(rng *rand.Rand, n, maxValue, from, to int) []entry {
	es := genEntries(rng, n, maxValue)
	for i := range es {
		if i >= from && i < to {
			continue
		}
		for j := range es[i].value {
			es[i].value[j] = byte(rng.Uint32())
		}
	}
	return es
}

// TestReadIntoCache checks the reads that put a block straight into a
// buffer of the block cache (readsIntoCache): Get and MultiGet agree with
// the model, with a cache on and off the Go heap, a cache so small that
// blocks are evicted while others are read, blocks stored uncompressed and
// (snappy-mixed) a few compressed among them, reads that fill the cache
// and reads that do not; and every buffer the reads took from the cache is
// either a cached block's or given back.
func TestReadIntoCache(t *testing.T) {
	for _, tc := range []struct {
		name     string
		comp     compress.Type
		from, to int
	}{
		{"none", compress.None, 0, 0},
		{"snappy-mixed", compress.Snappy, 300, 360},
	} {
		for _, goHeap := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/goheap=%t", tc.name, goHeap), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(41, 42))
				es := incompressibleEntries(rng, 1200, 60, tc.from, tc.to)
				opts := WriterOptions{BlockSize: 512, Compression: tc.comp, Checksum: checksum.CRC32C}
				data := buildTable(t, opts, es)
				c := cache.NewWithOptions(16<<10, cache.Options{GoHeap: goHeap})
				r := openTable(t, data, openConfig{cache: c})
				require.True(t, r.readsIntoCache(), "the table's blocks are read into the cache")
				if tc.comp != compress.None {
					plain := openTable(t, buildTable(t, WriterOptions{BlockSize: 512, Checksum: checksum.CRC32C}, es), openConfig{})
					require.Less(t, r.props.DataSize, plain.props.DataSize, "some blocks are stored compressed")
				}
				ctx := context.Background()
				for round := range 30 {
					env := verifyEnv
					if round%3 == 2 {
						env.FillCache = false
					}
					checkMultiGet(t, r, env, es, rng)
					for range 20 {
						k, seq := randomUserKey(rng, es), base.SeqNum(rng.IntN(1100))
						value, kind, found, pin, err := r.Get(ctx, env, k, seq)
						require.NoError(t, err)
						want, ok := modelGet(es, k, seq)
						require.Equal(t, ok, found, "key %q at %d", k, seq)
						if ok {
							require.Equal(t, want.key.Kind(), kind)
							require.True(t, bytes.Equal(want.value, value), "key %q at %d", k, seq)
						}
						pin.Release()
					}
				}
				require.Positive(t, c.Len())
				if c.HasOffHeap() {
					require.Equal(t, int64(c.Len()), c.OffHeapInUse(), "cached blocks and off-heap buffers in use differ")
				}
			})
		}
	}
}

// TestReadIntoCacheCorruptBlock reads a table, stored uncompressed, one of
// whose data blocks fails its checksum: the keys of that block fail with
// corruption, from Get and MultiGet, the others are found, the damaged
// block is never cached, and the cache's buffers it was read into are given
// back.
func TestReadIntoCacheCorruptBlock(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	es := incompressibleEntries(rng, 600, 60, 0, 0)
	data := buildTable(t, WriterOptions{BlockSize: 512, Compression: compress.None, Checksum: checksum.CRC32C}, es)
	// A byte of an entry in the middle of the data, in some block.
	mid := es[len(es)/2]
	at := bytes.Index(data, mid.key.UserKey)
	require.Positive(t, at)
	data[at] ^= 0xff
	c := cache.New(1 << 20)
	if !c.HasOffHeap() {
		t.Skip("no off-heap block cache on this platform")
	}
	r := openTable(t, data, openConfig{cache: c})
	require.True(t, r.readsIntoCache())
	ctx := context.Background()
	for range 3 {
		var corrupt, found int
		for _, e := range es {
			_, _, ok, pin, err := r.Get(ctx, verifyEnv, e.key.UserKey, base.MaxSeqNum)
			pin.Release()
			if err != nil {
				require.True(t, base.IsCorruption(err), "Get %q: %v", e.key.UserKey, err)
				corrupt++
				continue
			}
			if ok {
				found++
			}
		}
		require.Positive(t, corrupt)
		require.Positive(t, found)

		keys := multiGetKeys(es, base.MaxSeqNum)
		require.NoError(t, r.MultiGet(ctx, verifyEnv, keys))
		var mgCorrupt int
		for _, k := range keys {
			if k.Err != nil {
				require.True(t, base.IsCorruption(k.Err), "MultiGet %q: %v", k.Key, k.Err)
				mgCorrupt++
			}
		}
		require.Positive(t, mgCorrupt)
		releaseKeys(keys)
		// Each key alone too: requests of one block, each read into the
		// cache's buffer.
		for _, e := range es {
			keys := multiGetKeys([]entry{e}, base.MaxSeqNum)
			require.NoError(t, r.MultiGet(ctx, verifyEnv, keys))
			releaseKeys(keys)
		}
		require.Equal(t, int64(c.Len()), c.OffHeapInUse(), "buffers of blocks that failed their checksum were not given back")
	}
}
