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
		{[]string{"-engines=rocksdb"}, "unknown engine"},
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

// TestWorkload runs the whole child workload in-process on every engine at
// a tiny size and prints the table from the results.
func TestWorkload(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every engine")
	}
	cfg, err := parseFlags([]string{"-max-data=512KiB", "-phase-duration=30ms", "-warmup=5ms",
		"-threads=1,2", "-stats-rounds=2", "-stats-duration=20ms", "-dir=" + t.TempDir()})
	require.NoError(t, err)
	out := runOutput{Results: map[string]*engineResult{}}
	for _, e := range cfg.engines {
		t.Run(e, func(t *testing.T) {
			f, err := os.Create(filepath.Join(t.TempDir(), "out.json"))
			require.NoError(t, err)
			require.NoError(t, runChild(cfg, e, f))
			require.NoError(t, f.Close())
			b, err := os.ReadFile(f.Name())
			require.NoError(t, err)
			var r engineResult
			require.NoError(t, json.Unmarshal(b, &r))
			require.Equal(t, cfg.numKeys(), r.NumKeys)
			require.EqualValues(t, r.NumKeys, r.Fill.Keys)
			require.EqualValues(t, r.NumKeys, r.FillBatch.Keys)
			require.Greater(t, r.TablesMiB, 0.0)
			for _, threads := range cfg.threads {
				for _, row := range readRows {
					p, ok := r.read(row.phase, threads)
					require.True(t, ok, "%s/%d", row.phase, threads)
					require.Positive(t, p.Ops)
					require.Positive(t, p.NsPerOp)
					require.LessOrEqual(t, p.P50Ns, p.P99Ns)
				}
			}
			require.Positive(t, r.PeakRSSMiB)
			if e == "shale" {
				require.NotNil(t, r.StatsCost)
				require.Len(t, r.StatsCost.Median, 13)
			}
			out.Results[e] = &r
		})
	}
	var buf bytes.Buffer
	printTable(&buf, cfg, &out)
	s := buf.String()
	for _, want := range []string{"pebble", "goleveldb", "badger", "Get hit (µs/op)", "MultiGet(16)", "×)",
		"statistics levels", "façade cost", "issue targets"} {
		require.Contains(t, s, want)
	}
	t.Log("\n" + s)
}
