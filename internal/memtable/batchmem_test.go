package memtable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/batch"
	"github.com/stretchr/testify/require"
)

// keyGen makes the keys of one random batch. Each shape stresses another
// part of the index: few short keys (many overwrites within the batch, the
// empty key, keys that are prefixes of others), a long shared prefix (the
// common-prefix skip), equal 8-byte prefixes after it (ties the integer sort
// must break by whole keys), and random keys.
type keyGen struct {
	name string
	gen  func(rng *rand.Rand) []byte
}

var keyGens = []keyGen{
	{"short", func(rng *rand.Rand) []byte {
		k := make([]byte, rng.IntN(4))
		for i := range k {
			k[i] = "abc"[rng.IntN(3)]
		}
		return k
	}},
	{"shared-prefix", func(rng *rand.Rand) []byte {
		return fmt.Appendf(nil, "table/0042/%03d", rng.IntN(300))
	}},
	{"prefix-ties", func(rng *rand.Rand) []byte {
		k := append([]byte{byte(rng.IntN(2))}, "12345678"...)
		return append(k, byte(rng.IntN(4)), byte(rng.IntN(4)))
	}},
	{"random", func(rng *rand.Rand) []byte {
		k := make([]byte, 1+rng.IntN(12))
		for i := range k {
			k[i] = byte(rng.Uint32())
		}
		return k
	}},
}

// randomBatch returns a batch of n records with keys from gen: sets (some
// with empty values), deletes and range deletions.
func randomBatch(rng *rand.Rand, gen func(*rand.Rand) []byte, n int) *batch.Batch {
	b := batch.New()
	for range n {
		switch p := rng.IntN(20); {
		case p < 12:
			v := fmt.Appendf(nil, "v%d", rng.IntN(1000))
			if p == 0 {
				v = nil
			}
			b.Set(gen(rng), v)
		case p < 18:
			b.Delete(gen(rng))
		default:
			b.DeleteRange(gen(rng), gen(rng))
		}
	}
	return b
}

// TestNewFromBatchModel applies random batches once with NewFromBatch and
// once with Apply into an ordinary memtable; every read must agree: Get and
// GetEntry of every key at every sequence number, iterators with random
// bounds in both directions and under random positioning calls, the range
// tombstones, Count and Empty.
func TestNewFromBatchModel(t *testing.T) {
	for _, kg := range keyGens {
		for _, n := range []int{1, 2, 7, 100, 1500} {
			t.Run(fmt.Sprintf("%s/%d", kg.name, n), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(n), uint64(len(kg.name))))
				for round := range 3 {
					b := randomBatch(rng, kg.gen, n)
					const seq = 100
					want := New(ArenaSizeFor(b))
					require.NoError(t, want.Apply(b, seq))
					got, err := NewFromBatch(b, seq)
					require.NoError(t, err)
					checkSameMemTable(t, rng, want, got, kg.gen, seq, n)
					if t.Failed() {
						t.Fatalf("round %d differs", round)
					}
				}
			})
		}
	}
}

// checkSameMemTable compares every read of got with want's.
func checkSameMemTable(t *testing.T, rng *rand.Rand, want, got *MemTable, gen func(*rand.Rand) []byte, seq base.SeqNum, n int) {
	t.Helper()
	require.Equal(t, want.Count(), got.Count(), "Count")
	require.Equal(t, want.Empty(), got.Empty(), "Empty")
	require.Equal(t, want.NumRangeDeletions(), got.NumRangeDeletions(), "NumRangeDeletions")
	require.Equal(t, want.RangeDeletions().Fragments(), got.RangeDeletions().Fragments(), "range deletions")
	if kv := got.NewIter(nil, nil).First(); kv != nil {
		require.False(t, got.OffHeap(kv.K.UserKey), "Go heap")
	}

	// Every key the batch holds, and as many others.
	var keys [][]byte
	it := want.NewIter(nil, nil)
	for kv := it.First(); kv != nil; kv = it.Next() {
		keys = append(keys, kv.K.UserKey)
	}
	for range len(keys) + 3 {
		keys = append(keys, gen(rng))
	}
	seqs := []base.SeqNum{0, seq - 1, base.MaxSeqNum, base.MaxSeqNum + 5}
	for s := seq; s <= seq+base.SeqNum(n); s += max(1, base.SeqNum(n/16)) {
		seqs = append(seqs, s)
	}
	// The comparison is plain code and require reports only a difference:
	// there are up to ~60,000 lookups a memtable, and five require.Equal
	// calls each (each a t.Helper stack walk) took most of this test's time,
	// tenfold under -race.
	for _, k := range keys {
		for _, s := range seqs {
			wv, wk, ws, wf := want.GetEntry(k, s)
			gv, gk, gs, gf := got.GetEntry(k, s)
			if wf == gf && wk == gk && ws == gs && bytes.Equal(wv, gv) && (wv == nil) == (gv == nil) {
				continue
			}
			require.Equal(t, wf, gf, "found %q at %d", k, s)
			require.Equal(t, wk, gk, "kind of %q at %d", k, s)
			require.Equal(t, ws, gs, "seq of %q at %d", k, s)
			require.Equal(t, wv, gv, "value of %q at %d", k, s)
			require.Equal(t, wv == nil, gv == nil, "nil value of %q at %d", k, s)
		}
	}

	for range 20 {
		var lower, upper []byte
		if rng.IntN(3) > 0 {
			lower = gen(rng)
		}
		if rng.IntN(3) > 0 {
			upper = gen(rng)
		}
		wi, gi := want.NewIter(lower, upper), got.NewIter(lower, upper)
		require.Equal(t, scan(wi, true), scan(gi, true), "forward in [%q, %q)", lower, upper)
		require.Equal(t, scan(wi, false), scan(gi, false), "backward in [%q, %q)", lower, upper)
		for step := range 50 {
			var op string
			var w, g *base.InternalKV
			switch rng.IntN(6) {
			case 0:
				op, w, g = "First", wi.First(), gi.First()
			case 1:
				op, w, g = "Last", wi.Last(), gi.Last()
			case 2:
				k := gen(rng)
				op, w, g = fmt.Sprintf("SeekGE(%q)", k), wi.SeekGE(k), gi.SeekGE(k)
			case 3:
				k := gen(rng)
				op, w, g = fmt.Sprintf("SeekLT(%q)", k), wi.SeekLT(k), gi.SeekLT(k)
			case 4:
				op, w, g = "Next", wi.Next(), gi.Next()
			default:
				op, w, g = "Prev", wi.Prev(), gi.Prev()
			}
			require.Equal(t, kvString(w), kvString(g), "step %d: %s in [%q, %q)", step, op, lower, upper)
		}
		require.NoError(t, gi.Close())
	}
}

// scan returns every entry of it, First to the end or Last to the start.
func scan(it *Iter, forward bool) []string {
	var out []string
	if forward {
		for kv := it.First(); kv != nil; kv = it.Next() {
			out = append(out, kvString(kv))
		}
	} else {
		for kv := it.Last(); kv != nil; kv = it.Prev() {
			out = append(out, kvString(kv))
		}
	}
	return out
}

func kvString(kv *base.InternalKV) string {
	if kv == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%q#%d,%d=%q(nil=%v)", kv.K.UserKey, kv.K.SeqNum(), kv.K.Kind(), kv.V, kv.V == nil)
}

// TestNewFromBatchNoCopy: the memtable's values are the batch's bytes, and
// the batch, changed after, moves away from them instead of changing them.
func TestNewFromBatchNoCopy(t *testing.T) {
	b := batch.New()
	b.Set([]byte("k"), []byte("v1"))
	repr := b.Repr()
	m, err := NewFromBatch(b, 1)
	require.NoError(t, err)
	v, _, found := m.Get([]byte("k"), base.MaxSeqNum)
	require.True(t, found)
	require.True(t, &repr[len(repr)-1] == &v[len(v)-1], "the value is the batch's own byte")

	b.Reset()
	b.Set([]byte("k"), []byte("v2"))
	b.SetSeqNum(50)
	v, _, _ = m.Get([]byte("k"), base.MaxSeqNum)
	require.Equal(t, "v1", string(v), "the batch's reuse left the memtable alone")
	require.Equal(t, base.SeqNum(0), mustDecodeSeq(t, repr), "header untouched")
}

func mustDecodeSeq(t *testing.T, data []byte) base.SeqNum {
	seq, _, err := batch.DecodeHeader(data)
	require.NoError(t, err)
	return seq
}

// TestNewFromBatchImmutable: a memtable made from a batch takes no writes,
// fits nothing, and Free drops it.
func TestNewFromBatchImmutable(t *testing.T) {
	b := batch.New()
	b.Set([]byte("a"), []byte("1"))
	m, err := NewFromBatch(b, 1)
	require.NoError(t, err)
	require.ErrorIs(t, m.Add(5, base.KindSet, []byte("b"), nil), base.ErrInvalidArgument)
	require.ErrorIs(t, m.Apply(b, 5), base.ErrInvalidArgument)
	require.False(t, m.Fits(b))
	require.Zero(t, m.Capacity())
	require.Greater(t, m.ApproximateSize(), b.Len())
	require.Panics(t, m.Reset)
	m.Free()
	require.Panics(t, m.Free, "twice")
}

// TestNewFromBatchErrors: sequence numbers past the maximum are refused, and
// so is a malformed encoding, naming the corruption.
func TestNewFromBatchErrors(t *testing.T) {
	b := batch.New()
	b.Set([]byte("a"), []byte("1"))
	b.Set([]byte("b"), []byte("2"))
	_, err := NewFromBatch(b, base.MaxSeqNum)
	require.ErrorIs(t, err, base.ErrInvalidArgument)

	m, err := NewFromBatch(batch.New(), 1)
	require.NoError(t, err)
	require.True(t, m.Empty())
	require.Nil(t, m.NewIter(nil, nil).First())
	_, _, found := m.Get([]byte("a"), base.MaxSeqNum)
	require.False(t, found)
}

// FuzzNewFromBatch decodes arbitrary encodings: those SetRepr accepts must
// index to the memtable Apply makes.
func FuzzNewFromBatch(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, kg := range keyGens {
		b := randomBatch(rng, kg.gen, 20)
		b.SetSeqNum(0)
		f.Add(bytes.Clone(b.Repr()))
	}
	// Range deletions, one of them unbounded (an empty end).
	b := batch.New()
	b.Set([]byte("a"), []byte("1"))
	b.DeleteRange([]byte("b"), []byte("d"))
	b.Set([]byte("m"), []byte("2"))
	b.DeleteRange([]byte("c"), nil)
	b.Set([]byte("z"), []byte("3"))
	b.SetSeqNum(0)
	f.Add(bytes.Clone(b.Repr()))
	f.Fuzz(func(t *testing.T, data []byte) {
		var b batch.Batch
		if b.SetRepr(bytes.Clone(data)) != nil || b.Count() > 5000 {
			return
		}
		want := New(ArenaSizeFor(&b))
		if err := want.Apply(&b, 1); err != nil {
			// Apply refuses a key set twice at one sequence number; no
			// batch holds one.
			t.Fatal(err)
		}
		got, err := NewFromBatch(&b, 1)
		require.NoError(t, err)
		checkSameMemTable(t, rand.New(rand.NewPCG(3, 4)), want, got, keyGens[0].gen, 1, int(b.Count()))
	})
}
