package shaleprom

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/statistics"
)

// This file exports what the database reports besides its tickers and
// histograms: the per-tag statistics (label "tag") and the LSM metrics of
// driver.DB.Metrics (label "level" for the per-level ones).

const (
	tagLabel = "tag"
	lsmLevel = "level"
	// priorityLabel is the rate-limiter priority: low, mid, high or user.
	priorityLabel = "priority"
	tagReadFam    = "shale_tag_file_read_seconds"
)

// tagTickerFamilies are the per-tag tickers' families, by TagTicker.
var tagTickerFamilies = [statistics.NumTagTickers]struct{ name, help string }{
	statistics.TagBytesRead:             {"shale_tag_read_bytes_total", "Bytes the tag's requests read from table files (shale.tag.<tag>.bytes.read)."},
	statistics.TagBlockCacheHit:         {"shale_tag_block_cache_hit_total", "Data-block cache hits of the tag's requests (shale.tag.<tag>.block.cache.hit)."},
	statistics.TagBlockCacheMiss:        {"shale_tag_block_cache_miss_total", "Data-block cache misses of the tag's requests (shale.tag.<tag>.block.cache.miss)."},
	statistics.TagRateLimiterWaitMicros: {"shale_tag_rate_limiter_wait_seconds_total", "Time the tag's reads waited for rate limiters, the database's and the tag's budget, in seconds (shale.tag.<tag>.rate.limiter.wait.micros)."},
}

// extraDescs are the descriptors of the tag and LSM families.
type extraDescs struct {
	tagTickers [statistics.NumTagTickers]*prometheus.Desc
	tagRead    *prometheus.Desc

	levelTables, levelBytes, levelScore                    *prometheus.Desc
	levelCompactRead, levelCompactWritten, levelFlushed    *prometheus.Desc
	readAmp, writeAmp                                      *prometheus.Desc
	memtables, memtableBytes                               *prometheus.Desc
	blockCacheCapacity, blockCacheUsage                    *prometheus.Desc
	tableCacheOpen                                         *prometheus.Desc
	compactionsRunning, compactionsDone, compactionPending *prometheus.Desc
	flushesRunning, flushesDone                            *prometheus.Desc
	walFiles, walBytes                                     *prometheus.Desc
	stallsActive                                           *prometheus.Desc
	backgroundErrors                                       *prometheus.Desc
	limiterRequests, limiterBytes, limiterPending          *prometheus.Desc
}

func newExtraDescs(constLabels prometheus.Labels) extraDescs {
	var d extraDescs
	for t, f := range tagTickerFamilies {
		d.tagTickers[t] = prometheus.NewDesc(f.name, f.help, []string{tagLabel}, constLabels)
	}
	d.tagRead = prometheus.NewDesc(tagReadFam,
		"Time of the table file reads of each tag's requests, in seconds (recorded in microseconds in shale.tag.<tag>.file.read.micros).",
		[]string{tagLabel}, constLabels)
	level := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, []string{lsmLevel}, constLabels)
	}
	plain := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, nil, constLabels)
	}
	d.levelTables = level("shale_lsm_level_tables", "Table files in the level.")
	d.levelBytes = level("shale_lsm_level_bytes", "Bytes of the level's table files.")
	d.levelScore = level("shale_lsm_level_score", "The level's compaction score; it needs compacting at 1 or more.")
	d.levelCompactRead = level("shale_lsm_level_compaction_read_bytes_total", "Bytes compactions read from the level since the database was opened.")
	d.levelCompactWritten = level("shale_lsm_level_compaction_written_bytes_total", "Bytes compactions wrote into the level since the database was opened.")
	d.levelFlushed = level("shale_lsm_level_flushed_bytes_total", "Bytes flushes wrote into the level since the database was opened.")
	d.readAmp = plain("shale_lsm_read_amplification", "Tables a point read may consult: every L0 table plus one per other non-empty level.")
	d.writeAmp = plain("shale_lsm_write_amplification", "Bytes flushes and compactions wrote over bytes flushes wrote, since open (0 before the first flush).")
	d.memtables = plain("shale_lsm_memtables", "Memtables, the mutable one and the immutable ones waiting for a flush.")
	d.memtableBytes = plain("shale_lsm_memtable_bytes", "Bytes in use in the memtables.")
	d.blockCacheCapacity = plain("shale_lsm_block_cache_capacity_bytes", "Capacity of the block cache.")
	d.blockCacheUsage = plain("shale_lsm_block_cache_usage_bytes", "Bytes in the block cache.")
	d.tableCacheOpen = plain("shale_lsm_table_cache_open_tables", "Table readers open in the table cache.")
	d.compactionsRunning = plain("shale_lsm_compactions_in_progress", "Compactions running now.")
	d.compactionsDone = plain("shale_lsm_compactions_total", "Compactions finished since the database was opened.")
	d.compactionPending = plain("shale_lsm_compaction_pending_bytes", "Bytes the levels hold above their targets, which compactions have yet to move down.")
	d.flushesRunning = plain("shale_lsm_flushes_in_progress", "Flushes running now.")
	d.flushesDone = plain("shale_lsm_flushes_total", "Flushes finished since the database was opened.")
	d.walFiles = plain("shale_lsm_wal_files", "Write-ahead log files on disk.")
	d.walBytes = plain("shale_lsm_wal_bytes", "Bytes of the WAL files on disk.")
	// The count and time of write stalls are shale_write_stall_seconds's
	// _count and _sum (a statistics histogram); only what it cannot say is
	// here.
	d.stallsActive = plain("shale_lsm_write_stalls_active", "Writes stalled now, waiting for a flush or compaction.")
	d.backgroundErrors = plain("shale_background_errors_total", "Background errors since open: failed WAL writes, memtable inserts, flushes and compactions (the property shale.background-errors). "+
		"Each one stops compactions (out of space) or writes until it is resolved; the database's log and event listener say which.")
	priority := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, []string{priorityLabel}, constLabels)
	}
	d.limiterRequests = priority("shale_rate_limiter_priority_requests_total", "Requests the rate limiter granted at the priority since it was made.")
	d.limiterBytes = priority("shale_rate_limiter_priority_bytes_total", "Bytes the rate limiter granted at the priority since it was made.")
	d.limiterPending = priority("shale_rate_limiter_priority_pending_requests", "Requests waiting at the priority now.")
	return d
}

func (d *extraDescs) describe(ch chan<- *prometheus.Desc) {
	for _, x := range d.tagTickers {
		ch <- x
	}
	for _, x := range []*prometheus.Desc{d.tagRead, d.levelTables, d.levelBytes, d.levelScore, d.levelCompactRead,
		d.levelCompactWritten, d.levelFlushed, d.readAmp, d.writeAmp, d.memtables, d.memtableBytes,
		d.blockCacheCapacity, d.blockCacheUsage, d.tableCacheOpen, d.compactionsRunning, d.compactionsDone,
		d.compactionPending, d.flushesRunning, d.flushesDone, d.walFiles, d.walBytes,
		d.stallsActive, d.backgroundErrors, d.limiterRequests, d.limiterBytes, d.limiterPending} {
		ch <- x
	}
}

// collectTags sends the per-tag statistics of an Export (present from
// statistics.TagMinLevel up).
func (c *collector) collectTags(ch chan<- prometheus.Metric, tags []statistics.TagValue) {
	for i := range tags {
		tv := &tags[i]
		for t := range statistics.NumTagTickers {
			v := float64(tv.Tickers[t])
			if t == statistics.TagRateLimiterWaitMicros {
				v = seconds(tv.Tickers[t], time.Microsecond)
			}
			ch <- labelled(c.extra.tagTickers[t], prometheus.CounterValue, v, tv.Name)
		}
		snap := tv.FileReadMicros
		buckets := bucketSets[kindMicros].cumulative(snap.Buckets[:])
		m, err := prometheus.NewConstHistogram(c.extra.tagRead, snap.Count, seconds(snap.Sum, time.Microsecond), buckets, tv.Name)
		if err != nil {
			m = prometheus.NewInvalidMetric(c.extra.tagRead, err)
		}
		ch <- m
	}
}

// metricsTimeout bounds the Metrics call of one scrape.
const metricsTimeout = 10 * time.Second

// collectLSM sends the LSM metrics, if the driver reports them; nothing
// when it does not, or when the database is closed. Another error fails
// the scrape.
func (c *collector) collectLSM(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), metricsTimeout)
	defer cancel()
	m, err := c.db.Metrics(ctx)
	switch {
	case err == nil:
	case isAbsent(err):
		return
	default:
		ch <- prometheus.NewInvalidMetric(c.extra.readAmp, err)
		return
	}
	d := &c.extra
	gauge := prometheus.GaugeValue
	counter := prometheus.CounterValue
	if len(m.Levels) > 0 {
		for _, l := range m.Levels {
			lv := strconv.Itoa(l.Level)
			ch <- labelled(d.levelTables, gauge, float64(l.Tables), lv)
			ch <- labelled(d.levelBytes, gauge, float64(l.Bytes), lv)
			ch <- labelled(d.levelScore, gauge, l.Score, lv)
			ch <- labelled(d.levelCompactRead, counter, float64(l.BytesRead), lv)
			ch <- labelled(d.levelCompactWritten, counter, float64(l.BytesWritten), lv)
			ch <- labelled(d.levelFlushed, counter, float64(l.BytesFlushed), lv)
		}
		ch <- constMetric(d.readAmp, gauge, float64(m.ReadAmp()))
		ch <- constMetric(d.writeAmp, gauge, m.WriteAmp())
	}
	if x := m.MemTables; x != nil {
		ch <- constMetric(d.memtables, gauge, float64(x.Count))
		ch <- constMetric(d.memtableBytes, gauge, float64(x.Bytes))
	}
	if x := m.BlockCache; x != nil {
		ch <- constMetric(d.blockCacheCapacity, gauge, float64(x.Capacity))
		ch <- constMetric(d.blockCacheUsage, gauge, float64(x.Usage))
	}
	if x := m.TableCache; x != nil {
		ch <- constMetric(d.tableCacheOpen, gauge, float64(x.Open))
	}
	if x := m.Compactions; x != nil {
		ch <- constMetric(d.compactionsRunning, gauge, float64(x.InProgress))
		ch <- constMetric(d.compactionsDone, counter, float64(x.Done))
		ch <- constMetric(d.compactionPending, gauge, float64(x.PendingBytes))
	}
	if x := m.Flushes; x != nil {
		ch <- constMetric(d.flushesRunning, gauge, float64(x.InProgress))
		ch <- constMetric(d.flushesDone, counter, float64(x.Done))
	}
	if x := m.WAL; x != nil {
		ch <- constMetric(d.walFiles, gauge, float64(x.Files))
		ch <- constMetric(d.walBytes, gauge, float64(x.Bytes))
	}
	if x := m.WriteStalls; x != nil {
		ch <- constMetric(d.stallsActive, gauge, float64(x.Active))
	}
	c.collectBackgroundErrors(ctx, ch)
	if x := m.RateLimiter; x != nil {
		for _, p := range x.ByPriority {
			name := strings.ToLower(p.Priority.String())
			ch <- labelled(d.limiterRequests, counter, float64(p.Requests), name)
			ch <- labelled(d.limiterBytes, counter, float64(p.Bytes), name)
			ch <- labelled(d.limiterPending, gauge, float64(p.Pending), name)
		}
	}
}

// backgroundErrorsProperty is the engine's property (engine.PropBackgroundErrors)
// counting background errors. The collector asks for it by name so that it
// stays a client of the driver façade only.
const backgroundErrorsProperty = "shale.background-errors"

// collectBackgroundErrors sends the background error count when the driver
// answers the property; nothing when it does not know it.
func (c *collector) collectBackgroundErrors(ctx context.Context, ch chan<- prometheus.Metric) {
	v, err := c.db.Property(ctx, backgroundErrorsProperty)
	switch {
	case err == nil:
	case isAbsent(err) || errors.Is(err, driver.ErrNotFound):
		return
	default:
		ch <- prometheus.NewInvalidMetric(c.extra.backgroundErrors, err)
		return
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.extra.backgroundErrors, fmt.Errorf("property %s: %w", backgroundErrorsProperty, err))
		return
	}
	ch <- constMetric(c.extra.backgroundErrors, prometheus.CounterValue, float64(n))
}

// isAbsent reports an error after which the LSM metrics are simply not
// exported: the driver does not report them, or the database is closed.
func isAbsent(err error) bool {
	return errors.Is(err, driver.ErrNotSupported) || errors.Is(err, driver.ErrClosed)
}

func labelled(d *prometheus.Desc, t prometheus.ValueType, v float64, label string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(d, t, v, label)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}
