package memtable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/batch"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/stretchr/testify/require"
)

// entry is one memtable entry as a test writes it and reads it back.
type entry struct {
	key   string
	seq   base.SeqNum
	kind  base.Kind
	value string
}

func (e entry) String() string { return fmt.Sprintf("%s#%d,%s=%q", e.key, e.seq, e.kind, e.value) }

func (e entry) ikey() base.InternalKey { return base.MakeInternalKey([]byte(e.key), e.seq, e.kind) }

func kvEntry(kv *base.InternalKV) entry {
	return entry{string(kv.K.UserKey), kv.K.SeqNum(), kv.K.Kind(), string(kv.V)}
}

// sortEntries sorts a model in base.CompareInternal order.
func sortEntries(es []entry) {
	slices.SortFunc(es, func(a, b entry) int { return base.CompareInternal(a.ikey(), b.ikey()) })
}

// modelGet is Get on a sorted model.
func modelGet(es []entry, key string, seq base.SeqNum) (entry, bool) {
	i := sort.Search(len(es), func(i int) bool {
		return base.CompareInternal(es[i].ikey(), base.MakeSearchKey([]byte(key), seq)) >= 0
	})
	if i < len(es) && es[i].key == key {
		return es[i], true
	}
	return entry{}, false
}

// bounded returns the entries of a sorted model with user keys in
// [lower, upper).
func bounded(es []entry, lower, upper []byte) []entry {
	var out []entry
	for _, e := range es {
		if lower != nil && e.key < string(lower) || upper != nil && e.key >= string(upper) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// scanBoth returns the iterator's entries from First forward and checks that
// Last backward gives the same in reverse.
func scanBoth(t testing.TB, it *Iter) []entry {
	t.Helper()
	var fwd, bwd []entry
	for kv := it.First(); kv != nil; kv = it.Next() {
		fwd = append(fwd, kvEntry(kv))
	}
	for kv := it.Last(); kv != nil; kv = it.Prev() {
		bwd = append(bwd, kvEntry(kv))
	}
	slices.Reverse(bwd)
	require.Equal(t, fwd, bwd, "forward and backward scans differ")
	return fwd
}

func mustAdd(t testing.TB, m *MemTable, e entry) {
	t.Helper()
	require.NoError(t, m.Add(e.seq, e.kind, []byte(e.key), []byte(e.value)))
}

// TestModel checks Add, Get and iteration against a sorted slice.
func TestModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name    string
		keys    int // distinct user keys
		entries int
	}{
		{"few-keys-many-versions", 10, 1000},
		{"many-keys", 500, 1000},
		{"one-key", 1, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New(1 << 20)
			require.True(t, m.Empty())
			// Unique sequence numbers, added in random order.
			seqs := rng.Perm(tc.entries)
			var model []entry
			for _, s := range seqs {
				e := entry{key: fmt.Sprintf("key%04d", rng.IntN(tc.keys)), seq: base.SeqNum(s + 1), kind: base.KindSet}
				if rng.IntN(4) == 0 {
					e.kind = base.KindDelete
				} else {
					e.value = fmt.Sprintf("v%d", s)
				}
				mustAdd(t, m, e)
				model = append(model, e)
			}
			sortEntries(model)
			require.Equal(t, len(model), m.Count())
			require.False(t, m.Empty())
			require.Equal(t, model, scanBoth(t, m.NewIter(nil, nil)))

			// Get at sequence numbers around every version.
			for range 1000 {
				key := fmt.Sprintf("key%04d", rng.IntN(tc.keys+5))
				seq := base.SeqNum(rng.IntN(tc.entries + 2))
				want, ok := modelGet(model, key, seq)
				v, kind, found := m.Get([]byte(key), seq)
				require.Equal(t, ok, found, "Get(%s, %d)", key, seq)
				if ok {
					require.Equal(t, want.kind, kind, "Get(%s, %d)", key, seq)
					require.Equal(t, want.value, string(v), "Get(%s, %d)", key, seq)
					require.Equal(t, kind == base.KindDelete, v == nil)
				}
			}
			_, _, found := m.Get([]byte("key"), base.MaxSeqNum+100)
			require.False(t, found)

			// Bounded iteration, seeks and direction changes.
			keyOrNil := func() []byte {
				if rng.IntN(3) == 0 {
					return nil
				}
				return fmt.Appendf(nil, "key%04d", rng.IntN(tc.keys+2))
			}
			for range 20 {
				lower, upper := keyOrNil(), keyOrNil()
				it := m.NewIter(lower, upper)
				want := bounded(model, lower, upper)
				if len(want) == 0 {
					want = nil
				}
				require.Equal(t, want, scanBoth(t, it), "[%s, %s)", lower, upper)
				for range 20 {
					checkSeek(t, rng, it, want, tc.keys)
				}
				require.NoError(t, it.Close())
			}
		})
	}
}

// checkSeek seeks to a random key and steps a few entries either way,
// comparing with want, the bounded sorted model.
func checkSeek(t *testing.T, rng *rand.Rand, it *Iter, want []entry, keys int) {
	t.Helper()
	key := fmt.Sprintf("key%04d", rng.IntN(keys+2))
	var kv *base.InternalKV
	var i int
	if rng.IntN(2) == 0 {
		kv = it.SeekGE([]byte(key))
		i = sort.Search(len(want), func(i int) bool { return want[i].key >= key })
	} else {
		kv = it.SeekLT([]byte(key))
		i = sort.Search(len(want), func(i int) bool { return want[i].key >= key }) - 1
	}
	for step := 0; ; step++ {
		if i < 0 || i >= len(want) {
			require.Nil(t, kv, "step %d from %s", step, key)
			// Exhausted stays exhausted.
			require.Nil(t, it.Next())
			require.Nil(t, it.Prev())
			return
		}
		require.NotNil(t, kv, "step %d from %s: want %s", step, key, want[i])
		require.Equal(t, want[i], kvEntry(kv), "step %d from %s", step, key)
		if step == 6 {
			return
		}
		if rng.IntN(2) == 0 {
			kv, i = it.Next(), i+1
		} else {
			kv, i = it.Prev(), i-1
		}
	}
}

func TestGet(t *testing.T) {
	m := New(1 << 16)
	for _, e := range []entry{
		{"a", 10, base.KindSet, "a10"},
		{"a", 20, base.KindDelete, ""},
		{"a", 30, base.KindSet, ""},
		{"b", 5, base.KindSet, "b5"},
		{"b", 5, base.KindDelete, ""}, // same seqnum, other kind: a different internal key
		{"c", base.MaxSeqNum, base.KindSet, "cmax"},
	} {
		mustAdd(t, m, e)
	}
	for _, tc := range []struct {
		key   string
		seq   base.SeqNum
		found bool
		kind  base.Kind
		value string
	}{
		{"a", 9, false, 0, ""},
		{"a", 10, true, base.KindSet, "a10"},
		{"a", 19, true, base.KindSet, "a10"},
		{"a", 20, true, base.KindDelete, ""},
		{"a", 29, true, base.KindDelete, ""},
		{"a", 30, true, base.KindSet, ""},
		{"a", base.MaxSeqNum, true, base.KindSet, ""},
		{"b", 4, false, 0, ""},
		{"b", 5, true, base.KindSet, "b5"}, // SET sorts before DEL at one seqnum
		{"c", base.MaxSeqNum - 1, false, 0, ""},
		{"c", base.MaxSeqNum, true, base.KindSet, "cmax"},
		{"", base.MaxSeqNum, false, 0, ""},
		{"a\x00", base.MaxSeqNum, false, 0, ""},
		{"d", base.MaxSeqNum, false, 0, ""},
	} {
		v, kind, found := m.Get([]byte(tc.key), tc.seq)
		require.Equal(t, tc.found, found, "Get(%q, %d)", tc.key, tc.seq)
		require.Equal(t, tc.kind, kind, "Get(%q, %d)", tc.key, tc.seq)
		require.Equal(t, tc.value, string(v), "Get(%q, %d)", tc.key, tc.seq)
		if found && kind == base.KindSet {
			require.NotNil(t, v, "a Set's empty value is non-nil")
		}
	}
}

func TestAddErrors(t *testing.T) {
	m := New(1 << 16)
	mustAdd(t, m, entry{"k", 1, base.KindSet, "v"})
	size := m.ApproximateSize()

	err := m.Add(1, base.KindSet, []byte("k"), []byte("other"))
	require.True(t, errors.Is(err, ErrRecordExists), "%v", err)
	err = m.Add(2, base.Kind(7), []byte("k"), nil)
	require.True(t, errors.Is(err, base.ErrInvalidArgument), "%v", err)
	err = m.Add(base.MaxSeqNum+1, base.KindSet, []byte("k"), nil)
	require.True(t, errors.Is(err, base.ErrInvalidArgument), "%v", err)

	require.Equal(t, 1, m.Count())
	require.Equal(t, []entry{{"k", 1, base.KindSet, "v"}}, scanBoth(t, m.NewIter(nil, nil)))
	require.LessOrEqual(t, m.ApproximateSize()-size, maxNodeSize+16, "only the duplicate's node is lost")

	// A Delete's value is dropped.
	require.NoError(t, m.Add(3, base.KindDelete, []byte("k"), []byte("ignored")))
	v, kind, found := m.Get([]byte("k"), 3)
	require.True(t, found)
	require.Equal(t, base.KindDelete, kind)
	require.Nil(t, v)
}

func TestArenaFull(t *testing.T) {
	m := New(4 << 10)
	require.Equal(t, 4<<10, m.Capacity())
	value := bytes.Repeat([]byte("v"), 100)
	var added []entry
	var err error
	for i := 1; ; i++ {
		e := entry{fmt.Sprintf("key%03d", i), base.SeqNum(i), base.KindSet, string(value)}
		before := m.ApproximateSize()
		if err = m.Add(e.seq, e.kind, []byte(e.key), value); err != nil {
			require.Equal(t, before, m.ApproximateSize(), "a failed Add used arena space")
			break
		}
		added = append(added, e)
		require.LessOrEqual(t, m.ApproximateSize(), m.Capacity())
	}
	require.True(t, errors.Is(err, ErrArenaFull), "%v", err)
	require.NotEmpty(t, added)
	require.Equal(t, len(added), m.Count())
	require.Equal(t, added, scanBoth(t, m.NewIter(nil, nil)), "the failed entry is not visible")
	_, _, found := m.Get(fmt.Appendf(nil, "key%03d", len(added)+1), base.MaxSeqNum)
	require.False(t, found)

	require.Less(t, m.Capacity()-m.ApproximateSize(), 2*maxNodeSize+100+towerSlack, "the arena is nearly full")

	// A failed Add does not use up the arena: a smaller entry that fits in
	// what is left still goes in. (3 KiB + 2 KiB > 4 KiB > 3 KiB + 2 nodes.)
	m = New(4 << 10)
	require.NoError(t, m.Add(1, base.KindSet, []byte("a"), make([]byte, 3<<10)))
	size := m.ApproximateSize()
	err = m.Add(2, base.KindSet, []byte("b"), make([]byte, 2<<10))
	require.True(t, errors.Is(err, ErrArenaFull), "%v", err)
	require.Equal(t, size, m.ApproximateSize())
	require.NoError(t, m.Add(3, base.KindSet, []byte("c"), make([]byte, 10)))
	require.Equal(t, 2, m.Count())

	// An entry bigger than the whole arena fails cleanly.
	big := New(1 << 10)
	err = big.Add(1, base.KindSet, []byte("k"), make([]byte, 2<<10))
	require.True(t, errors.Is(err, ErrArenaFull), "%v", err)
	require.True(t, big.Empty())
}

// TestFillTiny fills an arena with the smallest entries. A node is accessed
// as a full-height *node, so the arena must always keep a full tower's slack
// after the last node (the race detector's checkptr also checks this).
func TestFillTiny(t *testing.T) {
	for _, size := range []int{minArenaSize, 1000, 4 << 10, 4<<10 + 3} {
		m := New(size)
		var model []entry
		for i := 1; ; i++ {
			e := entry{key: string(rune('a' + i%26)), seq: base.SeqNum(i), kind: base.KindDelete}
			if err := m.Add(e.seq, e.kind, []byte(e.key), nil); err != nil {
				require.True(t, errors.Is(err, ErrArenaFull), "%v", err)
				break
			}
			model = append(model, e)
			require.LessOrEqual(t, m.ApproximateSize()+towerSlack, m.Capacity())
		}
		sortEntries(model)
		got := scanBoth(t, m.NewIter(nil, nil))
		if len(model) == 0 {
			require.Empty(t, got)
		} else {
			require.Equal(t, model, got)
		}
	}
}

func TestNewClamps(t *testing.T) {
	for _, size := range []int{-1, 0, 1, minArenaSize - 1} {
		m := New(size)
		require.Equal(t, minArenaSize, m.Capacity(), "New(%d)", size)
		require.Equal(t, 344, m.Capacity(), "the doc of New states the minimum")
		require.True(t, m.Empty())
		require.Nil(t, m.NewIter(nil, nil).First())
		require.Nil(t, m.NewIter(nil, nil).Last())
		// Room for nothing more than a tiny node, if that.
		err := m.Add(1, base.KindSet, []byte("k"), make([]byte, 100))
		require.True(t, errors.Is(err, ErrArenaFull), "%v", err)
	}
}

func TestApply(t *testing.T) {
	b := batch.New()
	b.Set([]byte("a"), []byte("1"))
	b.Delete([]byte("b"))
	b.Set([]byte("a"), []byte("2"))
	b.Set([]byte("c"), nil)

	m := New(1 << 16)
	require.True(t, m.Fits(b))
	require.NoError(t, m.Apply(b, 100))
	require.Equal(t, []entry{
		{"a", 102, base.KindSet, "2"},
		{"a", 100, base.KindSet, "1"},
		{"b", 101, base.KindDelete, ""},
		{"c", 103, base.KindSet, ""},
	}, scanBoth(t, m.NewIter(nil, nil)))

	// An empty batch is a no-op.
	require.NoError(t, m.Apply(batch.New(), 1))
	require.Equal(t, 4, m.Count())

	// Sequence numbers must fit.
	err := m.Apply(b, base.MaxSeqNum-2)
	require.True(t, errors.Is(err, base.ErrInvalidArgument), "%v", err)
	require.NoError(t, m.Apply(b, base.MaxSeqNum-3))

	// Reusing sequence numbers is reported.
	err = m.Apply(b, 100)
	require.True(t, errors.Is(err, ErrRecordExists), "%v", err)
}

// TestApplyAllOrNothing fills a memtable and then applies batches that do
// not fit: each must fail without inserting anything or using space.
func TestApplyAllOrNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := New(16 << 10)
	seq := base.SeqNum(1)
	var model []entry
	for range 200 {
		b := batch.New()
		var es []entry
		for i := range 1 + rng.IntN(8) {
			e := entry{key: fmt.Sprintf("k%03d", rng.IntN(100)), seq: seq + base.SeqNum(i), kind: base.KindSet}
			e.value = string(bytes.Repeat([]byte{'v'}, rng.IntN(200)))
			b.Set([]byte(e.key), []byte(e.value))
			es = append(es, e)
		}
		fits := m.Fits(b)
		size := m.ApproximateSize()
		err := m.Apply(b, seq)
		if fits {
			require.NoError(t, err, "Fits promised room")
		}
		if err != nil {
			require.True(t, errors.Is(err, ErrArenaFull), "%v", err)
			require.Equal(t, size, m.ApproximateSize(), "a failed Apply used arena space")
			require.Equal(t, len(model), m.Count(), "a failed Apply inserted entries")
			continue
		}
		model = append(model, es...)
		seq += base.SeqNum(len(es))
	}
	sortEntries(model)
	require.Equal(t, model, scanBoth(t, m.NewIter(nil, nil)))
	require.Greater(t, m.ApproximateSize(), m.Capacity()*3/4, "the test filled the arena")
}

// TestArenaSizeFor checks that a memtable of ArenaSizeFor(b) bytes takes b,
// also for batches of tiny records whose nodes dwarf their encoding.
func TestArenaSizeFor(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name            string
		records, maxLen int
	}{
		{"tiny-deletes", 5000, 0},
		{"small", 1000, 8},
		{"large", 50, 4000},
		{"one", 1, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := batch.New()
			for i := range tc.records {
				key := fmt.Appendf(nil, "%d", i)
				if tc.maxLen == 0 {
					b.Delete(key[:1])
				} else {
					b.Set(key, make([]byte, rng.IntN(tc.maxLen+1)))
				}
			}
			size := ArenaSizeFor(b)
			m := New(size)
			require.True(t, m.Fits(b))
			require.NoError(t, m.Apply(b, 1))
			require.Equal(t, tc.records, m.Count())

			// The bound is not loose by more than a full tower per record.
			used := m.ApproximateSize()
			require.LessOrEqual(t, size-used, tc.records*(maxNodeSize-nodeHeaderSize+nodeAlign)+minArenaSize)
			if tc.maxLen == 0 {
				// Tiny records need far more arena than their encoding.
				require.Greater(t, used, 2*b.Len()+64<<10)
			}
		})
	}
}

func TestRandomHeight(t *testing.T) {
	require.Equal(t, maxHeight, randomHeight(0))
	require.Equal(t, 1, randomHeight(1))
	require.Equal(t, 2, randomHeight(2))
	require.Equal(t, 3, randomHeight(4))
	require.Equal(t, 5, randomHeight(16))
	require.Equal(t, maxHeight, randomHeight(1<<40))

	// P(h > k) = 2^-k.
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 1 << 18
	var atLeast [maxHeight + 1]int
	for range n {
		for h := randomHeight(rng.Uint64()); h > 0; h-- {
			atLeast[h]++
		}
	}
	require.Equal(t, n, atLeast[1])
	for k := 1; k <= 3; k++ {
		want := float64(n) / float64(int(1)<<k)
		require.InEpsilon(t, want, float64(atLeast[k+1]), 0.05, "P(h > %d)", k)
	}
}

func TestAllocs(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	m := New(1 << 20)
	for i := range 1000 {
		require.NoError(t, m.Add(base.SeqNum(i+1), base.KindSet, fmt.Appendf(nil, "key%04d", i), []byte("value")))
	}
	it := m.NewIter(nil, nil)
	key := []byte("key0500")
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"Get", func() { m.Get(key, base.MaxSeqNum) }},
		{"SeekGE", func() { it.SeekGE(key) }},
		{"SeekLT", func() { it.SeekLT(key) }},
		{"First+Next", func() {
			for kv := it.First(); kv != nil; kv = it.Next() {
			}
		}},
		{"Last+Prev", func() {
			for kv := it.Last(); kv != nil; kv = it.Prev() {
			}
		}},
	} {
		require.Zero(t, testing.AllocsPerRun(50, tc.f), tc.name)
	}

	seq := base.SeqNum(10000)
	require.Zero(t, testing.AllocsPerRun(100, func() {
		seq++
		_ = m.Add(seq, base.KindSet, key, key)
	}), "Add")
	b := batch.New()
	b.Set(key, key)
	b.Delete(key)
	require.Zero(t, testing.AllocsPerRun(100, func() {
		seq += 2
		_ = m.Apply(b, seq)
	}), "Apply")
}

func TestReset(t *testing.T) {
	for _, tc := range []struct {
		name    string
		keys    int // per round: below releaseMinBytes of arena (cleared) or above (pages dropped)
		release bool
	}{
		{"small", 200, false},
		{"large", 2000, false},
		{"small released", 200, true},
		{"large released", 2000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New(1 << 20)
			defer m.Free()
			rng := rand.New(rand.NewPCG(11, 12))
			for round := range 3 {
				var want []entry
				for i := range tc.keys {
					e := entry{key: fmt.Sprintf("k%05d", rng.IntN(5000)), seq: base.SeqNum(i + 1), kind: base.KindSet,
						value: fmt.Sprintf("r%d", round)}
					if m.Add(e.seq, e.kind, []byte(e.key), []byte(e.value)) != nil {
						break
					}
					want = append(want, e)
				}
				sortEntries(want)
				require.Equal(t, len(want), m.Count(), "round %d", round)
				require.Equal(t, want, scanBoth(t, m.NewIter(nil, nil)), "round %d", round)
				if tc.release {
					used := m.arena.size()
					m.Release()
					// What the next memtable links assumes: zeroed memory.
					require.Equal(t, -1, slices.IndexFunc(m.arena.buf[:used], func(b byte) bool { return b != 0 }),
						"round %d: the released arena is not zero", round)
				}
				m.Reset()
				require.True(t, m.Empty())
				require.Zero(t, m.Count())
				require.Nil(t, m.NewIter(nil, nil).First(), "a reset memtable is empty")
			}
		})
	}
}

// TestFree checks that Free releases the arena once and that a second Free
// is reported.
func TestFree(t *testing.T) {
	m := New(1 << 20)
	require.NoError(t, m.Add(1, base.KindSet, []byte("k"), []byte("v")))
	v, _, ok := m.Get([]byte("k"), 1)
	require.True(t, ok)
	require.Equal(t, "v", string(v))
	m.Free()
	require.Zero(t, m.Capacity())
	require.Panics(t, m.Free)
}

// TestArenaUnmapped checks, where /proc/self/status tells the process's
// virtual size, that arenas are mapped outside the heap and unmapped both by
// Free and, for memtables dropped without it, by their cleanup.
func TestArenaUnmapped(t *testing.T) {
	if _, err := vmSize(); err != nil {
		t.Skipf("no virtual size to watch: %v", err)
	}
	const n, size = 16, 32 << 20 // 512 MiB in all
	before := mustVMSize(t)
	ms := make([]*MemTable, n)
	for i := range ms {
		ms[i] = New(size)
		require.True(t, ms[i].arena.mapped)
	}
	// The process's size also moves with what else is mapped and unmapped
	// meanwhile (the runtime's heap, earlier tests' arenas unmapped by
	// their cleanups), so the checks allow a quarter of the arenas' size.
	require.GreaterOrEqual(t, mustVMSize(t)-before, int64(n*size*3/4), "arenas are mapped")
	for _, m := range ms {
		m.Free()
	}
	require.Less(t, mustVMSize(t)-before, int64(n*size/4), "Free unmaps")

	before = mustVMSize(t)
	for range n {
		require.NoError(t, New(size).Add(1, base.KindSet, []byte("k"), []byte("v")))
	}
	// Cleanups run on their own goroutine after a collection, whenever the
	// scheduler gets to them: the deadline is far beyond any machine's
	// slowness, not a measure of it.
	deadline := time.Now().Add(2 * time.Minute)
	for mustVMSize(t)-before >= int64(n*size/4) {
		require.True(t, time.Now().Before(deadline), "dropped memtables were not unmapped")
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// vmSize returns VmSize from /proc/self/status, in bytes.
func vmSize() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmSize:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmSize line")
}

func mustVMSize(t *testing.T) int64 {
	v, err := vmSize()
	require.NoError(t, err)
	return v
}

// TestFitsAny: a batch fits some memtable while its bound, with the arena's
// fixed overhead, stays within the largest arena.
func TestFitsAny(t *testing.T) {
	var b batch.Batch
	b.Set([]byte("k"), []byte("v"))
	require.True(t, FitsAny(&b))
	require.LessOrEqual(t, uint64(ArenaSizeFor(&b)), uint64(maxArenaSize))

	limit := uint64(maxArenaSize) - uint64(minArenaSize) - uint64(towerSlack)
	require.True(t, fitsArena(limit))
	require.False(t, fitsArena(limit+1))
	require.False(t, fitsArena(1<<33))
}

// TestRoom checks the promise the engine's commit groups rely on: batches
// whose ApplyBounds sum to at most Room are all applied, one after another,
// and Room shrinks by at most each one's bound. A memtable made from a
// batch has no room.
func TestRoom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 50 {
		m := New(8<<10 + rng.IntN(64<<10))
		seq := base.SeqNum(1)
		for {
			room := m.Room()
			var group []*batch.Batch
			var sum uint64
			for {
				b := batch.New()
				for range 1 + rng.IntN(10) {
					b.Set(fmt.Appendf(nil, "k%05d", rng.IntN(10000)), make([]byte, rng.IntN(1200)))
				}
				if sum+ApplyBound(b) > room {
					break
				}
				sum += ApplyBound(b)
				group = append(group, b)
			}
			if len(group) == 0 {
				break
			}
			for _, b := range group {
				before := m.Room()
				require.NoError(t, m.Apply(b, seq), "a group within Room")
				require.GreaterOrEqual(t, m.Room()+ApplyBound(b), before)
				seq += base.SeqNum(b.Count())
			}
			require.GreaterOrEqual(t, m.Room()+sum, room)
		}
		// The last batch drawn, of at most ten records, did not fit.
		require.Less(t, m.Room(), uint64(10*(maxNodeSize+nodeAlign+1200+16)), "the memtable is nearly full")
	}
	b := batch.New()
	b.Set([]byte("k"), []byte("v"))
	bm, err := NewFromBatch(b, 1)
	require.NoError(t, err)
	require.Zero(t, bm.Room())
	require.False(t, bm.Fits(batch.New()))
}
