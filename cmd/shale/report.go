package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/shaledb/shale/statistics"
)

// activityHistograms are the rows of the per-activity table: the aggregate
// first, then its breakdown by IO activity (RocksDB PRs #11288 and #11444).
var activityHistograms = []statistics.Histogram{
	statistics.SSTReadMicros,
	statistics.FileReadFlushMicros,
	statistics.FileReadCompactionMicros,
	statistics.FileReadDBOpenMicros,
	statistics.FileReadGetMicros,
	statistics.FileReadMultiGetMicros,
	statistics.FileReadDBIteratorMicros,
	statistics.FileReadVerifyDBChecksumMicros,
	statistics.FileReadVerifyFileChecksumsMicros,
}

// keyTickers are the tickers printed under the per-activity table: what
// explains the file reads above it.
var keyTickers = []statistics.Ticker{
	statistics.BlockCacheHit,
	statistics.BlockCacheMiss,
	statistics.BloomFilterUseful,
	statistics.BloomFilterFullPositive,
	statistics.BytesRead,
	statistics.IterBytesRead,
	statistics.NumberMultiGetBytesRead,
	statistics.NonLastLevelReadBytes,
	statistics.LastLevelReadBytes,
	statistics.CompactReadBytes,
	statistics.VerifyChecksumReadBytes,
	statistics.BlockChecksumComputeCount,
	statistics.BlockChecksumMismatchCount,
	statistics.RateLimiterRequestsRead,
	statistics.RateLimiterBytesRead,
	statistics.RateLimiterDelayedRequestsRead,
	statistics.NumberRateLimiterDrains,
}

// printActivityTable prints, for the aggregate file-read histogram and each
// per-activity one, the sample count and P50, P99 and max in microseconds,
// then the sum of the breakdown's counts (every file read has an activity
// that maps to a breakdown, so it equals the aggregate's count unless reads
// were made untagged or at a level that gates the user-read breakdowns), then
// the key tickers.
func printActivityTable(w io.Writer, st *statistics.Statistics) error {
	if st == nil {
		_, err := fmt.Fprintln(w, "statistics are disabled (DSN statistics=false)")
		return err
	}
	fmt.Fprintf(w, "per-activity file reads (stats_level %s; latencies in µs)\n", st.Level())
	const row = "%-45s %10s %9s %9s %9s\n"
	fmt.Fprintf(w, row, "histogram", "count", "p50", "p99", "max")
	var breakdown uint64
	for i, h := range activityHistograms {
		d := st.HistogramData(h)
		if i > 0 {
			breakdown += d.Count
		}
		if d.Count == 0 {
			fmt.Fprintf(w, row, h, "0", "-", "-", "-")
			continue
		}
		fmt.Fprintf(w, row, h, strconv.FormatUint(d.Count, 10), strconv.FormatFloat(d.Median, 'f', 1, 64),
			strconv.FormatFloat(d.P99, 'f', 1, 64), strconv.FormatUint(d.Max, 10))
	}
	fmt.Fprintln(w, strings.TrimRight(fmt.Sprintf(row, "  (sum of the "+strconv.Itoa(len(activityHistograms)-1)+" breakdowns)", strconv.FormatUint(breakdown, 10), "", "", ""), " \n"))
	if st.Level() < statistics.LevelExceptTimeForMutex {
		fmt.Fprintf(w, "note: the Get, MultiGet, iterator and verify breakdowns need stats_level %s or %s\n",
			statistics.LevelExceptTimeForMutex, statistics.LevelAll)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "tickers")
	for _, t := range keyTickers {
		if _, err := fmt.Fprintf(w, "%-45s %14d\n", t, st.TickerCount(t)); err != nil {
			return err
		}
	}
	return nil
}

// micros formats a latency held in nanoseconds as microseconds.
func micros(ns float64) string {
	us := ns / 1e3
	switch {
	case us >= 1e5:
		return strconv.FormatFloat(us, 'f', 0, 64)
	case us >= 100:
		return strconv.FormatFloat(us, 'f', 1, 64)
	}
	return strconv.FormatFloat(us, 'f', 2, 64)
}

// formatBytes formats n bytes with a binary unit and three significant
// digits: "512 B", "1.50 KiB", "64.0 MiB".
func formatBytes(n int64) string {
	const units = "KMGTPE"
	if n < 1024 && n > -1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	v := float64(n)
	i := -1
	for (v >= 1024 || v <= -1024) && i < len(units)-1 {
		v /= 1024
		i++
	}
	prec := 2
	switch {
	case v >= 100:
		prec = 0
	case v >= 10:
		prec = 1
	}
	return strconv.FormatFloat(v, 'f', prec, 64) + " " + units[i:i+1] + "iB"
}

// formatRate formats n units done in d as a rate per second.
func formatRate(n float64, d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return strconv.FormatFloat(n/d.Seconds(), 'f', 1, 64)
}

// roundDuration rounds d for display: milliseconds below ten seconds,
// hundredths of a second above.
func roundDuration(d time.Duration) time.Duration {
	if d < 10*time.Second {
		return d.Round(time.Microsecond * 100)
	}
	return d.Round(10 * time.Millisecond)
}
