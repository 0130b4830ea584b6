package merging

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shaledb/shale/internal/base"
)

// benchIter returns a merging iterator over n children that share 100,000
// entries with random keys. Uniformly, each entry goes to a random child, as
// in a read over overlapping runs of the same size; shaped like an LSM
// (lsm), each child gets ten times as many as the one before it, as in a read
// over the memtable and levels, where the last level supplies most
// consecutive entries.
func benchIter(b *testing.B, n int, lsm bool) (*Iter, [][]byte) {
	rng := rand.New(rand.NewPCG(1, 2))
	weights := make([]float64, n)
	total := 0.0
	for c := range weights {
		weights[c] = 1
		if lsm && c > 0 {
			weights[c] = 10 * weights[c-1]
		}
		total += weights[c]
	}
	children := make([][]base.InternalKV, n)
	keys := make([][]byte, 100000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "%016x", rng.Uint64())
		c, x := 0, rng.Float64()*total
		for c < n-1 && x >= weights[c] {
			x -= weights[c]
			c++
		}
		children[c] = append(children[c], base.InternalKV{
			K: base.MakeInternalKey(keys[i], base.SeqNum(i+1), base.KindSet),
			V: []byte("value"),
		})
	}
	iters := make([]base.InternalIterator, n)
	for c := range children {
		slices.SortFunc(children[c], func(x, y base.InternalKV) int { return base.CompareInternal(x.K, y.K) })
		iters[c] = &sliceIter{t: b, kvs: children[c]}
	}
	return NewIter(iters...), keys
}

// benchShapes are the children counts and distributions the benchmarks run.
var benchShapes = []struct {
	n   int
	lsm bool
}{{1, false}, {4, false}, {16, false}, {2, true}, {4, true}}

func shapeName(n int, lsm bool) string {
	dist := "uniform"
	if lsm {
		dist = "lsm"
	}
	return fmt.Sprintf("children=%d/dist=%s", n, dist)
}

func BenchmarkNext(b *testing.B) {
	for _, s := range benchShapes {
		b.Run(shapeName(s.n, s.lsm), func(b *testing.B) {
			it, _ := benchIter(b, s.n, s.lsm)
			b.ReportAllocs()
			it.First()
			for b.Loop() {
				if it.Next() == nil {
					it.First()
				}
			}
		})
	}
}

func BenchmarkPrev(b *testing.B) {
	for _, s := range benchShapes {
		b.Run(shapeName(s.n, s.lsm), func(b *testing.B) {
			it, _ := benchIter(b, s.n, s.lsm)
			b.ReportAllocs()
			it.Last()
			for b.Loop() {
				if it.Prev() == nil {
					it.Last()
				}
			}
		})
	}
}

func BenchmarkSeekGE(b *testing.B) {
	for _, n := range []int{4, 16} {
		b.Run(fmt.Sprintf("children=%d", n), func(b *testing.B) {
			it, keys := benchIter(b, n, false)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				it.SeekGE(keys[i%len(keys)])
				i++
			}
		})
	}
}
