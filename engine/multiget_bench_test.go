package engine

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/statistics"
)

// BenchmarkMultiGetCached compares a MultiGet of 16 random keys with 16
// copying Gets of the same keys on a database whose blocks are all cached
// (op=multiget against op=gets, ns/op per batch), so that what batching
// saves or costs shows without file reads. The two share one database, so
// -count interleaves them.
func BenchmarkMultiGetCached(b *testing.B) {
	db, keys := benchCachedDB(b, statistics.New(statistics.DefaultLevel))
	ctx := context.Background()
	const batch = 16
	batchKeys := make([][]byte, batch)
	for _, op := range []string{"multiget", "gets"} {
		b.Run("op="+op, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			b.ReportAllocs()
			for b.Loop() {
				for i := range batchKeys {
					batchKeys[i] = keys[rng.IntN(len(keys))]
				}
				if op == "multiget" {
					if _, err := db.MultiGet(ctx, batchKeys); err != nil {
						b.Fatal(err)
					}
					continue
				}
				for _, k := range batchKeys {
					if _, err := db.Get(ctx, k); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
