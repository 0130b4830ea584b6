package statistics

import "time"

// NumBuckets is the number of buckets of every histogram,
// len(BucketLimits()).
const NumBuckets = numBuckets

// HistogramSnapshot is one histogram read once: its bucket counts and its
// summary, for exporters that need the distribution itself (a Prometheus
// histogram's cumulative buckets) rather than [HistogramData]'s percentiles.
//
// What one read guarantees, given that recording is lock-free: Count is the
// sum of Buckets, always, and every sample counted in Buckets is also in Sum,
// Min and Max (HistogramStat.Add writes those words before the bucket, and the
// read loads the buckets first). Sum, Min and Max may in addition reflect
// samples recorded while the read ran, whose buckets were read before them.
// So Sum/Count can be a little high, never missing a counted sample (modulo
// the wrap-around of Sum at 2^64). Between two reads with no Reset in
// between, Count, Sum and every bucket only grow.
type HistogramSnapshot struct {
	// Count is the number of samples, the sum of Buckets.
	Count uint64
	// Sum is the total of the samples, in the histogram's unit (see
	// [Histogram.TimeUnit]); it wraps around at 2^64, as RocksDB's does.
	Sum uint64
	// Min and Max are as in HistogramData: before the first sample, Min is
	// the last bucket limit (1.3e19) and Max is 0.
	Min, Max uint64
	// Buckets[b] counts the samples in bucket b, not cumulatively: bucket 0
	// holds [0, BucketLimits()[0]], bucket b holds (BucketLimits()[b-1],
	// BucketLimits()[b]], and the last bucket also holds every sample above
	// its limit, so its upper bound is really +Inf.
	Buckets [NumBuckets]uint64

	// sumSquares is kept for Data's StdDev.
	sumSquares uint64
}

// Data returns the summary of the snapshot, computed from the same read, so
// its Count and percentiles agree with Buckets.
func (h *HistogramSnapshot) Data() HistogramData {
	v := h.values()
	return v.data()
}

// Percentile returns the p-th percentile (p in [0, 100]) of the snapshot, as
// [HistogramStat.Percentile] computes it.
func (h *HistogramSnapshot) Percentile(p float64) float64 {
	v := h.values()
	return v.percentile(p)
}

// values turns the snapshot back into the values the summary math runs on.
// Min is already clamped to the last limit, and clamping it again is a no-op.
func (h *HistogramSnapshot) values() histValues {
	return histValues{
		buckets:    h.Buckets,
		sum:        h.Sum,
		sumSquares: h.sumSquares,
		minInv:     ^h.Min,
		max:        h.Max,
	}
}

// snapshot is v as a HistogramSnapshot.
func (v *histValues) snapshot() HistogramSnapshot {
	return HistogramSnapshot{
		Count:      v.count(),
		Sum:        v.sum,
		Min:        v.min(),
		Max:        v.max,
		Buckets:    v.buckets,
		sumSquares: v.sumSquares,
	}
}

// Snapshot reads the histogram once (see [HistogramSnapshot] for what that
// guarantees). The guarantee covers samples recorded with Add; a concurrent
// Merge into h writes its buckets before its sums, so a read during one may
// count merged samples whose sum it misses.
func (h *HistogramStat) Snapshot() HistogramSnapshot {
	var v histValues
	v.addFrom(h)
	return v.snapshot()
}

// HistogramSnapshot reads histogram h once, merged over the shards (each
// shard's buckets before its summary, so the guarantees of
// [HistogramSnapshot] hold for the merge). It reads h whatever the level; a
// value of h that names no histogram, or a nil Statistics, reads as an empty
// histogram.
func (s *Statistics) HistogramSnapshot(h Histogram) HistogramSnapshot {
	var v histValues
	s.merged(h, &v)
	return v.snapshot()
}

// Export is what an exporter publishes of a Statistics: the level, and every
// ticker and histogram enabled at that level, each read once. See
// [Statistics.Export].
type Export struct {
	// Level is the level the statistics were recording at when read.
	Level Level
	// Tickers holds every ticker whose MinLevel is at most Level, in Ticker
	// order.
	Tickers []TickerValue
	// Histograms holds every histogram whose MinLevel is at most Level, in
	// Histogram order.
	Histograms []HistogramValue
	// Tags holds, when Level is at least TagMinLevel, the statistics of
	// every tag seen, in order of tag value.
	Tags []TagValue
}

// TickerValue is one ticker's count in an [Export].
type TickerValue struct {
	Ticker Ticker
	Count  uint64
}

// HistogramValue is one histogram's snapshot in an [Export].
type HistogramValue struct {
	Histogram Histogram
	HistogramSnapshot
}

// Export reads the level once and then every ticker and histogram enabled at
// it, each once. Statistics gated off at that level are left out, even if
// they hold counts from a time the level was higher: an exporter shows what
// is being measured, and a series that stops growing because its statistic
// was turned off would read as "nothing happens" rather than "not measured".
// A nil Statistics exports LevelDisableAll and nothing else.
//
// Each histogram comes with the guarantees of [HistogramSnapshot]. Different
// statistics are read one after another, not at one instant, so two that one
// operation updates together may disagree by what was recorded in between:
// SSTReadMicros's Count and the sum of the FileRead* Counts, or a ticker and
// a histogram. Between two Exports with no Reset in between, every ticker and
// every histogram's Count, Sum and buckets only grow, as Prometheus counters
// must. A Reset during an Export may leave any part of it half reset.
func (s *Statistics) Export() Export {
	e := Export{Level: s.Level()}
	for t := range NumTickers {
		if t.MinLevel() <= e.Level {
			e.Tickers = append(e.Tickers, TickerValue{Ticker: t, Count: s.TickerCount(t)})
		}
	}
	for h := range NumHistograms {
		if h.MinLevel() <= e.Level {
			e.Histograms = append(e.Histograms, HistogramValue{Histogram: h, HistogramSnapshot: s.HistogramSnapshot(h)})
		}
	}
	if e.Level >= TagMinLevel {
		e.Tags = s.exportTags()
	}
	return e
}

// TimeUnit returns the unit of a ticker that counts time: time.Microsecond
// for StallMicros, ReadAsyncMicros and DBMutexWaitMicros (the tickers whose
// names end in ".micros"), time.Nanosecond for MergeOperationTimeNanos, 0
// for the others, which count events or bytes.
// Exporters use it to convert to seconds.
func (t Ticker) TimeUnit() time.Duration {
	switch t {
	case StallMicros, ReadAsyncMicros, DBMutexWaitMicros:
		return time.Microsecond
	case MergeOperationTimeNanos:
		return time.Nanosecond
	}
	return 0
}

// TimeUnit returns the unit of a time histogram: time.Nanosecond for
// CompressionTimesNanos and DecompressionTimesNanos, time.Microsecond for the
// other time histograms ([Histogram.IsTime]), and 0 for the histograms of
// sizes and counts. Exporters use it to convert samples and bucket limits to
// seconds.
func (h Histogram) TimeUnit() time.Duration {
	switch {
	case h.isNanos():
		return time.Nanosecond
	case h.IsTime():
		return time.Microsecond
	}
	return 0
}
