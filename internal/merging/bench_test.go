package merging

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shaledb/shale/internal/base"
)

// benchIter returns a merging iterator over n children that share 100,000
// entries with random keys, dealt out at random, as in a read over
// overlapping levels.
func benchIter(b *testing.B, n int) (*Iter, [][]byte) {
	rng := rand.New(rand.NewPCG(1, 2))
	children := make([][]base.InternalKV, n)
	keys := make([][]byte, 100000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "%016x", rng.Uint64())
		c := rng.IntN(n)
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

func BenchmarkNext(b *testing.B) {
	for _, n := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("children=%d", n), func(b *testing.B) {
			it, _ := benchIter(b, n)
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
	for _, n := range []int{4, 16} {
		b.Run(fmt.Sprintf("children=%d", n), func(b *testing.B) {
			it, _ := benchIter(b, n)
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
			it, keys := benchIter(b, n)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				it.SeekGE(keys[i%len(keys)])
				i++
			}
		})
	}
}
