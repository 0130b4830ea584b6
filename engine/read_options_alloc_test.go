package engine

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/ratelimit"
	"github.com/stretchr/testify/require"
)

// TestReadOptionsAllocations pins what a request's deadline, IO timeout and
// rate-limiter priority cost a read: nothing. Get, GetPinned, MultiGet and
// an iterator's open and seek allocate as many times with them as without,
// whether the blocks are cached, read from the file or from a mapping (a
// deadline used to derive a context, four allocations a call, and a
// charged read with a timeout built a context for the limiter wait, six a
// file read).
func TestReadOptionsAllocations(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, cfg := range []struct {
		name  string
		cache int64
		mmap  bool
	}{
		{"cached", 64 << 20, false},
		{"uncached", -1, false},
		{"mmap", -1, true},
	} {
		t.Run(cfg.name, func(t *testing.T) {
			opts := smallOptions(nil)
			opts.BlockCacheSize = cfg.cache
			opts.MmapReads = cfg.mmap
			limiter := ratelimit.NewGeneric(1<<40, 0, 0, ratelimit.ModeReads)
			defer limiter.Close()
			opts.RateLimiter = limiter
			db, _ := openTestDB(t, opts)
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(1, 2))
			const n = 2000
			keys := make([][]byte, n)
			for i := range keys {
				keys[i] = key(i)
				require.NoError(t, db.Put(ctx, keys[i], value(rng, 100)))
			}
			require.NoError(t, db.Flush(ctx))
			// Some keys newer in the memtable, the rest in tables.
			for i := 0; i < n; i += 7 {
				require.NoError(t, db.Put(ctx, keys[i], value(rng, 100)))
			}

			i := 0
			reads := []struct {
				name string
				runs int
				read func(ctx context.Context)
			}{
				{"GetPinned", 500, func(ctx context.Context) {
					v, err := db.GetPinned(ctx, keys[i%n])
					if err != nil {
						t.Fatal(err)
					}
					v.Release()
				}},
				{"Get", 500, func(ctx context.Context) {
					if _, err := db.Get(ctx, keys[i%n]); err != nil {
						t.Fatal(err)
					}
				}},
				{"MultiGet", 200, func(ctx context.Context) {
					j := i % (n - 16)
					if _, err := db.MultiGet(ctx, keys[j:j+16]); err != nil {
						t.Fatal(err)
					}
				}},
				{"Iterator", 200, func(ctx context.Context) {
					it, err := db.NewIterator(ctx, nil)
					if err != nil {
						t.Fatal(err)
					}
					if !it.SeekGE(keys[i%n]) {
						t.Fatal("SeekGE found nothing")
					}
					if err := it.Close(); err != nil {
						t.Fatal(err)
					}
				}},
			}
			allocs := func(ctx context.Context, runs int, read func(context.Context)) float64 {
				// Warm the cache and the recycled buffers with every key.
				for range n / 13 {
					read(ctx)
					i += 13
				}
				i = 0 // the same keys for every measurement
				return testing.AllocsPerRun(runs, func() {
					read(ctx)
					i += 13
				})
			}
			hour := time.Now().Add(time.Hour)
			with := []struct {
				name string
				ro   ioctx.ReadOptions
			}{
				{"deadline", ioctx.ReadOptions{Deadline: hour}},
				{"io-timeout+limiter", ioctx.ReadOptions{IOTimeout: time.Hour, RateLimiterPriority: ioctx.PriorityUser}},
				{"deadline+io-timeout+limiter", ioctx.ReadOptions{Deadline: hour, IOTimeout: time.Hour, RateLimiterPriority: ioctx.PriorityUser}},
			}
			for _, r := range reads {
				// Measured twice: an iterator's recycled parts take more
				// than one round to warm.
				allocs(ctx, r.runs, r.read)
				plain := allocs(ctx, r.runs, r.read)
				for _, w := range with {
					got := allocs(ioctx.WithReadOptions(ctx, w.ro), r.runs, r.read)
					require.Equal(t, plain, got, "%s with %s", r.name, w.name)
				}
			}
			if !cfg.mmap && cfg.cache < 0 {
				require.Positive(t, limiter.TotalBytesThrough(ioctx.PriorityUser), "the file reads were charged")
			}
		})
	}
}
