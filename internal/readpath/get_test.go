package readpath

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/memtable"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

func TestGetAgainstModel(t *testing.T) {
	for seed := range seeds(6) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 2))
			cfg := defaultLSMConfig()
			if seed%3 == 2 {
				cfg.cacheSize = 0 // every block read from the file
			}
			db := buildLSM(t, rng, cfg)
			ctx := context.Background()
			for range 600 {
				key := db.randomKey(rng, cfg.keySpace)
				seq := db.randomSeq(rng)
				want, wantOK := db.model.value(string(key), seq)
				v, err := Get(ctx, db.view, readEnv(), key, seq, nil)
				if !wantOK {
					require.ErrorIs(t, err, base.ErrNotFound, "Get(%q@%d)", key, seq)
					require.Nil(t, v.Data)
					continue
				}
				require.NoError(t, err, "Get(%q@%d)", key, seq)
				require.Equal(t, string(want), string(v.Data), "Get(%q@%d)", key, seq)
				v.Release()
				v.Release() // a second Release does nothing
			}
		})
	}
}

// testFile is a hand-written table for the small, exact tests.
type testFile struct {
	level int
	kvs   []string // "key@seq=value" or "key@seq.DEL"
}

// buildHandLSM writes the files (each level >= 1's files in key order, L0
// newest first) and memtables (newest first) described, with the cache and
// statistics given.
func buildHandLSM(t testing.TB, fs vfs.FS, files []testFile, mems [][]string, opts sstable.WriterOptions) (*View, *testSource) {
	stats := statistics.New(statistics.LevelAll)
	src := newTestSource(t, fs, nil, stats)
	vers := &manifest.Version{}
	for i, tf := range files {
		var kvs []tableKV
		for _, s := range tf.kvs {
			k, v := parseKV(t, s)
			kvs = append(kvs, tableKV{k: k, v: v})
		}
		vers.Levels[tf.level] = append(vers.Levels[tf.level], writeTable(t, fs, manifest.FileNum(i+1), opts, kvs))
	}
	v := &View{Version: vers, Tables: src, Stats: stats}
	for _, m := range mems {
		mt := memtable.New(1 << 16)
		for _, s := range m {
			k, val := parseKV(t, s)
			require.NoError(t, mt.Add(k.SeqNum(), k.Kind(), k.UserKey, val))
		}
		v.Mems = append(v.Mems, mt)
	}
	require.NoError(t, vers.CheckConsistency())
	src.expectLevels(vers)
	return v, src
}

func parseKV(t testing.TB, s string) (base.InternalKey, []byte) {
	var key string
	var seq uint64
	var rest string
	for i := range s {
		if s[i] == '@' {
			key = s[:i]
			rest = s[i+1:]
			break
		}
	}
	var n int
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		seq = seq*10 + uint64(rest[n]-'0')
		n++
	}
	switch rest[n:][0] {
	case '=':
		return base.MakeInternalKey([]byte(key), base.SeqNum(seq), base.KindSet), []byte(rest[n+1:])
	case '.':
		return base.MakeInternalKey([]byte(key), base.SeqNum(seq), base.KindDelete), nil
	}
	t.Fatalf("bad kv %q", s)
	return base.InternalKey{}, nil
}

// handFiles is a small LSM: file 1 and 2 in L0 (1 newest), 3 and 4 in L1, 5
// in L2, 6 in L3; plus two memtables.
var handFiles = []testFile{
	{level: 0, kvs: []string{"c@40=c40", "e@41.DEL"}},
	{level: 0, kvs: []string{"b@30=b30", "d@31=d31"}},
	{level: 1, kvs: []string{"a@20=a20", "c@21=c21"}},
	{level: 1, kvs: []string{"e@22=e22", "g@23=g23"}},
	{level: 2, kvs: []string{"a@10=a10", "f@11=f11", "h@12=h12"}},
	{level: 3, kvs: []string{"i@1=i1", "z@2=z2"}},
}

var handMems = [][]string{
	{"m@51=m51", "b@52.DEL"},
	{"m@50=m50", "n@53=n53"},
}

func TestGetOrderTickersAndAcquires(t *testing.T) {
	opts := sstable.WriterOptions{BloomBitsPerKey: 10, Checksum: checksum.CRC32C, Compression: compress.Snappy}
	v, src := buildHandLSM(t, vfs.NewMem(), handFiles, handMems, opts)
	ctx := context.Background()
	tests := []struct {
		key    string
		seq    base.SeqNum
		want   string // "" = not found
		ticker statistics.Ticker
		// acquired lists the files the Get acquires.
		acquired []manifest.FileNum
	}{
		{key: "m", seq: 100, want: "m51", ticker: statistics.MemtableHit},
		{key: "m", seq: 50, want: "m50", ticker: statistics.MemtableHit},
		{key: "b", seq: 100, ticker: statistics.MemtableHit},                                                 // a tombstone in the newest memtable
		{key: "b", seq: 51, want: "b30", ticker: statistics.GetHitL0, acquired: []manifest.FileNum{2}},       // file 1's range [c, e] excludes b
		{key: "c", seq: 100, want: "c40", ticker: statistics.GetHitL0, acquired: []manifest.FileNum{1}},      // newest L0 first
		{key: "c", seq: 39, want: "c21", ticker: statistics.GetHitL1, acquired: []manifest.FileNum{1, 2, 3}}, // too new in L0
		{key: "e", seq: 100, acquired: []manifest.FileNum{1}},                                                // an L0 tombstone hides L1's e
		{key: "e", seq: 40, want: "e22", ticker: statistics.GetHitL1, acquired: []manifest.FileNum{1, 4}},
		{key: "f", seq: 100, want: "f11", ticker: statistics.GetHitL2AndUp, acquired: []manifest.FileNum{4, 5}},
		{key: "a", seq: 100, want: "a20", ticker: statistics.GetHitL1, acquired: []manifest.FileNum{3}},
		{key: "a", seq: 15, want: "a10", ticker: statistics.GetHitL2AndUp, acquired: []manifest.FileNum{3, 5}},
		{key: "i", seq: 100, want: "i1", ticker: statistics.GetHitL2AndUp, acquired: []manifest.FileNum{6}},
		{key: "q", seq: 100, acquired: []manifest.FileNum{6}}, // only L3's file [i, z] can hold q
		{key: "0", seq: 100}, // below every file: nothing acquired
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s@%d", tc.key, tc.seq), func(t *testing.T) {
			src.resetAcquires()
			before := v.Stats.Snapshot()
			val, err := Get(ctx, v, readEnv(), []byte(tc.key), tc.seq, nil)
			if tc.want == "" {
				require.ErrorIs(t, err, base.ErrNotFound)
			} else {
				require.NoError(t, err)
				require.Equal(t, tc.want, string(val.Data))
			}
			val.Release()
			for n := manifest.FileNum(1); n <= 6; n++ {
				require.Equal(t, boolInt(containsNum(tc.acquired, n)), src.acquired(n), "acquires of file %d", n)
			}
			delta := v.Stats.Snapshot().Sub(before)
			require.EqualValues(t, 1, delta[statistics.NumberKeysRead])
			if tc.ticker != statistics.MemtableHit {
				require.EqualValues(t, 1, delta[statistics.MemtableMiss])
				require.EqualValues(t, 0, delta[statistics.MemtableHit])
			}
			for _, tk := range []statistics.Ticker{statistics.MemtableHit, statistics.GetHitL0, statistics.GetHitL1, statistics.GetHitL2AndUp} {
				require.Equal(t, boolInt(tk == tc.ticker && (tc.want != "" || tk == statistics.MemtableHit)), int(delta[tk]), "%s", tk)
			}
			require.EqualValues(t, len(tc.want), delta[statistics.BytesRead])
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func containsNum(ns []manifest.FileNum, n manifest.FileNum) bool {
	for _, m := range ns {
		if m == n {
			return true
		}
	}
	return false
}

func TestGetContextAndErrors(t *testing.T) {
	v, src := buildHandLSM(t, vfs.NewMem(), handFiles, handMems, sstable.WriterOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// A memtable hit needs no table: the context is not consulted.
	val, err := Get(ctx, v, readEnv(), []byte("m"), 100, nil)
	require.NoError(t, err)
	require.Equal(t, "m51", string(val.Data))
	// A table access fails with the context's error, before any Acquire.
	src.resetAcquires()
	_, err = Get(ctx, v, readEnv(), []byte("f"), 100, nil)
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, src.acquired(4)+src.acquired(5))

	// A table that cannot be opened fails the Get, naming it.
	boom := base.CorruptionErrorf("boom")
	src.failOpen[4] = boom
	_, err = Get(context.Background(), v, readEnv(), []byte("f"), 100, nil)
	require.ErrorIs(t, err, boom)
	require.True(t, base.IsCorruption(err))
	require.Contains(t, err.Error(), "000004")
	// An entry in a newer source decides before the failing table is needed.
	val, err = Get(context.Background(), v, readEnv(), []byte("c"), 100, nil)
	require.NoError(t, err)
	require.Equal(t, "c40", string(val.Data))
	val.Release()

	// A View without a version reads only the memtables.
	_, err = Get(context.Background(), &View{Mems: v.Mems}, readEnv(), []byte("f"), 100, nil)
	require.ErrorIs(t, err, base.ErrNotFound)
}

func TestGetValueHoldsTableRef(t *testing.T) {
	// A value of a mapped, uncompressed table points into the mapping: the
	// Value holds its table reference until Release.
	fs := vfs.NewMem()
	v, src := buildHandLSM(t, fs, handFiles, nil, sstable.WriterOptions{})
	src.fileOps.Mmap = true
	val, err := Get(context.Background(), v, readEnv(), []byte("z"), 100, nil)
	require.NoError(t, err)
	require.Equal(t, "z2", string(val.Data))
	require.EqualValues(t, 1, src.outstanding.Load())
	val.Release()
	require.Zero(t, src.outstanding.Load())
}

func TestGetAllocs(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	cfg := defaultLSMConfig()
	cfg.randomOpts = false
	db := buildLSM(t, rng, cfg)
	ctx := context.Background()
	env := readEnv()
	for _, key := range db.keys {
		for _, seq := range []base.SeqNum{db.maxSeq, db.maxSeq / 2} {
			// Warm the cache and open the tables.
			v, err := Get(ctx, db.view, env, []byte(key), seq, nil)
			if err == nil {
				v.Release()
			}
			allocs := testing.AllocsPerRun(20, func() {
				v, err := Get(ctx, db.view, env, []byte(key), seq, nil)
				if err == nil {
					v.Release()
				}
			})
			require.Zero(t, allocs, "Get(%q@%d)", key, seq)
		}
	}
}

func TestLatestSeqNumAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 2))
	cfg := defaultLSMConfig()
	db := buildLSM(t, rng, cfg)
	for range 400 {
		key := db.randomKey(rng, cfg.keySpace)
		seq, found, err := LatestSeqNum(context.Background(), db.view, readEnv(), key)
		require.NoError(t, err)
		e, ok := db.model.get(string(key), ^base.SeqNum(0))
		require.Equal(t, ok, found, "%q", key)
		require.Equal(t, e.seq, seq, "%q", key)
	}

	v, src := buildHandLSM(t, vfs.NewMem(), handFiles, handMems, sstable.WriterOptions{BloomBitsPerKey: 10})
	for _, tc := range []struct {
		key string
		seq base.SeqNum // 0 = none
	}{{"b", 52}, {"n", 53}, {"e", 41}, {"f", 11}, {"z", 2}, {"q", 0}, {"0", 0}} {
		seq, found, err := LatestSeqNum(context.Background(), v, readEnv(), []byte(tc.key))
		require.NoError(t, err)
		require.Equal(t, tc.seq != 0, found, tc.key)
		require.Equal(t, tc.seq, seq, tc.key)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := LatestSeqNum(ctx, v, readEnv(), []byte("f"))
	require.ErrorIs(t, err, context.Canceled)
	_ = src
}

// TestLatestSeqNumPartitionedFilters checks that the conflict check of
// optimistic transactions asks a partitioned table's filter partition:
// keys that fall inside the tables' ranges but were never written must be
// ruled out without reading data blocks. (Reader.MayContain, which has
// only the hash, cannot tell which partition to ask and answers maybe.)
func TestLatestSeqNumPartitionedFilters(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 3))
	cfg := defaultLSMConfig()
	cfg.keySpace, cfg.opsPerPart, cfg.mems, cfg.randomOpts, cfg.deleteRatio = 2000, 1500, 0, false, 0
	cfg.writerOpts.IndexPartitionSize = 64
	db := buildLSM(t, rng, cfg)
	dataReads := func() uint64 {
		return db.stats.TickerCount(statistics.BlockCacheDataMiss) + db.stats.TickerCount(statistics.BlockCacheDataHit)
	}
	before := dataReads()
	const absent = 500
	for i := range absent {
		// Between two written keys: inside the tables' ranges.
		key := []byte(testKey(rng.IntN(cfg.keySpace)) + "x")
		_, found, err := LatestSeqNum(context.Background(), db.view, readEnv(), key)
		require.NoError(t, err)
		require.False(t, found, "absent key %d %q", i, key)
	}
	// Bloom filters at 10 bits per key let about 1% through per table.
	require.Less(t, dataReads()-before, uint64(absent/10), "data blocks read for keys no table holds")
}
