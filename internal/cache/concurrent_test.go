package cache

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/require"
)

// TestConcurrent hammers a small cache from 8 goroutines with Get, Set,
// GetOrLoad (of either priority), EvictFile and Release on a few keys,
// holding handles across other operations and checking their values before
// every Release: a buffer reused or poisoned while referenced shows up as a
// wrong value, and any unsynchronised access as a race report under -race.
func TestConcurrent(t *testing.T) {
	for _, tc := range collisionCases {
		t.Run(tc.name, func(t *testing.T) {
			shards := tc.shards
			const goroutines = 8
			ops := scaled(20000)
			// Room for about 24 of the ~64 distinct blocks per shard.
			c := newWithMask(int64(shards)*24*(1024+EntryOverhead), shards, tc.mask)
			errLoad := errors.New("injected load failure")
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := concurrentWorker(c, uint64(g), ops, errLoad); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			requireQuiescent(t, c)
			for id := uint64(1); id <= 2; id++ {
				for f := range uint64(4) {
					c.EvictFile(id, f)
				}
			}
			require.Zero(t, c.Len())
			require.Zero(t, c.Size())
			requireQuiescent(t, c)
		})
	}
}

func concurrentWorker(c *Cache, g uint64, ops int, errLoad error) error {
	rng := rand.New(rand.NewPCG(g, 2))
	// Some GetOrLoads run under a cancelled context: as waiters they give up
	// at once, which exercises the reservation a waiter hands back.
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	type held struct {
		h Handle
		k Key
	}
	var hs []held
	release := func(j int) error {
		if _, err := checkValue(hs[j].h.Value(), hs[j].k); err != nil {
			return err
		}
		hs[j].h.Release()
		hs[j] = hs[len(hs)-1]
		hs = hs[:len(hs)-1]
		return nil
	}
	defer func() {
		for _, x := range hs {
			x.h.Release()
		}
	}()
	for i := range ops {
		k := Key{uint64(1 + rng.IntN(2)), uint64(rng.IntN(4)), uint64(rng.IntN(8)) * 4096}
		version := g<<32 | uint64(i)
		size := 32 + rng.IntN(1024)
		switch r := rng.IntN(100); {
		case r < 40:
			if h, ok := c.Get(k); ok {
				hs = append(hs, held{h, k})
			}
		case r < 60:
			hs = append(hs, held{c.Set(k, makeValue(c.Alloc(size), k, version)), k})
		case r < 85:
			ctx := context.Background()
			if rng.IntN(4) == 0 {
				ctx = cancelled
			}
			h, _, err := c.GetOrLoadWithPriority(ctx, k, Priority(rng.IntN(2)), func() ([]byte, error) {
				if rng.IntN(10) == 0 {
					return nil, errLoad
				}
				return makeValue(c.Alloc(size), k, version), nil
			})
			switch {
			case err == nil:
				hs = append(hs, held{h, k})
			case !errors.Is(err, errLoad) && !errors.Is(err, context.Canceled):
				return err
			}
		case r < 87:
			c.EvictFile(k.ID, k.FileNum)
		case r < 88:
			// A huge value: detached, and it drops the cached one.
			hs = append(hs, held{c.Set(k, makeValue(c.Alloc(64<<10), k, version)), k})
		}
		for len(hs) > 0 && (len(hs) > 8 || rng.IntN(3) == 0) {
			if err := release(rng.IntN(len(hs))); err != nil {
				return err
			}
		}
	}
	return nil
}
