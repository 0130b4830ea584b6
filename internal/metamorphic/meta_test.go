package metamorphic

import (
	"bytes"
	"flag"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	flagSeeds    = flag.Int("seeds", 0, "number of seeds TestMetamorphic runs (0: 4, or 1 with -short)")
	flagSeed     = flag.Uint64("seed", 0, "first seed (0: one from the clock, printed)")
	flagOps      = flag.Int("ops", 0, "ops per history (0: 1500, or 200 with -short)")
	flagKeys     = flag.Int("keys", 0, "key universe size (0: derived from -ops)")
	flagParallel = flag.Int("parallel", 0, "configurations run at once (0: GOMAXPROCS)")
	flagSaveDir  = flag.String("save", "testdata/failures", "where a failing history is saved")
	flagRandom   = flag.Bool("random-config", true, "add a configuration drawn from each seed")
	flagOpenBugs = flag.Bool("open-bugs", false, "TestReplay also replays testdata/open-bugs (known engine bugs)")
)

// TestMetamorphic runs a few random histories under every configuration
// and checks each run's outputs against the model. Longer runs:
//
//	go test ./internal/metamorphic -run TestMetamorphic -seeds 200 -ops 5000
func TestMetamorphic(t *testing.T) {
	seeds, ops := 4, 1500
	if testing.Short() {
		seeds, ops = 1, 200
	}
	if *flagSeeds > 0 {
		seeds = *flagSeeds
	}
	if *flagOps > 0 {
		ops = *flagOps
	}
	first := *flagSeed
	if first == 0 {
		first = uint64(time.Now().UnixNano())
	}
	parallel := *flagParallel
	if parallel <= 0 {
		parallel = runtime.GOMAXPROCS(0)
	}
	t.Logf("seeds %d.. (%d seeds, %d ops each, %d configurations + a random one); rerun with -seed %d",
		first, seeds, ops, len(Configs), first)
	start := time.Now()
	total := 0
	for s := range uint64(seeds) {
		seed := first + s
		h := Generate(seed, GenOptions{Ops: ops, Keys: *flagKeys})
		cfgs := Configs
		if *flagRandom {
			rc := RandomConfig(seed)
			h.Comment = append(h.Comment, "random config: "+rc.DSN)
			cfgs = append(cfgs[:len(cfgs):len(cfgs)], rc)
		}
		diffs := RunAll(h, cfgs, t.TempDir(), parallel)
		total += len(h.Ops) * len(cfgs)
		if len(diffs) > 0 {
			path, err := SaveHistory(*flagSaveDir, "seed"+uintStr(seed), h, diffs)
			if err != nil {
				t.Errorf("saving the history: %v", err)
			}
			for _, d := range diffs {
				t.Errorf("seed %d: %s", seed, d.Format(h))
			}
			if agree(diffs) && len(diffs) == len(cfgs) {
				t.Errorf("every configuration printed the same at op %d: the model may be the one that is wrong", diffs[0].Op+1)
			}
			t.Fatalf("seed %d failed under %d configurations; history saved to %s (replay: go test ./internal/metamorphic -run TestReplay)",
				seed, len(diffs), path)
		}
	}
	t.Logf("%d ops run in %d configurations each (%d in all) in %v: no difference from the model",
		total/(len(Configs)+boolInt(*flagRandom))/seeds, len(Configs)+boolInt(*flagRandom), total, time.Since(start).Round(time.Millisecond))
}

// TestReplay runs every saved history in testdata (and testdata/failures,
// where TestMetamorphic saves the histories that failed) under every
// configuration, with its random configuration when it names one.
func TestReplay(t *testing.T) {
	dirs := []string{"testdata", "testdata/failures"}
	if *flagOpenBugs {
		dirs = append(dirs, "testdata/open-bugs")
	}
	var files []string
	for _, d := range dirs {
		fs, err := filepath.Glob(filepath.Join(d, "*.history"))
		require.NoError(t, err)
		files = append(files, fs...)
	}
	if len(files) == 0 {
		t.Skip("no saved histories")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			h, err := ReadHistoryFile(f)
			require.NoError(t, err)
			cfgs := append(Configs[:len(Configs):len(Configs)], replayConfigs(h)...)
			for _, d := range RunAll(h, cfgs, t.TempDir(), runtime.GOMAXPROCS(0)) {
				t.Errorf("%s", d.Format(h))
			}
		})
	}
}

// agree reports whether every diff is at the same op with the same output.
func agree(diffs []*Diff) bool {
	for _, d := range diffs[1:] {
		if d.Op != diffs[0].Op || d.Got != diffs[0].Got {
			return false
		}
	}
	return true
}

// replayConfigs returns the random configuration a saved history's
// comments name.
func replayConfigs(h *History) []Config {
	var cs []Config
	for _, c := range h.Comment {
		if dsn, ok := cutPrefix(c, "random config: "); ok {
			cs = append(cs, Config{Name: "random", DSN: dsn})
		}
	}
	return cs
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return "", false
}

func uintStr(n uint64) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
		if n == 0 {
			return string(b)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestHistoryRoundTrip checks that a generated history reads back as
// written, so a saved failure replays exactly.
func TestHistoryRoundTrip(t *testing.T) {
	h := Generate(7, GenOptions{Ops: 500})
	var buf bytes.Buffer
	require.NoError(t, h.Write(&buf))
	h2, err := ParseHistory(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	require.Equal(t, h.Comment, h2.Comment)
	require.Equal(t, len(h.Ops), len(h2.Ops))
	for i := range h.Ops {
		require.Equal(t, h.Ops[i].String(), h2.Ops[i].String())
	}
	// The same seed draws the same history.
	require.Equal(t, h, Generate(7, GenOptions{Ops: 500}))
}

// TestModelCatchesDifferences checks the comparison itself: a history run
// on the model agrees with itself, and a changed output is reported at the
// op that changed.
func TestModelCatchesDifferences(t *testing.T) {
	h := Generate(3, GenOptions{Ops: 300})
	want := RunModel(h)
	require.NoError(t, want.Err)
	require.Nil(t, Compare(h, want, RunModel(h)))
	got := RunModel(h)
	got.Out[100] += "!"
	d := Compare(h, want, got)
	require.NotNil(t, d)
	require.Equal(t, 100, d.Op)
}
