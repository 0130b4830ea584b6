package shaleprom

import (
	"time"

	"github.com/shaledb/shale/statistics"
)

// Exported buckets. The statistics keep RocksDB's 109 buckets (so that
// their text output diffs with RocksDB's); exporting all of them made 108
// finite "le" series per histogram, up to 9.2e12 s. The exporter exports a
// bounded subset of RocksDB's own limits instead, so every exported
// cumulative count is exact: the bucket "le=b" counts the samples of the
// fine buckets whose upper limit is at most b, and since b is one of those
// limits, that is every sample ≤ b. (Bounds between RocksDB's limits could
// only be approximated.) The price is bounds that are not round decimals:
// RocksDB's limits grow by 1.5 and keep two significant digits, and taking
// every other one steps by about 2.25: 1 µs, 2 µs, 4 µs, 10 µs, 22 µs, 51 µs,
// 110 µs, 250 µs, 580 µs, 1.3 ms, … 110 s.

// bucketSet is the choice of RocksDB limits one kind of histogram exports.
type bucketSet struct {
	// idx are indexes into statistics.BucketLimits, increasing.
	idx []int
	// bounds are the limits at idx as "le" bounds: in seconds for time.
	bounds []float64
}

// Kinds of histogram, by what their samples are.
const (
	kindMicros = iota // time recorded in microseconds
	kindNanos         // time recorded in nanoseconds
	kindBytes         // sizes in bytes
	kindCount         // small counts (files, reads)
	numKinds
)

// bucketRanges give each kind's first and last exported limit, in the
// histogram's own unit: latencies from 1 µs to 100 s (the first limit at or
// above it, 110 s), block (de)compression times from 100 ns, sizes from 1 B
// to 1 GB (1.2e9), and counts every limit from 1 to 250.
var bucketRanges = [numKinds]struct {
	lo, hi   uint64
	everyOne bool
}{
	kindMicros: {1, 100_000_000, false},
	kindNanos:  {100, 100_000_000_000, false},
	kindBytes:  {1, 1_000_000_000, false},
	kindCount:  {1, 250, true},
}

// bucketSets are the bucket sets of each kind.
var bucketSets = func() (sets [numKinds]bucketSet) {
	limits := statistics.BucketLimits()
	for k, r := range bucketRanges {
		var s bucketSet
		for i, l := range limits[:len(limits)-1] { // the last bucket is +Inf
			if l < r.lo {
				continue
			}
			// The first limit at or above lo, then every other one (or
			// every one), up to the first at or above hi.
			if len(s.idx) == 0 || r.everyOne || i%2 == 1 || l >= r.hi {
				s.idx = append(s.idx, i)
			}
			if l >= r.hi {
				break
			}
		}
		s.bounds = make([]float64, len(s.idx))
		for j, i := range s.idx {
			switch k {
			case kindMicros:
				s.bounds[j] = seconds(limits[i], time.Microsecond)
			case kindNanos:
				s.bounds[j] = seconds(limits[i], time.Nanosecond)
			default:
				s.bounds[j] = float64(limits[i])
			}
		}
		sets[k] = s
	}
	return sets
}()

// histogramKind is the kind of h's samples.
func histogramKind(h statistics.Histogram) int {
	switch h.TimeUnit() {
	case time.Microsecond:
		return kindMicros
	case time.Nanosecond:
		return kindNanos
	}
	switch h {
	case statistics.NumFilesInSingleCompaction, statistics.MultiGetIOBatchSize:
		return kindCount
	}
	return kindBytes
}

// cumulative turns the fine bucket counts of a snapshot into the exported
// cumulative counts under s's bounds.
func (s *bucketSet) cumulative(fine []uint64) map[float64]uint64 {
	out := make(map[float64]uint64, len(s.idx))
	var cum uint64
	next := 0
	for j, i := range s.idx {
		for ; next <= i; next++ {
			cum += fine[next]
		}
		out[s.bounds[j]] = cum
	}
	return out
}
