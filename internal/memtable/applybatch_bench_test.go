package memtable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shaledb/shale/internal/batch"
)

// bigBatch returns a batch of n sets of distinct random 32-byte keys to
// 32-byte values, the shape of issue 12's million-write batch, with the keys
// in random or sorted order.
func bigBatch(n int, sorted bool) *batch.Batch {
	rng := rand.New(rand.NewPCG(3, 4))
	keys := make([][]byte, n)
	for i := range keys {
		k := make([]byte, 32)
		for j := 0; j < len(k); j += 8 {
			v := rng.Uint64()
			for b := range 8 {
				k[j+b] = byte(v >> (8 * b))
			}
		}
		keys[i] = k
	}
	if sorted {
		slices.SortFunc(keys, bytes.Compare)
	}
	b := batch.New()
	value := make([]byte, 32)
	for _, k := range keys {
		b.Set(k, value)
	}
	return b
}

// BenchmarkApplyBatch applies one large batch to an empty memtable sized for
// it, as the engine does with a batch larger than its write buffer.
func BenchmarkApplyBatch(b *testing.B) {
	for _, n := range []int{1000, 100000, 1000000} {
		for _, order := range []string{"random", "sorted"} {
			b.Run(fmt.Sprintf("n=%d/order=%s", n, order), func(b *testing.B) {
				bt := bigBatch(n, order == "sorted")
				size := ArenaSizeFor(bt)
				b.SetBytes(int64(bt.Len()))
				b.ReportAllocs()
				for b.Loop() {
					m := New(size)
					if err := m.Apply(bt, 1); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					if m.Count() != n {
						b.Fatalf("count %d, want %d", m.Count(), n)
					}
					m.Free()
					b.StartTimer()
				}
			})
		}
	}
}
