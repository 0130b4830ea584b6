package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPercentile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sorted []int64
		p      float64
		want   float64
	}{
		{"empty", nil, 50, 0},
		{"one", []int64{7}, 99, 7},
		{"p50 of 1..100", seq(100), 50, 50},
		{"p99 of 1..100", seq(100), 99, 99},
		{"p100 of 1..100", seq(100), 100, 100},
		{"p0 clamps to the minimum", seq(10), 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, percentile(tc.sorted, tc.p))
		})
	}
}

func seq(n int) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = int64(i + 1)
	}
	return s
}

func TestReservoirKeepsCapacity(t *testing.T) {
	r := newReservoir(100, 1)
	for i := range 10000 {
		r.add(time.Duration(i))
	}
	require.Len(t, r.s, 100)
	require.EqualValues(t, 10000, r.n)
	// A uniform sample of 0..9999 has its values spread over the range.
	var high int
	for _, v := range r.s {
		if v >= 5000 {
			high++
		}
	}
	require.InDelta(t, 50, high, 25)
}

func TestMakeKey(t *testing.T) {
	for _, tc := range []struct {
		k, offset int
		want      []byte
	}{
		{0, 0, []byte{0, 0, 0, 0}},
		{1, 0, []byte{0, 0, 0, 3}},
		{1, 1, []byte{0, 0, 0, 4}},
		{0x555555, 0, []byte{0, 0xff, 0xff, 0xff}},
	} {
		got := makeKey(make([]byte, keySize), tc.k, tc.offset)
		require.Len(t, got, keySize)
		require.Equal(t, tc.want, got[:4])
		require.Equal(t, make([]byte, keySize-4), got[4:])
	}
}

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"-engines=shale,pebble"}, ""},
		{[]string{"-threads=1,8"}, ""},
		{[]string{"-engines=leveldb"}, "unknown engine"},
		{[]string{"-engines=rocksdb"}, "use -rocksdb"},
		{[]string{"-rounds=0"}, "want at least 1"},
		{[]string{"-rocksdb=maybe"}, "want auto, install or off"},
		{[]string{"-variant=big"}, "-variant"},
		{[]string{"-batch-keys=-1"}, "-batch-keys"},
		{[]string{"-pebble-cache=some"}, "want blocks or total"},
		{[]string{"-threads=0"}, "bad thread count"},
		{[]string{"-max-data=12XB"}, "bad size"},
		{[]string{"-max-data=1KiB"}, "holds only"},
		{[]string{"-stats=some"}, "want off, default or all"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := parseFlags(tc.args)
			if tc.wantErr == "" {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, tc.wantErr)
			}
		})
	}
}

// TestWorkload runs every child variant in-process on every engine (and
// db_bench when installed) at a tiny size and prints the report from the
// results as one round.
func TestWorkload(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every engine")
	}
	dir := t.TempDir()
	cfg, err := parseFlags([]string{"-max-data=512KiB", "-phase-duration=30ms", "-warmup=5ms",
		"-threads=1,2", "-stats-rounds=2", "-stats-duration=20ms", "-batch-keys=2000", "-dir=" + dir})
	require.NoError(t, err)
	engines := append([]string{}, cfg.engines...)
	dbBench, _ := findDBBench("auto")
	if dbBench != "" {
		engines = append(engines, engineRocksDB)
	}
	rr := roundResults{}
	for _, jb := range plannedJobs(cfg, engines) {
		t.Run(jb.engine+"/"+jb.variant, func(t *testing.T) {
			var r *engineResult
			if jb.engine == engineRocksDB {
				c := *cfg
				c.phaseDuration = time.Second // db_bench's -duration is in whole seconds
				r, err = runRocksDB(&c, dbBench, jb.variant, dir)
				require.NoError(t, err)
			} else {
				c := *cfg
				c.variant = jb.variant
				f, err := os.Create(filepath.Join(t.TempDir(), "out.json"))
				require.NoError(t, err)
				require.NoError(t, runChild(&c, jb.engine, f))
				require.NoError(t, f.Close())
				b, err := os.ReadFile(f.Name())
				require.NoError(t, err)
				r = &engineResult{}
				require.NoError(t, json.Unmarshal(b, r))
				require.EqualValues(t, r.NumKeys, r.Fill.Keys)
			}
			require.Equal(t, cfg.numKeys(), r.NumKeys)
			require.Greater(t, r.TablesMiB, 0.0)
			require.Positive(t, r.PeakRSSMiB)
			p, ok := r.read(phaseGetHit, 1)
			require.True(t, ok)
			require.Positive(t, p.NsPerOp)
			if jb.variant == variantMain && jb.engine != engineRocksDB {
				require.EqualValues(t, r.NumKeys, r.FillBatch.Keys)
				for _, threads := range cfg.threads {
					for _, phase := range []string{phaseGetHit, phaseGetHitCopy, phaseGetMiss, phaseMultiGet, phaseNext, phaseSeek} {
						p, ok := r.read(phase, threads)
						require.True(t, ok, "%s/%d", phase, threads)
						require.Positive(t, p.Ops)
						require.LessOrEqual(t, p.P50Ns, p.P99Ns)
					}
				}
				if bigBatchEngine(jb.engine) {
					require.Len(t, r.BigBatch, 2)
					require.Positive(t, r.BigBatch[0].AllocBytes)
				}
				if jb.engine == "shale" {
					require.NotNil(t, r.StatsCost)
					// 11 candidates: hits, misses and cached hits at the
					// statistics levels (the façade-vs-engine ones left with
					// engine.DB, see BenchmarkFacadeCost in the engine).
					require.Len(t, r.StatsCost.Median, 11)
				}
			}
			rr[resultKey(jb.engine, jb.variant)] = r
		})
	}
	rep := &report{Meta: runMeta{Engines: engines, CPUs: 2, Threads: cfg.threads, Load1: []float64{0.1}}, Rounds: []roundResults{rr}}
	var buf bytes.Buffer
	printReport(&buf, cfg, rep)
	s := buf.String()
	for _, want := range []string{"| figure | shale | pebble | goleveldb | badger", "Get hit (µs/op)", "MultiGet(16)", "×**",
		"peak RSS, 4 MiB memtables", "one batch of 2000 random keys", "Get miss: default level / disabled",
		"cached Get hit: default level / disabled", "BenchmarkGetHit/threads=1/engine=shale 1 ", "BenchmarkBigBatchSorted/engine=pebble"} {
		require.Contains(t, s, want)
	}
	if dbBench != "" {
		require.Contains(t, s, "BenchmarkDBGetShape/engine=rocksdb")
	}
	t.Log("\n" + s)
}
