package memtable

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/batch"
)

// benchKeys returns n random 16-byte keys.
func benchKeys(n int) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "%016x", rng.Uint64())
	}
	return keys
}

func BenchmarkAdd(b *testing.B) {
	for _, valueSize := range []int{16, 256} {
		b.Run(fmt.Sprintf("valueSize=%d", valueSize), func(b *testing.B) {
			const arenaSize = 64 << 20
			keys := benchKeys(1 << 16)
			value := make([]byte, valueSize)
			m := New(arenaSize)
			seq := base.SeqNum(0)
			b.SetBytes(int64(len(keys[0]) + valueSize))
			b.ReportAllocs()
			for b.Loop() {
				seq++
				if err := m.Add(seq, base.KindSet, keys[seq%(1<<16)], value); err != nil {
					b.StopTimer()
					m = New(arenaSize)
					b.StartTimer()
				}
			}
		})
	}
}

func BenchmarkApply(b *testing.B) {
	for _, records := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("records=%d", records), func(b *testing.B) {
			const arenaSize = 64 << 20
			keys := benchKeys(records)
			bt := batch.New()
			for _, k := range keys {
				bt.Set(k, make([]byte, 64))
			}
			m := New(arenaSize)
			seq := base.SeqNum(1)
			b.SetBytes(int64(bt.Len()))
			b.ReportAllocs()
			for b.Loop() {
				if err := m.Apply(bt, seq); err != nil {
					b.StopTimer()
					m = New(arenaSize)
					b.StartTimer()
				}
				seq += base.SeqNum(records)
			}
		})
	}
}

// benchMemTable returns a memtable of n entries with 16-byte keys and
// 64-byte values, and the keys.
func benchMemTable(b *testing.B, n int) (*MemTable, [][]byte) {
	keys := benchKeys(n)
	m := New(n * 200)
	for i, k := range keys {
		if err := m.Add(base.SeqNum(i+1), base.KindSet, k, make([]byte, 64)); err != nil {
			b.Fatal(err)
		}
	}
	return m, keys
}

func BenchmarkGet(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			m, keys := benchMemTable(b, n)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, _, found := m.Get(keys[i%n], base.MaxSeqNum); !found {
					b.Fatal("not found")
				}
				i++
			}
		})
	}
}

func BenchmarkSeekGE(b *testing.B) {
	m, keys := benchMemTable(b, 100000)
	it := m.NewIter(nil, nil)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		it.SeekGE(keys[i%len(keys)])
		i++
	}
}

func BenchmarkNext(b *testing.B) {
	m, _ := benchMemTable(b, 100000)
	it := m.NewIter(nil, nil)
	b.ReportAllocs()
	it.First()
	for b.Loop() {
		if it.Next() == nil {
			it.First()
		}
	}
}

func BenchmarkPrev(b *testing.B) {
	m, _ := benchMemTable(b, 100000)
	it := m.NewIter(nil, nil)
	b.ReportAllocs()
	it.Last()
	for b.Loop() {
		if it.Prev() == nil {
			it.Last()
		}
	}
}
