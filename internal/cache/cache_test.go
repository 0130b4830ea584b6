package cache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/stretchr/testify/require"
)

func TestNilCache(t *testing.T) {
	var c *Cache
	k := Key{1, 2, 3}

	h, ok := c.Get(k)
	require.False(t, ok)
	require.False(t, h.Valid())
	require.Nil(t, h.Value())
	h.Release() // zero handle: no-op

	v := newValue(64, k, 1)
	h = c.Set(k, v)
	require.True(t, h.Valid())
	require.Equal(t, newValue(64, k, 1), h.Value())
	h.Release()
	_, ok = c.Get(k)
	require.False(t, ok, "a nil cache stores nothing")

	calls := 0
	for i := range 2 {
		h, hit, err := c.GetOrLoad(context.Background(), k, func() ([]byte, error) {
			calls++
			return newValue(64, k, uint64(i)), nil
		})
		require.NoError(t, err)
		require.False(t, hit)
		ver, err := checkValue(h.Value(), k)
		require.NoError(t, err)
		require.Equal(t, uint64(i), ver)
		h.Release()
	}
	require.Equal(t, 2, calls, "a nil cache loads every time")

	errLoad := errors.New("boom")
	h, _, err := c.GetOrLoad(context.Background(), k, func() ([]byte, error) { return nil, errLoad })
	require.ErrorIs(t, err, errLoad)
	require.False(t, h.Valid())

	require.Len(t, c.Alloc(100), 100)
	require.Zero(t, c.NewID())
	require.Zero(t, c.Capacity())
	require.Zero(t, c.Size())
	require.Zero(t, c.Len())
	c.EvictFile(1, 2)
}

func TestZeroHandle(t *testing.T) {
	var h Handle
	require.False(t, h.Valid())
	require.Nil(t, h.Value())
	h.Release()
	h.Release()
}

func TestNewID(t *testing.T) {
	c := New(1 << 20)
	seen := map[uint64]bool{}
	for range 100 {
		id := c.NewID()
		require.NotZero(t, id)
		require.False(t, seen[id], "NewID returned %d twice", id)
		seen[id] = true
	}
}

func TestDefaultShards(t *testing.T) {
	for _, tc := range []struct {
		capacity int64
		procs    int
		want     int
	}{
		{capacity: 1 << 30, procs: 1, want: 16},
		{capacity: 1 << 30, procs: 2, want: 32},
		{capacity: 1 << 30, procs: 3, want: 64},
		{capacity: 32 << 20, procs: 2, want: 32}, // 1 MiB per shard
		{capacity: 1 << 30, procs: 64, want: 256},
		{capacity: 1 << 30, procs: 1000, want: 256},
		{capacity: 4 << 20, procs: 64, want: 4}, // 1 MiB per shard
		{capacity: 64 << 20, procs: 64, want: 64},
		{capacity: 1 << 20, procs: 2, want: 4},
		{capacity: 8 << 20, procs: 2, want: 8},
		{capacity: 0, procs: 2, want: 4},
	} {
		t.Run(fmt.Sprintf("capacity=%d/procs=%d", tc.capacity, tc.procs), func(t *testing.T) {
			require.Equal(t, tc.want, defaultShards(tc.capacity, tc.procs))
		})
	}
	c := New(64 << 20)
	n := len(c.shards)
	require.Equal(t, 0, n&(n-1), "shard count %d is not a power of two", n)
	require.Equal(t, int64(64<<20)/int64(n), c.shards[0].capacity)
}

// TestShardSpread checks that the keys of one file, at block-aligned offsets,
// spread over every shard and roughly evenly.
func TestShardSpread(t *testing.T) {
	c := newWithShards(1<<30, 16)
	counts := make([]int, len(c.shards))
	const n = 16 * 1000
	for i := range n {
		s := c.shardFor(Key{ID: 1, FileNum: 7, Offset: uint64(i) * 4096})
		counts[s.index(c)]++
	}
	for i, got := range counts {
		require.InDelta(t, n/16, got, n/16/4, "shard %d got %d of %d keys", i, got, n)
	}
}

func (s *shard) index(c *Cache) int {
	for i := range c.shards {
		if &c.shards[i] == s {
			return i
		}
	}
	return -1
}

func TestSetGetReplace(t *testing.T) {
	c := New(1 << 20)
	k := Key{1, 1, 0}

	h1 := c.Set(k, newValue(100, k, 1))
	require.Equal(t, 1, c.Len())
	require.Equal(t, int64(100+EntryOverhead), c.Size())

	g, ok := c.Get(k)
	require.True(t, ok)
	require.Equal(t, newValue(100, k, 1), g.Value())
	g.Release()

	// Replacing keeps the old value readable through its handle.
	h2 := c.Set(k, newValue(200, k, 2))
	require.Equal(t, 1, c.Len())
	require.Equal(t, int64(200+EntryOverhead), c.Size())
	require.Equal(t, newValue(100, k, 1), h1.Value())
	g, ok = c.Get(k)
	require.True(t, ok)
	require.Equal(t, newValue(200, k, 2), g.Value())
	g.Release()
	h1.Release()
	h2.Release()

	_, ok = c.Get(Key{1, 1, 1})
	require.False(t, ok)
	_, ok = c.Get(Key{2, 1, 0})
	require.False(t, ok, "keys of another DB ID are distinct")
	requireQuiescent(t, c)
}

func TestValueCapacity(t *testing.T) {
	c := New(1 << 20)
	k := Key{1, 1, 0}
	buf := c.Alloc(100)
	require.Greater(t, cap(buf), 100, "test needs an Alloc'd buffer with slack")
	h := c.Set(k, makeValue(buf, k, 1))
	defer h.Release()
	v := h.Value()
	require.Equal(t, len(v), cap(v), "appending to a value must not write into the cache's buffer")
}

func TestCapacityBound(t *testing.T) {
	for _, shards := range []int{1, 4, 16} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			const capacity = 256 << 10
			c := newWithShards(capacity, shards)
			rng := rand.New(rand.NewPCG(1, 2))
			// Not scaled down under -race: the fill check below needs the
			// steady state, and single-goroutine inserts are cheap.
			for i := range 5000 {
				k := Key{1, uint64(rng.IntN(8)), uint64(rng.IntN(1000)) * 4096}
				n := 32 + rng.IntN(8<<10)
				h := c.Set(k, makeValue(c.Alloc(n), k, uint64(i)))
				h.Release()
				require.LessOrEqual(t, c.Size(), int64(capacity))
				if i%100 == 0 {
					require.NoError(t, checkInvariants(c))
				}
			}
			// Values of up to 8 KiB in shards of 16 KiB (16 shards) leave a
			// shard up to half empty after an eviction, so "full" means more
			// than half.
			require.Greater(t, c.Size(), int64(capacity)/2, "the cache should be nearly full")
			requireQuiescent(t, c)
		})
	}
}

// TestClock pins CLOCK's eviction order on one shard holding ten entries.
func TestClock(t *testing.T) {
	const valueLen = 100
	const capacity = 10 * (valueLen + EntryOverhead)
	type op struct {
		get bool // Get (and Release) instead of Set
		key uint64
	}
	sets := func(from, to uint64) (ops []op) {
		for k := from; k <= to; k++ {
			ops = append(ops, op{key: k})
		}
		return ops
	}
	cat := func(parts ...[]op) (ops []op) {
		for _, p := range parts {
			ops = append(ops, p...)
		}
		return ops
	}
	for _, tc := range []struct {
		name string
		ops  []op
		want []uint64 // keys present at the end
	}{
		{
			name: "fifo without hits",
			ops:  sets(0, 12),
			want: []uint64{3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
		},
		{
			name: "a hit buys a second chance",
			ops:  cat(sets(0, 9), []op{{get: true, key: 0}}, sets(10, 10)),
			want: []uint64{0, 2, 3, 4, 5, 6, 7, 8, 9, 10},
		},
		{
			name: "second chance is spent after one sweep",
			ops:  cat(sets(0, 9), []op{{get: true, key: 0}}, sets(10, 20)),
			want: []uint64{11, 12, 13, 14, 15, 16, 17, 18, 19, 20},
		},
		{
			name: "hit in the middle",
			ops:  cat(sets(0, 9), []op{{get: true, key: 3}, {get: true, key: 4}}, sets(10, 15)),
			want: []uint64{3, 4, 8, 9, 10, 11, 12, 13, 14, 15},
		},
		{
			name: "a replaced key goes to the back",
			ops:  cat(sets(0, 9), sets(0, 0), sets(10, 10)),
			want: []uint64{0, 2, 3, 4, 5, 6, 7, 8, 9, 10},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newWithShards(capacity, 1)
			key := func(i uint64) Key { return Key{1, 1, i * 4096} }
			for _, o := range tc.ops {
				if o.get {
					h, ok := c.Get(key(o.key))
					require.True(t, ok, "get %d", o.key)
					h.Release()
				} else {
					c.Set(key(o.key), newValue(valueLen, key(o.key), 0)).Release()
				}
			}
			var got []uint64
			for i := range uint64(30) {
				if h, ok := c.Get(key(i)); ok {
					got = append(got, i)
					h.Release()
				}
			}
			require.Equal(t, tc.want, got)
			requireQuiescent(t, c)
		})
	}
}

// TestClockKeepsHotEntries streams cold blocks through a cache while a hot
// set is read between inserts: the hot set must survive.
func TestClockKeepsHotEntries(t *testing.T) {
	for _, shards := range []int{1, 4} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			const valueLen = 1000
			c := newWithShards(int64(shards)*20*(valueLen+EntryOverhead), shards)
			hot := keysInShard(c, 1, 1, 5)
			for _, k := range hot {
				c.Set(k, newValue(valueLen, k, 0)).Release()
			}
			for i := range 500 {
				for _, k := range hot {
					h, ok := c.Get(k)
					require.True(t, ok, "hot key %s evicted after %d cold inserts", k, i)
					h.Release()
				}
				k := Key{1, 2, uint64(i) * 4096}
				c.Set(k, newValue(valueLen, k, 0)).Release()
			}
			requireQuiescent(t, c)
		})
	}
}

// TestHandleOutlivesEntry checks that a handle's value stays intact after its
// entry leaves the index by each route, while the cache churns on.
func TestHandleOutlivesEntry(t *testing.T) {
	for _, tc := range []struct {
		name   string
		remove func(c *Cache, k Key)
	}{
		{name: "evicted", remove: func(c *Cache, k Key) {
			for i := range 200 {
				k2 := Key{2, 2, uint64(i) * 4096}
				c.Set(k2, makeValue(c.Alloc(4096), k2, 9)).Release()
			}
		}},
		{name: "replaced", remove: func(c *Cache, k Key) {
			c.Set(k, makeValue(c.Alloc(4096), k, 2)).Release()
		}},
		{name: "file evicted", remove: func(c *Cache, k Key) { c.EvictFile(k.ID, k.FileNum) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newWithShards(64<<10, 4)
			k := Key{1, 1, 0}
			h := c.Set(k, makeValue(c.Alloc(4096), k, 1))
			g, ok := c.Get(k)
			require.True(t, ok)
			tc.remove(c, k)
			if tc.name != "replaced" {
				_, ok = c.Get(k)
				require.False(t, ok)
			}
			// Churn so that any wrongly freed buffer gets reused.
			for i := range 100 {
				k2 := Key{3, 3, uint64(i) * 4096}
				c.Set(k2, makeValue(c.Alloc(4096), k2, 7)).Release()
			}
			for _, hh := range []Handle{h, g} {
				ver, err := checkValue(hh.Value(), k)
				require.NoError(t, err)
				require.Equal(t, uint64(1), ver)
			}
			h.Release()
			ver, err := checkValue(g.Value(), k)
			require.NoError(t, err)
			require.Equal(t, uint64(1), ver)
			v := g.Value()
			g.Release()
			if invariants.Enabled {
				// The last release freed the entry, so its buffer was
				// poisoned before going to the pool.
				require.True(t, checkPoison(v), "freed buffer not poisoned")
			}
			requireQuiescent(t, c)
		})
	}
}

func TestOversizedValue(t *testing.T) {
	c := newWithShards(4<<10, 4) // 1 KiB per shard
	k := Key{1, 1, 0}
	c.Set(k, newValue(100, k, 1)).Release()
	require.Equal(t, 1, c.Len())

	for _, n := range []int{1024 - EntryOverhead + 1, 4096, 1 << 20} {
		h := c.Set(k, newValue(n, k, 2))
		require.True(t, h.Valid())
		require.Len(t, h.Value(), n)
		require.Zero(t, c.Len(), "a value over a shard's capacity is not cached, and the stale one is gone")
		require.Zero(t, c.Size())
		h.Release()
	}
	// Exactly a shard's capacity fits.
	h := c.Set(k, newValue(1024-EntryOverhead, k, 3))
	h.Release()
	require.Equal(t, 1, c.Len())
	requireQuiescent(t, c)

	zero := New(0)
	h = zero.Set(k, newValue(64, k, 1))
	require.Equal(t, newValue(64, k, 1), h.Value())
	h.Release()
	require.Zero(t, zero.Len())
}

func TestEvictFile(t *testing.T) {
	c := newWithShards(16<<20, 8)
	type fk struct{ id, file uint64 }
	files := []fk{{1, 1}, {1, 2}, {2, 1}, {2, 2}}
	for _, f := range files {
		for off := range uint64(100) {
			k := Key{f.id, f.file, off * 4096}
			c.Set(k, newValue(64, k, 0)).Release()
		}
	}
	require.Equal(t, 400, c.Len())
	held, ok := c.Get(Key{1, 2, 0})
	require.True(t, ok)

	c.EvictFile(1, 2)
	c.EvictFile(3, 3) // unknown file: no-op
	require.Equal(t, 300, c.Len())
	require.Equal(t, int64(300*(64+EntryOverhead)), c.Size())
	for _, f := range files {
		for off := range uint64(100) {
			h, ok := c.Get(Key{f.id, f.file, off * 4096})
			require.Equal(t, f != (fk{1, 2}), ok, "file %v offset %d", f, off)
			h.Release()
		}
	}
	_, err := checkValue(held.Value(), Key{1, 2, 0})
	require.NoError(t, err)
	held.Release()
	requireQuiescent(t, c)
}

func TestDoubleRelease(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(c *Cache)
	}{
		{name: "indexed entry", run: func(c *Cache) {
			h := c.Set(Key{1, 1, 0}, make([]byte, 64))
			h.Release()
			h.Release()
		}},
		{name: "handle from Get", run: func(c *Cache) {
			c.Set(Key{1, 1, 0}, make([]byte, 64)).Release()
			h, _ := c.Get(Key{1, 1, 0})
			h.Release()
			h.Release()
		}},
		{name: "evicted entry", run: func(c *Cache) {
			h := c.Set(Key{1, 1, 0}, make([]byte, 64))
			c.EvictFile(1, 1)
			h.Release()
			h.Release()
		}},
		{name: "detached entry", run: func(c *Cache) {
			h := c.Set(Key{1, 1, 0}, make([]byte, 1<<20))
			h.Release()
			h.Release()
		}},
		{name: "entry reused since", run: func(c *Cache) {
			h := c.Set(Key{1, 1, 0}, c.Alloc(64))
			c.EvictFile(1, 1)
			h.Release()
			for i := range 10 { // reuse the freed struct, whichever pool holds it
				c.Set(Key{2, 2, uint64(i)}, c.Alloc(64)).Release()
			}
			h.Release()
		}},
		{name: "detected at the last legitimate release", run: func(c *Cache) {
			a := c.Set(Key{1, 1, 0}, make([]byte, 64))
			b, _ := c.Get(Key{1, 1, 0})
			a.Release()
			a.Release() // consumes b's reference; not yet distinguishable
			b.Release()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newWithShards(1<<20, 4)
			require.Panics(t, func() { tc.run(c) })
		})
	}
}

func TestValueAfterReleasePanics(t *testing.T) {
	if !invariants.Enabled {
		t.Skip("Value checks its handle only in invariants builds")
	}
	c := New(1 << 20)
	h := c.Set(Key{1, 1, 0}, make([]byte, 64))
	c.EvictFile(1, 1)
	h.Release()
	require.Panics(t, func() { h.Value() })
}

// TestModel runs random operations on one goroutine against a model of the
// last value set for each key: a hit must return exactly that value. Loads
// take either priority, so entries move between the rings. A small
// hash mask makes most keys collide in the indexes.
func TestModel(t *testing.T) {
	for _, tc := range collisionCases {
		t.Run(tc.name, func(t *testing.T) {
			shards := tc.shards
			rng := rand.New(rand.NewPCG(1, 2))
			c := newWithMask(int64(shards)*8*(512+EntryOverhead), shards, tc.mask)
			model := map[Key]uint64{}
			var held []Handle
			var heldKeys []Key
			var version uint64
			for i := range scaled(20000) {
				k := Key{uint64(1 + rng.IntN(2)), uint64(rng.IntN(3)), uint64(rng.IntN(16)) * 4096}
				r := rng.IntN(100)
				switch {
				case r < 35:
					version++
					h := c.Set(k, makeValue(c.Alloc(32+rng.IntN(1024)), k, version))
					model[k] = version
					held, heldKeys = append(held, h), append(heldKeys, k)
				case r < 70:
					if h, ok := c.Get(k); ok {
						ver, err := checkValue(h.Value(), k)
						require.NoError(t, err)
						require.Equal(t, model[k], ver, "stale hit for %s", k)
						held, heldKeys = append(held, h), append(heldKeys, k)
					}
				case r < 85:
					pri := Priority(rng.IntN(2))
					h, hit, err := c.GetOrLoadWithPriority(context.Background(), k, pri, func() ([]byte, error) {
						version++
						model[k] = version
						return makeValue(c.Alloc(32+rng.IntN(1024)), k, version), nil
					})
					require.NoError(t, err)
					ver, err := checkValue(h.Value(), k)
					require.NoError(t, err)
					require.Equal(t, model[k], ver, "GetOrLoad of %s (hit=%t)", k, hit)
					held, heldKeys = append(held, h), append(heldKeys, k)
				case r < 88:
					c.EvictFile(k.ID, k.FileNum)
					for mk := range model {
						if mk.ID == k.ID && mk.FileNum == k.FileNum {
							delete(model, mk)
						}
					}
				}
				// Release a random held handle on the remaining 12% of
				// steps, and whenever more than 16 are held.
				for (r >= 88 && len(held) > 0) || len(held) > 16 {
					j := rng.IntN(len(held))
					_, err := checkValue(held[j].Value(), heldKeys[j])
					require.NoError(t, err)
					held[j].Release()
					held[j], heldKeys[j] = held[len(held)-1], heldKeys[len(heldKeys)-1]
					held, heldKeys = held[:len(held)-1], heldKeys[:len(heldKeys)-1]
					r = 0
				}
				if i%100 == 0 {
					require.NoError(t, checkInvariants(c))
				}
			}
			for j, h := range held {
				_, err := checkValue(h.Value(), heldKeys[j])
				require.NoError(t, err)
				h.Release()
			}
			requireQuiescent(t, c)
		})
	}
}
