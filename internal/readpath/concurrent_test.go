package readpath

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConcurrentReads runs Gets, MultiGets (AsyncIO on and off) and
// iterators on one View from several goroutines against the model; run it
// with -race.
func TestConcurrentReads(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	cfg := defaultLSMConfig()
	cfg.cacheSize = 32 << 10 // small: blocks are evicted while pinned
	db := buildLSM(t, rng, cfg)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			ctx := context.Background()
			fail := func(format string, args ...any) {
				select {
				case errs <- errorf(format, args...):
				default:
				}
			}
			for range 150 {
				seq := db.randomSeq(rng)
				switch rng.IntN(3) {
				case 0:
					k := db.randomKey(rng, cfg.keySpace)
					want, ok := db.model.value(string(k), seq)
					v, err := Get(ctx, db.view, readEnv(), k, seq, nil)
					if ok != (err == nil) || string(want) != string(v.Data) {
						fail("Get(%q@%d) = %q, %v; want %q", k, seq, v.Data, err, want)
					}
					v.Release()
				case 1:
					keys := make([][]byte, 1+rng.IntN(20))
					for i := range keys {
						keys[i] = db.randomKey(rng, cfg.keySpace)
					}
					env := readEnv()
					env.AsyncIO = rng.IntN(2) == 0
					out := make([]Result, len(keys))
					if err := MultiGet(ctx, db.view, env, keys, seq, out); err != nil {
						fail("MultiGet: %v", err)
					}
					for i, k := range keys {
						want, ok := db.model.value(string(k), seq)
						if out[i].Found != ok || string(out[i].Value.Data) != string(want) {
							fail("MultiGet %q@%d = %q; want %q", k, seq, out[i].Value.Data, want)
						}
					}
					releaseAll(out)
				default:
					keys, _ := db.model.visible(seq, nil, nil)
					it := NewIterator(ctx, db.view, readEnv(), seq, IterOptions{})
					i := 0
					for ok := it.First(); ok && i < 50; ok = it.Next() {
						if string(it.Key()) != keys[i] {
							fail("iterator at %d: %q, want %q", i, it.Key(), keys[i])
						}
						i++
					}
					if err := it.Close(); err != nil {
						fail("iterator: %v", err)
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}
