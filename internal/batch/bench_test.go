package batch

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func BenchmarkSet(b *testing.B) {
	for _, valueSize := range []int{16, 256, 4096} {
		b.Run(fmt.Sprintf("valueSize=%d", valueSize), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			key := make([]byte, 16)
			value := make([]byte, valueSize)
			for i := range value {
				value[i] = byte(rng.Uint32())
			}
			batch := New()
			b.SetBytes(int64(len(key) + len(value)))
			b.ReportAllocs()
			for b.Loop() {
				if batch.Len() > 1<<20 {
					batch.Reset()
				}
				batch.Set(key, value)
			}
		})
	}
}

// benchBatch returns a batch of n records with 16-byte keys and 64-byte
// values, every fourth a Delete.
func benchBatch(n int) *Batch {
	rng := rand.New(rand.NewPCG(1, 2))
	batch := New()
	for i := range n {
		key := fmt.Appendf(nil, "key%013d", rng.Uint64()%1e13)
		if i%4 == 3 {
			batch.Delete(key)
		} else {
			batch.Set(key, make([]byte, 64))
		}
	}
	return batch
}

func BenchmarkReader(b *testing.B) {
	for _, n := range []int{1, 100, 10000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			batch := benchBatch(n)
			b.SetBytes(int64(batch.Len()))
			b.ReportAllocs()
			for b.Loop() {
				r := batch.Reader()
				for {
					if _, _, _, ok, _ := r.Next(); !ok {
						break
					}
				}
			}
		})
	}
}

func BenchmarkSetRepr(b *testing.B) {
	for _, n := range []int{1, 100, 10000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			data := benchBatch(n).Repr()
			var batch Batch
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if err := batch.SetRepr(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkIndexGet(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			batch := benchBatch(n)
			x := NewIndex(batch)
			var keys [][]byte
			r := batch.Reader()
			for {
				_, key, _, ok, _ := r.Next()
				if !ok {
					break
				}
				keys = append(keys, key)
			}
			x.Len() // index the batch before timing lookups
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, _, found := x.Get(keys[i%len(keys)]); !found {
					b.Fatal("not found")
				}
				i++
			}
		})
	}
}

func BenchmarkIndexIterNext(b *testing.B) {
	batch := benchBatch(10000)
	it := NewIndex(batch).NewIter(nil, nil)
	defer it.Close()
	b.ReportAllocs()
	if it.First() == nil {
		b.Fatal("empty batch")
	}
	for b.Loop() {
		if it.Next() == nil {
			it.First()
		}
	}
}
