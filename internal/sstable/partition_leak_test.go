package sstable

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/bloom"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/stretchr/testify/require"
)

// TestPartitionHandlesReleased checks that reads of a partitioned table
// release every cache handle they take. The cache offers no reference
// count, but in invariants builds (-race included) it poisons an entry's
// buffer (0xDB) when its last reference goes: so after the reads, every
// entry's value is taken (and released), the file is evicted, and every one
// of those buffers must be poisoned. One still referenced is a leak.
func TestPartitionHandlesReleased(t *testing.T) {
	if !invariants.Enabled {
		t.Skip("the cache poisons freed buffers only in invariants builds")
	}
	ctx := context.Background()
	es := genEntries(rand.New(rand.NewPCG(17, 18)), 800, 20)
	data := buildTable(t, partOpts, es)
	probe := requirePartitioned(t, data, 5)
	c := cache.New(8 << 20) // holds everything: nothing is evicted early
	r := openTable(t, data, openConfig{cache: c, cacheMeta: true})
	rng := rand.New(rand.NewPCG(19, 20))

	// Gets (found, absent, above the table), MultiGets across partitions
	// with Done keys, and iterators left at every kind of position.
	for _, e := range es {
		_, _, _, pin, err := r.Get(ctx, verifyEnv, e.key.UserKey, e.key.SeqNum())
		require.NoError(t, err)
		pin.Release()
	}
	for _, k := range []string{"", "key000002", "zzz"} {
		_, _, _, pin, err := r.Get(ctx, verifyEnv, []byte(k), base.MaxSeqNum)
		require.NoError(t, err)
		pin.Release()
	}
	for range 5 {
		var keys []MultiGetKey
		for i := 0; i < len(es); i += 1 + rng.IntN(20) {
			k := es[i].key.UserKey
			if n := len(keys); n > 0 && bytes.Equal(keys[n-1].Key, k) {
				continue
			}
			keys = append(keys, MultiGetKey{Key: k, Hash: bloom.Hash(k), Seq: base.MaxSeqNum, Done: rng.IntN(4) == 0})
		}
		require.NoError(t, r.MultiGet(ctx, verifyEnv, keys))
		releaseKeys(keys)
	}
	for range 20 {
		it, err := r.NewIter(ctx, verifyEnv, nil, nil)
		require.NoError(t, err)
		kv := it.SeekGE(es[rng.IntN(len(es))].key.UserKey)
		for n := rng.IntN(200); kv != nil && n > 0; n-- {
			if rng.IntN(3) == 0 {
				kv = it.Prev()
			} else {
				kv = it.Next()
			}
		}
		require.NoError(t, it.Close())
	}

	// Take every entry of the file's blocks, then evict the file.
	var keys []cache.Key
	for p := range probe.top.len() {
		keys = append(keys, r.metaCacheKey(probe.top.x.handles[p], metaBlock{index: true, part: p}),
			r.metaCacheKey(probe.top.filters[p], metaBlock{part: p}))
		for b := range probe.parts[p].len() {
			keys = append(keys, r.cacheKey(probe.parts[p].handle(b)))
		}
	}
	type taken struct {
		k cache.Key
		v []byte
	}
	var values []taken
	for _, k := range keys {
		if hd, ok := c.Get(k); ok {
			values = append(values, taken{k, hd.Value()})
			hd.Release()
		}
	}
	require.Greater(t, len(values), 2*probe.top.len(), "the reads cached the partitions and data blocks")
	r.EvictFromCache()
	require.Zero(t, c.Len())
	for _, e := range values {
		for _, b := range e.v {
			if b != 0xDB {
				t.Fatalf("entry %s is still referenced after its file's eviction: a handle leaked", e.k)
			}
		}
	}
}
