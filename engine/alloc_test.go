package engine

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/stretchr/testify/require"
)

// TestReadAllocations pins the allocation budget of the hot read paths on a
// database whose blocks are all cached, through the engine and through the
// driver façade: GetPinned 0, a copying Get 1 (the copy), iterator Next 0.
func TestReadAllocations(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	opts := smallOptions(nil)
	opts.BlockCacheSize = 64 << 20 // every block stays cached
	db, _ := openTestDB(t, opts)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 5000
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = key(i)
	}
	for i := range n {
		require.NoError(t, db.Put(ctx, key(i), value(rng, 100)))
	}
	// Some keys in tables at several levels, the rest in the memtable.
	require.NoError(t, db.Flush(ctx))
	for i := 0; i < n; i += 7 {
		require.NoError(t, db.Put(ctx, key(i), value(rng, 100)))
	}
	warm := func() {
		for i := range n {
			v, err := db.GetPinned(ctx, key(i))
			require.NoError(t, err)
			v.Release()
		}
	}
	warm()

	i := 0
	allocs := testing.AllocsPerRun(2000, func() {
		v, err := db.GetPinned(ctx, keys[i%n])
		if err != nil {
			t.Fatal(err)
		}
		v.Release()
		i += 13
	})
	require.Zero(t, allocs, "GetPinned")

	allocs = testing.AllocsPerRun(2000, func() {
		if _, err := db.Get(ctx, keys[i%n]); err != nil {
			t.Fatal(err)
		}
		i += 13
	})
	require.LessOrEqual(t, allocs, 1.0, "Get (the copy)")

	it, err := db.NewIterator(ctx, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, it.Close()) }()
	require.True(t, it.First())
	allocs = testing.AllocsPerRun(n/2, func() {
		if !it.Next() {
			t.Fatal("iterator ended early")
		}
	})
	require.Zero(t, allocs, "Iterator.Next")

	// The same Get through the façade, over a connector that already holds
	// this DB (not closed here: the test's cleanup checks and closes it).
	fdb := driver.OpenDB(&connector{db: db})
	allocs = testing.AllocsPerRun(2000, func() {
		if _, err := fdb.Get(ctx, keys[i%n]); err != nil {
			t.Fatal(err)
		}
		i += 13
	})
	require.LessOrEqual(t, allocs, 1.0, "driver.DB.Get (the copy)")
}
