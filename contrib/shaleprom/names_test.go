package shaleprom

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

// TestFamilyNames pins the names the issue and the README promise.
func TestFamilyNames(t *testing.T) {
	for _, tc := range []struct {
		ticker statistics.Ticker
		want   string
	}{
		{statistics.BlockCacheHit, "shale_block_cache_hit_total"},
		{statistics.BytesRead, "shale_bytes_read_total"},
		{statistics.StallMicros, "shale_stall_seconds_total"},
		{statistics.DBMutexWaitMicros, "shale_db_mutex_wait_seconds_total"},
		{statistics.ReadAsyncMicros, "shale_read_async_seconds_total"},
		{statistics.VerifyChecksumReadBytes, "shale_verify_checksum_read_bytes_total"},
		{statistics.RateLimiterRequestsRead, "shale_rate_limiter_requests_read_total"},
		{statistics.BlockChecksumComputeCount, "shale_block_checksum_compute_count_total"},
	} {
		f := tickerFamily(tc.ticker)
		require.Equal(t, tc.want, f.name, "%s", tc.ticker)
		require.Contains(t, f.help, tc.ticker.String())
	}
	for _, tc := range []struct {
		hist           statistics.Histogram
		want, activity string
	}{
		{statistics.SSTReadMicros, "shale_sst_read_seconds", ""},
		{statistics.DBGet, "shale_db_get_seconds", ""},
		{statistics.WriteStall, "shale_db_write_stall_seconds", ""},
		{statistics.FlushTime, "shale_db_flush_seconds", ""},
		{statistics.CompressionTimesNanos, "shale_compression_times_seconds", ""},
		{statistics.RateLimiterWaitMicros, "shale_rate_limiter_wait_seconds", ""},
		{statistics.BytesPerRead, "shale_bytes_per_read", ""},
		{statistics.NumFilesInSingleCompaction, "shale_numfiles_in_singlecompaction", ""},
		{statistics.FileReadGetMicros, "shale_file_read_seconds", "get"},
		{statistics.FileReadDBOpenMicros, "shale_file_read_seconds", "db_open"},
	} {
		f := histogramFamily(tc.hist)
		require.Equal(t, tc.want, f.name, "%s", tc.hist)
		require.Equal(t, tc.activity, f.activity, "%s", tc.hist)
	}
}

// TestActivityLabels: the eight per-activity histograms, and only they,
// share shale_file_read_seconds, each with the label value its statistics
// name carries.
func TestActivityLabels(t *testing.T) {
	name := regexp.MustCompile(`^shale\.file\.read\.(.+)\.micros$`)
	var got []string
	for h := range statistics.NumHistograms {
		f := histogramFamily(h)
		m := name.FindStringSubmatch(h.String())
		if m == nil {
			require.Empty(t, f.activity, "%s", h)
			require.NotEqual(t, fileReadFamily, f.name, "%s", h)
			continue
		}
		require.Equal(t, fileReadFamily, f.name, "%s", h)
		require.Equal(t, strings.ReplaceAll(m[1], ".", "_"), f.activity, "%s", h)
		got = append(got, f.activity)
	}
	require.Equal(t, []string{"flush", "compaction", "db_open", "get", "multiget", "db_iterator",
		"verify_db_checksum", "verify_file_checksums"}, got)
}

// allFamilies lists every family name once, in the order the collector
// describes them.
func allFamilies() []string {
	names := []string{levelFamily}
	for tk := range statistics.NumTickers {
		names = append(names, tickerFamily(tk).name)
	}
	for h := range statistics.NumHistograms {
		if n := histogramFamily(h).name; !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// TestFamiliesDistinct: no two statistics share a family but the file-read
// ones, and no name keeps a non-base unit.
func TestFamiliesDistinct(t *testing.T) {
	seen := map[string]string{levelFamily: "the level"}
	add := func(name, stat string) {
		prev, dup := seen[name]
		require.False(t, dup, "%s and %s both export as %s", prev, stat, name)
		seen[name] = stat
		require.NotRegexp(t, `micros|nanos`, name)
		require.Regexp(t, `^shale_[a-z0-9_]+$`, name)
	}
	for tk := range statistics.NumTickers {
		add(tickerFamily(tk).name, tk.String())
	}
	for h := range statistics.NumHistograms {
		if f := histogramFamily(h); f.activity == "" {
			add(f.name, h.String())
		}
	}
	add(fileReadFamily, "the file-read histograms")
	require.Len(t, allFamilies(), len(seen))
}

// TestUpperBounds: RocksDB's limits but the last (its bucket is +Inf), in
// seconds for time, with round limits kept round.
func TestUpperBounds(t *testing.T) {
	limits := statistics.BucketLimits()
	for _, tc := range []struct {
		unit time.Duration
		head []float64
		last float64
	}{
		{0, []float64{1, 2, 3, 4, 6, 10, 15}, 9.2e18},
		{time.Microsecond, []float64{1e-6, 2e-6, 3e-6, 4e-6, 6e-6, 1e-5, 1.5e-5}, 9.2e12},
		{time.Nanosecond, []float64{1e-9, 2e-9, 3e-9, 4e-9, 6e-9, 1e-8, 1.5e-8}, 9.2e9},
	} {
		b := upperBounds(tc.unit)
		require.Len(t, b, len(limits)-1)
		require.Equal(t, tc.head, b[:len(tc.head)], "unit %v", tc.unit)
		require.Equal(t, tc.last, b[len(b)-1], "unit %v", tc.unit)
		require.True(t, slices.IsSorted(b))
		require.Len(t, slices.Compact(slices.Clone(b)), len(b), "distinct bounds")
	}
	require.Equal(t, 0.00025, seconds(250, time.Microsecond))
	require.Equal(t, 1.5, seconds(1_500_000, time.Microsecond))
}

// TestREADMEListsEveryFamily keeps the README's table of metric names in
// step with the code.
func TestREADMEListsEveryFamily(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	listed := regexp.MustCompile("`(shale_[a-z0-9_]+)`").FindAllStringSubmatch(string(readme), -1)
	inREADME := make(map[string]bool)
	for _, m := range listed {
		inREADME[m[1]] = true
	}
	for _, name := range allFamilies() {
		require.True(t, inREADME[name], "README.md does not list %s", name)
	}
	for _, a := range fileReadActivity {
		require.Contains(t, string(readme), "`"+a+"`", "README.md does not list the activity %s", a)
	}
}

// TestREADMEListsExtraFamilies: the tag and LSM families are in the README
// too.
func TestREADMEListsExtraFamilies(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	d := newExtraDescs(nil)
	ch := make(chan *prometheus.Desc, 64)
	d.describe(ch)
	close(ch)
	n := 0
	for desc := range ch {
		m := regexp.MustCompile(`fqName: "([a-z0-9_]+)"`).FindStringSubmatch(desc.String())
		require.NotNil(t, m, desc.String())
		require.Contains(t, string(readme), "`"+m[1]+"`", "README.md does not list %s", m[1])
		n++
	}
	require.Equal(t, int(statistics.NumTagTickers)+1+23+3, n,
		"the tag tickers, the tag histogram, 6 per-level and 17 other LSM families, 3 rate-limiter families by priority")
}
