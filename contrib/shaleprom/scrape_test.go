package shaleprom

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/ioctx"
	"github.com/stretchr/testify/require"
)

// loadedDB opens a database in a temporary directory at stats_level=all
// with a rate limiter, and puts load on it: writes, flushes, a compaction, a
// reopen, reads through every read API, tagged reads and low-priority
// verification, so that everything the exporter can export has samples.
func loadedDB(t *testing.T) *driver.DB {
	t.Helper()
	dsn := t.TempDir() + "?stats_level=all&block_cache_size=0&rate_limit=1GiB"
	db, err := driver.Open("shale", dsn)
	require.NoError(t, err)
	useDB(t, db)
	require.NoError(t, db.Close())
	db, err = driver.Open("shale", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	useDB(t, db)
	ctx := context.Background()
	tag := testTag(t, "scrape", ioctx.TagOptions{})
	tctx := ioctx.WithReadOptions(ctx, ioctx.ReadOptions{Tag: tag, RateLimiterPriority: ioctx.PriorityUser})
	for i := range 10 {
		_, err := db.Get(tctx, fmt.Appendf(nil, "key%04d", i))
		require.NoError(t, err)
	}
	low := ioctx.WithReadOptions(ctx, ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityLow})
	require.NoError(t, db.VerifyChecksum(low))
	return db
}

// realScrape serves the collector of a loaded database (loadedDB) with
// promhttp and returns the text exposition Prometheus would read.
func realScrape(t *testing.T) []byte {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(loadedDB(t), prometheus.Labels{"db": "scrape"}))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return body
}

// scrapedNames are the series names a scrape exposes: each family's name,
// and for a histogram its _bucket, _sum and _count.
func scrapedNames(t *testing.T, body []byte) map[string]bool {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(body))
	require.NoError(t, err)
	names := make(map[string]bool)
	for name, mf := range mfs {
		names[name] = true
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[name+s] = true
			}
		}
	}
	return names
}

// trimmedOf is a family name without its counter suffix.
func trimmedOf(name string) string { return strings.TrimSuffix(name, "_total") }

var (
	nameRE = regexp.MustCompile(`^shale_[a-z0-9]+(_[a-z0-9]+)*$`)
	// midUnit finds a base unit inside a name rather than at its end.
	midUnit = regexp.MustCompile(`_(seconds|bytes)_`)
)

// TestScrapeConventions walks every family of a real scrape (a loaded
// database at stats_level=all) and checks what an operator reads: a HELP
// that says what is counted, names by Prometheus's conventions (promlint
// clean; base units last; _total once and only on counters), and a bounded
// number of buckets per histogram.
func TestScrapeConventions(t *testing.T) {
	body := realScrape(t)
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	require.NoError(t, err)
	require.Empty(t, problems, "promlint")

	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(body))
	require.NoError(t, err)
	var names []string
	for name := range mfs {
		names = append(names, name)
	}
	sort.Strings(names)
	series := 0
	for _, name := range names {
		mf := mfs[name]
		if reason := genericHelp(mf.GetHelp()); reason != "" {
			t.Errorf("%s: HELP %q %s", name, mf.GetHelp(), reason)
		}
		require.Regexp(t, nameRE, name)
		// The HELP names the unit the name ends in.
		for _, unit := range []string{"seconds", "bytes"} {
			if strings.HasSuffix(trimmedOf(name), "_"+unit) && !strings.Contains(strings.ToLower(mf.GetHelp()), unit) {
				t.Errorf("%s: HELP %q does not say %s", name, mf.GetHelp(), unit)
			}
		}
		require.NotRegexp(t, `micros|nanos|_count_total|_total_`, name)
		trimmed := strings.TrimSuffix(name, "_total")
		require.False(t, midUnit.MatchString(trimmed), "%s: a unit not at the end", name)
		isCounter := mf.GetType() == dto.MetricType_COUNTER
		require.Equal(t, isCounter, strings.HasSuffix(name, "_total"), "%s: _total on counters and only on them", name)
		require.NotContains(t, trimmed, "_total", name)
		for _, m := range mf.GetMetric() {
			series++
			if h := m.GetHistogram(); h != nil {
				series += len(h.GetBucket()) + 1 // the buckets (+Inf among them), _sum and _count
				require.LessOrEqual(t, len(h.GetBucket()), 30, "%s: buckets", name)
				require.GreaterOrEqual(t, len(h.GetBucket()), 10, "%s: buckets", name)
				require.Regexp(t, `_(seconds|bytes|files|reads)$`, name)
			}
		}
	}
	t.Logf("a loaded database at stats_level=all: %d families, %d series", len(mfs), series)
	for _, want := range []string{"shale_write_stall_seconds", "shale_background_errors_total", fileReadFamily,
		"shale_rate_limiter_priority_requests_total", tagReadFam} {
		require.Contains(t, mfs, want)
	}
}
