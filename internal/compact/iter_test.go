package compact

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/internal/memtable"
	"github.com/shaledb/shale/internal/merging"
	"github.com/stretchr/testify/require"
)

// sliceIter is a base.InternalIterator over a slice of entries in order.
// It fails with errAt's error when it reaches index errAt (if >= 0).
type sliceIter struct {
	kvs    []base.InternalKV
	pos    int
	kv     base.InternalKV
	errAt  int
	err    error
	closed bool
}

var _ base.InternalIterator = (*sliceIter)(nil)

func newSliceIter(kvs []base.InternalKV) *sliceIter { return &sliceIter{kvs: kvs, errAt: -1} }

func (s *sliceIter) at(i int) *base.InternalKV {
	s.pos = i
	if i == s.errAt {
		s.err = errors.New("sliceIter: injected failure")
		return nil
	}
	if i < 0 || i >= len(s.kvs) {
		return nil
	}
	// Hand out a copy, as real iterators reuse their KV.
	s.kv = s.kvs[i]
	return &s.kv
}

func (s *sliceIter) SeekGE(key []byte) *base.InternalKV {
	return s.at(sortSearch(s.kvs, func(kv base.InternalKV) bool { return bytes.Compare(kv.K.UserKey, key) >= 0 }))
}

func (s *sliceIter) SeekLT(key []byte) *base.InternalKV {
	return s.at(sortSearch(s.kvs, func(kv base.InternalKV) bool { return bytes.Compare(kv.K.UserKey, key) >= 0 }) - 1)
}

func sortSearch(kvs []base.InternalKV, f func(base.InternalKV) bool) int {
	i, _ := slices.BinarySearchFunc(kvs, true, func(kv base.InternalKV, _ bool) int {
		if f(kv) {
			return 1
		}
		return -1
	})
	return i
}

func (s *sliceIter) First() *base.InternalKV { s.err = nil; return s.at(0) }
func (s *sliceIter) Last() *base.InternalKV  { return s.at(len(s.kvs) - 1) }
func (s *sliceIter) Next() *base.InternalKV {
	if s.err != nil {
		return nil
	}
	return s.at(s.pos + 1)
}
func (s *sliceIter) Prev() *base.InternalKV { return s.at(s.pos - 1) }
func (s *sliceIter) Error() error           { return s.err }
func (s *sliceIter) Close() error           { s.closed = true; return s.err }

// parseKVs parses "key#seq,KIND" entries (KIND SET or DEL), separated by
// spaces; a SET's value is "v<seq>".
func parseKVs(t testing.TB, s string) []base.InternalKV {
	var kvs []base.InternalKV
	for _, tok := range strings.Fields(s) {
		key, rest, ok := strings.Cut(tok, "#")
		require.True(t, ok, tok)
		seqStr, kindStr, ok := strings.Cut(rest, ",")
		require.True(t, ok, tok)
		seq, err := strconv.ParseUint(seqStr, 10, 64)
		require.NoError(t, err, tok)
		kind := base.KindSet
		if kindStr == "DEL" {
			kind = base.KindDelete
		}
		kv := base.InternalKV{K: base.MakeInternalKey([]byte(key), base.SeqNum(seq), kind)}
		if kind == base.KindSet {
			kv.V = []byte("v" + seqStr)
		}
		kvs = append(kvs, kv)
	}
	return kvs
}

func formatKVs(kvs []base.InternalKV) string {
	var parts []string
	for _, kv := range kvs {
		parts = append(parts, fmt.Sprintf("%s#%d,%s", kv.K.UserKey, kv.K.SeqNum(), kv.K.Kind()))
	}
	return strings.Join(parts, " ")
}

// drain runs an Iter to the end and returns copies of its entries.
func drain(t testing.TB, it *Iter) []base.InternalKV {
	var out []base.InternalKV
	for kv := it.First(); kv != nil; kv = it.Next() {
		out = append(out, base.InternalKV{K: kv.K.Clone(), V: bytes.Clone(kv.V)})
	}
	return out
}

func TestIterRules(t *testing.T) {
	elideAll := func([]byte) bool { return true }
	elideNone := func([]byte) bool { return false }
	for _, tc := range []struct {
		name      string
		input     string
		snapshots []base.SeqNum
		elide     func([]byte) bool
		want      string
		stats     Stats
	}{
		{"newest of each key", "a#5,SET a#4,SET a#3,SET b#2,SET", nil, nil, "a#5,SET b#2,SET", Stats{DroppedNewerEntry: 2}},
		{"a snapshot keeps its view", "a#5,SET a#4,SET a#3,SET", []base.SeqNum{4}, nil, "a#5,SET a#4,SET", Stats{DroppedNewerEntry: 1}},
		{"snapshot between entries", "a#5,SET a#3,SET a#1,SET", []base.SeqNum{4, 2}, nil, "a#5,SET a#3,SET a#1,SET", Stats{}},
		{"snapshot above everything", "a#5,SET a#3,SET", []base.SeqNum{10}, nil, "a#5,SET", Stats{DroppedNewerEntry: 1}},
		{"tombstone kept without elide", "a#5,DEL a#4,SET", nil, nil, "a#5,DEL", Stats{DroppedNewerEntry: 1}},
		{"tombstone kept when data lies below", "a#5,DEL a#4,SET", nil, elideNone, "a#5,DEL", Stats{DroppedNewerEntry: 1}},
		{"tombstone dropped at the bottom", "a#5,DEL a#4,SET a#3,SET b#1,SET", nil, elideAll, "b#1,SET", Stats{DroppedObsolete: 3}},
		{"tombstone in a newer stripe kept", "a#5,DEL a#4,SET", []base.SeqNum{4}, elideAll, "a#5,DEL a#4,SET", Stats{}},
		{"tombstone in the oldest stripe dropped", "a#9,SET a#5,DEL a#4,SET", []base.SeqNum{6}, elideAll, "a#9,SET", Stats{DroppedObsolete: 2}},
		{"tombstone at the snapshot boundary", "a#6,DEL a#4,SET", []base.SeqNum{6}, elideAll, "", Stats{DroppedObsolete: 2}},
		{"older tombstone below a value", "a#5,SET a#4,DEL", nil, elideAll, "a#5,SET", Stats{DroppedNewerEntry: 1}},
		{"elide per key", "a#5,DEL b#4,DEL", nil, func(k []byte) bool { return string(k) == "b" }, "a#5,DEL", Stats{DroppedObsolete: 1}},
		{"unsorted snapshots", "a#5,SET a#3,SET a#1,SET", []base.SeqNum{4, 1, 2}, nil, "a#5,SET a#3,SET a#1,SET", Stats{}},
		{"empty user key", "#3,SET #2,SET a#1,SET", nil, nil, "#3,SET a#1,SET", Stats{DroppedNewerEntry: 1}},
		{"empty input", "", nil, nil, "", Stats{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snaps := slices.Clone(tc.snapshots)
			it := NewIter(newSliceIter(parseKVs(t, tc.input)), tc.snapshots, tc.elide)
			require.Equal(t, tc.want, formatKVs(drain(t, it)))
			require.Equal(t, tc.stats, it.Stats())
			require.NoError(t, it.Close())
			require.Equal(t, snaps, tc.snapshots, "snapshots not modified")
		})
	}
}

func TestIterErrors(t *testing.T) {
	t.Run("out of order keys", func(t *testing.T) {
		it := NewIter(newSliceIter(parseKVs(t, "b#2,SET a#1,SET")), nil, nil)
		require.NotNil(t, it.First())
		require.Nil(t, it.Next())
		require.True(t, base.IsCorruption(it.Error()), "%v", it.Error())
		require.ErrorContains(t, it.Error(), `key "a" after "b"`)
		require.Nil(t, it.Next(), "stays stopped")
		require.True(t, base.IsCorruption(it.Close()))
	})
	t.Run("out of order seqnums", func(t *testing.T) {
		it := NewIter(newSliceIter(parseKVs(t, "a#2,SET a#3,SET")), nil, nil)
		require.NotNil(t, it.First())
		require.Nil(t, it.Next())
		require.True(t, base.IsCorruption(it.Error()))
	})
	t.Run("duplicate entry", func(t *testing.T) {
		it := NewIter(newSliceIter(parseKVs(t, "a#2,SET a#2,SET")), nil, nil)
		it.First()
		require.Nil(t, it.Next())
		require.True(t, base.IsCorruption(it.Error()))
	})
	t.Run("unknown kind", func(t *testing.T) {
		kvs := []base.InternalKV{{K: base.InternalKey{UserKey: []byte("a"), Trailer: 1<<8 | 7}}}
		it := NewIter(newSliceIter(kvs), nil, nil)
		require.Nil(t, it.First())
		require.ErrorContains(t, it.Error(), "unknown kind 7")
		require.True(t, base.IsCorruption(it.Error()))
	})
	t.Run("input error", func(t *testing.T) {
		in := newSliceIter(parseKVs(t, "a#3,SET b#2,SET c#1,SET"))
		in.errAt = 2
		it := NewIter(in, nil, nil)
		require.Len(t, drain(t, it), 2)
		require.ErrorContains(t, it.Error(), "injected failure")
		require.ErrorContains(t, it.Close(), "injected failure")
		require.True(t, in.closed)
	})
}

// history is a random input: entries of a few keys with unique sequence
// numbers, random kinds, in internal-key order.
func history(rng *rand.Rand, keys, entries int) []base.InternalKV {
	var kvs []base.InternalKV
	seqs := rng.Perm(entries)
	for i := range entries {
		k := []byte{byte('a' + rng.IntN(keys))}
		kind := base.KindSet
		if rng.IntN(3) == 0 {
			kind = base.KindDelete
		}
		seq := base.SeqNum(seqs[i] + 1)
		kv := base.InternalKV{K: base.MakeInternalKey(k, seq, kind)}
		if kind == base.KindSet {
			kv.V = []byte(fmt.Sprintf("v%d", seq))
		}
		kvs = append(kvs, kv)
	}
	slices.SortFunc(kvs, func(a, b base.InternalKV) int { return base.CompareInternal(a.K, b.K) })
	return kvs
}

// visible returns the newest entry of key at or below seq, or nil.
func visible(kvs []base.InternalKV, key []byte, seq base.SeqNum) *base.InternalKV {
	for i := range kvs {
		if bytes.Equal(kvs[i].K.UserKey, key) && kvs[i].K.SeqNum() <= seq {
			return &kvs[i]
		}
	}
	return nil
}

// TestIterModel compacts random histories with random snapshot sets and
// elision, and checks against a model that every reader's view of every key
// is preserved (a dropped tombstone reads as absent, allowed only where
// elide said nothing lies below), and that nothing a reader can see is
// dropped nor anything kept that no reader sees.
func TestIterModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 3000 {
		entries := 1 + rng.IntN(40)
		in := history(rng, 1+rng.IntN(5), entries)
		var snaps []base.SeqNum
		for range rng.IntN(5) {
			snaps = append(snaps, base.SeqNum(rng.IntN(entries+2)))
		}
		slices.Sort(snaps)
		below := map[byte]bool{} // keys with data below the output level
		var elide func([]byte) bool
		switch rng.IntN(3) {
		case 0: // not a compaction that may elide
		case 1: // bottommost
			elide = func([]byte) bool { return true }
		default:
			for k := byte('a'); k < 'f'; k++ {
				below[k] = rng.IntN(2) == 0
			}
			elide = func(k []byte) bool { return !below[k[0]] }
		}
		it := NewIter(newSliceIter(in), snaps, elide)
		out := drain(t, it)
		require.NoError(t, it.Close())
		desc := fmt.Sprintf("case %d: in=%s snaps=%v below=%v out=%s", iter, formatKVs(in), snaps, below, formatKVs(out))

		// Readers: every snapshot, and the newest state.
		readers := append(slices.Clone(snaps), base.MaxSeqNum)
		for k := byte('a'); k < 'f'; k++ {
			key := []byte{k}
			for _, s := range readers {
				before, after := visible(in, key, s), visible(out, key, s)
				switch {
				case before == nil:
					require.Nil(t, after, "%s: key %c at %d appeared", desc, k, s)
				case before.K.Kind() == base.KindSet || after != nil:
					require.NotNil(t, after, "%s: key %c at %d lost %s", desc, k, s, before.K)
					require.Equal(t, before.K, after.K, "%s: key %c at %d", desc, k, s)
					require.Equal(t, before.V, after.V, desc)
				default: // a tombstone was dropped
					require.NotNil(t, elide, "%s: tombstone dropped without elide", desc)
					require.True(t, elide(key), "%s: tombstone of %c dropped with data below", desc, k)
				}
			}
		}
		// Minimal: each kept entry is what some reader sees.
		for _, kv := range out {
			seen := false
			for _, s := range readers {
				if v := visible(in, kv.K.UserKey, s); v != nil && base.CompareInternal(v.K, kv.K) == 0 {
					seen = true
				}
			}
			require.True(t, seen, "%s: kept %s, which no reader sees", desc, kv.K)
		}
		// Output is an ordered subsequence of the input, and the stats add up.
		for i := 1; i < len(out); i++ {
			require.Negative(t, base.CompareInternal(out[i-1].K, out[i].K), desc)
		}
		st := it.Stats()
		require.Equal(t, uint64(len(in)), uint64(len(out))+st.DroppedNewerEntry+st.DroppedObsolete, desc)
		if elide == nil {
			require.Zero(t, st.DroppedObsolete, desc)
		}
	}
}

// TestIterElisionOnlyAtBottom compacts the same input through a bottommost
// and a non-bottommost compaction, with the Compaction's own elide.
func TestIterElisionOnlyAtBottom(t *testing.T) {
	input := "a#5,DEL a#4,SET c#3,DEL"
	bottom := parseVersion(t, `L1 1:a-c`)
	cb := PickManual(bottom, testOpts, 1, nil, nil)
	require.True(t, cb.Bottommost)
	it := NewIter(newSliceIter(parseKVs(t, input)), nil, cb.KeyNotExistsBeyondOutputLevel)
	require.Equal(t, "", formatKVs(drain(t, it)))
	require.NoError(t, it.Close())

	// "a" exists in L4, below the output level (L2): its tombstone must
	// stay; "c" does not, so its tombstone goes.
	upper := parseVersion(t, `
L1 1:a-c
L2 3:b-b
L4 2:a-a`)
	cu := PickManual(upper, testOpts, 1, nil, nil)
	require.False(t, cu.Bottommost)
	it = NewIter(newSliceIter(parseKVs(t, input)), nil, cu.KeyNotExistsBeyondOutputLevel)
	require.Equal(t, "a#5,DEL", formatKVs(drain(t, it)))
	require.Equal(t, Stats{DroppedNewerEntry: 1, DroppedObsolete: 1}, it.Stats())
	require.NoError(t, it.Close())
}

// TestIterOverMemtables runs the Iter over two memtables merged, as the
// engine runs it over merged tables.
func TestIterOverMemtables(t *testing.T) {
	m1, m2 := memtable.New(1<<16), memtable.New(1<<16)
	for _, kv := range parseKVs(t, "a#9,SET a#7,DEL b#6,SET c#2,SET") {
		require.NoError(t, m1.Add(kv.K.SeqNum(), kv.K.Kind(), kv.K.UserKey, kv.V))
	}
	for _, kv := range parseKVs(t, "a#8,SET a#1,SET b#5,DEL c#4,DEL") {
		require.NoError(t, m2.Add(kv.K.SeqNum(), kv.K.Kind(), kv.K.UserKey, kv.V))
	}
	in := merging.NewIter(m1.NewIter(nil, nil), m2.NewIter(nil, nil))
	it := NewIter(in, []base.SeqNum{7}, func([]byte) bool { return true })
	// Snapshot 7 splits a: a#9 is kept for the newest readers; a#7,DEL is
	// the oldest stripe's newest entry and nothing lies below, so it goes
	// with a#1.
	require.Equal(t, "a#9,SET b#6,SET", formatKVs(drain(t, it)))
	require.Equal(t, Stats{DroppedNewerEntry: 2, DroppedObsolete: 4}, it.Stats())
	require.NoError(t, it.Close())
}

func TestIterAllocs(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	in := newSliceIter(history(rand.New(rand.NewPCG(1, 2)), 50, 2000))
	it := NewIter(in, []base.SeqNum{100, 500, 1000}, func([]byte) bool { return true })
	drain(t, it) // grow the key buffer
	allocs := testing.AllocsPerRun(10, func() {
		for kv := it.First(); kv != nil; kv = it.Next() {
		}
	})
	require.Zero(t, allocs)
}

func BenchmarkIter(b *testing.B) {
	for _, snaps := range []int{0, 4} {
		b.Run(fmt.Sprintf("snapshots=%d", snaps), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			kvs := history(rng, 26, 10000)
			// Longer keys, as in a real table.
			for i := range kvs {
				kvs[i].K.UserKey = append(bytes.Repeat([]byte("k"), 15), kvs[i].K.UserKey...)
			}
			var s []base.SeqNum
			for i := range snaps {
				s = append(s, base.SeqNum((i+1)*2000))
			}
			it := NewIter(newSliceIter(kvs), s, func([]byte) bool { return true })
			b.ReportAllocs()
			for b.Loop() {
				for kv := it.First(); kv != nil; kv = it.Next() {
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(kvs)), "ns/entry")
		})
	}
}
