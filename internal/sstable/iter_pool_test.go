package sstable

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/stretchr/testify/require"
)

// TestIterPoolKeepsHandedOutMemory pins that recycling an Iter (iterPool,
// with its readahead buffer and decompression buffer) never hands the next
// Iter memory that a closed one's keys and values point into: a caller
// that holds them past Close must see stale bytes at worst, never another
// table's. Reads that do not go into the cache (no cache, or no
// ReadEnv.FillCache) leave the blocks in the Iter's own buffers, readahead
// included; the Iters after them read other tables through recycled Iters
// and must not write over the held slices.
func TestIterPoolKeepsHandedOutMemory(t *testing.T) {
	ctx := context.Background()
	for _, comp := range []compress.Type{compress.None, compress.Snappy} {
		for _, withCache := range []bool{false, true} {
			rng := rand.New(rand.NewPCG(7, uint64(comp)))
			opts := WriterOptions{BlockSize: 256, Compression: comp, Checksum: checksum.CRC32C}
			cfg := openConfig{}
			if withCache {
				cfg.cache = cache.New(1 << 20)
			}
			type held struct{ k, v, wantK, wantV []byte }
			var hs []held
			for range 20 {
				es := genEntries(rng, 200, 40)
				r := openTable(t, buildTable(t, opts, es), cfg)
				// FillCache false: the blocks stay in the Iter's buffers.
				it, err := r.NewIter(ctx, ReadEnv{VerifyChecksums: true}, nil, nil)
				require.NoError(t, err)
				n := 0
				for kv := it.First(); kv != nil; kv = it.Next() {
					n++
				}
				require.Len(t, es, n)
				// Keys and values are valid until the next move or Close:
				// hold the entry the Iter stands at when it closes.
				e := es[rng.IntN(len(es))]
				kv := it.SeekGE(e.key.UserKey)
				require.NotNil(t, kv)
				hs = append(hs, held{kv.K.UserKey, kv.V, bytes.Clone(kv.K.UserKey), bytes.Clone(kv.V)})
				require.NoError(t, it.Close())
			}
			for i, h := range hs {
				require.Equal(t, h.wantK, h.k, "held key %d (compression %v, cache %t)", i, comp, withCache)
				require.Equal(t, h.wantV, h.v, "held value %d (compression %v, cache %t)", i, comp, withCache)
			}
		}
	}
}
