package cache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReviewHighRatiosRandom drives the three priorities, hits,
// replacements by Set, file evictions and handles held across them on
// caches of every kind of high-priority share: none, one smaller than most
// values (each high entry overflows it alone), the default, nearly all and
// all of the shard. Values range up to half a shard, so that a single
// high entry can exceed the share and flush the ring. After every
// operation the invariants must hold (rings, their byte counters, the high
// ring within its share, Size within Capacity), and every held handle must
// still read its own value.
func TestReviewHighRatiosRandom(t *testing.T) {
	const shardCap = 64 << 10
	for _, ratio := range []float64{0, 0.01, 0.5, 0.95, 1} {
		t.Run(fmt.Sprintf("ratio=%v", ratio), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(ratio*100), 17))
			c := newCache(4*shardCap, 4, ^uint64(0), Options{HighPriorityPoolRatio: ratio})
			type held struct {
				h       Handle
				k       Key
				version uint64
			}
			var hs []held
			hold := func(h Handle, k Key) {
				v, err := checkValue(h.Value(), k)
				require.NoError(t, err)
				hs = append(hs, held{h, k, v})
			}
			for i := range scaled(20000) {
				k := Key{ID: 1, FileNum: uint64(rng.IntN(3)), Offset: uint64(rng.IntN(48)) * 4096}
				size := 32 + rng.IntN(2048)
				if rng.IntN(20) == 0 {
					size = 32 + rng.IntN(shardCap/2)
				}
				switch r := rng.IntN(100); {
				case r < 45:
					h, _, err := c.GetOrLoadWithPriority(context.Background(), k, Priority(rng.IntN(3)), func() ([]byte, error) {
						return makeValue(c.Alloc(size), k, uint64(i)), nil
					})
					require.NoError(t, err)
					hold(h, k)
				case r < 80:
					if h, ok := c.Get(k); ok {
						hold(h, k)
					}
				case r < 95:
					hold(c.Set(k, makeValue(c.Alloc(size), k, uint64(i))), k)
				default:
					c.EvictFile(k.ID, k.FileNum)
				}
				// Release a random held handle now and then, after
				// checking that its value did not change under it.
				for len(hs) > 8 || (len(hs) > 0 && rng.IntN(2) == 0) {
					j := rng.IntN(len(hs))
					v, err := checkValue(hs[j].h.Value(), hs[j].k)
					require.NoError(t, err)
					require.Equal(t, hs[j].version, v)
					hs[j].h.Release()
					hs[j] = hs[len(hs)-1]
					hs = hs[:len(hs)-1]
				}
				require.NoError(t, checkInvariants(c), "op %d", i)
				require.LessOrEqual(t, c.Size(), c.Capacity())
			}
			for _, x := range hs {
				x.h.Release()
			}
			requireQuiescent(t, c)
		})
	}
}

// TestReviewHighEvictFileAcrossRings evicts a file whose entries are on
// all three rings at once (high entries within the share, high entries
// demoted to the main ring, scan entries and normal ones): the shard must
// end up empty, every ring counter at zero.
func TestReviewHighEvictFileAcrossRings(t *testing.T) {
	const N = scanEntries
	c := newWithShards(N*charge(scanValueLen), 1)
	keys := keysInShard(c, 1, 9, N)
	// 3N/4 high entries: the share holds N/2, so N/4 are demoted.
	loadKeys(t, c, keys[:3*N/4], PriorityHigh)
	loadKeys(t, c, keys[3*N/4:7*N/8], PriorityScan)
	loadKeys(t, c, keys[7*N/8:], PriorityNormal)
	s := &c.shards[0]
	s.mu.Lock()
	require.Equal(t, int64(N/2)*charge(scanValueLen), s.highSize)
	require.Equal(t, int64(N/8)*charge(scanValueLen), s.scanSize)
	s.mu.Unlock()
	require.Equal(t, N, c.Len())

	c.EvictFile(1, 9)
	require.Zero(t, c.Len())
	require.Zero(t, c.Size())
	s.mu.Lock()
	require.Zero(t, s.highSize)
	require.Zero(t, s.scanSize)
	require.Nil(t, s.hand)
	require.Nil(t, s.highHand)
	require.Nil(t, s.scanHand)
	s.mu.Unlock()
	requireQuiescent(t, c)
}

// TestReviewHighSetReplacesHighEntry replaces, by Set, a high entry on the
// high ring and one demoted to the main ring: the high ring's charge drops
// by the first only, and the replacements are normal entries on the main
// ring.
func TestReviewHighSetReplacesHighEntry(t *testing.T) {
	const N = scanEntries
	c := newWithShards(N*charge(scanValueLen), 1)
	keys := keysInShard(c, 1, 4, N)
	loadKeys(t, c, keys[:3*N/4], PriorityHigh) // keys[:N/4] demoted
	s := &c.shards[0]
	find := func(k Key) *entry { return s.entries.find(hashKey(k)&s.mask, k) }
	s.mu.Lock()
	require.False(t, find(keys[0]).inHigh, "the oldest high entry is demoted")
	require.True(t, find(keys[N/2]).inHigh)
	s.mu.Unlock()

	for _, k := range []Key{keys[0], keys[N/2]} {
		c.Set(k, newValue(scanValueLen, k, 1)).Release()
		require.NoError(t, checkInvariants(c))
	}
	s.mu.Lock()
	require.Equal(t, int64(N/2-1)*charge(scanValueLen), s.highSize)
	for _, k := range []Key{keys[0], keys[N/2]} {
		e := find(k)
		require.False(t, e.high || e.inHigh || e.scan, "%s replaced by Set", k)
	}
	s.mu.Unlock()
	requireQuiescent(t, c)
}

// TestReviewHighConcurrent runs goroutines that load few keys with every
// priority (so that loads of one key by callers of different priorities
// meet in single flight), hit them, Set them and evict their files, on a
// cache small enough to evict all the time. Run with -race; afterwards
// every reference must be accounted for.
func TestReviewHighConcurrent(t *testing.T) {
	for _, ratio := range []float64{0, 0.5, 1} {
		t.Run(fmt.Sprintf("ratio=%v", ratio), func(t *testing.T) {
			c := newCache(4*16*(1024+EntryOverhead), 4, ^uint64(0), Options{HighPriorityPoolRatio: ratio})
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(g), 5))
					for i := range scaled(20000) {
						k := Key{ID: 1, FileNum: uint64(rng.IntN(2)), Offset: uint64(rng.IntN(40)) * 4096}
						size := 32 + rng.IntN(1024)
						var h Handle
						switch r := rng.IntN(100); {
						case r < 50:
							var err error
							h, _, err = c.GetOrLoadWithPriority(context.Background(), k, Priority(rng.IntN(3)), func() ([]byte, error) {
								return makeValue(c.Alloc(size), k, uint64(i)), nil
							})
							if err != nil {
								t.Error(err)
								return
							}
						case r < 85:
							var ok bool
							if h, ok = c.Get(k); !ok {
								continue
							}
						case r < 98:
							h = c.Set(k, makeValue(c.Alloc(size), k, uint64(i)))
						default:
							c.EvictFile(k.ID, k.FileNum)
							continue
						}
						if _, err := checkValue(h.Value(), k); err != nil {
							t.Error(err)
						}
						h.Release()
					}
				}()
			}
			wg.Wait()
			require.LessOrEqual(t, c.Size(), c.Capacity())
			requireQuiescent(t, c)
		})
	}
}
