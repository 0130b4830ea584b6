package memtable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shaledb/shale/internal/base"
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

// BenchmarkApplyBatchInto applies batches of random keys to a memtable that
// already holds 500,000 random keys: the case where the previous key's
// splice is far from the next key and sorting may not pay.
func BenchmarkApplyBatchInto(b *testing.B) {
	const existing = 500000
	initial := bigBatch(existing, false)
	for _, n := range []int{100, 512, 1024, 4096, 32768} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			m := New(ArenaSizeFor(initial) + 64<<20)
			defer func() { m.Free() }()
			if err := m.Apply(initial, 1); err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(9, 9))
			batches := make([]*batch.Batch, 16)
			for i := range batches {
				bt := batch.New()
				k, v := make([]byte, 32), make([]byte, 32)
				for range n {
					for j := range k {
						k[j] = byte(rng.Uint32())
					}
					bt.Set(k, v)
				}
				batches[i] = bt
			}
			seq := uint64(existing + 1)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				bt := batches[i%len(batches)]
				i++
				if !m.Fits(bt) {
					b.StopTimer()
					m.Free()
					m = New(ArenaSizeFor(initial) + 64<<20)
					if err := m.Apply(initial, 1); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				if err := m.Apply(bt, base.SeqNum(seq)); err != nil {
					b.Fatal(err)
				}
				seq += uint64(n)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
		})
	}
}
