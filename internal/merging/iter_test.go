package merging

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/stretchr/testify/require"
)

// sliceIter is a base.InternalIterator over a sorted slice, for tests. It
// can fail on a chosen call, fail to close, and either stay exhausted after
// running off an end (the base contract) or restart from that end on the
// next step the other way (pebble's convention). In strict mode it reports a
// test error if it is stepped while exhausted, which the merging iterator
// promises not to do.
type sliceIter struct {
	t       testing.TB
	kvs     []base.InternalKV
	pos     int // index of the current entry
	valid   bool
	offEnd  int // after exhaustion: -1 off the start, +1 off the end
	restart bool
	strict  bool

	failAt   int // fail on this positioning call (1-based); 0 never
	calls    int
	err      error
	closeErr error
	closed   int

	// kv is overwritten on every move, so a caller that keeps a stale
	// *InternalKV sees it change.
	kv base.InternalKV
}

var _ base.InternalIterator = (*sliceIter)(nil)

// garbage overwrites an exhausted sliceIter's entry.
var garbage = []byte("garbage")

// call counts a positioning call and reports whether it fails.
func (s *sliceIter) call() bool {
	s.calls++
	if s.err == nil && s.failAt > 0 && s.calls >= s.failAt {
		s.err = errors.Newf("child failed on call %d", s.calls)
	}
	if s.err != nil {
		s.valid = false
		return true
	}
	return false
}

func (s *sliceIter) at(i, dir int) *base.InternalKV {
	if i < 0 || i >= len(s.kvs) {
		s.valid, s.offEnd = false, dir
		s.kv = base.InternalKV{K: base.InternalKey{UserKey: garbage}}
		return nil
	}
	s.pos, s.valid = i, true
	s.kv = s.kvs[i]
	return &s.kv
}

func (s *sliceIter) search(key []byte) int {
	return sort.Search(len(s.kvs), func(i int) bool { return string(s.kvs[i].K.UserKey) >= string(key) })
}

func (s *sliceIter) SeekGE(key []byte) *base.InternalKV {
	if s.call() {
		return nil
	}
	return s.at(s.search(key), +1)
}

func (s *sliceIter) SeekLT(key []byte) *base.InternalKV {
	if s.call() {
		return nil
	}
	return s.at(s.search(key)-1, -1)
}

func (s *sliceIter) First() *base.InternalKV {
	if s.call() {
		return nil
	}
	return s.at(0, +1)
}

func (s *sliceIter) Last() *base.InternalKV {
	if s.call() {
		return nil
	}
	return s.at(len(s.kvs)-1, -1)
}

func (s *sliceIter) Next() *base.InternalKV {
	if s.call() {
		return nil
	}
	if !s.valid {
		if s.strict {
			s.t.Errorf("Next on an exhausted child")
		}
		if s.restart && s.offEnd < 0 {
			return s.at(0, +1)
		}
		return nil
	}
	return s.at(s.pos+1, +1)
}

func (s *sliceIter) Prev() *base.InternalKV {
	if s.call() {
		return nil
	}
	if !s.valid {
		if s.strict {
			s.t.Errorf("Prev on an exhausted child")
		}
		if s.restart && s.offEnd > 0 {
			return s.at(len(s.kvs)-1, -1)
		}
		return nil
	}
	return s.at(s.pos-1, -1)
}

func (s *sliceIter) Error() error { return s.err }

func (s *sliceIter) Close() error {
	s.closed++
	if s.err != nil {
		return s.err
	}
	return s.closeErr
}

// entry is a merged entry: the child it came from is in its value.
type entry struct {
	key   base.InternalKey
	child int
}

func (e entry) String() string { return fmt.Sprintf("%s@%d", e.key, e.child) }

func kvEntry(kv *base.InternalKV) entry {
	c, err := strconv.Atoi(strings.TrimPrefix(string(kv.V), "child"))
	if err != nil {
		panic(err)
	}
	return entry{kv.K.Clone(), c}
}

// workload is a set of children and the merged sequence they must give.
type workload struct {
	children [][]base.InternalKV
	merged   []entry
	keys     int
}

// newWorkload makes n children over keys user keys with overlapping
// entries. With dups, some internal keys appear in several children.
func newWorkload(rng *rand.Rand, n, keys, perChild int, dups bool) *workload {
	w := &workload{children: make([][]base.InternalKV, n), keys: keys}
	seq := base.SeqNum(1)
	for c := range n {
		count := rng.IntN(perChild + 1)
		if rng.IntN(5) == 0 {
			count = 0 // some children are empty
		}
		for range count {
			kind := base.KindSet
			if rng.IntN(4) == 0 {
				kind = base.KindDelete
			}
			k := base.MakeInternalKey(fmt.Appendf(nil, "k%03d", rng.IntN(keys)), seq, kind)
			seq++
			w.children[c] = append(w.children[c], base.InternalKV{K: k})
		}
	}
	if dups {
		for c := range n {
			for _, kv := range w.children[rng.IntN(n)] {
				if rng.IntN(3) == 0 && !slices.ContainsFunc(w.children[c], func(x base.InternalKV) bool {
					return base.CompareInternal(x.K, kv.K) == 0
				}) {
					w.children[c] = append(w.children[c], base.InternalKV{K: kv.K})
				}
			}
		}
	}
	w.finish()
	return w
}

// newSkewedWorkload makes n children over keys user keys shaped like an LSM
// after compaction: the last child holds most of the entries (count), each
// one before it a tenth as many as the next, with no duplicates.
func newSkewedWorkload(rng *rand.Rand, n, keys, count int) *workload {
	w := &workload{children: make([][]base.InternalKV, n), keys: keys}
	seq := base.SeqNum(1)
	for c := n - 1; c >= 0; c-- {
		for range count {
			k := base.MakeInternalKey(fmt.Appendf(nil, "k%03d", rng.IntN(keys)), seq, base.KindSet)
			seq++
			w.children[c] = append(w.children[c], base.InternalKV{K: k})
		}
		count /= 10
	}
	w.finish()
	return w
}

// finish sorts the children, labels their entries with their child's value
// and merges them into w.merged.
func (w *workload) finish() {
	for c := range w.children {
		slices.SortFunc(w.children[c], func(a, b base.InternalKV) int { return base.CompareInternal(a.K, b.K) })
		for i := range w.children[c] {
			w.children[c][i].V = fmt.Appendf(nil, "child%d", c)
			w.merged = append(w.merged, entry{w.children[c][i].K, c})
		}
	}
	slices.SortFunc(w.merged, func(a, b entry) int {
		if c := base.CompareInternal(a.key, b.key); c != 0 {
			return c
		}
		return cmp.Compare(a.child, b.child)
	})
}

func (w *workload) iters(t testing.TB, restart bool) []*sliceIter {
	its := make([]*sliceIter, len(w.children))
	for i, kvs := range w.children {
		its[i] = &sliceIter{t: t, kvs: kvs, restart: restart, strict: true}
	}
	return its
}

func asInternal(its []*sliceIter) []base.InternalIterator {
	out := make([]base.InternalIterator, len(its))
	for i, it := range its {
		out[i] = it
	}
	return out
}

// model is the merged iterator's expected position: an index into merged,
// or exhausted.
type model struct {
	w     *workload
	pos   int
	valid bool
}

func (m *model) set(i int) *entry {
	if i < 0 || i >= len(m.w.merged) {
		m.valid = false
		return nil
	}
	m.pos, m.valid = i, true
	return &m.w.merged[i]
}

func (m *model) searchGE(key string) int {
	return sort.Search(len(m.w.merged), func(i int) bool { return string(m.w.merged[i].key.UserKey) >= key })
}

func (m *model) seekGE(key string) *entry { return m.set(m.searchGE(key)) }
func (m *model) seekLT(key string) *entry { return m.set(m.searchGE(key) - 1) }
func (m *model) first() *entry            { return m.set(0) }
func (m *model) last() *entry             { return m.set(len(m.w.merged) - 1) }
func (m *model) next() *entry {
	if !m.valid {
		return nil
	}
	return m.set(m.pos + 1)
}
func (m *model) prev() *entry {
	if !m.valid {
		return nil
	}
	return m.set(m.pos - 1)
}

// step runs one random operation on both and returns a description and the
// two results.
func step(rng *rand.Rand, it *Iter, md *model) (string, *base.InternalKV, *entry) {
	key := fmt.Sprintf("k%03d", rng.IntN(md.w.keys+2))
	switch r := rng.IntN(20); {
	case r < 2:
		return "SeekGE(" + key + ")", it.SeekGE([]byte(key)), md.seekGE(key)
	case r < 4:
		return "SeekLT(" + key + ")", it.SeekLT([]byte(key)), md.seekLT(key)
	case r < 5:
		return "First", it.First(), md.first()
	case r < 6:
		return "Last", it.Last(), md.last()
	case r < 13:
		return "Next", it.Next(), md.next()
	default:
		return "Prev", it.Prev(), md.prev()
	}
}

// requireSame fails the test unless got is want. desc is formatted only on
// failure, which keeps the tests fast under -race.
func requireSame(t *testing.T, desc func() string, got *base.InternalKV, want *entry) {
	t.Helper()
	switch {
	case want == nil && got == nil:
		return
	case want == nil:
		t.Fatalf("%s: want exhausted, got %s", desc(), kvEntry(got))
	case got == nil:
		t.Fatalf("%s: want %s, got exhausted", desc(), want)
	case base.CompareInternal(want.key, got.K) != 0 || string(got.V) != childValue[want.child]:
		t.Fatalf("%s: want %s, got %s", desc(), want, kvEntry(got))
	}
}

// childValue is the value of every entry of child i.
var childValue = func() (v [16]string) {
	for i := range v {
		v[i] = fmt.Sprintf("child%d", i)
	}
	return v
}()

// TestRandomized compares random operation sequences with a merged sorted
// slice, for children of both exhaustion conventions.
func TestRandomized(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		n := 1 + rng.IntN(8)
		dups := rng.IntN(3) == 0
		restart := rng.IntN(2) == 0
		w := newWorkload(rng, n, 1+rng.IntN(30), rng.IntN(40), dups)
		its := w.iters(t, restart)
		it := NewIter(asInternal(its)...)
		md := &model{w: w}
		var trace []string
		for range 300 {
			desc, got, want := step(rng, it, md)
			trace = append(trace, desc)
			requireSame(t, func() string {
				return fmt.Sprintf("round %d (%d children, dups=%v, restart=%v) after %v",
					round, n, dups, restart, trace[max(0, len(trace)-8):])
			}, got, want)
		}
		require.NoError(t, it.Error())
		require.NoError(t, it.Close())
		for _, c := range its {
			require.Equal(t, 1, c.closed)
		}
	}
}

// TestSkewed is TestRandomized over children shaped like an LSM's levels,
// where one child supplies most consecutive entries: the top child mostly
// stays on top, the case Next and Prev shortcut.
func TestSkewed(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 50 {
		n := 2 + rng.IntN(6)
		w := newSkewedWorkload(rng, n, 200, 300)
		its := w.iters(t, rng.IntN(2) == 0)
		it := NewIter(asInternal(its)...)
		md := &model{w: w}
		var trace []string
		for range 1000 {
			desc, got, want := step(rng, it, md)
			trace = append(trace, desc)
			requireSame(t, func() string {
				return fmt.Sprintf("round %d (%d children) after %v", round, n, trace[max(0, len(trace)-8):])
			}, got, want)
		}
		require.NoError(t, it.Close())
	}
}

// TestDirectionSwitches goes to every position both ways and switches
// direction there repeatedly.
func TestDirectionSwitches(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 30 {
		w := newWorkload(rng, 1+rng.IntN(6), 1+rng.IntN(10), 15, rng.IntN(2) == 0)
		it := NewIter(asInternal(w.iters(t, false))...)
		md := &model{w: w}
		for i := range w.merged {
			for _, fromEnd := range []bool{false, true} {
				var got *base.InternalKV
				var want *entry
				if fromEnd {
					got, want = it.Last(), md.last()
					for range len(w.merged) - 1 - i {
						got, want = it.Prev(), md.prev()
					}
				} else {
					got, want = it.First(), md.first()
					for range i {
						got, want = it.Next(), md.next()
					}
				}
				requireSame(t, func() string { return fmt.Sprintf("position %d", i) }, got, want)
				for s := range 6 {
					if s%2 == 0 {
						got, want = it.Prev(), md.prev()
					} else {
						got, want = it.Next(), md.next()
					}
					requireSame(t, func() string { return fmt.Sprintf("position %d, switch %d", i, s) }, got, want)
					if want == nil {
						break
					}
				}
			}
		}
		require.NoError(t, it.Close())
	}
}

func TestEqualKeysInChildOrder(t *testing.T) {
	k := base.MakeInternalKey([]byte("a"), 5, base.KindSet)
	children := make([][]base.InternalKV, 3)
	for c := range children {
		children[c] = []base.InternalKV{{K: k, V: fmt.Appendf(nil, "child%d", c)}}
	}
	w := &workload{children: children}
	it := NewIter(asInternal(w.iters(t, false))...)
	var fwd, bwd []int
	for kv := it.First(); kv != nil; kv = it.Next() {
		fwd = append(fwd, kvEntry(kv).child)
	}
	for kv := it.Last(); kv != nil; kv = it.Prev() {
		bwd = append(bwd, kvEntry(kv).child)
	}
	require.Equal(t, []int{0, 1, 2}, fwd)
	require.Equal(t, []int{2, 1, 0}, bwd)
}

func TestNoChildren(t *testing.T) {
	var it Iter
	require.Nil(t, it.First())
	require.Nil(t, it.Last())
	require.Nil(t, it.SeekGE([]byte("a")))
	require.Nil(t, it.SeekLT([]byte("a")))
	require.Nil(t, it.Next())
	require.Nil(t, it.Prev())
	require.NoError(t, it.Error())
	require.NoError(t, it.Close())
}

// TestChildError fails one child on its k-th call, for every k: the merged
// iterator must agree with the model until then, and afterwards return nil
// from every positioning call, report the error, and close all children.
func TestChildError(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 25 {
		w := newWorkload(rng, 2+rng.IntN(5), 10, 20, false)
		victim := rng.IntN(len(w.children))
		for k := 1; k <= 40; k++ {
			its := w.iters(t, false)
			its[victim].failAt = k
			it := NewIter(asInternal(its)...)
			md := &model{w: w}
			opRng := rand.New(rand.NewPCG(uint64(round), 0))
			failed := false
			for range 60 {
				desc, got, want := step(opRng, it, md)
				if its[victim].err != nil {
					// The child failed during this call or before.
					if !failed {
						require.Nil(t, got, "%s: the call that failed returned an entry", desc)
						failed = true
					}
					if got != nil || it.Error() != its[victim].err {
						t.Fatalf("%s after the failure: %v, %v", desc, got, it.Error())
					}
					continue
				}
				requireSame(t, func() string { return desc }, got, want)
				if it.Error() != nil {
					t.Fatalf("%s: unexpected error %v", desc, it.Error())
				}
			}
			err := it.Close()
			if failed {
				require.Equal(t, its[victim].err, err, "Close returns the iteration error")
			} else {
				require.NoError(t, err)
			}
			for _, c := range its {
				require.Equal(t, 1, c.closed, "every child is closed once")
			}
		}
	}
}

func TestCloseError(t *testing.T) {
	w := newWorkload(rand.New(rand.NewPCG(7, 8)), 3, 5, 5, false)
	its := w.iters(t, false)
	its[1].closeErr = errors.New("close 1")
	its[2].closeErr = errors.New("close 2")
	it := NewIter(asInternal(its)...)
	for kv := it.First(); kv != nil; kv = it.Next() {
	}
	require.NoError(t, it.Error())
	require.Equal(t, its[1].closeErr, it.Close(), "the first Close error")
	for _, c := range its {
		require.Equal(t, 1, c.closed)
	}
}

// TestInitReuse reuses one Iter for several sets of children.
func TestInitReuse(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	var it Iter
	for range 20 {
		w := newWorkload(rng, 1+rng.IntN(8), 20, 20, false)
		it.Init(asInternal(w.iters(t, false))...)
		var got []entry
		for kv := it.First(); kv != nil; kv = it.Next() {
			got = append(got, kvEntry(kv))
		}
		if len(w.merged) == 0 {
			require.Empty(t, got)
		} else {
			require.Equal(t, w.merged, got)
		}
		require.NoError(t, it.Close())
	}
}

func TestAllocs(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	w := newWorkload(rand.New(rand.NewPCG(11, 12)), 8, 50, 100, false)
	iters := asInternal(w.iters(t, false))
	it := NewIter(iters...)
	key := []byte("k025")
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"First+Next", func() {
			for kv := it.First(); kv != nil; kv = it.Next() {
			}
		}},
		{"Last+Prev", func() {
			for kv := it.Last(); kv != nil; kv = it.Prev() {
			}
		}},
		{"SeekGE+switches", func() {
			it.SeekGE(key)
			it.Prev()
			it.Next()
			it.SeekLT(key)
			it.Next()
			it.Prev()
		}},
		{"Init", func() { it.Init(iters...) }},
	} {
		require.Zero(t, testing.AllocsPerRun(20, tc.f), tc.name)
	}
}
