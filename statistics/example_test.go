package statistics_test

import (
	"fmt"

	"github.com/shaledb/shale/statistics"
)

// A file reader times each read into the aggregate histogram and the
// activity's; at the default level the user-read breakdown is skipped.
func ExampleStatistics_StartStopWatch() {
	stats := statistics.New(statistics.DefaultLevel)

	w := stats.StartStopWatch(statistics.SSTReadMicros, statistics.FileReadGetMicros)
	w.DelayStart() // waiting for the rate limiter is not read latency
	w.DelayStop()
	w.Stop()

	fmt.Println(stats.HistogramData(statistics.SSTReadMicros).Count)
	fmt.Println(stats.HistogramData(statistics.FileReadGetMicros).Count)

	stats.SetLevel(statistics.LevelExceptTimeForMutex)
	w = stats.StartStopWatch(statistics.SSTReadMicros, statistics.FileReadGetMicros)
	w.Stop()
	fmt.Println(stats.HistogramData(statistics.FileReadGetMicros).Count)
	// Output:
	// 1
	// 0
	// 1
}

func ExampleHistogramStat() {
	var h statistics.HistogramStat
	for _, v := range []uint64{1, 2, 3, 4} {
		h.Add(v)
	}
	fmt.Print(h.String())
	// Output:
	// Count: 4 Average: 2.5000  StdDev: 1.12
	// Min: 1  Median: 2.0000  Max: 4
	// Percentiles: P50: 2.00 P75: 3.00 P99: 3.96 P99.9: 4.00 P99.99: 4.00
	// ------------------------------------------------------
	// [       0,       1 ]        1  25.000%  25.000% #####
	// (       1,       2 ]        1  25.000%  50.000% #####
	// (       2,       3 ]        1  25.000%  75.000% #####
	// (       3,       4 ]        1  25.000% 100.000% #####
}

func ExampleParseLevel() {
	l, err := statistics.ParseLevel("except_time_for_mutex")
	fmt.Println(l, int(l), err)
	_, err = statistics.ParseLevel("verbose")
	fmt.Println(err)
	// Output:
	// except_time_for_mutex 4 <nil>
	// statistics: unknown stats level "verbose" (want disable_all, except_tickers, except_histogram_or_timers, except_timers, except_detailed_timers, except_time_for_mutex or all)
}
