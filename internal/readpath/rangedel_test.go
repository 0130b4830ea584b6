package readpath

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/memtable"
	"github.com/shaledb/shale/internal/rangedel"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// countingIter counts the moves made on an internal iterator.
type countingIter struct {
	base.InternalIterator
	steps, seeks int
}

func (c *countingIter) Next() *base.InternalKV { c.steps++; return c.InternalIterator.Next() }
func (c *countingIter) Prev() *base.InternalKV { c.steps++; return c.InternalIterator.Prev() }
func (c *countingIter) SeekGE(k []byte) *base.InternalKV {
	c.seeks++
	return c.InternalIterator.SeekGE(k)
}
func (c *countingIter) SeekLT(k []byte) *base.InternalKV {
	c.seeks++
	return c.InternalIterator.SeekLT(k)
}

// TestDelFilterSeeksPast: entries of an older source that a newer source's
// tombstone covers are skipped with one seek each way, not stepped over;
// entries the source's own tombstone covers are stepped over, and those
// newer than it survive.
func TestDelFilterSeeksPast(t *testing.T) {
	m := memtable.New(1 << 20)
	for i := range 1000 {
		require.NoError(t, m.Add(base.SeqNum(2*(i+1)), base.KindSet, fmt.Appendf(nil, "k%04d", i), []byte("v")))
	}
	newer := rangedel.New([]rangedel.Tombstone{{Start: []byte("k0001"), End: []byte("k0999"), Seq: 5000}})
	c := &countingIter{InternalIterator: m.NewIter(nil, nil)}
	f := &delFilter{iter: c, seq: base.MaxSeqNum, newer: []tombstones{{set: newer}}}
	var keys []string
	for kv := f.First(); kv != nil; kv = f.Next() {
		keys = append(keys, string(kv.K.UserKey))
	}
	require.Equal(t, []string{"k0000", "k0999"}, keys)
	require.Equal(t, 1, c.seeks, "one seek past the tombstone")
	require.LessOrEqual(t, c.steps, 3)

	c.seeks, c.steps, keys = 0, 0, nil
	for kv := f.Last(); kv != nil; kv = f.Prev() {
		keys = append(keys, string(kv.K.UserKey))
	}
	require.Equal(t, []string{"k0999", "k0000"}, keys)
	require.Equal(t, 1, c.seeks, "one seek before the tombstone")

	// The source's own tombstone at seq 1001 hides only the entries below
	// it; invisible to a reader at 400, it hides nothing.
	own := rangedel.New([]rangedel.Tombstone{{Start: []byte("k0000"), End: []byte("k1000"), Seq: 1001}})
	f = &delFilter{iter: m.NewIter(nil, nil), seq: base.MaxSeqNum, own: tombstones{set: own}}
	n := 0
	for kv := f.First(); kv != nil; kv = f.Next() {
		require.Greater(t, kv.K.SeqNum(), base.SeqNum(1001))
		n++
	}
	require.Equal(t, 500, n)
	f = &delFilter{iter: m.NewIter(nil, nil), seq: 400, own: tombstones{set: own}}
	n = 0
	for kv := f.First(); kv != nil; kv = f.Next() {
		n++
	}
	require.Equal(t, 1000, n, "entries above the read seq pass through for the Iterator to skip")
}

// valueAt is the model's value of key at seq, range tombstones included.
func (db *lsm) valueAt(key string, seq base.SeqNum) ([]byte, bool) {
	e, ok := db.model.get(key, seq)
	if !ok || e.kind != base.KindSet {
		return nil, false
	}
	for _, t := range db.rangeDels {
		if t.Seq <= seq && t.Seq > e.seq && string(t.Start) <= key && rangedel.Before([]byte(key), t.End) {
			return nil, false
		}
	}
	return e.value, true
}

// visibleAt is model.visible with range tombstones.
func (db *lsm) visibleAt(seq base.SeqNum, lower, upper []byte) (keys []string, values [][]byte) {
	for _, k := range db.keys {
		if lower != nil && k < string(lower) || upper != nil && k >= string(upper) {
			continue
		}
		if v, ok := db.valueAt(k, seq); ok {
			keys = append(keys, k)
			values = append(values, v)
		}
	}
	return keys, values
}

// TestRangeDelModel reads random LSMs holding range tombstones in every
// kind of source (memtables, L0 tables, tables of deeper levels cut at
// their boundaries) with Get, MultiGet and iterators driven by random
// operations within random bounds, at random snapshots, against the model;
// with and without unbounded range deletions.
func TestRangeDelModel(t *testing.T) {
	for _, unbounded := range []float64{0, 0.15} {
		t.Run(fmt.Sprintf("unbounded=%v", unbounded), func(t *testing.T) { testRangeDelModel(t, unbounded) })
	}
}

// testRangeDelModel is TestRangeDelModel with unboundedRatio unbounded of
// the range deletions unbounded.
func testRangeDelModel(t *testing.T, unboundedRatio float64) {
	ctx := context.Background()
	for s := range uint64(8) {
		rng := rand.New(rand.NewPCG(s, 77))
		cfg := defaultLSMConfig()
		cfg.keySpace, cfg.opsPerPart = 60, 50
		cfg.rangeDelRatio = 0.08
		cfg.unboundedRatio = unboundedRatio
		db := buildLSM(t, rng, cfg)
		require.NotEmpty(t, db.rangeDels)
		for range 20 {
			seq := db.randomSeq(rng)
			var keys [][]byte
			for i := range cfg.keySpace + 1 {
				keys = append(keys, []byte(testKey(i)))
			}
			out := make([]Result, len(keys))
			require.NoError(t, MultiGet(ctx, db.view, readEnv(), keys, seq, out))
			for i, k := range keys {
				want, ok := db.valueAt(string(k), seq)
				v, err := Get(ctx, db.view, readEnv(), k, seq, nil)
				if !ok {
					require.ErrorIs(t, err, base.ErrNotFound, "seed %d seq %d: Get(%s) = %q", s, seq, k, v.Data)
					require.False(t, out[i].Found, "seed %d seq %d: MultiGet(%s)", s, seq, k)
				} else {
					require.NoError(t, err)
					require.Equal(t, string(want), string(v.Data), "seed %d seq %d: Get(%s)", s, seq, k)
					require.True(t, out[i].Found, "seed %d seq %d: MultiGet(%s)", s, seq, k)
					require.Equal(t, string(want), string(out[i].Value.Data))
				}
				v.Release()
				out[i].Value.Release()
			}

			var lower, upper []byte
			if rng.IntN(2) == 0 {
				lower = []byte(testKey(rng.IntN(cfg.keySpace)))
				upper = []byte(testKey(rng.IntN(cfg.keySpace + 1)))
			}
			mk, mv := db.visibleAt(seq, lower, upper)
			m := &iterModel{keys: mk, values: mv, lower: lower, upper: upper, none: true}
			it := NewIterator(ctx, db.view, readEnv(), seq, IterOptions{LowerBound: lower, UpperBound: upper})
			for step := range 150 {
				key := []byte(testKey(rng.IntN(cfg.keySpace + 2)))
				if rng.IntN(2) == 0 {
					key = append(key, '~')
				}
				op := rng.IntN(8)
				ok := iterOp(it, m, op, key)
				require.NoError(t, it.Error())
				require.Equal(t, m.valid(), ok, "seed %d seq %d step %d op %d", s, seq, step, op)
				if ok {
					require.Equal(t, m.keys[m.pos], string(it.Key()), "seed %d seq %d step %d op %d", s, seq, step, op)
					require.Equal(t, string(m.values[m.pos]), string(it.Value()))
				}
			}
			require.NoError(t, it.Close())
		}
		db.src.closeAll()
	}
}

// FuzzIteratorOpsRangeDel is FuzzIteratorOps over an LSM with range
// tombstones in every source. Input: byte 0 picks the snapshot, bytes 1
// and 2 the bounds (0 = none), then one byte per operation: the low 3 bits
// the call, the rest the key of a seek.
func FuzzIteratorOpsRangeDel(f *testing.F) {
	rng := rand.New(rand.NewPCG(23, 23))
	cfg := defaultLSMConfig()
	cfg.keySpace, cfg.opsPerPart = 30, 40
	cfg.rangeDelRatio = 0.1
	cfg.unboundedRatio = 0.1
	db := buildLSM(f, rng, cfg)

	f.Add([]byte{0, 0, 0, 0, 2, 2, 3, 3, 1, 3, 2})
	f.Add([]byte{255, 5, 20, 1, 3, 3, 2, 2, 0, 2, 3, 2})
	f.Add([]byte{100, 0, 9, 4 | 8<<3, 3, 2, 5 | 12<<3, 2, 2, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 3 || len(data) > 3+maxIteratorOps {
			return
		}
		seq := base.SeqNum(data[0]) * (db.maxSeq + 1) / 255
		if data[0] == 255 {
			seq = base.MaxSeqNum
		}
		bound := func(b byte) []byte {
			if b == 0 {
				return nil
			}
			return []byte(testKey(int(b) % (cfg.keySpace + 2)))
		}
		lower, upper := bound(data[1]), bound(data[2])
		keys, values := db.visibleAt(seq, lower, upper)
		m := &iterModel{keys: keys, values: values, lower: lower, upper: upper, none: true}
		it := NewIterator(context.Background(), db.view, readEnv(), seq, IterOptions{LowerBound: lower, UpperBound: upper})
		defer func() {
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
		}()
		runIterOps(t, it, m, cfg, data[3:])
	})
}

// TestDelFilterUnbounded: an older source's entries under a newer source's
// unbounded tombstone end the child going forward without a seek (there is
// no end to seek to), and are skipped with one seek before its start going
// backward; at a read sequence number below the tombstone they survive.
func TestDelFilterUnbounded(t *testing.T) {
	m := memtable.New(1 << 20)
	for i := range 100 {
		require.NoError(t, m.Add(base.SeqNum(i+1), base.KindSet, fmt.Appendf(nil, "k%04d", i), []byte("v")))
	}
	newer := rangedel.New([]rangedel.Tombstone{
		{Start: []byte("k0010"), End: []byte("k0020"), Seq: 150},
		{Start: []byte("k0050"), Seq: 200},
	})
	for _, tc := range []struct {
		name      string
		readSeq   base.SeqNum
		lo, hi    []int // the ranges of keys seen, inclusive
		fwdSeeks  int
		backSeeks int
	}{
		{"both visible", base.MaxSeqNum, []int{0, 20}, []int{9, 49}, 1, 2},
		{"only the bounded one", 199, []int{0, 20}, []int{9, 99}, 1, 1},
		{"neither", 120, []int{0}, []int{99}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []string
			for j := range tc.lo {
				for i := tc.lo[j]; i <= tc.hi[j]; i++ {
					want = append(want, fmt.Sprintf("k%04d", i))
				}
			}
			c := &countingIter{InternalIterator: m.NewIter(nil, nil)}
			f := &delFilter{iter: c, seq: tc.readSeq, newer: []tombstones{{set: newer}}}
			var keys []string
			for kv := f.First(); kv != nil; kv = f.Next() {
				keys = append(keys, string(kv.K.UserKey))
			}
			require.Equal(t, want, keys)
			require.Equal(t, tc.fwdSeeks, c.seeks, "forward seeks")
			c.seeks, keys = 0, nil
			for kv := f.Last(); kv != nil; kv = f.Prev() {
				keys = append([]string{string(kv.K.UserKey)}, keys...)
			}
			require.Equal(t, want, keys)
			require.Equal(t, tc.backSeeks, c.seeks, "backward seeks")
		})
	}
}

// TestWrittenAfterUnbounded checks the conflict check of an unbounded range
// deletion (a nil end) and of bounded ones, over a memtable and a table:
// any point or tombstone at or after start, above after, is a write in it.
func TestWrittenAfterUnbounded(t *testing.T) {
	fs := vfs.NewMem()
	stats := statistics.New(statistics.LevelAll)
	src := newTestSource(t, fs, nil, stats)
	defer src.closeAll()
	vers := &manifest.Version{}
	kv := func(k string, seq base.SeqNum) tableKV {
		return tableKV{k: base.MakeInternalKey([]byte(k), seq, base.KindSet), v: []byte("v")}
	}
	// L1: points b@1, d@5, f@2 and a tombstone [h, j)@6.
	vers.Levels[1] = []*manifest.FileMetadata{writeTableDels(t, fs, 1, defaultLSMConfig().writerOpts,
		[]tableKV{kv("b", 1), kv("d", 5), kv("f", 2)},
		[]rangedel.Fragment{{Start: []byte("h"), End: []byte("j"), Seqs: []base.SeqNum{6}}})}
	src.expectLevels(vers)
	m := memtable.New(1 << 16)
	require.NoError(t, m.Add(10, base.KindSet, []byte("m"), []byte("v")))
	require.NoError(t, m.AddRangeDelete(12, []byte("p"), nil))
	view := &View{Version: vers, Tables: src, Stats: stats, Mems: []*memtable.MemTable{m}}

	for _, tc := range []struct {
		start, end string
		unbounded  bool
		after      base.SeqNum
		want       bool
	}{
		{start: "a", unbounded: true, after: 0, want: true},
		{start: "a", unbounded: true, after: 12, want: false},
		{start: "z", unbounded: true, after: 11, want: true}, // the memtable's unbounded tombstone
		{start: "z", unbounded: true, after: 12, want: false},
		{start: "n", unbounded: true, after: 11, want: true},
		{start: "n", end: "o", after: 0, want: false},
		{start: "p0", end: "q", after: 11, want: true}, // inside the unbounded tombstone
		{start: "k", unbounded: true, after: 10, want: true},
		{start: "k", unbounded: true, after: 9, want: true}, // m@10
		{start: "e", unbounded: true, after: 5, want: true}, // [h, j)@6
		{start: "e", end: "h", after: 4, want: false},       // f@2 only
		{start: "c", end: "h", after: 4, want: true},        // d@5
		{start: "", unbounded: true, after: 0, want: true},
		{start: "j", end: "m", after: 0, want: false},
	} {
		var end []byte
		if !tc.unbounded {
			end = []byte(tc.end)
		}
		got, err := WrittenAfter(context.Background(), view, readEnv(), []byte(tc.start), end, tc.after)
		require.NoError(t, err)
		require.Equal(t, tc.want, got, "[%q, %q) unbounded %v after %d", tc.start, tc.end, tc.unbounded, tc.after)
	}
}
