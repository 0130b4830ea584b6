package statistics

import (
	"bufio"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The golden files in testdata/ are written by testdata/refgen.c, an
// independent C implementation of RocksDB's histogram and StatisticsImpl
// layouts as the spec describes them, printing with C's printf. Nothing here
// rewrites them from Go output. The sample sets below must match refgen.c's.

var goldenCases = []struct {
	name string
	fill func(add func(uint64))
}{
	{"empty", func(func(uint64)) {}},
	{"one-to-four", func(add func(uint64)) {
		for v := uint64(1); v <= 4; v++ {
			add(v)
		}
	}},
	{"single-100", func(add func(uint64)) { add(100) }},
	{"zero-to-999", func(add func(uint64)) {
		for v := range uint64(1000) {
			add(v)
		}
	}},
	{"lcg-uniform", func(add func(uint64)) {
		l := lcg(42)
		for range 10000 {
			add(l.next() % 1000000)
		}
	}},
	{"extremes", func(add func(uint64)) {
		add(0)
		add(math.MaxUint64)
		add(1 << 63)
	}},
	{"two-max", func(add func(uint64)) {
		add(math.MaxUint64)
		add(math.MaxUint64)
	}},
	{"latency-tail", func(add func(uint64)) {
		l := lcg(7)
		for range 5000 {
			r := l.next()
			var v uint64
			switch {
			case r%100 < 90:
				v = 20 + r%80
			case r%100 < 99:
				v = 1000 + r%9000
			default:
				v = 100000 + r%900000
			}
			add(v)
		}
	}},
}

// lcg is refgen.c's generator (Knuth's MMIX constants, high bits).
type lcg uint64

func (l *lcg) next() uint64 {
	*l = *l*6364136223846793005 + 1442695040888963407
	return uint64(*l) >> 33
}

func readGolden(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	return string(b)
}

func TestGoldenBucketLimits(t *testing.T) {
	lines := strings.Fields(readGolden(t, "bucket_limits.golden"))
	require.Equal(t, "109", lines[0])
	var limits []uint64
	for _, s := range lines[1:] {
		v, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
		limits = append(limits, v)
	}
	require.Equal(t, limits, BucketLimits())
}

// TestGoldenHistogramString compares HistogramStat.String with C's output,
// for a histogram filled directly, one merged from two halves, and one
// merged over the shards of a Statistics.
func TestGoldenHistogramString(t *testing.T) {
	want := map[string]string{}
	var cur string
	for _, line := range strings.SplitAfter(readGolden(t, "histogram_string.golden"), "\n") {
		if name, ok := strings.CutPrefix(line, "=== "); ok {
			cur = strings.TrimSuffix(name, "\n")
			continue
		}
		want[cur] += line
	}
	require.Len(t, want, len(goldenCases))
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			var h HistogramStat
			tc.fill(h.Add)
			require.Equal(t, want[tc.name], h.String())

			var a, b HistogramStat
			i := 0
			tc.fill(func(v uint64) {
				if i%2 == 0 {
					a.Add(v)
				} else {
					b.Add(v)
				}
				i++
			})
			a.Merge(&b)
			require.Equal(t, want[tc.name], a.String())

			s := newWithShards(LevelAll, 8)
			tc.fill(func(v uint64) { s.RecordInHistogram(BytesPerRead, v) })
			require.Equal(t, want[tc.name], s.HistogramString(BytesPerRead))
		})
	}
}

// TestGoldenHistogramData compares Data field by field, floats exactly: the
// Go code must do the same double operations in the same order as RocksDB.
func TestGoldenHistogramData(t *testing.T) {
	want := map[string]map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(readGolden(t, "histogram_data.golden")))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		m := map[string]string{}
		for _, f := range fields[1:] {
			k, v, ok := strings.Cut(f, "=")
			require.True(t, ok, f)
			m[k] = v
		}
		want[fields[0]] = m
	}
	require.Len(t, want, len(goldenCases))
	u := func(s string) uint64 {
		v, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
		return v
	}
	f := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		require.NoError(t, err)
		return v
	}
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			m := want[tc.name]
			var h HistogramStat
			tc.fill(h.Add)
			require.Equal(t, HistogramData{
				Count: u(m["count"]), Sum: u(m["sum"]), Min: u(m["min"]), Max: u(m["max"]),
				Average: f(m["avg"]), StdDev: f(m["stddev"]),
				Median: f(m["median"]), P95: f(m["p95"]), P99: f(m["p99"]),
			}, h.Data())
		})
	}
}

// TestGoldenStatisticsString fills every ticker and every odd histogram of a
// striped Statistics with refgen.c's pattern and compares the whole layout.
func TestGoldenStatisticsString(t *testing.T) {
	s := newWithShards(LevelAll, 8)
	for tk := range NumTickers {
		n := uint64(tk)
		for range n + 1 {
			s.RecordTick(tk, 1)
		}
		s.RecordTick(tk, n*n-n)
	}
	for h := range NumHistograms {
		if h%2 == 0 {
			continue
		}
		i := uint64(h)
		for k := range 50 * i {
			v := (k*k*(i+1))%(1000*(i+1)) + i
			if h.IsTime() {
				s.ReportTimeToHistogram(h, v)
			} else {
				s.RecordInHistogram(h, v)
			}
		}
	}
	require.Equal(t, readGolden(t, "statistics_string.golden"), s.String())
}
