package block

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/stretchr/testify/require"
)

// walkResult is what a forward pass over a block sees: every entry, then
// the error that ended it (nil at the block's end).
type walkResult struct {
	keys, vals [][]byte
	err        error
}

func iterWalk(data []byte) walkResult {
	var it Iter
	var r walkResult
	if r.err = it.Init(bytes.Compare, data); r.err != nil {
		return r
	}
	for ok := it.First(); ok; ok = it.Next() {
		r.keys = append(r.keys, slices.Clone(it.Key()))
		r.vals = append(r.vals, slices.Clone(it.Value()))
	}
	r.err = it.Error()
	return r
}

func walkerWalk(w *Walker, data []byte) walkResult {
	var r walkResult
	if r.err = w.Init(data); r.err != nil {
		return r
	}
	for w.Next() {
		r.keys = append(r.keys, slices.Clone(w.Key()))
		r.vals = append(r.vals, slices.Clone(w.Value()))
	}
	r.err = w.Err()
	if w.Next() || w.Key() != nil || w.Value() != nil {
		// A finished walk stays finished.
		r.err = base.AssertionFailedf("walker moved after its end")
	}
	return r
}

// requireSameWalk checks that a Walker sees exactly what Iter's First and
// Next see: the same entries, and the same error (message included) or
// none.
func requireSameWalk(t testing.TB, w *Walker, data []byte) {
	want, got := iterWalk(data), walkerWalk(w, data)
	require.Equal(t, want.keys, got.keys)
	require.Equal(t, want.vals, got.vals)
	if want.err == nil {
		require.NoError(t, got.err)
		return
	}
	require.Error(t, got.err)
	require.True(t, base.IsCorruption(got.err), "%v", got.err)
	require.Equal(t, want.err.Error(), got.err.Error())
}

func TestWalkerMatchesIter(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var w Walker // reused: Init must reset everything but the scratch buffer
	for _, ri := range []int{1, 2, 16} {
		for _, n := range []int{0, 1, 2, 17, 300} {
			kvs := genKVs(rng, n)
			if n == 300 {
				// Lengths of 128 and more take the slow path.
				kvs[7].v = bytes.Repeat([]byte("v"), 200)
				kvs[9].k = append(bytes.Repeat([]byte("l"), 130), kvs[9].k...)
				slices.SortFunc(kvs, func(a, b kv) int { return bytes.Compare(a.k, b.k) })
			}
			data := buildBlock(ri, kvs)
			requireSameWalk(t, &w, data)
			r := walkerWalk(&w, data)
			require.Len(t, r.keys, n, "restart interval %d", ri)
			for i := range kvs {
				require.Equal(t, kvs[i].k, r.keys[i])
				require.Equal(t, kvs[i].v, r.vals[i])
			}
			// Keys point into the block exactly where they share no
			// prefix: at every entry with restart interval 1.
			require.NoError(t, w.Init(data))
			inBlock := 0
			for w.Next() {
				if w.KeyInBlock() {
					require.True(t, bytes.Contains(data, w.Key()))
					inBlock++
				}
			}
			if ri == 1 {
				require.Equal(t, n, inBlock)
			} else if n > ri {
				require.Less(t, inBlock, n)
			}
			// A corrupt byte anywhere (every byte of the small blocks, 200 of
			// the large ones) fails, or walks, as Iter does.
			for j := range min(len(data), 200) {
				off := j
				if len(data) > 200 {
					off = rng.IntN(len(data))
				}
				bad := slices.Clone(data)
				bad[off] ^= byte(1 + rng.IntN(255))
				requireSameWalk(t, &w, bad)
			}
		}
	}
}

func TestWalkerCorrupt(t *testing.T) {
	good, patch := corruptible()
	for _, tc := range []struct {
		name    string
		data    []byte
		entries int // entries walked before the error
		want    string
	}{
		{name: "short", data: []byte{1, 0, 0}, want: "too short"},
		{name: "truncated-key", data: patch(1, 200), want: "offset 0 of 40-byte block: key runs past"},
		{name: "shared-too-long", data: patch(9, 9), entries: 1, want: "offset 9 of 40-byte block: shares more bytes"},
		{name: "value-too-long", data: patch(20, 60), entries: 2, want: "offset 18 of 40-byte block: value runs past"},
		{name: "bad-varint", data: patch(18, 0x80, 0x80, 0x80, 0x80, 0x80), entries: 2, want: "offset 18 of 40-byte block: bad shared-prefix length"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w Walker
			r := walkerWalk(&w, tc.data)
			require.Len(t, r.keys, tc.entries)
			require.True(t, base.IsCorruption(r.err), "%v", r.err)
			require.Contains(t, r.err.Error(), tc.want)
			// Init starts over, error cleared.
			r = walkerWalk(&w, good)
			require.NoError(t, r.err)
			require.Len(t, r.keys, 3)
		})
	}
}

func TestWalkerAllocs(t *testing.T) {
	data := buildBlock(16, genKVs(rand.New(rand.NewPCG(5, 6)), 200))
	var w Walker
	walk := func() {
		if err := w.Init(data); err != nil {
			t.Fatal(err)
		}
		for w.Next() {
		}
	}
	walk() // grows the scratch buffer
	require.Zero(t, testing.AllocsPerRun(100, walk))
}

// FuzzWalker checks a Walker against Iter on arbitrary bytes: the same
// entries and the same error, and never a panic.
func FuzzWalker(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, ri := range []int{1, 3, 16} {
		for _, n := range []int{0, 1, 5, 40} {
			f.Add(buildBlock(ri, genKVs(rng, n)))
		}
	}
	f.Add([]byte{0, 0, 0, 0})
	var w Walker
	f.Fuzz(func(t *testing.T, data []byte) { requireSameWalk(t, &w, data) })
}

// BenchmarkBlockWalk compares a forward pass of a Walker with Iter's First
// and Next over an index block's shape (restart interval 1) and a data
// block's (16).
func BenchmarkBlockWalk(b *testing.B) {
	for _, ri := range []int{1, 16} {
		data, _ := benchBlock(ri)
		b.Run("iter/restart="+strconv.Itoa(ri), func(b *testing.B) {
			var it Iter
			for b.Loop() {
				_ = it.Init(bytes.Compare, data)
				for ok := it.First(); ok; ok = it.Next() {
				}
			}
		})
		b.Run("walker/restart="+strconv.Itoa(ri), func(b *testing.B) {
			var w Walker
			for b.Loop() {
				_ = w.Init(data)
				for w.Next() {
				}
			}
		})
	}
}
