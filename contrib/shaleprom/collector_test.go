package shaleprom

import (
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/engine"
	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

// openWithStats opens an in-memory database that records into s, so a test
// can put known samples in the statistics an exporter reads.
func openWithStats(t *testing.T, s *statistics.Statistics) *driver.DB {
	t.Helper()
	db := driver.OpenDB(engine.NewConnector(engine.MemoryPath, &engine.Options{Statistics: s}))
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	require.Same(t, s, db.Statistics())
	return db
}

// gather registers c alone in a pedantic registry (which checks every metric
// against its description and the exposition rules) and gathers it, by
// family name.
func gather(t *testing.T, c prometheus.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	return byName(mfs)
}

func byName(mfs []*dto.MetricFamily) map[string]*dto.MetricFamily {
	m := make(map[string]*dto.MetricFamily, len(mfs))
	for _, mf := range mfs {
		m[mf.GetName()] = mf
	}
	return m
}

// metric returns the one metric of family name whose labels include the
// given name/value pairs, or nil.
func metric(mfs map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	mf := mfs[name]
	if mf == nil {
		return nil
	}
next:
	for _, m := range mf.GetMetric() {
		for i := 0; i < len(labels); i += 2 {
			if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool {
				return l.GetName() == labels[i] && l.GetValue() == labels[i+1]
			}) {
				continue next
			}
		}
		return m
	}
	return nil
}

// recordSamples puts known samples in s: a ticker, a time ticker, a time
// histogram in microseconds, one in nanoseconds, a size histogram and a
// per-activity file-read histogram.
func recordSamples(s *statistics.Statistics) {
	s.RecordTick(statistics.BlockCacheHit, 3)
	s.RecordTick(statistics.ReadAsyncMicros, 1_500_000)
	s.RecordTick(statistics.StallMicros, 7) // not exported: shale_write_stall_seconds has the fact
	for _, v := range []uint64{1, 3, 3, 250} {
		s.ReportTimeToHistogram(statistics.SSTReadMicros, v)
	}
	s.ReportTimeToHistogram(statistics.FileReadFlushMicros, 7)
	s.ReportTimeToHistogram(statistics.FileReadGetMicros, 9)
	s.ReportTimeToHistogram(statistics.CompressionTimesNanos, 2000)
	s.RecordInHistogram(statistics.BytesPerRead, 4096)
}

// TestCollectValues checks the exported values against known samples: counts
// as they are, time converted to seconds, histogram buckets cumulative under
// RocksDB's limits with +Inf last.
func TestCollectValues(t *testing.T) {
	s := statistics.New(statistics.LevelAll)
	db := openWithStats(t, s)
	recordSamples(s)
	mfs := gather(t, NewCollector(db, nil))

	require.Equal(t, 5.0, metric(mfs, levelFamily).GetGauge().GetValue())
	require.Equal(t, dto.MetricType_GAUGE, mfs[levelFamily].GetType())
	require.Equal(t, 3.0, metric(mfs, "shale_block_cache_hit_total").GetCounter().GetValue())
	require.Equal(t, dto.MetricType_COUNTER, mfs["shale_block_cache_hit_total"].GetType())
	require.Equal(t, 1.5, metric(mfs, "shale_read_async_seconds_total").GetCounter().GetValue())
	require.Nil(t, mfs["shale_stall_seconds_total"], "write-stall time is exported once, as shale_write_stall_seconds")
	require.Equal(t, 0.0, metric(mfs, "shale_txn_conflicts_total").GetCounter().GetValue(),
		"a ticker at 0 is exported")

	sst := metric(mfs, "shale_sst_read_seconds").GetHistogram()
	require.Equal(t, uint64(4), sst.GetSampleCount())
	require.InDelta(t, 257e-6, sst.GetSampleSum(), 1e-18)
	buckets := sst.GetBucket()
	require.Len(t, buckets, 24, "1 µs to 110 s, every other RocksDB limit")
	cum := map[float64]uint64{}
	for _, b := range buckets {
		cum[b.GetUpperBound()] = b.GetCumulativeCount()
	}
	require.Equal(t, uint64(1), cum[1e-6], "le 1µs: the 1")
	require.Equal(t, uint64(1), cum[2e-6])
	require.Equal(t, uint64(3), cum[4e-6], "le 4µs: the 1 and both 3s")
	require.Equal(t, uint64(3), cum[110e-6])
	require.Equal(t, uint64(4), cum[250e-6])
	require.Equal(t, uint64(4), buckets[len(buckets)-1].GetCumulativeCount())
	require.Equal(t, 110.0, buckets[len(buckets)-1].GetUpperBound())

	comp := metric(mfs, "shale_compression_seconds").GetHistogram()
	require.Equal(t, uint64(1), comp.GetSampleCount())
	require.Equal(t, 2e-6, comp.GetSampleSum(), "nanoseconds converted")
	require.Equal(t, 110e-9, comp.GetBucket()[0].GetUpperBound(), "block compression times from 110 ns")
	require.Equal(t, uint64(1), cum2(comp)[2.9e-6], "2000 ns is under le=2.9e-06")
	require.Equal(t, uint64(0), cum2(comp)[1.3e-6])

	size := metric(mfs, "shale_read_size_bytes").GetHistogram()
	require.Equal(t, 4096.0, size.GetSampleSum(), "sizes are not converted")
	require.Equal(t, 1.0, size.GetBucket()[0].GetUpperBound())
	require.Equal(t, uint64(1), cum2(size)[6600], "4096 is under le=6600")
	require.Equal(t, uint64(0), cum2(size)[2900])

	require.Equal(t, uint64(1), metric(mfs, fileReadFamily, "activity", "flush").GetHistogram().GetSampleCount())
	require.Equal(t, 9e-6, metric(mfs, fileReadFamily, "activity", "get").GetHistogram().GetSampleSum())
	require.Len(t, mfs[fileReadFamily].GetMetric(), 8, "one series per activity at LevelAll")
}

// cum2 maps a histogram's upper bounds to their cumulative counts.
func cum2(h *dto.Histogram) map[float64]uint64 {
	m := make(map[float64]uint64)
	for _, b := range h.GetBucket() {
		m[b.GetUpperBound()] = b.GetCumulativeCount()
	}
	return m
}

// TestCollectGating: at each level the collector exports the level gauge and
// exactly the families of the statistics enabled at it, and the file-read
// family exactly the activities enabled.
func TestCollectGating(t *testing.T) {
	s := statistics.New(statistics.LevelAll)
	db := openWithStats(t, s)
	recordSamples(s)
	c := NewCollector(db, nil)
	for level := statistics.LevelDisableAll; level <= statistics.LevelAll; level++ {
		t.Run(level.String(), func(t *testing.T) {
			s.SetLevel(level)
			mfs := gather(t, c)

			want := map[string]bool{levelFamily: true}
			var wantActivities []string
			for tk := range statistics.NumTickers {
				if f := tickerFamily(tk); tk.MinLevel() <= level && f.name != "" {
					want[f.name] = true
				}
			}
			for h := range statistics.NumHistograms {
				if f := histogramFamily(h); h.MinLevel() <= level {
					want[f.name] = true
					if f.activity != "" {
						wantActivities = append(wantActivities, f.activity)
					}
				}
			}
			var got []string
			for name := range mfs {
				if !strings.HasPrefix(name, "shale_lsm_") && name != "shale_background_errors_total" { // not statistics: see extra_test.go
					got = append(got, name)
				}
			}
			var wantNames []string
			for name := range want {
				wantNames = append(wantNames, name)
			}
			require.ElementsMatch(t, wantNames, got)
			require.Equal(t, float64(level), metric(mfs, levelFamily).GetGauge().GetValue())

			var activities []string
			for _, m := range mfs[fileReadFamily].GetMetric() {
				activities = append(activities, m.GetLabel()[0].GetValue())
			}
			require.ElementsMatch(t, wantActivities, activities)
		})
	}
}

// TestLint runs client_golang's linter over everything the collector
// exports, at the level that exports most.
func TestLint(t *testing.T) {
	s := statistics.New(statistics.LevelAll)
	recordSamples(s)
	problems, err := testutil.CollectAndLint(NewCollector(openWithStats(t, s), prometheus.Labels{"db": "lint"}))
	require.NoError(t, err)
	require.Empty(t, problems)
	require.Equal(t, len(allFamilies())-1+len(fileReadActivity),
		testutil.CollectAndCount(NewCollector(openWithStats(t, s), nil), allFamilies()...),
		"a metric per family, and shale_file_read_seconds one per activity")
}

// TestNoStatistics: a database without statistics exports none, only its
// LSM metrics, and registering its collector still works.
func TestNoStatistics(t *testing.T) {
	db, err := driver.Open("shale", engine.MemoryPath+"?statistics=false")
	require.NoError(t, err)
	defer db.Close()
	require.Nil(t, db.Statistics())
	mfs := gather(t, NewCollector(db, nil))
	require.NotEmpty(t, mfs)
	for name := range mfs {
		require.True(t, strings.HasPrefix(name, "shale_lsm_") || name == "shale_background_errors_total", name)
	}
}

// TestRegisterSeveral: databases told apart by constant labels register in
// one registry; the same labels twice, or a constant label named activity,
// fail at Register.
func TestRegisterSeveral(t *testing.T) {
	a := openWithStats(t, statistics.New(statistics.DefaultLevel))
	b := openWithStats(t, statistics.New(statistics.DefaultLevel))
	a.Statistics().RecordTick(statistics.BlockCacheHit, 1)
	b.Statistics().RecordTick(statistics.BlockCacheHit, 2)

	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(NewCollector(a, prometheus.Labels{"db": "a"})))
	require.NoError(t, reg.Register(NewCollector(b, prometheus.Labels{"db": "b"})))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	got := byName(mfs)
	require.Equal(t, 1.0, metric(got, "shale_block_cache_hit_total", "db", "a").GetCounter().GetValue())
	require.Equal(t, 2.0, metric(got, "shale_block_cache_hit_total", "db", "b").GetCounter().GetValue())

	err = reg.Register(NewCollector(b, prometheus.Labels{"db": "a"}))
	require.ErrorAs(t, err, new(prometheus.AlreadyRegisteredError))

	err = prometheus.NewRegistry().Register(NewCollector(a, prometheus.Labels{"activity": "x"}))
	require.ErrorContains(t, err, "duplicate label names")

	require.Panics(t, func() { NewCollector(nil, nil) })
}

// TestScrapeHTTP serves the collector with promhttp on a loopback port and
// reads it back as Prometheus would: text exposition, parsed.
func TestScrapeHTTP(t *testing.T) {
	s := statistics.New(statistics.LevelAll)
	db := openWithStats(t, s)
	recordSamples(s)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(db, prometheus.Labels{"db": "http"}))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer srv.Close()
	require.True(t, strings.HasPrefix(srv.URL, "http://127.0.0.1:"), srv.URL)

	require.NoError(t, testutil.ScrapeAndCompare(srv.URL, strings.NewReader(`
# HELP shale_block_cache_hit_total `+tickerSpecs[statistics.BlockCacheHit].help+`
# TYPE shale_block_cache_hit_total counter
shale_block_cache_hit_total{db="http"} 3
# HELP shale_read_async_seconds_total `+tickerSpecs[statistics.ReadAsyncMicros].help+`
# TYPE shale_read_async_seconds_total counter
shale_read_async_seconds_total{db="http"} 1.5
# HELP shale_statistics_level `+levelHelp+`
# TYPE shale_statistics_level gauge
shale_statistics_level{db="http"} 5
`), "shale_block_cache_hit_total", "shale_read_async_seconds_total", levelFamily))

	mfs := scrape(t, srv.URL)
	get := metric(mfs, fileReadFamily, "activity", "get", "db", "http").GetHistogram()
	require.Equal(t, uint64(1), get.GetSampleCount())
	require.Equal(t, 9e-6, get.GetSampleSum())
	buckets := get.GetBucket()
	require.Len(t, buckets, 25, "24 bounds, then +Inf in the text format")
	require.True(t, math.IsInf(buckets[len(buckets)-1].GetUpperBound(), 1))
	require.Equal(t, uint64(1), buckets[len(buckets)-1].GetCumulativeCount())
	require.Equal(t, "1e-05", strconv.FormatFloat(buckets[3].GetUpperBound(), 'g', -1, 64))
	require.Equal(t, uint64(1), buckets[3].GetCumulativeCount(), "9µs is under le=1e-05")
	require.Equal(t, uint64(0), buckets[2].GetCumulativeCount(), "and not under le=4e-06")
	require.Equal(t, uint64(4), metric(mfs, "shale_sst_read_seconds").GetHistogram().GetSampleCount())
}

// scrape GETs url and parses the text exposition.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return mfs
}
