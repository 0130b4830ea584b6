package batch

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/stretchr/testify/require"
)

// indexModel is the index a map gives: the latest write to each key.
type indexModel map[string]op

func (m indexModel) sorted(lower, upper []byte) []op {
	var out []op
	for k, o := range m {
		if lower != nil && k < string(lower) || upper != nil && k >= string(upper) {
			continue
		}
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

func kvOp(kv *base.InternalKV) op {
	return op{kv.K.Kind(), string(kv.K.UserKey), string(kv.V)}
}

// scan returns the iterator's entries from First forward, and checks that
// going backward from Last gives the same ones in reverse.
func scan(t *testing.T, it *IndexIter) []op {
	t.Helper()
	var fwd, bwd []op
	for kv := it.First(); kv != nil; kv = it.Next() {
		require.Equal(t, IndexSeqNum, kv.K.SeqNum())
		fwd = append(fwd, kvOp(kv))
	}
	for kv := it.Last(); kv != nil; kv = it.Prev() {
		bwd = append(bwd, kvOp(kv))
	}
	slices.Reverse(bwd)
	require.Equal(t, fwd, bwd)
	return fwd
}

func TestIndexModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	key := func() []byte { return fmt.Appendf(nil, "k%02d", rng.IntN(40)) }
	for round := range 20 {
		b := New()
		x := NewIndex(b)
		model := indexModel{}
		var iters []*IndexIter
		var views [][]op
		for step := range 300 {
			switch r := rng.IntN(100); {
			case r < 55:
				k, v := key(), fmt.Appendf(nil, "v%d.%d", round, step)
				b.Set(k, v)
				model[string(k)] = set(string(k), string(v))
			case r < 80:
				k := key()
				b.Delete(k)
				model[string(k)] = del(string(k))
			case r < 83:
				// Another batch appended, as group commit does.
				o := New()
				for range rng.IntN(4) {
					k := key()
					o.Delete(k)
					model[string(k)] = del(string(k))
				}
				b.Append(o)
			case r < 85:
				b.Reset()
				clear(model)
				iters, views = nil, nil // Reset invalidates iterators
			case r < 87:
				// Replace the encoding with a copy of itself: a fresh start for
				// the index over the same records.
				require.NoError(t, b.SetRepr(bytes.Clone(b.Repr())))
				iters, views = nil, nil
			case r < 95:
				// Point lookups of every key, written or not.
				for i := range 40 {
					k := fmt.Appendf(nil, "k%02d", i)
					v, kind, found := x.Get(k)
					want, ok := model[string(k)]
					require.Equal(t, ok, found, "key %s", k)
					if ok {
						require.Equal(t, want.kind, kind, "key %s", k)
						require.Equal(t, want.value, string(v), "key %s", k)
						require.Equal(t, kind == base.KindDelete, v == nil, "key %s", k)
					}
				}
				require.Equal(t, len(model), x.Len())
			default:
				var lower, upper []byte
				if rng.IntN(2) == 0 {
					lower = key()
				}
				if rng.IntN(2) == 0 {
					upper = key()
				}
				it := x.NewIter(lower, upper)
				want := model.sorted(lower, upper)
				require.Equal(t, want, scan(t, it), "bounds [%s, %s)", lower, upper)
				checkSeeks(t, rng, it, want, lower, upper)
				iters = append(iters, it)
				views = append(views, want)
			}
		}
		// Iterators keep the view they were made with, though the batch was
		// written since (but not Reset).
		for i, it := range iters {
			require.Equal(t, views[i], scan(t, it))
			require.NoError(t, it.Close())
		}
	}
}

// checkSeeks compares seeks and direction changes against want, the bounded
// sorted model.
func checkSeeks(t *testing.T, rng *rand.Rand, it *IndexIter, want []op, lower, upper []byte) {
	t.Helper()
	for range 20 {
		k := fmt.Sprintf("k%02d", rng.IntN(42))
		i := sort.Search(len(want), func(i int) bool { return want[i].key >= k })
		kv := it.SeekGE([]byte(k))
		if i == len(want) {
			require.Nil(t, kv, "SeekGE(%s) [%s, %s)", k, lower, upper)
			require.Nil(t, it.Next(), "Next after exhaustion")
			require.Nil(t, it.Prev(), "Prev after exhaustion")
		} else {
			require.Equal(t, want[i], kvOp(kv), "SeekGE(%s)", k)
			if i > 0 {
				require.Equal(t, want[i-1], kvOp(it.Prev()), "Prev after SeekGE(%s)", k)
				require.Equal(t, want[i], kvOp(it.Next()), "Next after Prev")
			} else {
				require.Nil(t, it.Prev())
			}
		}
		kv = it.SeekLT([]byte(k))
		if i == 0 {
			require.Nil(t, kv, "SeekLT(%s) [%s, %s)", k, lower, upper)
			require.Nil(t, it.Next(), "Next after exhaustion")
		} else {
			require.Equal(t, want[i-1], kvOp(kv), "SeekLT(%s)", k)
			if i < len(want) {
				require.Equal(t, want[i], kvOp(it.Next()), "Next after SeekLT(%s)", k)
			} else {
				require.Nil(t, it.Next())
			}
		}
	}
}

func TestIndexEmptyBounds(t *testing.T) {
	b := build(1, set("a", "1"), set("b", "2"), set("c", "3"))
	x := NewIndex(b)
	for _, tc := range []struct {
		lower, upper string
		want         []op
	}{
		{"b", "b", nil},
		{"c", "a", nil}, // inverted bounds are empty, not an error
		{"a", "b", []op{set("a", "1")}},
		{"bb", "zz", []op{set("c", "3")}},
		{"", "a", nil},
	} {
		it := x.NewIter([]byte(tc.lower), []byte(tc.upper))
		require.Equal(t, tc.want, scan(t, it), "[%s, %s)", tc.lower, tc.upper)
		require.Nil(t, it.SeekGE([]byte("c0")))
		require.NoError(t, it.Close())
	}
}

func TestIndexAllocs(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	b := New()
	for i := range 100 {
		b.Set(fmt.Appendf(nil, "key%03d", i), []byte("value"))
	}
	x := NewIndex(b)
	it := x.NewIter(nil, nil)
	defer it.Close()
	key := []byte("key050")
	require.Zero(t, testing.AllocsPerRun(100, func() {
		if _, _, found := x.Get(key); !found {
			t.Fatal("not found")
		}
	}))
	require.Zero(t, testing.AllocsPerRun(100, func() {
		for kv := it.SeekGE(key); kv != nil; kv = it.Next() {
		}
		for kv := it.SeekLT(key); kv != nil; kv = it.Prev() {
		}
	}))
}
