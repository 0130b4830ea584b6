package shaleprom

import (
	"fmt"
	"strings"
	"time"

	"github.com/shaledb/shale/statistics"
)

// fileReadFamily is the one family of the eight per-activity file-read
// histograms, told apart by activityLabel.
const (
	fileReadFamily = "shale_file_read_seconds"
	activityLabel  = "activity"
	levelFamily    = "shale_statistics_level"
)

// fileReadActivity gives the activity label value of each per-activity
// file-read histogram: the part of the histogram's name between
// "shale.file.read." and ".micros", dots as underscores.
var fileReadActivity = map[statistics.Histogram]string{
	statistics.FileReadFlushMicros:               "flush",
	statistics.FileReadCompactionMicros:          "compaction",
	statistics.FileReadDBOpenMicros:              "db_open",
	statistics.FileReadGetMicros:                 "get",
	statistics.FileReadMultiGetMicros:            "multiget",
	statistics.FileReadDBIteratorMicros:          "db_iterator",
	statistics.FileReadVerifyDBChecksumMicros:    "verify_db_checksum",
	statistics.FileReadVerifyFileChecksumsMicros: "verify_file_checksums",
}

// family is how one statistic is exported.
type family struct {
	name, help string
	// activity is the activity label value of a file-read histogram, ""
	// for every other statistic.
	activity string
}

// promName turns a statistic's name into a Prometheus name: "shale." becomes
// "shale_", dots become underscores, and the name of a time statistic ends in
// "_seconds" in place of RocksDB's "_micros" or "_nanos" (or after it, for
// shale.db.write.stall, which RocksDB names without a unit).
func promName(name string, unit time.Duration) string {
	n := strings.ReplaceAll(name, ".", "_")
	if unit != 0 {
		n = strings.TrimSuffix(strings.TrimSuffix(n, "_micros"), "_nanos") + "_seconds"
	}
	return n
}

// unitNote says what a time statistic was converted from.
func unitNote(unit time.Duration) string {
	switch unit {
	case time.Microsecond:
		return ", in seconds (recorded in microseconds)"
	case time.Nanosecond:
		return ", in seconds (recorded in nanoseconds)"
	}
	return ""
}

// tickerFamily is the counter a ticker is exported as:
// shale_block_cache_hit_total for shale.block.cache.hit.
func tickerFamily(t statistics.Ticker) family {
	u := t.TimeUnit()
	return family{
		name: promName(t.String(), u) + "_total",
		help: fmt.Sprintf("shale statistics ticker %s%s.", t, unitNote(u)),
	}
}

// histogramFamily is the histogram a statistics histogram is exported as:
// shale_db_get_seconds for shale.db.get.micros, and the eight per-activity
// file-read histograms as shale_file_read_seconds{activity="get"} and so on.
func histogramFamily(h statistics.Histogram) family {
	u := h.TimeUnit()
	if a, ok := fileReadActivity[h]; ok {
		return family{
			name:     fileReadFamily,
			help:     "Time of table file reads by the IO activity they served, in seconds (recorded in microseconds in shale.file.read.<activity>.micros).",
			activity: a,
		}
	}
	return family{
		name: promName(h.String(), u),
		help: fmt.Sprintf("shale statistics histogram %s%s.", h, unitNote(u)),
	}
}

// levelHelp documents the values of the level gauge.
const levelHelp = "The statistics level (stats_level), as RocksDB's StatsLevel numbers it: " +
	"0 disable_all, 1 except_histogram_or_timers, 2 except_timers, 3 except_detailed_timers (the default), " +
	"4 except_time_for_mutex, 5 all. Statistics gated off at the level are not exported."

// seconds converts n units of u to seconds. Division by the number of units
// per second, rather than multiplication by u in seconds, keeps round values
// round: 3 µs is 3e-06, not 3.0000000000000004e-06.
func seconds(n uint64, u time.Duration) float64 {
	return float64(n) / float64(time.Second/u)
}

// upperBounds returns the Prometheus "le" bounds of a histogram in unit u (0
// for sizes and counts): RocksDB's bucket limits, in seconds for time. The
// last limit is left out: the last bucket also holds every sample above it,
// so its bound is +Inf, which Prometheus histograms always have.
func upperBounds(u time.Duration) []float64 {
	limits := statistics.BucketLimits()
	b := make([]float64, len(limits)-1)
	for i := range b {
		if u == 0 {
			b[i] = float64(limits[i])
		} else {
			b[i] = seconds(limits[i], u)
		}
	}
	return b
}
