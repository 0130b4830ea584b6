package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/perf/benchfmt"
)

// syntheticRounds is three rounds of shale and Pebble with known figures:
// shale's Get hit takes 1, 2 and 3 µs and Pebble's 2 µs each time.
func syntheticRounds() []roundResults {
	var rounds []roundResults
	for i, shaleUs := range []float64{1, 2, 3} {
		mk := func(engine string, getUs, rssMiB float64) *engineResult {
			return &engineResult{
				Engine: engine, Variant: variantMain, NumKeys: 100,
				Fill:       phaseResult{Name: phaseFill, Ops: 100, NsPerOp: 4000},
				Reads:      []phaseResult{{Name: phaseGetHit, Threads: 1, Ops: 10, NsPerOp: getUs * 1e3}},
				PeakRSSMiB: rssMiB,
				BigBatch:   []bigBatchResult{{Order: orderRandom, Keys: 10, Seconds: 0.5, AllocBytes: 1 << 20}},
			}
		}
		rounds = append(rounds, roundResults{
			resultKey("shale", variantMain):  mk("shale", shaleUs, 100+float64(i)),
			resultKey("pebble", variantMain): mk("pebble", 2, 100),
		})
	}
	return rounds
}

func TestSpreadAndRatios(t *testing.T) {
	cfg, err := parseFlags([]string{"-engines=shale,pebble"})
	require.NoError(t, err)
	rounds := syntheticRounds()
	var get figure
	for _, f := range figures(cfg) {
		if f.bench == "GetHit/threads=1" {
			get = f
		}
	}
	require.Equal(t, spread{1, 2, 3}, get.values(rounds, "shale"))
	require.Equal(t, "2.00 (1.00–3.00)", get.values(rounds, "shale").String())
	require.Equal(t, spread{0.5, 1, 1.5}, get.ratios(rounds, "shale", "pebble"))
	require.Equal(t, "1.00× (0.500–1.50)", ratioString(get.ratios(rounds, "shale", "pebble")))
	require.Empty(t, get.values(rounds, "badger"))
}

func TestVerdict(t *testing.T) {
	for _, tc := range []struct {
		s       spread
		limit   float64
		atLeast bool
		want    string
	}{
		{spread{0.5, 0.6, 0.7}, 0.8, false, "met in every round"},
		{spread{0.5, 0.6, 0.9}, 0.8, false, "met at the median, not in every round"},
		{spread{0.5, 0.9, 0.9}, 0.8, false, "not met at the median (met in some rounds)"},
		{spread{0.9, 1.0}, 0.8, false, "not met in any round"},
		{spread{1.9, 2.0}, 1.8, true, "met in every round"},
		{nil, 1, false, "not measured"},
	} {
		require.Equal(t, tc.want, verdict(tc.s, tc.limit, tc.atLeast), "%v", tc.s)
	}
}

// TestReportIsBenchstatInput reads the whole Markdown report the way
// benchstat does (golang.org/x/perf/benchfmt): every per-round figure
// must come out as a result, with the engine as a name key, and nothing
// else in the file may be taken for a result or a syntax error.
func TestReportIsBenchstatInput(t *testing.T) {
	cfg, err := parseFlags([]string{"-engines=shale,pebble", "-batch-keys=10"})
	require.NoError(t, err)
	rep := &report{Meta: runMeta{Engines: []string{"shale", "pebble"}, GOOS: "linux", GOARCH: "amd64",
		CPUModel: "Test CPU", CPUs: 2, Load1: []float64{1.5, 2}, Threads: cfg.threads,
		DBBenchRaw: []string{"readrandom   :       2.401 micros/op 416443 ops/sec 1.001 seconds 416999 operations;"}},
		Rounds: syntheticRounds()}
	var buf bytes.Buffer
	printReport(&buf, cfg, rep)
	require.Contains(t, buf.String(), "taken under load")

	r := benchfmt.NewReader(bytes.NewReader(buf.Bytes()), "RESULTS.md")
	counts := map[string]int{}
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.Result:
			engine := ""
			_, parts := rec.Name.Parts()
			for _, p := range parts {
				if v, ok := strings.CutPrefix(string(p), "/engine="); ok {
					engine = v
				}
			}
			require.NotEmpty(t, engine, "%s", rec.Name)
			counts[string(rec.Name.Base())+" "+rec.Values[0].Unit]++
			require.Equal(t, "Test CPU", rec.GetConfig("cpu"))
		case *benchfmt.SyntaxError:
			t.Fatalf("benchstat cannot read the report: %v", rec)
		}
	}
	require.NoError(t, r.Err())
	// Three rounds × two engines of each figure both engines report.
	require.Equal(t, 6, counts["GetHit sec/op"])
	require.Equal(t, 6, counts["FillRandom sec/op"])
	require.Equal(t, 6, counts["BigBatchRandomAlloc B/op"])
	require.Equal(t, 6, counts["PeakRSS peak-RSS-B"])
}

func TestParseDBBench(t *testing.T) {
	out := []byte(`Initializing RocksDB Options from command-line flags
DB path: [/dev/shm/x]
filluniquerandom :       5.060 micros/op 197633 ops/sec 0.506 seconds 100000 operations;   51.3 MB/s
compact      :  202047.000 micros/op 4 ops/sec 0.202 seconds 1 operations;
readrandom   :       2.401 micros/op 416443 ops/sec 1.001 seconds 416999 operations;  108.0 MB/s (416999 of 416999 found)
readmissing  :       0.396 micros/op 2517044 ops/sec 1.003 seconds 2523999 operations; (0 of 2523999 found)
`)
	figs := parseDBBench(out)
	require.Len(t, figs, 4)
	require.Equal(t, "filluniquerandom", figs[0].name)
	require.Equal(t, 5.060, figs[0].usPerOp)
	require.EqualValues(t, 100000, figs[0].ops)
	require.Equal(t, "compact", figs[1].name)
	require.Equal(t, 202047.0, figs[1].usPerOp)
	require.Equal(t, "readmissing", figs[3].name)
	require.EqualValues(t, 2523999, figs[3].ops)
}

// TestReportFromJSON re-renders a -json file: the figures come from the
// file, and the settings it records win over the flags.
func TestReportFromJSON(t *testing.T) {
	rep := &report{Meta: runMeta{Engines: []string{"shale", "pebble"}, Threads: []int{1}, CacheBytes: 8 << 20,
		MemtableBytes: 4 << 20, BatchKeys: 10, Warmup: "1s"}, Rounds: syntheticRounds()}
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "run.json")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	cfg, err := parseFlags([]string{"-from-json=" + path, "-threads=1,8"})
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, reportFromJSON(cfg, &buf))
	s := buf.String()
	require.Contains(t, s, "| Get hit (µs/op) | 2.00 (1.00–3.00) | 2.00 (2.00–2.00)<br>**1.00× (0.500–1.50)** |")
	require.Contains(t, s, "8 MiB block cache, 4 MiB memtable")
	require.NotContains(t, s, "8 threads")
}

func TestPebbleCacheSize(t *testing.T) {
	for _, tc := range []struct {
		cfg  storeConfig
		want int64
	}{
		{storeConfig{cacheSize: 32 << 20, memtableSize: 64 << 20}, 160 << 20},
		{storeConfig{cacheSize: 32 << 20, memtableSize: 4 << 20}, 40 << 20},
		{storeConfig{cacheSize: 32 << 20, memtableSize: 64 << 20, pebbleCacheTotal: true}, 32 << 20},
	} {
		require.Equal(t, tc.want, tc.cfg.pebbleCacheSize(), "%+v", tc.cfg)
	}
}

func TestShellJoin(t *testing.T) {
	require.Equal(t, `-rounds 5 -note 'under load; it'\''s small' -out RESULTS.md`,
		shellJoin([]string{"-rounds", "5", "-note", "under load; it's small", "-out", "RESULTS.md"}))
}

func TestBestPeerRatio(t *testing.T) {
	next := func(us float64) *engineResult {
		return &engineResult{Reads: []phaseResult{{Name: phaseNext, Threads: 1, Ops: 1, NsPerOp: us * 1e3}}}
	}
	rr := roundResults{
		resultKey("shale", variantMain):       next(1),
		resultKey("pebble", variantMain):      next(4),
		resultKey("goleveldb", variantMain):   next(2),
		resultKey(engineRocksDB, variantMain): next(0.5), // not a Go peer
	}
	f := phaseFigure("IterNext/threads=1", "", variantMain, readFigure(phaseNext, 1), false)
	v, ok := bestPeerRatio(f)(rr)
	require.True(t, ok)
	require.Equal(t, 0.5, v)
	_, ok = bestPeerRatio(f)(roundResults{resultKey("shale", variantMain): next(1)})
	require.False(t, ok)
}
