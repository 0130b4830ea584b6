package cache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
)

// benchKeys returns n block keys spread over 16 files.
func benchKeys(n int) []Key {
	keys := make([]Key, n)
	for i := range keys {
		keys[i] = Key{ID: 1, FileNum: uint64(i % 16), Offset: uint64(i/16) * 4096}
	}
	return keys
}

// BenchmarkGetHit measures a cache hit (Get + Release) on one goroutine and
// on 8 (the engine's Get fan-in on 2 cores). keys=16 puts every goroutine on
// the same few entries (worst case for the shared reference counts);
// keys=65536 spreads them over all shards.
func BenchmarkGetHit(b *testing.B) {
	for _, nkeys := range []int{16, 65536} {
		c := New(1 << 30)
		keys := benchKeys(nkeys)
		for _, k := range keys {
			c.Set(k, make([]byte, 4096)).Release()
		}
		b.Run(fmt.Sprintf("keys=%d/goroutines=1", nkeys), func(b *testing.B) {
			b.ReportAllocs()
			rng := rand.New(rand.NewPCG(1, 2))
			var sink int
			for b.Loop() {
				h, ok := c.Get(keys[rng.IntN(len(keys))])
				if !ok {
					b.Fatal("miss")
				}
				sink += len(h.Value())
				h.Release()
			}
			_ = sink
		})
		b.Run(fmt.Sprintf("keys=%d/goroutines=8", nkeys), func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
			var seed atomic.Uint64
			b.RunParallel(func(pb *testing.PB) {
				rng := rand.New(rand.NewPCG(seed.Add(1), 2))
				var sink int
				for pb.Next() {
					h, ok := c.Get(keys[rng.IntN(len(keys))])
					if !ok {
						b.Fatal("miss")
					}
					sink += len(h.Value())
					h.Release()
				}
				_ = sink
			})
		})
	}
}

// BenchmarkGetOrLoadHit is BenchmarkGetHit through GetOrLoad.
func BenchmarkGetOrLoadHit(b *testing.B) {
	c := New(1 << 30)
	keys := benchKeys(65536)
	for _, k := range keys {
		c.Set(k, make([]byte, 4096)).Release()
	}
	ctx := context.Background()
	load := func() ([]byte, error) { panic("miss") }
	b.ReportAllocs()
	rng := rand.New(rand.NewPCG(1, 2))
	for b.Loop() {
		h, _, _ := c.GetOrLoad(ctx, keys[rng.IntN(len(keys))], load)
		h.Release()
	}
}

// BenchmarkMissInsert measures the miss path of a full cache: a Get that
// misses, Alloc, Set (evicting older blocks) and Release, with every key new.
// The buffer is not filled, so this is the cache's own cost.
func BenchmarkMissInsert(b *testing.B) {
	for _, size := range []int{4 << 10, 32 << 10} {
		b.Run(fmt.Sprintf("size=%dKiB/goroutines=1", size>>10), func(b *testing.B) {
			c := New(64 << 20)
			b.ReportAllocs()
			b.SetBytes(int64(size))
			var i uint64
			for b.Loop() {
				k := Key{ID: 1, FileNum: i >> 20, Offset: (i & (1<<20 - 1)) * uint64(size)}
				i++
				if _, ok := c.Get(k); ok {
					b.Fatal("hit")
				}
				c.Set(k, c.Alloc(size)).Release()
			}
		})
		b.Run(fmt.Sprintf("size=%dKiB/goroutines=8", size>>10), func(b *testing.B) {
			c := New(64 << 20)
			b.ReportAllocs()
			b.SetBytes(int64(size))
			b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
			var file atomic.Uint64
			b.RunParallel(func(pb *testing.PB) {
				f := file.Add(1)
				var i uint64
				for pb.Next() {
					k := Key{ID: 1, FileNum: f, Offset: i * uint64(size)}
					i++
					c.Set(k, c.Alloc(size)).Release()
				}
			})
		})
	}
}

// BenchmarkGetOrLoadMiss is BenchmarkMissInsert through GetOrLoad, with a
// load that only allocates.
func BenchmarkGetOrLoadMiss(b *testing.B) {
	const size = 4 << 10
	c := New(64 << 20)
	ctx := context.Background()
	load := func() ([]byte, error) { return c.Alloc(size), nil }
	b.ReportAllocs()
	b.SetBytes(size)
	var i uint64
	for b.Loop() {
		h, _, err := c.GetOrLoad(ctx, Key{ID: 1, FileNum: 1, Offset: i * size}, load)
		if err != nil {
			b.Fatal(err)
		}
		i++
		h.Release()
	}
}

// BenchmarkMixed runs 8 goroutines over a working set twice the cache's
// size, so about half the reads miss and insert: hits contend with inserts
// and evictions on the same shards.
func BenchmarkMixed(b *testing.B) {
	const size = 4 << 10
	const capacity = 16 << 20
	keys := benchKeys(2 * capacity / (size + EntryOverhead))
	c := New(capacity)
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
	var seed atomic.Uint64
	var hits, misses atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(seed.Add(1), 2))
		load := func() ([]byte, error) { return c.Alloc(size), nil }
		var h, m int64
		for pb.Next() {
			hd, hit, err := c.GetOrLoad(ctx, keys[rng.IntN(len(keys))], load)
			if err != nil {
				b.Fatal(err)
			}
			if hit {
				h++
			} else {
				m++
			}
			hd.Release()
		}
		hits.Add(h)
		misses.Add(m)
	})
	if n := hits.Load() + misses.Load(); n > 0 {
		b.ReportMetric(float64(hits.Load())/float64(n), "hit-ratio")
	}
}

// BenchmarkSteadyState reproduces the block cache of a Get-heavy workload
// whose data is larger than the cache: GetOrLoad of random 4 KiB blocks on a
// full cache, where a miss loads a buffer from Alloc and evicts an older
// block. keys=4x draws from four times as many blocks as the cache holds, so
// about three in four calls miss; keys=new never repeats a key, so every
// call is a miss with an eviction.
func BenchmarkSteadyState(b *testing.B) {
	const size = 4 << 10
	const capacity = 32 << 20 // the engine benchmark's block cache
	keys := benchKeys(4 * capacity / (size + EntryOverhead))
	for _, newKeys := range []bool{false, true} {
		for _, goroutines := range []int{1, 8} {
			name := "keys=4x"
			if newKeys {
				name = "keys=new"
			}
			b.Run(fmt.Sprintf("%s/goroutines=%d", name, goroutines), func(b *testing.B) {
				c := New(capacity)
				ctx := context.Background()
				load := func() ([]byte, error) { return c.Alloc(size), nil }
				step := func(rng *rand.Rand) (hit bool) {
					k := keys[rng.IntN(len(keys))]
					if newKeys {
						// Offsets far beyond the filled ones; 2^40 of them
						// make a repeat vanishingly rare.
						k.Offset = (1<<20 + rng.Uint64N(1<<40)) * size
					}
					h, hit, err := c.GetOrLoad(ctx, k, load)
					if err != nil {
						b.Fatal(err)
					}
					h.Release()
					return hit
				}
				// Fill the cache and the buffer pools before timing.
				rng := rand.New(rand.NewPCG(1, 2))
				for range 4 * len(keys) {
					h, _, _ := c.GetOrLoad(ctx, keys[rng.IntN(len(keys))], load)
					h.Release()
				}
				var hits, calls atomic.Int64
				b.ReportAllocs()
				if goroutines == 1 {
					var h, n int64
					for b.Loop() {
						if step(rng) {
							h++
						}
						n++
					}
					hits.Store(h)
					calls.Store(n)
				} else {
					b.SetParallelism(max(1, goroutines/runtime.GOMAXPROCS(0)))
					var seed atomic.Uint64
					b.ResetTimer()
					b.RunParallel(func(pb *testing.PB) {
						rng := rand.New(rand.NewPCG(seed.Add(1), 2))
						var h, n int64
						for pb.Next() {
							if step(rng) {
								h++
							}
							n++
						}
						hits.Add(h)
						calls.Add(n)
					})
				}
				b.ReportMetric(float64(hits.Load())/float64(max(calls.Load(), 1)), "hit-ratio")
			})
		}
	}
}
