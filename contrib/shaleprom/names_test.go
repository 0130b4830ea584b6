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
		{statistics.BytesRead, "shale_read_bytes_total"},
		{statistics.StallMicros, ""},
		{statistics.DBMutexWaitMicros, "shale_db_mutex_wait_seconds_total"},
		{statistics.ReadAsyncMicros, "shale_read_async_seconds_total"},
		{statistics.VerifyChecksumReadBytes, "shale_verify_checksum_read_bytes_total"},
		{statistics.RateLimiterRequestsRead, "shale_rate_limiter_read_requests_total"},
		{statistics.BlockChecksumComputeCount, "shale_block_checksum_compute_total"},
		{statistics.LastLevelReadCount, "shale_last_level_reads_total"},
	} {
		require.Equal(t, tc.want, tickerFamily(tc.ticker).name, "%s", tc.ticker)
	}
	for _, tc := range []struct {
		hist           statistics.Histogram
		want, activity string
	}{
		{statistics.SSTReadMicros, "shale_sst_read_seconds", ""},
		{statistics.DBGet, "shale_db_get_seconds", ""},
		{statistics.WriteStall, "shale_write_stall_seconds", ""},
		{statistics.FlushTime, "shale_flush_seconds", ""},
		{statistics.CompressionTimesNanos, "shale_compression_seconds", ""},
		{statistics.RateLimiterWaitMicros, "shale_rate_limiter_wait_seconds", ""},
		{statistics.BytesPerRead, "shale_read_size_bytes", ""},
		{statistics.NumFilesInSingleCompaction, "shale_compaction_input_files", ""},
		{statistics.FileReadGetMicros, "shale_file_read_seconds", "get"},
		{statistics.FileReadDBOpenMicros, "shale_file_read_seconds", "db_open"},
	} {
		f := histogramFamily(tc.hist)
		require.Equal(t, tc.want, f.name, "%s", tc.hist)
		require.Equal(t, tc.activity, f.activity, "%s", tc.hist)
	}
}

// TestHelpTables: every ticker and histogram of the statistics package has
// an entry in help.go, with a name and a HELP that says what it counts, or
// a reason for not being exported. A statistic added to the statistics
// package fails here with the line to add.
func TestHelpTables(t *testing.T) {
	for tk := range statistics.NumTickers {
		s, ok := tickerSpecs[tk]
		if !ok {
			t.Errorf("statistics ticker %d (%s) has no entry in tickerSpecs (contrib/shaleprom/help.go): add\n"+
				"\tstatistics.<its constant>: {%q, \"<what it counts, and the unit if not a count>\"},\n"+
				"(or another name that follows the conventions: base units, unit suffix last, _total once), "+
				"then regenerate the README's tables: go test -run TestREADMETables -update", tk, tk, legacyTickerName(tk))
			continue
		}
		checkHelp(t, tk.String(), s.help)
	}
	require.Equal(t, int(statistics.NumTickers), len(tickerSpecs), "tickerSpecs: one entry per ticker (then go test -run TestREADMETables -update)")
	for h := range statistics.NumHistograms {
		if _, ok := fileReadActivity[h]; ok {
			require.NotContains(t, histogramSpecs, h, "%s is exported in %s", h, fileReadFamily)
			continue
		}
		s, ok := histogramSpecs[h]
		if !ok {
			t.Errorf("statistics histogram %d (%s) has no entry in histogramSpecs (contrib/shaleprom/help.go): add\n"+
				"\tstatistics.<its constant>: {%q, \"<what each sample is, and its unit: seconds or bytes>\"},\n"+
				"(sizes end in _bytes; and check histogramKind in buckets.go picks its buckets), "+
				"then regenerate the README's tables: go test -run TestREADMETables -update", h, h, legacyHistogramName(h)+"?")
			continue
		}
		require.NotEmpty(t, s.name, "%s: every histogram is exported", h)
		checkHelp(t, h.String(), s.help)
	}
	require.Equal(t, int(statistics.NumHistograms)-len(fileReadActivity), len(histogramSpecs), "histogramSpecs: one entry per histogram but the file-read ones")
	checkHelp(t, fileReadFamily, fileReadHelp)
}

// checkHelp fails for a HELP that only names the statistic, as the
// exporter's HELP did before it had a table (see TestScrapeConventions for
// the same check over a real scrape).
func checkHelp(t *testing.T, what, help string) {
	t.Helper()
	if reason := genericHelp(help); reason != "" {
		t.Errorf("%s: HELP %q %s", what, help, reason)
	}
}

// genericHelp says what is wrong with a HELP that does not say what is
// counted, or "" for a good one.
func genericHelp(help string) string {
	switch {
	case len(help) < 20:
		return "is too short to say what is counted"
	case strings.Contains(help, "shale statistics ticker"), strings.Contains(help, "shale statistics histogram"):
		return "only names the statistic"
	case !strings.HasSuffix(help, "."):
		return "is not a sentence"
	}
	return ""
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
		if n := tickerFamily(tk).name; n != "" {
			names = append(names, n)
		}
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
		if n := tickerFamily(tk).name; n != "" {
			add(n, tk.String())
		}
	}
	for h := range statistics.NumHistograms {
		if f := histogramFamily(h); f.activity == "" {
			add(f.name, h.String())
		}
	}
	add(fileReadFamily, "the file-read histograms")
	require.Len(t, allFamilies(), len(seen))
}

// TestBucketSets: each kind exports a bounded set of RocksDB's own limits
// (so every cumulative count is exact), in seconds for time, covering the
// promised range.
func TestBucketSets(t *testing.T) {
	limits := statistics.BucketLimits()
	for _, tc := range []struct {
		kind        int
		first, last float64
		n           int
	}{
		{kindMicros, 1e-6, 110, 24},
		{kindNanos, 110e-9, 110, 27},
		{kindBytes, 1, 1.2e9, 27},
		{kindCount, 1, 250, 14},
	} {
		s := bucketSets[tc.kind]
		require.Len(t, s.bounds, tc.n, "kind %d", tc.kind)
		require.Len(t, s.idx, tc.n)
		require.LessOrEqual(t, tc.n, 30, "a bounded number of buckets")
		require.Equal(t, tc.first, s.bounds[0], "kind %d", tc.kind)
		require.Equal(t, tc.last, s.bounds[len(s.bounds)-1], "kind %d", tc.kind)
		require.True(t, slices.IsSorted(s.idx))
		require.Len(t, slices.Compact(slices.Clone(s.bounds)), tc.n, "distinct bounds")
		for j, i := range s.idx {
			require.Less(t, i, len(limits)-1, "the last RocksDB bucket is +Inf")
			if j > 0 {
				require.LessOrEqual(t, s.bounds[j]/s.bounds[j-1], 2.6, "steps of about 2.25")
			}
		}
	}
	require.Equal(t, []float64{1e-6, 2e-6, 4e-6, 1e-5, 2.2e-5, 5.1e-5, 1.1e-4, 2.5e-4, 5.8e-4, 1.3e-3},
		bucketSets[kindMicros].bounds[:10])
	require.Equal(t, 0.00025, seconds(250, time.Microsecond))
	require.Equal(t, 1.5, seconds(1_500_000, time.Microsecond))

	// Re-bucketing is exact: a sample exactly at an exported bound is
	// under it, one just above is not.
	for _, k := range []int{kindMicros, kindBytes} {
		s := bucketSets[k]
		for j, i := range s.idx {
			var fine [statistics.NumBuckets]uint64
			fine[i] = 1 // a sample in the fine bucket (limit[i-1], limit[i]]
			got := s.cumulative(fine[:])
			require.Equal(t, uint64(1), got[s.bounds[j]])
			if j > 0 {
				require.Equal(t, uint64(0), got[s.bounds[j-1]])
			}
		}
	}
}

// TestHistogramKinds: time histograms get the time buckets, the two
// counts the count buckets, the rest (sizes) the byte buckets, and every
// byte histogram's name says bytes.
func TestHistogramKinds(t *testing.T) {
	for h := range statistics.NumHistograms {
		f := histogramFamily(h)
		switch k := histogramKind(h); k {
		case kindMicros, kindNanos:
			require.True(t, strings.HasSuffix(f.name, "_seconds"), "%s", f.name)
		case kindBytes:
			require.True(t, strings.HasSuffix(f.name, "_bytes"), "%s", f.name)
		default:
			require.False(t, strings.HasSuffix(f.name, "_bytes") || strings.HasSuffix(f.name, "_seconds"), "%s", f.name)
		}
	}
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
	require.Equal(t, int(statistics.NumTagTickers)+1+21+1+3, n,
		"the tag tickers, the tag histogram, 6 per-level and 15 other LSM families, background errors, 3 rate-limiter families by priority")
}
