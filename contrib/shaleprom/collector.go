// Package shaleprom exports a shale database's statistics to Prometheus.
//
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(shaleprom.NewCollector(db, prometheus.Labels{"db": "orders"}))
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// Each scrape reads the database's [statistics.Statistics] once
// ([statistics.Statistics.Export]) and turns it into constant metrics:
//
//   - shale_statistics_level, a gauge: the stats level's number (0
//     disable_all … 3 except_detailed_timers, the default, … 5 all).
//   - a counter per ticker, named and described by the table in help.go
//     (shale_block_cache_hit_total for shale.block.cache.hit): base units
//     last, _total once; tickers of time in seconds
//     (shale_db_mutex_wait_seconds_total for shale.db.mutex.wait.micros).
//     shale.stall.micros is not exported: write-stall time is
//     shale_write_stall_seconds.
//   - a histogram per statistics histogram (shale_sst_read_seconds for
//     shale.sst.read.micros, shale_read_size_bytes for
//     shale.bytes.per.read), time in seconds, with a bounded set of "le"
//     bounds taken from RocksDB's own limits so every count is exact
//     (buckets.go): 24 from 1 µs to 110 s for latencies, 27 from 110 ns for
//     block (de)compression, 27 from 1 B to 1.2 GB for sizes, 14 from 1 to
//     250 for counts. The eight per-activity file-read histograms are one
//     family, shale_file_read_seconds, with the label activity: flush,
//     compaction, db_open, get, multiget, db_iterator, verify_db_checksum or
//     verify_file_checksums.
//
// Only the statistics enabled at the current level are exported: at the
// default level, shale_file_read_seconds has the activities flush,
// compaction and db_open, and the user-read ones appear from
// stats_level=except_time_for_mutex up. A database whose driver reports no
// statistics (DB.Statistics() is nil: statistics=false, or a driver without
// them) exports nothing.
//
// From stats_level=except_time_for_mutex up, the statistics of each tag
// (ioctx.Tag) the database has seen are exported with the label tag:
// shale_tag_file_read_seconds (a histogram), shale_tag_read_bytes_total,
// shale_tag_block_cache_hit_total, shale_tag_block_cache_miss_total and
// shale_tag_rate_limiter_wait_seconds_total.
//
// When the driver reports LSM metrics (driver.DB.Metrics), each scrape also
// reads them once and exports them as shale_lsm_* gauges, the per-level ones
// with the label level (shale_lsm_level_tables{level="0"}), and as counters
// those that count since the database was opened (bytes compactions read
// from and wrote into each level, bytes flushed, compactions and flushes).
// When the driver answers the property shale.background-errors, it is
// shale_background_errors_total. What the driver does not report is not
// exported; neither is anything after the database is closed.
//
// The statistics' rate-limiter counters (shale_rate_limiter_read_requests_total
// and the like) count every priority together. By priority, with the label
// priority, come from the limiter the driver reports in DB.Metrics:
// shale_rate_limiter_priority_requests_total, ..._bytes_total and
// shale_rate_limiter_priority_pending_requests.
//
// The collector is a checked one: Describe sends every family it can export,
// whatever the level, so registering two collectors that would export the
// same series (two databases with the same constant labels) fails at
// Register, not at scrape time.
package shaleprom

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/statistics"
)

// collector is the prometheus.Collector of one database.
type collector struct {
	db *driver.DB

	level      *prometheus.Desc
	tickers    [statistics.NumTickers]*prometheus.Desc
	histograms [statistics.NumHistograms]*prometheus.Desc
	// buckets are the exported buckets of each histogram.
	buckets [statistics.NumHistograms]*bucketSet
	// extra are the tag and LSM families.
	extra extraDescs
}

// NewCollector returns a Collector of db's statistics, each metric with the
// constant labels constLabels (nil for none), such as {"db": "orders"} to
// tell databases apart in one registry. A constant label named "activity"
// clashes with shale_file_read_seconds's own label, and one named "tag" or
// "level" with the tag and LSM families': registering the collector then
// fails. db must not be nil.
//
// Each scrape calls db.Statistics(), which connects the database if nothing
// has yet (as database/sql connects on first use); after db.Close the
// statistics stay readable and are still exported.
func NewCollector(db *driver.DB, constLabels prometheus.Labels) prometheus.Collector {
	if db == nil {
		panic("shaleprom: NewCollector given a nil *driver.DB")
	}
	c := &collector{
		db:    db,
		level: prometheus.NewDesc(levelFamily, levelHelp, nil, constLabels),
		extra: newExtraDescs(constLabels),
	}
	for t := range statistics.NumTickers {
		if f := tickerFamily(t); f.name != "" {
			c.tickers[t] = prometheus.NewDesc(f.name, f.help, nil, constLabels)
		}
	}
	var fileRead *prometheus.Desc
	for h := range statistics.NumHistograms {
		f := histogramFamily(h)
		switch {
		case f.activity == "":
			c.histograms[h] = prometheus.NewDesc(f.name, f.help, nil, constLabels)
		case fileRead == nil:
			fileRead = prometheus.NewDesc(f.name, f.help, []string{activityLabel}, constLabels)
			fallthrough
		default:
			c.histograms[h] = fileRead
		}
		c.buckets[h] = &bucketSets[histogramKind(h)]
	}
	return c
}

// Describe sends the descriptor of every family the collector may export,
// the shared shale_file_read_seconds once.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.level
	for _, d := range c.tickers {
		if d != nil {
			ch <- d
		}
	}
	sent := make(map[*prometheus.Desc]bool)
	for _, d := range c.histograms {
		if !sent[d] {
			sent[d] = true
			ch <- d
		}
	}
	c.extra.describe(ch)
}

// Collect reads the statistics once and sends the level, and every ticker
// and histogram enabled at it. A metric that cannot be built (a constant
// label clashing with "activity") is sent as an invalid metric, which fails
// the scrape with its error rather than the process with a panic.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.collectLSM(ch)
	s := c.db.Statistics()
	if s == nil {
		return
	}
	e := s.Export()
	ch <- constMetric(c.level, prometheus.GaugeValue, float64(e.Level))
	for _, tv := range e.Tickers {
		if c.tickers[tv.Ticker] == nil {
			continue // exported by another family (tickerSpecs says which)
		}
		v := float64(tv.Count)
		if u := tv.Ticker.TimeUnit(); u != 0 {
			v = seconds(tv.Count, u)
		}
		ch <- constMetric(c.tickers[tv.Ticker], prometheus.CounterValue, v)
	}
	for i := range e.Histograms {
		ch <- c.histogram(&e.Histograms[i])
	}
	c.collectTags(ch, e.Tags)
}

func constMetric(d *prometheus.Desc, t prometheus.ValueType, v float64) prometheus.Metric {
	m, err := prometheus.NewConstMetric(d, t, v)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}

// histogram builds the const histogram of one snapshot: cumulative counts
// under the exported bounds (buckets.go), the rest left to +Inf (Count).
func (c *collector) histogram(hv *statistics.HistogramValue) prometheus.Metric {
	h := hv.Histogram
	buckets := c.buckets[h].cumulative(hv.Buckets[:])
	sum := float64(hv.Sum)
	if u := h.TimeUnit(); u != 0 {
		sum = seconds(hv.Sum, u)
	}
	var labels []string
	if a, ok := fileReadActivity[h]; ok {
		labels = []string{a}
	}
	m, err := prometheus.NewConstHistogram(c.histograms[h], hv.Count, sum, buckets, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(c.histograms[h], err)
	}
	return m
}
