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
	// name is "" for a statistic that is not exported (see spec).
	name, help string
	// activity is the activity label value of a file-read histogram, ""
	// for every other statistic.
	activity string
}

// tickerFamily is the counter a ticker is exported as (tickerSpecs). A
// ticker missing from the table (one added to statistics after this
// package) is exported under its old-rule name with a HELP saying so, so
// the exporter never drops it silently; TestHelpTables fails for it.
func tickerFamily(t statistics.Ticker) family {
	if s, ok := tickerSpecs[t]; ok {
		return family{name: s.name, help: s.help}
	}
	return family{name: legacyTickerName(t), help: fmt.Sprintf("shale statistics ticker %s (no HELP written yet).", t)}
}

// histogramFamily is the histogram a statistics histogram is exported as
// (histogramSpecs); the eight per-activity file-read histograms are
// shale_file_read_seconds{activity="get"} and so on.
func histogramFamily(h statistics.Histogram) family {
	if a, ok := fileReadActivity[h]; ok {
		return family{name: fileReadFamily, help: fileReadHelp, activity: a}
	}
	if s, ok := histogramSpecs[h]; ok {
		return family{name: s.name, help: s.help}
	}
	return family{name: legacyHistogramName(h), help: fmt.Sprintf("shale statistics histogram %s (no HELP written yet).", h)}
}

// legacyName is the name the exporter gave every statistic before it had a
// table of names (v0.3): "shale." becomes "shale_", dots become
// underscores, and the name of a time statistic ends in "_seconds" in place
// of RocksDB's "_micros" or "_nanos" (or after it, for shale.db.write.stall).
// The README's table of renames maps these to the new names.
func legacyName(name string, unit time.Duration) string {
	n := strings.ReplaceAll(name, ".", "_")
	if unit != 0 {
		n = strings.TrimSuffix(strings.TrimSuffix(n, "_micros"), "_nanos") + "_seconds"
	}
	return n
}

func legacyTickerName(t statistics.Ticker) string {
	return legacyName(t.String(), t.TimeUnit()) + "_total"
}

func legacyHistogramName(h statistics.Histogram) string {
	if _, ok := fileReadActivity[h]; ok {
		return fileReadFamily
	}
	return legacyName(h.String(), h.TimeUnit())
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
