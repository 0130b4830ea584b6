package readpath

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// iterModel is the reference iterator: a position in the sorted visible
// keys, -1 before the start and len after the end; none before the first
// positioning.
type iterModel struct {
	keys   []string
	values [][]byte
	lower  []byte
	upper  []byte
	pos    int
	none   bool
}

func (m *iterModel) valid() bool { return !m.none && m.pos >= 0 && m.pos < len(m.keys) }

func (m *iterModel) seekGE(key []byte) {
	if m.lower != nil && string(key) < string(m.lower) {
		key = m.lower
	}
	m.none = false
	m.pos = len(m.keys)
	for i, k := range m.keys {
		if k >= string(key) {
			m.pos = i
			break
		}
	}
}

func (m *iterModel) seekLT(key []byte) {
	if m.upper != nil && string(key) > string(m.upper) {
		key = m.upper
	}
	m.none = false
	m.pos = -1
	for i, k := range m.keys {
		if k < string(key) {
			m.pos = i
		}
	}
}

func (m *iterModel) next() {
	if m.none || m.pos >= len(m.keys) {
		return
	}
	m.pos++
}

func (m *iterModel) prev() {
	if m.none || m.pos < 0 {
		return
	}
	m.pos--
}

// randomBound returns nil or a key near the key space.
func randomBound(rng *rand.Rand, keySpace int) []byte {
	if rng.IntN(3) == 0 {
		return nil
	}
	return []byte(testKey(rng.IntN(keySpace + 4)))
}

func TestIteratorAgainstModel(t *testing.T) {
	for seed := range seeds(8) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 4))
			cfg := defaultLSMConfig()
			if seed%4 == 3 {
				cfg.cacheSize = 0
			}
			checkIteratorAgainstModel(t, rng, cfg, 30)
		})
	}
}

// TestIteratorShapesAgainstModel runs the model test over LSMs with one
// source, which the Iterator moves without a merging iterator, and with the
// engine's empty mutable memtable, which it leaves out.
func TestIteratorShapesAgainstModel(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		mems, l0, levels      int
		emptyMem, oneFilePerL bool
	}{
		{name: "shape=one-level", levels: 1},
		{name: "shape=one-table", levels: 1, oneFilePerL: true},
		{name: "shape=empty-mem+one-level", levels: 1, emptyMem: true},
		{name: "shape=one-l0", l0: 1},
		{name: "shape=one-mem", mems: 1},
		{name: "shape=empty-mem+mem+levels", mems: 1, levels: 2, emptyMem: true},
		{name: "shape=empty-mem", emptyMem: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := range seeds(4) {
				rng := rand.New(rand.NewPCG(seed, 5))
				cfg := defaultLSMConfig()
				cfg.mems, cfg.l0, cfg.levels = tc.mems, tc.l0, tc.levels
				cfg.emptyMem, cfg.oneFilePerLevel = tc.emptyMem, tc.oneFilePerL
				checkIteratorAgainstModel(t, rng, cfg, 15)
			}
		})
	}
}

// checkIteratorAgainstModel builds a random LSM shaped by cfg and compares
// rounds random operation sequences, at random snapshots and bounds, with
// the model.
func checkIteratorAgainstModel(t *testing.T, rng *rand.Rand, cfg lsmConfig, rounds int) {
	t.Helper()
	db := buildLSM(t, rng, cfg)
	for range rounds {
		lower, upper := randomBound(rng, cfg.keySpace), randomBound(rng, cfg.keySpace)
		if lower != nil && upper != nil && string(lower) > string(upper) && rng.IntN(8) != 0 {
			lower, upper = upper, lower // mostly; sometimes empty bounds
		}
		seq := db.randomSeq(rng)
		env := readEnv()
		env.AsyncIO = rng.IntN(2) == 0
		keys, values := db.model.visible(seq, lower, upper)
		m := &iterModel{keys: keys, values: values, lower: lower, upper: upper, none: true}
		db.src.resetAcquires()
		it := NewIterator(context.Background(), db.view, env, seq, IterOptions{LowerBound: lower, UpperBound: upper})
		var trace []string
		for range 80 {
			var ok bool
			var op string
			switch r := rng.IntN(10); {
			case r == 0:
				op, ok = "First", it.First()
				m.seekGE(nil)
			case r == 1:
				op, ok = "Last", it.Last()
				m.seekLT([]byte("\xff"))
			case r == 2:
				k := db.randomKey(rng, cfg.keySpace)
				op, ok = "SeekGE "+string(k), it.SeekGE(k)
				m.seekGE(k)
			case r == 3:
				k := db.randomKey(rng, cfg.keySpace)
				op, ok = "SeekLT "+string(k), it.SeekLT(k)
				m.seekLT(k)
			case r == 4 && it.Valid():
				// The iterator's own key, which may point into a
				// block the seek releases.
				k := it.Key()
				mk := []byte(m.keys[m.pos])
				if rng.IntN(2) == 0 {
					op, ok = "SeekGE Key()", it.SeekGE(k)
					m.seekGE(mk)
				} else {
					op, ok = "SeekLT Key()", it.SeekLT(k)
					m.seekLT(mk)
				}
			case r < 7:
				op, ok = "Next", it.Next()
				m.next()
			default:
				op, ok = "Prev", it.Prev()
				m.prev()
			}
			trace = append(trace, op)
			require.NoError(t, it.Error())
			msg := fmt.Sprintf("bounds [%q, %q) seq %d ops:\n%s", lower, upper, seq, strings.Join(trace, "\n"))
			require.Equal(t, m.valid(), ok, msg)
			require.Equal(t, ok, it.Valid(), msg)
			if ok {
				require.Equal(t, m.keys[m.pos], string(it.Key()), msg)
				require.Equal(t, string(m.values[m.pos]), string(it.Value()), msg)
			} else {
				require.Nil(t, it.Key())
			}
		}
		require.NoError(t, it.Close())
		require.NoError(t, it.Close())
		for level, files := range db.view.Version.Levels {
			for _, f := range files {
				if db.src.acquired(f.FileNum) == 0 {
					continue
				}
				require.True(t, (lower == nil || string(f.Largest.UserKey) >= string(lower)) &&
					(upper == nil || string(f.Smallest.UserKey) < string(upper)),
					"L%d table %s acquired outside bounds [%q, %q)", level, f, lower, upper)
			}
		}
	}
}

func TestIteratorFullScans(t *testing.T) {
	// Whole scans both ways at every snapshot of a small history.
	rng := rand.New(rand.NewPCG(11, 4))
	cfg := defaultLSMConfig()
	cfg.keySpace, cfg.opsPerPart = 40, 40
	db := buildLSM(t, rng, cfg)
	step := base.SeqNum(1)
	if seeds(4) < 4 {
		step = 4 // every 4th snapshot under the race detector
	}
	for seq := base.SeqNum(0); seq <= db.maxSeq+1; seq += step {
		keys, _ := db.model.visible(seq, nil, nil)
		it := NewIterator(context.Background(), db.view, readEnv(), seq, IterOptions{})
		var fwd, bwd []string
		for ok := it.First(); ok; ok = it.Next() {
			fwd = append(fwd, string(it.Key()))
		}
		for ok := it.Last(); ok; ok = it.Prev() {
			bwd = append([]string{string(it.Key())}, bwd...)
		}
		require.NoError(t, it.Close())
		require.Equal(t, keys, fwd, "seq %d", seq)
		require.Equal(t, keys, bwd, "seq %d", seq)
	}
}

func TestIteratorNeverAcquiresTablesOutsideBounds(t *testing.T) {
	v, src := buildHandLSM(t, vfs.NewMem(), handFiles, handMems, sstable.WriterOptions{BloomBitsPerKey: 10})
	// Files: 1 L0 [c,e], 2 L0 [b,d], 3 L1 [a,c], 4 L1 [e,g], 5 L2 [a,h], 6 L3 [i,z].
	tests := []struct {
		lower, upper string
		want         []string
		acquirable   []manifest.FileNum
	}{
		{lower: "", upper: "", want: []string{"a", "c", "d", "f", "g", "h", "i", "m", "n", "z"}, acquirable: []manifest.FileNum{1, 2, 3, 4, 5, 6}},
		{lower: "i", upper: "", want: []string{"i", "m", "n", "z"}, acquirable: []manifest.FileNum{6}},
		{lower: "", upper: "b", want: []string{"a"}, acquirable: []manifest.FileNum{3, 5}},
		{lower: "e", upper: "f", want: nil, acquirable: []manifest.FileNum{1, 4, 5}},
		{lower: "d", upper: "e", want: []string{"d"}, acquirable: []manifest.FileNum{1, 2, 5}},
		{lower: "h", upper: "i", want: []string{"h"}, acquirable: []manifest.FileNum{5}},
		{lower: "zz", upper: "", want: nil, acquirable: nil},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("[%s,%s)", tc.lower, tc.upper), func(t *testing.T) {
			var lower, upper []byte
			if tc.lower != "" {
				lower = []byte(tc.lower)
			}
			if tc.upper != "" {
				upper = []byte(tc.upper)
			}
			src.resetAcquires()
			it := NewIterator(context.Background(), v, readEnv(), 100, IterOptions{LowerBound: lower, UpperBound: upper})
			var got []string
			for ok := it.First(); ok; ok = it.Next() {
				got = append(got, string(it.Key()))
			}
			var back []string
			for ok := it.Last(); ok; ok = it.Prev() {
				back = append([]string{string(it.Key())}, back...)
			}
			require.NoError(t, it.Close())
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.want, back)
			for n := manifest.FileNum(1); n <= 6; n++ {
				if !containsNum(tc.acquirable, n) {
					require.Zero(t, src.acquired(n), "file %d is outside the bounds", n)
				}
			}
		})
	}
	// Creating an iterator opens nothing.
	src.resetAcquires()
	it := NewIterator(context.Background(), v, readEnv(), 100, IterOptions{})
	for n := manifest.FileNum(1); n <= 6; n++ {
		require.Zero(t, src.acquired(n))
	}
	require.NoError(t, it.Close())
}

func TestIteratorPositionsAtEnds(t *testing.T) {
	v, _ := buildHandLSM(t, vfs.NewMem(), handFiles, handMems, sstable.WriterOptions{})
	it := NewIterator(context.Background(), v, readEnv(), 100, IterOptions{})
	defer func() { require.NoError(t, it.Close()) }()
	// Unpositioned: Next and Prev do nothing.
	require.False(t, it.Next())
	require.False(t, it.Prev())
	// Off the end: Prev comes back to the last key.
	require.True(t, it.Last())
	require.False(t, it.Next())
	require.False(t, it.Next())
	require.True(t, it.Prev())
	require.Equal(t, "z", string(it.Key()))
	// Off the start: Next comes back to the first key.
	require.True(t, it.First())
	require.False(t, it.Prev())
	require.True(t, it.Next())
	require.Equal(t, "a", string(it.Key()))
	// A SeekGE past everything is after the end; a SeekLT before everything
	// is before the start.
	require.False(t, it.SeekGE([]byte("zz")))
	require.True(t, it.Prev())
	require.Equal(t, "z", string(it.Key()))
	require.False(t, it.SeekLT([]byte("a")))
	require.True(t, it.Next())
	require.Equal(t, "a", string(it.Key()))
	// Seeking to the iterator's own key (which, going backward, is in its
	// buffer) works.
	require.True(t, it.SeekLT([]byte("d")))
	require.Equal(t, "c", string(it.Key()))
	require.True(t, it.SeekGE(it.Key()))
	require.Equal(t, "c", string(it.Key()))
	require.True(t, it.SeekLT(it.Key()))
	require.Equal(t, "a", string(it.Key()), "b is deleted")
}

func TestIteratorTickers(t *testing.T) {
	v, _ := buildHandLSM(t, vfs.NewMem(), handFiles, handMems, sstable.WriterOptions{})
	before := v.Stats.Snapshot()
	it := NewIterator(context.Background(), v, readEnv(), 100, IterOptions{})
	require.True(t, it.SeekGE([]byte("b")))   // c=c40: 4 bytes
	require.True(t, it.Next())                // d=d31
	require.True(t, it.Prev())                // c
	require.True(t, it.First())               // a=a20
	require.False(t, it.SeekGE([]byte("zz"))) // not found
	require.True(t, it.Prev())                // z=z2
	require.False(t, it.Next())
	delta := v.Stats.Snapshot().Sub(before)
	require.EqualValues(t, 3, delta[statistics.NumberDBSeek])
	require.EqualValues(t, 2, delta[statistics.NumberDBSeekFound])
	require.EqualValues(t, 0, delta[statistics.NumberDBNext], "Next and Prev are counted at Close")
	require.NoError(t, it.Close())
	delta = v.Stats.Snapshot().Sub(before)
	require.EqualValues(t, 2, delta[statistics.NumberDBNext])
	require.EqualValues(t, 1, delta[statistics.NumberDBNextFound])
	require.EqualValues(t, 2, delta[statistics.NumberDBPrev])
	require.EqualValues(t, 2, delta[statistics.NumberDBPrevFound])
	require.EqualValues(t, 4+4+4+4+3, delta[statistics.IterBytesRead])
	require.EqualValues(t, 2, v.Stats.HistogramData(statistics.DBSeek).Count, "SeekGE twice")
}

func TestIteratorContext(t *testing.T) {
	v, src := buildHandLSM(t, vfs.NewMem(), handFiles, handMems, sstable.WriterOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	it := NewIterator(ctx, v, readEnv(), 100, IterOptions{})
	require.False(t, it.First())
	require.ErrorIs(t, it.Error(), context.Canceled)
	require.False(t, it.Next())
	require.False(t, it.SeekGE([]byte("a")), "an error is final")
	require.ErrorIs(t, it.Close(), context.Canceled)
	require.NoError(t, it.Close())

	// A context cancelled while the iterator runs stops it at its next
	// table or block (here L1's second table, once the first is done).
	live, cancelLive := context.WithCancel(context.Background())
	it = NewIterator(live, v, readEnv(), 100, IterOptions{})
	require.True(t, it.First())
	require.Equal(t, "a", string(it.Key()))
	cancelLive()
	for it.Next() {
	}
	require.ErrorIs(t, it.Error(), context.Canceled)
	require.ErrorIs(t, it.Close(), context.Canceled)

	// A table that cannot be opened stops the iterator with its error.
	boom := base.CorruptionErrorf("boom")
	src.failOpen[6] = boom
	it = NewIterator(context.Background(), v, readEnv(), 100, IterOptions{})
	require.False(t, it.Last())
	require.ErrorIs(t, it.Error(), boom)
	require.Contains(t, it.Error().Error(), "000006")
	require.ErrorIs(t, it.Close(), boom)
}

// TestIteratorOneLevelErrors checks that an Iterator over one level and the
// engine's empty mutable memtable, which moves the level iterator without a
// merging iterator, stops at an error as the merged one does.
func TestIteratorOneLevelErrors(t *testing.T) {
	files := []testFile{
		{level: 1, kvs: []string{"a@20=a20", "c@21=c21"}},
		{level: 1, kvs: []string{"e@22=e22", "g@23=g23"}},
	}
	v, src := buildHandLSM(t, vfs.NewMem(), files, [][]string{{}}, sstable.WriterOptions{})
	require.True(t, v.Mems[0].Empty())

	it := NewIterator(context.Background(), v, readEnv(), 100, IterOptions{})
	require.True(t, it.iter == base.InternalIterator(&it.levels[0]), "the level iterator, unmerged")
	var got []string
	for ok := it.Last(); ok; ok = it.Prev() {
		got = append(got, string(it.Key()))
	}
	require.Equal(t, []string{"g", "e", "c", "a"}, got)
	require.NoError(t, it.Close())

	boom := base.CorruptionErrorf("boom")
	src.failOpen[2] = boom
	it = NewIterator(context.Background(), v, readEnv(), 100, IterOptions{})
	require.True(t, it.First())
	require.True(t, it.Next())
	require.Equal(t, "c", string(it.Key()))
	require.False(t, it.Next(), "the second table cannot be opened")
	require.ErrorIs(t, it.Error(), boom)
	require.Contains(t, it.Error().Error(), "000002")
	require.False(t, it.Prev(), "an error is final")
	require.False(t, it.First(), "an error is final")
	require.ErrorIs(t, it.Close(), boom)

	ctx, cancel := context.WithCancel(context.Background())
	delete(src.failOpen, 2)
	it = NewIterator(ctx, v, readEnv(), 100, IterOptions{})
	require.True(t, it.SeekGE([]byte("b")))
	require.Equal(t, "c", string(it.Key()))
	cancel()
	require.False(t, it.Next(), "the next table is not acquired under a done context")
	require.ErrorIs(t, it.Error(), context.Canceled)
	require.ErrorIs(t, it.Close(), context.Canceled)
}

func TestIteratorNextAllocs(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	rng := rand.New(rand.NewPCG(5, 4))
	cfg := defaultLSMConfig()
	cfg.randomOpts = false
	// Moving into another table of a level opens a table iterator, which
	// allocates; within the tables, over cached blocks, nothing does.
	cfg.oneFilePerLevel = true
	db := buildLSM(t, rng, cfg)
	it := NewIterator(context.Background(), db.view, readEnv(), db.maxSeq, IterOptions{})
	defer func() { require.NoError(t, it.Close()) }()
	// One pass opens every table and loads every block into the cache.
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	require.Greater(t, n, 100)
	require.True(t, it.First())
	allocs := testing.AllocsPerRun(n/2, func() {
		if !it.Next() {
			t.Fatal("ran off the end")
		}
	})
	require.Zero(t, allocs)
	allocs = testing.AllocsPerRun(n/4, func() {
		if !it.Prev() {
			t.Fatal("ran off the start")
		}
	})
	require.Zero(t, allocs)
}

// TestIteratorNextAllocsUncached is TestIteratorNextAllocs for the scan
// the side-by-side run measures: one level, one source (the Iterator moves
// the level iterator itself), and a block cache far smaller than the data,
// so that most blocks come through the table iterator's readahead and are
// loaded into the cache, evicting others. Loading recycles the evicted
// blocks' buffers and entries, so the budget is still zero.
func TestIteratorNextAllocsUncached(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	rng := rand.New(rand.NewPCG(5, 4))
	cfg := defaultLSMConfig()
	cfg.randomOpts = false
	cfg.oneFilePerLevel = true
	cfg.mems, cfg.l0, cfg.levels = 0, 0, 1
	cfg.keySpace, cfg.opsPerPart, cfg.deleteRatio = 20000, 8000, 0
	cfg.cacheSize = 16 << 10
	db := buildLSM(t, rng, cfg)
	it := NewIterator(context.Background(), db.view, readEnv(), db.maxSeq, IterOptions{})
	defer func() { require.NoError(t, it.Close()) }()
	require.Same(t, &it.levels[0], it.iter, "one level: no merging iterator")
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	require.Greater(t, n, 1000)
	before := db.stats.TickerCount(statistics.BlockCacheDataMiss)
	require.True(t, it.First())
	allocs := testing.AllocsPerRun(2*n, func() {
		if !it.Next() && !it.First() {
			t.Fatal("empty")
		}
	})
	require.Greater(t, db.stats.TickerCount(statistics.BlockCacheDataMiss)-before, uint64(100), "blocks were loaded")
	require.Zero(t, allocs)
}
