package cache

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// entryOf returns k's indexed entry (placeholders included), or nil.
func entryOf(c *Cache, k Key) *entry {
	s := c.shardFor(k)
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.entries.find(hashKey(k)&s.mask, k)
}

// clearReferenced clears the CLOCK bit of every indexed entry of keys.
func clearReferenced(c *Cache, keys []Key) {
	for _, k := range keys {
		if e := entryOf(c, k); e != nil {
			e.referenced.Store(false)
		}
	}
}

func TestGetMany(t *testing.T) {
	file := func(off ...uint64) []Key {
		var ks []Key
		for _, o := range off {
			ks = append(ks, Key{1, 7, o})
		}
		return ks
	}
	many := func(n int) []Key {
		var ks []Key
		for i := range n {
			ks = append(ks, Key{1, 7, uint64(i) * 4096})
		}
		return ks
	}
	for _, tc := range []struct {
		name string
		// c makes the cache (New(1<<24) if nil).
		c func() *Cache
		// cached are Set before the call; batch is looked up.
		cached, batch []Key
	}{
		{name: "all hits", cached: file(0, 4096, 8192), batch: file(0, 4096, 8192)},
		{name: "all misses", cached: file(0), batch: file(4096, 8192)},
		{name: "mixed", cached: file(0, 8192, 16384), batch: file(0, 4096, 8192, 12288, 16384)},
		{name: "duplicates", cached: file(0, 4096), batch: file(0, 0, 4096, 8192, 8192, 0)},
		{name: "empty", cached: file(0), batch: nil},
		{name: "more than a batch", cached: many(40)[:30], batch: many(40)},
		{name: "one shard", c: func() *Cache { return newWithShards(1<<24, 8) },
			cached: keysInShard(newWithShards(1<<24, 8), 1, 7, 10)[:6], batch: keysInShard(newWithShards(1<<24, 8), 1, 7, 10)},
		{name: "colliding hashes", c: func() *Cache { return newWithMask(1<<24, 4, 3) },
			cached: many(20)[5:], batch: many(20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(1 << 24)
			if tc.c != nil {
				c = tc.c()
			}
			in := make(map[Key]bool)
			for _, k := range tc.cached {
				c.Set(k, newValue(64, k, 1)).Release()
				in[k] = true
			}
			clearReferenced(c, tc.cached)
			out := make([]Handle, len(tc.batch)+1)
			out[len(tc.batch)] = Handle{e: &entry{}} // beyond keys: untouched
			hits := c.GetMany(tc.batch, out)
			held := make(map[Key]int32)
			wantHits := 0
			for i, k := range tc.batch {
				if !in[k] {
					require.False(t, out[i].Valid(), "key %d (%s) is not cached", i, k)
					continue
				}
				wantHits++
				held[k]++
				require.True(t, out[i].Valid(), "key %d (%s) is cached", i, k)
				ver, err := checkValue(out[i].Value(), k)
				require.NoError(t, err)
				require.Equal(t, uint64(1), ver)
			}
			require.Equal(t, wantHits, hits)
			require.NotNil(t, out[len(tc.batch)].e, "GetMany wrote beyond len(keys)")
			for k := range in {
				e := entryOf(c, k)
				// One reference per handle, and the CLOCK bit set on hits
				// only, as Get does.
				require.Equal(t, int32(indexRef)+held[k], e.refs.Load(), "references of %s", k)
				require.Equal(t, held[k] > 0, e.referenced.Load(), "CLOCK bit of %s", k)
			}
			for i := range tc.batch {
				out[i].Release()
			}
			requireQuiescent(t, c)
		})
	}
}

func TestGetManyNil(t *testing.T) {
	var c *Cache
	out := []Handle{{e: &entry{}}, {e: &entry{}}}
	require.Zero(t, c.GetMany([]Key{{1, 1, 0}, {1, 1, 4096}}, out))
	require.False(t, out[0].Valid())
	require.False(t, out[1].Valid())
}

// TestGetManyLoading checks that a key whose load is in progress (its index
// slot holds a placeholder) misses, as Get does, and hits once loaded.
func TestGetManyLoading(t *testing.T) {
	c := New(1 << 20)
	loading, cached := Key{1, 1, 4096}, Key{1, 1, 0}
	c.Set(cached, newValue(64, cached, 1)).Release()
	unblock := make(chan struct{})
	results := startLoads(t, c, loading, 1, nil, func() ([]byte, error) {
		<-unblock
		return makeValue(c.Alloc(100), loading, 2), nil
	})
	keys := []Key{cached, loading}
	out := make([]Handle, 2)
	_, ok := c.Get(loading)
	require.False(t, ok, "Get misses a load in progress")
	require.Equal(t, 1, c.GetMany(keys, out))
	require.True(t, out[0].Valid())
	require.False(t, out[1].Valid(), "a load in progress is a miss")
	out[0].Release()

	close(unblock)
	res := <-results[0]
	require.NoError(t, res.err)
	res.h.Release()
	require.Equal(t, 2, c.GetMany(keys, out))
	ver, err := checkValue(out[1].Value(), loading)
	require.NoError(t, err)
	require.Equal(t, uint64(2), ver)
	out[0].Release()
	out[1].Release()
	requireQuiescent(t, c)
}

// TestGetManyEvicted checks that a key evicted between two calls hits, then
// misses, while the handle of the first call keeps its value intact.
func TestGetManyEvicted(t *testing.T) {
	c := New(1 << 20)
	keys := []Key{{1, 1, 0}, {1, 2, 0}, {1, 1, 4096}}
	for _, k := range keys {
		c.Set(k, newValue(64, k, 1)).Release()
	}
	first := make([]Handle, 3)
	require.Equal(t, 3, c.GetMany(keys, first))
	c.EvictFile(1, 1)
	second := make([]Handle, 3)
	require.Equal(t, 1, c.GetMany(keys, second))
	require.False(t, second[0].Valid())
	require.True(t, second[1].Valid())
	require.False(t, second[2].Valid())
	for i, k := range keys {
		ver, err := checkValue(first[i].Value(), k)
		require.NoError(t, err)
		require.Equal(t, uint64(1), ver)
		first[i].Release()
	}
	second[1].Release()
	requireQuiescent(t, c)
}

// TestGetManyConcurrent runs batches against Sets and evictions of the same
// keys (for the race detector, and for the shard locks taken together).
func TestGetManyConcurrent(t *testing.T) {
	c := newWithShards(1<<16, 4) // small: Sets evict
	var keys []Key
	for i := range 64 {
		keys = append(keys, Key{1, uint64(i % 3), uint64(i) * 4096})
	}
	n := scaled(4000)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			out := make([]Handle, 16)
			for i := range n {
				batch := keys[(i*7+g)%48:][:16]
				switch i % 8 {
				case 0:
					k := batch[i%16]
					c.Set(k, makeValue(c.Alloc(512), k, uint64(i))).Release()
				case 1:
					c.EvictFile(1, uint64(i%3))
				default:
					c.GetMany(batch, out)
					for j, h := range out {
						if h.Valid() {
							if _, err := checkValue(h.Value(), batch[j]); err != nil {
								t.Error(err)
							}
							h.Release()
						}
					}
				}
			}
		})
	}
	wg.Wait()
	requireQuiescent(t, c)
}
