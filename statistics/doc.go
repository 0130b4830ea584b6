// Package statistics counts what a shale database does: tickers (counters)
// and histograms (distributions of latencies and sizes), gated by a stats
// level, with RocksDB's names, bucket boundaries, percentile math and text
// layouts, so that shale's output can be compared with RocksDB's line by
// line.
//
// # Names
//
// Every [Ticker] and [Histogram] prints as "shale." plus the suffix of the
// RocksDB statistic of the same meaning: "shale.block.cache.hit",
// "shale.sst.read.micros", "shale.file.read.get.micros". [TxnConflicts] and
// [RateLimiterWaitMicros] are shale's own. The numeric values of the enums are
// shale's own too; compare by name across the two systems.
//
// # Levels and gating
//
// A [Statistics] records at a [Level] (RocksDB's StatsLevel, same values),
// [DefaultLevel] unless set otherwise, changeable at run time with
// [Statistics.SetLevel]. Each statistic has a class, and each class is
// recorded from one level up:
//
//	level                            value  records
//	LevelDisableAll (ExceptTickers)  0      nothing
//	LevelExceptHistogramOrTimers     1      + tickers
//	LevelExceptTimers                2      + non-time histograms (RecordInHistogram)
//	LevelExceptDetailedTimers        3      + time histograms (ReportTimeToHistogram, StopWatch,
//	                                          GetTimer)  [default]
//	LevelExceptTimeForMutex          4      + detailed timers: the five user-read FileRead*
//	                                          histograms, CompressionTimesNanos,
//	                                          DecompressionTimesNanos; per-tag statistics
//	LevelAll                         5      + DB mutex wait time (the DBMutexWaitMicros ticker)
//
// So at the default level the aggregate SSTReadMicros and the flush,
// compaction and DB-open breakdowns are recorded, while the Get, MultiGet,
// iterator and verification breakdowns stay at count 0: RocksDB measured a
// 4–5% slowdown of Get from recording them. [Ticker.MinLevel] and
// [Histogram.MinLevel] give each statistic's level.
//
// The gate belongs to the statistic, not to the method: RecordInHistogram
// given a time histogram, or ReportTimeToHistogram given a non-time one,
// records under the gate of the histogram's own class. Where nothing would be
// recorded, nothing is measured: [Statistics.HistogramEnabled] tells a caller
// whether to read the clock, and a [StopWatch] whose histograms are all gated
// off never reads it.
//
// # Tags
//
// A read attributed to a tag (ioctx.Tag: a tenant, a job) is counted, in
// addition, in that tag's own statistics ([Statistics.Tag], [TagStats]): a
// file-read latency histogram and the tickers of [TagTicker] (bytes read,
// block-cache hits and misses, rate-limiter wait). They are a breakdown of
// the user reads as the per-activity histograms are, so they are recorded
// from [TagMinLevel], the level of the detailed timers, and a Statistics
// makes room for a tag on the tag's first read (the only allocation). They
// print last in [Statistics.String] ("shale.tag.<name>.bytes.read") and come
// in [Export.Tags].
//
// # Histograms
//
// A histogram ([HistogramStat]) has RocksDB's 109 buckets. Their inclusive
// upper limits start {1, 2}; then v = 1.5·v on the untruncated double while v
// fits in a uint64, each uint64(v) cut to its two most significant decimal
// digits: 1, 2, 3, 4, 6, 10, 15, 22, 34, 51, 76, 110, 170, 250, … 9.2e18,
// 1.3e19 ([BucketLimits]). Bucket 0 holds [0, 1], bucket b holds
// (limit[b-1], limit[b]], and the last bucket also holds everything above
// 1.3e19.
//
// Percentile(p): threshold = count·p/100; at the first bucket b whose
// cumulative count reaches the threshold, r = left + (right−left)·(threshold −
// count before b)/count in b, where left and right are b's limits (left = 0
// for bucket 0); r is clamped to [Min, Max]. Average = Sum/Count and StdDev =
// sqrt(max(0, (SumSquares·Count − Sum²)/Count²)), all in float64, 0 when
// empty. Min starts at the last limit (1.3e19) and only goes down, so an empty
// histogram, or one holding only values above 1.3e19, reports it. Sums wrap
// around at 2^64 as RocksDB's do.
//
// [HistogramStat.String] and [Statistics.String] reproduce RocksDB's
// HistogramImpl::ToString and StatisticsImpl::ToString byte for byte (their
// docs show the layouts).
//
// # Concurrency and cost
//
// Everything but [StopWatch] and [GetTimer] is safe for concurrent use. Recording never
// locks and never allocates: a tick is one atomic add; a histogram sample is
// three (sum, sum of squares, bucket; one for a sample of 0) plus two loads
// that compare it with the min and max, which are written only when the
// sample changes them. A Statistics stripes its counters over 4×GOMAXPROCS
// shards (a power of two in [4, 64]), each padded to whole pairs of cache
// lines, and each record goes to the shard of the P (scheduler processor)
// the recorder runs on, so recorders running in parallel do not write the
// same cache line; readers sum the shards. On amd64 (without the race
// detector) a recorder pinned to its P owns its shard and makes the same
// adds unlocked, a fraction of a locked add's cost (owned_amd64.go says why
// readers still see whole, ordered values). Counts are exact under
// concurrency, unlike RocksDB's, which may lose updates. Reads are not
// snapshots: each counter is read atomically, but not all at one instant.
// [Statistics.HistogramSnapshot] and [Statistics.Export], which exporters use
// (expvar through [Expvar], Prometheus through contrib/shaleprom), state
// what one read guarantees: a histogram's count always equals the sum of its
// buckets, and its sum includes every sample it counts.
// [Statistics.Reset] is not atomic with respect to concurrent recorders
// (with unlocked adds, a count a recorder was adding to while Reset zeroed
// it may come back whole).
//
// A StopWatch, and the one-word [GetTimer] a point lookup uses for DBGet,
// read a monotonic clock twice per sample: on amd64 with an invariant
// time-stamp counter, the counter (RDTSC), calibrated against the runtime's
// clock when the first Statistics is made (clock_amd64.go); elsewhere
// runtime.nanotime, linked in linkname.go. Those clock reads, not the
// bookkeeping around them, are most of what recording costs. On the
// project's 2-core VM a counter read was 11-12 CPU ns (BenchmarkLimits,
// part=clock, as a8dbfe2 reports it), and a Get miss ruled out by a bloom
// filter paid +11.7% (+10.8 to +13.0 over 12 runs) at the default level over
// disabled statistics (engine's BenchmarkStatsOverheadPaired, p10 ratio, at
// b599f99). a8dbfe2 puts about 10 points of that on the two clock reads and
// the table's one tick, from a run with the Get's own recording removed
// whose numbers no commit records. A Get records its own tickers and samples
// in one shard access ([Statistics.RecordGet]).
//
// A nil *Statistics is valid everywhere and records nothing.
//
// This package imports only the standard library, so every layer of shale
// may use it.
package statistics
