package engine

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/ratelimit"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
)

// BenchmarkGetReadOptions times a cached GetPinned with the read options
// whose cost issue 29 removed: a ReadOptions deadline, and an IO timeout
// with the rate limiter (reads=file: no block cache, so every Get reads
// its block from the file and is charged). The sub-benchmarks share one
// database per kind, so -count interleaves them.
func BenchmarkGetReadOptions(b *testing.B) {
	for _, kind := range []struct {
		name  string
		cache int64
	}{{"cached", 64 << 20}, {"file", -1}} {
		limiter := ratelimit.NewGeneric(1<<40, 0, 0, ratelimit.ModeReads)
		b.Cleanup(limiter.Close)
		db, err := openDatabase("/db", &Options{FS: vfs.NewMem(), BlockCacheSize: kind.cache, RateLimiter: limiter})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = db.Close() })
		ctx := context.Background()
		keys := make([][]byte, 20000)
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range keys {
			keys[i] = key(i)
			if err := db.Put(ctx, keys[i], value(rng, 100)); err != nil {
				b.Fatal(err)
			}
		}
		if err := db.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		for _, ro := range []struct {
			name string
			ro   ioctx.ReadOptions
		}{
			{"plain", ioctx.ReadOptions{}},
			{"deadline", ioctx.ReadOptions{Deadline: time.Now().Add(time.Hour)}},
			{"io-timeout+limiter", ioctx.ReadOptions{IOTimeout: time.Hour, RateLimiterPriority: ioctx.PriorityUser}},
		} {
			b.Run("reads="+kind.name+"/opts="+ro.name, func(b *testing.B) {
				ctx := ioctx.WithReadOptions(ctx, ro.ro)
				rng := rand.New(rand.NewPCG(1, 2))
				b.ReportAllocs()
				// The thread's CPU time as well (cpu-ns/op): on the shared
				// machine it moves far less than the wall time.
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				c0, _ := threadCPU()
				for b.Loop() {
					v, err := db.GetPinned(ctx, keys[rng.IntN(len(keys))])
					if err != nil {
						b.Fatal(err)
					}
					v.Release()
				}
				c1, _ := threadCPU()
				b.ReportMetric(float64(c1-c0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// BenchmarkGetParallel is a cached GetPinned from 1 and 8 goroutines on
// one database, for the scaling of issue 29 and its mutex and block
// profiles (-mutexprofile, -blockprofile): what the goroutines share on
// the Get path (the read state's reference count, cache shards,
// statistics) shows as ns/op growing with goroutines beyond what the
// cores allow.
func BenchmarkGetParallel(b *testing.B) {
	db, keys := benchCachedDB(b, statistics.New(statistics.DefaultLevel))
	ctx := context.Background()
	b.Run("goroutines=1", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(1, 1))
		for b.Loop() {
			v, err := db.GetPinned(ctx, keys[rng.IntN(len(keys))])
			if err != nil {
				b.Fatal(err)
			}
			v.Release()
		}
	})
	b.Run("goroutines=8", func(b *testing.B) {
		var seed atomic.Uint64
		procs := runtime.GOMAXPROCS(0)
		b.SetParallelism((8 + procs - 1) / procs) // RunParallel starts this × GOMAXPROCS
		b.RunParallel(func(pb *testing.PB) {
			rng := rand.New(rand.NewPCG(1, 2+seed.Add(1)))
			for pb.Next() {
				v, err := db.GetPinned(ctx, keys[rng.IntN(len(keys))])
				if err != nil {
					b.Error(err)
					return
				}
				v.Release()
			}
		})
	})
}
