package memtable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shaledb/shale/internal/batch"
)

// BenchmarkNewFromBatch indexes issue 12's batch: a million random 32-byte
// keys with 32-byte values, in random and in sorted order.
func BenchmarkNewFromBatch(b *testing.B) {
	const n = 1_000_000
	for _, sorted := range []bool{false, true} {
		b.Run(fmt.Sprintf("keys=%d/sorted=%v", n, sorted), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 1))
			keys := make([][]byte, n)
			for i := range keys {
				keys[i] = make([]byte, 32)
				for j := range keys[i] {
					keys[i][j] = byte(rng.Uint32())
				}
			}
			if sorted {
				slices.SortFunc(keys, bytes.Compare)
			}
			bt := batch.New()
			val := bytes.Repeat([]byte("v"), 32)
			for _, k := range keys {
				bt.Set(k, val)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := NewFromBatch(bt, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
