package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/internal/wal"
	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

func TestPermutation(t *testing.T) {
	for _, n := range []uint64{1, 2, 3, 4, 7, 64, 1000, 1927, 2654435761 % 5000, 65536, 99991} {
		rng := rand.New(rand.NewPCG(1, 2))
		p := newPermutation(n, rng)
		seen := make([]bool, n)
		for i := range n {
			v := p.at(i)
			require.Less(t, v, n, "n=%d", n)
			require.False(t, seen[v], "n=%d: %d repeated", n, v)
			seen[v] = true
		}
		if n >= 64 {
			// Scattered: consecutive writes are not consecutive keys.
			require.NotEqual(t, p.at(0)+1, p.at(1), "n=%d", n)
		}
	}
}

func TestBenchKey(t *testing.T) {
	b := &bench{cfg: benchConfig{keySize: 16}}
	buf := bytes.Repeat([]byte{0xff}, 16)
	require.Equal(t, []byte{0, 0, 0, 0, 0, 0, 0x0b, 0xb9, 0, 0, 0, 0, 0, 0, 0, 0}, b.key(buf, 1000, 1)) // 1000*3+1
	// Existing and missing keys interleave in order, as the index they came
	// from: key(i, 0) < key(i, 1) < key(i+1, 0).
	a := append([]byte(nil), b.key(buf, 5, 0)...)
	m := append([]byte(nil), b.key(buf, 5, 1)...)
	c := append([]byte(nil), b.key(buf, 6, 0)...)
	require.Negative(t, bytes.Compare(a, m))
	require.Negative(t, bytes.Compare(m, c))
}

func TestFormatting(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1024, "1.00 KiB"}, {1536, "1.50 KiB"},
		{64 << 20, "64.0 MiB"}, {100 << 20, "100 MiB"}, {3 << 40, "3.00 TiB"},
	} {
		require.Equal(t, tc.want, formatBytes(tc.n), "%d", tc.n)
	}
	for _, tc := range []struct {
		ns   float64
		want string
	}{{140, "0.14"}, {5450, "5.45"}, {163_600, "163.6"}, {21_360_000, "21360.0"}, {213_600_000, "213600"}} {
		require.Equal(t, tc.want, micros(tc.ns))
	}
	require.Equal(t, "2.0", formatRate(4, 2*time.Second))
	require.Equal(t, "-", formatRate(4, 0))
	require.Equal(t, "1.5 ms", formatMicros(1500))
	require.Equal(t, "0.1 µs", formatMicros(0.1))
	require.Equal(t, "2 s", formatMicros(2e6))
	require.Equal(t, `"a\x00"`, formatKey([]byte("a\x00"), false))
	require.Equal(t, "6100", formatKey([]byte("a\x00"), true))
}

func TestRecordStart(t *testing.T) {
	for _, tc := range []struct{ end, want int64 }{
		{0, 0},
		{100, 100},
		{wal.BlockSize - 7, wal.BlockSize - 7}, // room for a header
		{wal.BlockSize - 6, wal.BlockSize},     // padded
		{wal.BlockSize - 1, wal.BlockSize},
		{wal.BlockSize, wal.BlockSize},
		{3*wal.BlockSize - 3, 3 * wal.BlockSize},
	} {
		require.Equal(t, tc.want, recordStart(tc.end), "end %d", tc.end)
	}
}

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, exitOK},
		{"usage", usageErrorf("bad"), exitUsage},
		{"problem", problemf("wrong"), exitProblem},
		{"corruption", errors.Wrap(base.CorruptionErrorf("bad block"), "reading"), exitProblem},
		{"driver corruption", driver.ErrCorruption, exitProblem},
		{"wrapped usage", errors.Wrap(usageErrorf("bad"), "context"), exitUsage},
		{"io", errors.New("disk on fire"), exitFailure},
		{"cancelled", context.Canceled, exitFailure},
	} {
		require.Equal(t, tc.want, exitCode(tc.err), tc.name)
	}
}

func TestDSNBuilder(t *testing.T) {
	d, err := parseDSNBuilder("/db?stats_level=except_timers&block_cache_size=1MiB")
	require.NoError(t, err)
	d.set("read_only", "true")
	d.setDefault("stats_level", "all") // already set: kept
	d.setDefault("sync", "true")
	require.NoError(t, d.merge("block_cache_size=0&bloom_bits_per_key=5"))
	dsn, cfg, err := d.build()
	require.NoError(t, err)
	require.Equal(t, "/db?stats_level=except_timers&block_cache_size=0&read_only=true&sync=true&bloom_bits_per_key=5", dsn)
	require.True(t, cfg.ReadOnly)
	require.Equal(t, "/db", cfg.Dir)
	require.NotNil(t, cfg.StatsLevel)
	require.Equal(t, statistics.LevelExceptTimers, *cfg.StatsLevel)

	require.Equal(t, exitUsage, exitCode(d.merge("a=%zz")))
	d.set("nosuch", "1")
	_, _, err = d.build()
	require.Equal(t, exitUsage, exitCode(err))
	require.Contains(t, err.Error(), `"nosuch"`)
	_, err = parseDSNBuilder("")
	require.Equal(t, exitUsage, exitCode(err))
}

func TestProgress(t *testing.T) {
	for _, tc := range []struct {
		mode progressMode
		want string // regexp of the whole output
	}{
		{progressOff, `^$`},
		// A plain final line, so a log shows where the operation ended.
		{progressLines, `^(work +\d+% \S+ 7 things\n)*work +50% \S+ 7 things \(done\)\n$`},
		// A bar ends erased: spaces between carriage returns.
		{progressBar, `^(\rwork \[=*>? *\] +\d+% \S+ 7 things *)*\r +\r$`},
	} {
		var buf safeBuffer
		p := startProgress(&buf, tc.mode, "work", func() (float64, string) { return 0.5, "7 things" })
		if tc.mode == progressBar {
			time.Sleep(3 * sampleInterval / 2) // at least one redraw
		}
		p.stop()
		require.Regexp(t, tc.want, buf.String(), "mode %d", tc.mode)
		if tc.mode == progressBar {
			require.Contains(t, buf.String(), "[===============>              ]  50%")
		}
	}
}

// safeBuffer is a bytes.Buffer for a writer on another goroutine.
type safeBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *safeBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *safeBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestRenderSVGEmpty(t *testing.T) {
	// No samples and no statistics still make a valid document.
	var buf bytes.Buffer
	require.NoError(t, renderSVG(&buf, []phaseResult{{name: "get", hist: new(statistics.HistogramStat)}}, nil, "t <&>"))
	s := buf.String()
	dec := xml.NewDecoder(strings.NewReader(s))
	for {
		_, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
	}
	require.NotContains(t, s, `class="cdf"`)
	require.NotContains(t, s, `class="p50"`)
	require.Contains(t, s, "t &lt;&amp;&gt;")
	require.Contains(t, s, "no file reads recorded")
}

func TestBenchKeyAllocs(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	// The key and value generators run inside every timed operation: they
	// must not allocate, or the bench would measure its own garbage.
	b := &bench{cfg: benchConfig{keySize: 16, valueSize: 256}, numKeys: 1000, values: make([]byte, 1<<20)}
	rng := rand.New(rand.NewPCG(1, 2))
	p := newPermutation(b.numKeys, rng)
	buf := make([]byte, 16)
	allocs := testing.AllocsPerRun(100, func() {
		_ = b.key(buf, p.at(rng.Uint64N(b.numKeys)), 1)
		_ = b.value(rng)
	})
	require.Zero(t, allocs)
}
