package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/perf/benchfmt"
)

// TestSuites runs every job of every feature suite in-process at a tiny
// size (as the parent's children would, through runSuiteJob) and checks
// that each job gives every figure of its suite and that the report reads
// as benchstat input, one result per figure and job.
func TestSuites(t *testing.T) {
	if testing.Short() {
		t.Skip("runs shale and Pebble")
	}
	for _, name := range suiteNames() {
		t.Run(name, func(t *testing.T) {
			s := benchSuites[name]
			cfg, err := parseFlags([]string{"-suite=" + name, "-max-data=512KiB", "-phase-duration=30ms",
				"-warmup=5ms", "-dir=" + t.TempDir()})
			require.NoError(t, err)
			rr := map[string]*suiteResult{}
			for _, j := range s.jobs(cfg) {
				c := *cfg
				c.suiteJob = j.id()
				var out bytes.Buffer
				require.NoError(t, runSuiteJob(&c, s, &out), j.id())
				r := &suiteResult{}
				require.NoError(t, json.Unmarshal(out.Bytes(), r))
				require.Equal(t, j.id(), r.Job)
				for _, f := range s.figures {
					require.Positive(t, r.Values[f.key], "%s: figure %s", j.id(), f.key)
				}
				rr[j.id()] = r
			}
			rep := &suiteReport{Suite: name, Meta: runMeta{GOOS: "linux", GOARCH: "amd64", CPUModel: "Test CPU",
				Command: "go run . -suite=" + name}, Rounds: []map[string]*suiteResult{rr, rr}}
			var buf bytes.Buffer
			printSuiteReport(&buf, cfg, s, rep)
			peers := 0
			for _, j := range s.jobs(cfg) {
				if j.pair != "" {
					peers++
				}
			}
			// Every peer cell carries its ratio to shale.
			require.Equal(t, peers*len(s.figures), strings.Count(buf.String(), "<br>**"))
			r := benchfmt.NewReader(bytes.NewReader(buf.Bytes()), "RESULTS.md")
			n := 0
			for r.Scan() {
				switch rec := r.Result().(type) {
				case *benchfmt.Result:
					require.Contains(t, string(rec.Name), "engine=")
					n++
				case *benchfmt.SyntaxError:
					t.Fatalf("benchstat cannot read the report: %v", rec)
				}
			}
			require.NoError(t, r.Err())
			require.Equal(t, 2*len(s.figures)*len(s.jobs(cfg)), n)
		})
	}
}

// TestHalfValue: the zstd suite's values are half random printable bytes,
// repeated, as db_bench's compression_ratio=0.5 makes them, and differ
// from key to key.
func TestHalfValue(t *testing.T) {
	var all []byte
	for k := range 1000 {
		v := halfValue(make([]byte, 256), k, 256)
		require.Equal(t, v[:128], v[128:])
		require.NotEqual(t, halfValue(make([]byte, 256), k+1, 256), v)
		all = append(all, v...)
	}
	require.False(t, strings.ContainsFunc(string(all), func(r rune) bool { return r < ' ' || r > '~' }))
}

func TestPrefixKey(t *testing.T) {
	k := prefixKey(make([]byte, keySize), 6, 3)
	require.Equal(t, []byte{0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0, 3}, k)
	require.Equal(t, []byte{0, 0, 0, 0, 0, 0, 0, 7}, prefixUpper(nil, k[:prefixLen]))
}
