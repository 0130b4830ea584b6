package statistics

import (
	"fmt"
	"math"
	"math/bits"
	"strings"
	"sync/atomic"
)

// numBuckets is the number of buckets RocksDB's HistogramBucketMapper makes;
// computeBucketLimits yields exactly this many.
const numBuckets = 109

// bucketLimits are the inclusive upper limits of the buckets: bucket 0 holds
// [0, 1], bucket b holds (bucketLimits[b-1], bucketLimits[b]], and the last
// bucket also holds every value above its limit.
var bucketLimits = computeBucketLimits()

// lastLimit is the largest limit (1.3e19). RocksDB starts a histogram's min
// there, so an empty histogram reports it as its raw min.
var lastLimit = bucketLimits[numBuckets-1]

// computeBucketLimits is RocksDB's HistogramBucketMapper constructor: start at
// {1, 2}, grow by 1.5 on the untruncated double while it fits in a uint64,
// and keep only the two most significant decimal digits of each limit so the
// printed table is readable (172 becomes 170). It makes exactly numBuckets
// limits (a test checks that).
func computeBucketLimits() [numBuckets]uint64 {
	var l [numBuckets]uint64
	copy(l[:], generateBucketLimits())
	return l
}

func generateBucketLimits() []uint64 {
	l := []uint64{1, 2}
	// float64(MaxUint64) rounds up to 2^64; RocksDB compares against the same
	// rounded value, and every v that passes is below 2^64, so uint64(v) is
	// exact truncation.
	for v := 2.0; ; {
		if v = 1.5 * v; v > float64(math.MaxUint64) {
			return l
		}
		x, pow := uint64(v), uint64(1)
		for x/10 > 10 {
			x /= 10
			pow *= 10
		}
		l = append(l, x*pow)
	}
}

// BucketLimits returns a copy of the 109 inclusive bucket upper limits, 1, 2,
// 3, 4, 6, 10, 15, … 9.2e18, 1.3e19. The caller owns the slice.
func BucketLimits() []uint64 {
	l := bucketLimits
	return l[:]
}

// bucketIndex is RocksDB's IndexForValue: the first limit >= v, or the last
// bucket for v at or above the last limit.
//
// It is a table lookup plus two compares rather than a binary search, whose
// seven data-dependent branches mispredict on varied samples. The limits
// grow by about 1.5 each, and every limit is at least twice the one two
// places before it, so the values of one bit length, [2^(k-1), 2^k), span at
// most two limits: from the first bucket that can hold a value of v's
// length, at most two steps find v's bucket (TestBucketStart checks this for
// every length). The steps are written so the compiler makes them
// branch-free.
//
// Values of 0 and 1, bucket 0, take a branch instead. A time sample comes
// from a clock read (on amd64 a RDTSC, whose result comes late), and a
// bucket store whose address waits for it holds up the locked instructions
// and clock reads after it: two clock reads and the record of their span
// cost 40-44 CPU ns with the lookup alone, against the reads' own 23-26,
// which is about what they cost with the branch (BenchmarkSampleDependency
// on this project's 2-core VM, 2c36f9d). Most samples of a Get that stays
// in memory are 0 µs; a correctly predicted branch gives their store a
// known address.
func bucketIndex(v uint64) int {
	if v <= 1 {
		return 0
	}
	i := int(bucketStart[bits.Len64(v)])
	i += b2i(v > searchLimits[i])
	i += b2i(v > searchLimits[i])
	return i
}

// b2i is 1 for true and 0 for false; the compiler turns it into a SETcc, not
// a branch.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// searchLimits are bucketLimits with the last one raised to MaxUint64: the
// last bucket holds every value above 1.3e19, and with this limit the steps
// of bucketIndex never pass it.
var searchLimits = func() [numBuckets]uint64 {
	l := bucketLimits
	l[numBuckets-1] = math.MaxUint64
	return l
}()

// bucketStart[k] is the first bucket that can hold a value of bit length k
// (bits.Len64): bucket 0 for k = 0 (the value 0), else the bucket of 2^(k-1).
var bucketStart = func() (start [65]uint8) {
	for k := 1; k < len(start); k++ {
		start[k] = uint8(bucketIndexSearch(1 << (k - 1)))
	}
	return start
}()

// bucketIndexSearch is bucketIndex by binary search over the limits, to
// build bucketStart (and for tests to check bucketIndex against).
func bucketIndexSearch(v uint64) int {
	if v >= lastLimit {
		return numBuckets - 1
	}
	lo, hi := 0, numBuckets-1
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if bucketLimits[m] < v {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// HistogramData summarises a histogram, as RocksDB's HistogramData does.
type HistogramData struct {
	// Count is the number of samples and Sum their total (which wraps
	// around, as RocksDB's does, if it passes 2^64-1).
	Count, Sum uint64
	// Min is RocksDB's raw minimum: the smallest sample, but never more
	// than the last bucket limit (1.3e19), which is also its value when
	// Count is 0. Max is the largest sample, 0 when Count is 0.
	Min, Max uint64
	// Average is Sum/Count, StdDev the population standard deviation, both
	// 0 when Count is 0. Median, P95 and P99 are percentiles interpolated
	// within buckets (see [HistogramStat.Percentile]).
	Average, StdDev, Median, P95, P99 float64
}

// HistogramStat is one histogram with RocksDB's buckets, usable on its own
// (the CLI and benchmarks use it for latencies). Its zero value is an empty
// histogram.
//
// HistogramStat is safe for concurrent use: Add is lock-free and
// allocation-free, and every count is exact under concurrency (RocksDB's can
// lose concurrent updates; shale's cannot). Readers see each field
// atomically but not all fields at one instant, so a summary taken while
// samples arrive may include a sample in Sum but not yet in Count. A
// HistogramStat must not be copied after first use.
type HistogramStat struct {
	// The summary words come first, so a sample touches their cache line and
	// one bucket's. There is no count field: Count is the sum of the buckets,
	// which saves an atomic add per sample and keeps Count and the buckets
	// consistent for Percentile.
	sum        atomic.Uint64
	sumSquares atomic.Uint64 // wraps, as RocksDB's does
	// minInv holds ^min, so that the zero value means "no sample yet"
	// (min = MaxUint64, reported clamped to lastLimit as RocksDB does).
	minInv  atomic.Uint64
	max     atomic.Uint64
	buckets [numBuckets]atomic.Uint64
}

// Add records one sample. It never allocates and never blocks.
func (h *HistogramStat) Add(v uint64) {
	// The bucket is found first: after a locked add, the loads that find it
	// would wait for the add to finish (x86 orders loads after locked
	// instructions), which costs more than the search itself.
	b := &h.buckets[bucketIndex(v)]
	// The summary words are updated before the bucket: a reader that loads
	// buckets first (histValues.addFrom) then sees, for every sample it
	// counts, that sample's min, max and sum.
	if inv := ^v; inv > h.minInv.Load() {
		raise(&h.minInv, inv)
	}
	if v > h.max.Load() {
		raise(&h.max, v)
	}
	// Adding 0 changes neither sum, and zero samples are common on the read
	// path (a Get that misses reads 0 bytes in under a microsecond), so they
	// skip two of the three atomic adds.
	if v != 0 {
		h.sum.Add(v)
		h.sumSquares.Add(v * v)
	}
	b.Add(1)
}

// record adds one sample: with Add, or, when the caller's P owns the
// stripe holding h and is pinned to it (see Statistics.pin), with plain
// adds in the same order.
func (h *HistogramStat) record(v uint64, own bool) {
	if !own || !ownedStripes {
		h.Add(v)
		return
	}
	b := &h.buckets[bucketIndex(v)]
	raiseOwned(&h.minInv, ^v)
	raiseOwned(&h.max, v)
	if v != 0 {
		addOwned(&h.sum, v)
		addOwned(&h.sumSquares, v*v)
	}
	addOwned(b, 1)
}

// recordZeroOwned is record(0, true): a sample of 0 by the P that owns
// h's stripe (own from Statistics.pin). It inlines, where record is a call:
// the min becomes 0 and bucket 0 counts one more; sum and max do not change.
func (h *HistogramStat) recordZeroOwned() {
	raiseOwned(&h.minInv, math.MaxUint64) // ^0
	addOwned(&h.buckets[0], 1)
}

// raise sets a to v unless a concurrent writer already set it higher. Callers
// load first, so the CAS loop runs only when the extreme actually changes.
func raise(a *atomic.Uint64, v uint64) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

// Merge adds every sample of o to h. o may be recorded into concurrently; the
// samples it gets meanwhile may or may not be merged.
//
// It keeps Add's order on both sides, so a reader of h never counts a merged
// sample without its sum: o's buckets are loaded before its summary words,
// and h's summary words are updated before its buckets.
func (h *HistogramStat) Merge(o *HistogramStat) {
	var buckets [numBuckets]uint64
	for i := range o.buckets {
		buckets[i] = o.buckets[i].Load()
	}
	raise(&h.minInv, o.minInv.Load())
	raise(&h.max, o.max.Load())
	h.sum.Add(o.sum.Load())
	h.sumSquares.Add(o.sumSquares.Load())
	for i, n := range buckets {
		if n != 0 {
			h.buckets[i].Add(n)
		}
	}
}

// Clear empties the histogram. It is not atomic with respect to concurrent
// Adds: a sample recorded while Clear runs may be kept in part.
func (h *HistogramStat) Clear() {
	for i := range h.buckets {
		h.buckets[i].Store(0)
	}
	h.sum.Store(0)
	h.sumSquares.Store(0)
	h.minInv.Store(0)
	h.max.Store(0)
}

// Count returns the number of samples.
func (h *HistogramStat) Count() uint64 {
	var n uint64
	for i := range h.buckets {
		n += h.buckets[i].Load()
	}
	return n
}

// Percentile returns the p-th percentile (p in [0, 100]) as RocksDB computes
// it: find the first bucket at which the cumulative count reaches
// Count*p/100, interpolate linearly between that bucket's limits by how far
// into the bucket's count the threshold falls, and clamp to [Min, Max]. An
// empty histogram gives 0.
func (h *HistogramStat) Percentile(p float64) float64 {
	var v histValues
	v.addFrom(h)
	return v.percentile(p)
}

// Data returns the histogram's summary.
func (h *HistogramStat) Data() HistogramData {
	var v histValues
	v.addFrom(h)
	return v.data()
}

// String returns the histogram in the layout of RocksDB's
// HistogramImpl::ToString, byte for byte:
//
//	Count: 4 Average: 2.5000  StdDev: 1.12
//	Min: 1  Median: 2.0000  Max: 4
//	Percentiles: P50: 2.00 P75: 3.00 P99: 3.96 P99.9: 4.00 P99.99: 4.00
//	------------------------------------------------------
//	[       0,       1 ]        1  25.000%  25.000% #####
//	(       1,       2 ]        1  25.000%  50.000% #####
//	...
//
// with one line per non-empty bucket (left limit, right limit, count,
// percent, cumulative percent, and one '#' per 5%, rounded), Min and Max
// printed as 0 when empty.
func (h *HistogramStat) String() string {
	var v histValues
	v.addFrom(h)
	return v.format()
}

// histValues is a plain copy of one or more HistogramStats, on which the
// summary math runs: reading each atomic once keeps Count, the percentiles
// and the bucket lines consistent with one another.
type histValues struct {
	buckets                      [numBuckets]uint64
	sum, sumSquares, minInv, max uint64
}

// addFrom merges h into v. Buckets are loaded before the summary words (see
// HistogramStat.Add).
func (v *histValues) addFrom(h *HistogramStat) {
	for i := range h.buckets {
		v.buckets[i] += h.buckets[i].Load()
	}
	v.minInv = max(v.minInv, h.minInv.Load())
	v.max = max(v.max, h.max.Load())
	v.sum += h.sum.Load()
	v.sumSquares += h.sumSquares.Load()
}

func (v *histValues) count() uint64 {
	var n uint64
	for _, c := range v.buckets {
		n += c
	}
	return n
}

// min is RocksDB's raw min: it starts at the last limit and only goes down.
func (v *histValues) min() uint64 { return min(^v.minInv, lastLimit) }

// The float64(...) conversions below are deliberate: they stop the compiler
// from fusing a multiply and an add (allowed by the Go spec on some
// architectures), so the results are the same as RocksDB's separately rounded
// double operations.

func (v *histValues) percentile(p float64) float64 {
	threshold := float64(float64(v.count()) * (p / 100))
	var cum uint64
	for b, n := range v.buckets {
		cum += n
		// Written as RocksDB's test (cum >= threshold) negated, not as
		// cum < threshold, so a NaN p falls through to max as it does there.
		if !(float64(cum) >= threshold) {
			continue
		}
		var left uint64
		if b > 0 {
			left = bucketLimits[b-1]
		}
		right := bucketLimits[b]
		pos := 0.0
		if n != 0 {
			pos = (threshold - float64(cum-n)) / float64(n)
		}
		r := float64(left) + float64(float64(right-left)*pos)
		if lo := float64(v.min()); r < lo {
			r = lo
		}
		if hi := float64(v.max); r > hi {
			r = hi
		}
		return r
	}
	return float64(v.max)
}

func (v *histValues) average(n uint64) float64 {
	if n == 0 {
		return 0
	}
	return float64(v.sum) / float64(n)
}

// stdDev is the population standard deviation from the sums, in doubles,
// with a negative variance (rounding, or sums that wrapped) read as 0.
func (v *histValues) stdDev(n uint64) float64 {
	if n == 0 {
		return 0
	}
	fn, s, sq := float64(n), float64(v.sum), float64(v.sumSquares)
	variance := (float64(sq*fn) - float64(s*s)) / float64(fn*fn)
	return math.Sqrt(max(variance, 0))
}

func (v *histValues) data() HistogramData {
	n := v.count()
	return HistogramData{
		Count:   n,
		Sum:     v.sum,
		Min:     v.min(),
		Max:     v.max,
		Average: v.average(n),
		StdDev:  v.stdDev(n),
		Median:  v.percentile(50),
		P95:     v.percentile(95),
		P99:     v.percentile(99),
	}
}

func (v *histValues) format() string {
	n := v.count()
	var minV, maxV uint64
	if n != 0 {
		minV, maxV = v.min(), v.max
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Count: %d Average: %.4f  StdDev: %.2f\n", n, v.average(n), v.stdDev(n))
	fmt.Fprintf(&b, "Min: %d  Median: %.4f  Max: %d\n", minV, v.percentile(50), maxV)
	fmt.Fprintf(&b, "Percentiles: P50: %.2f P75: %.2f P99: %.2f P99.9: %.2f P99.99: %.2f\n",
		v.percentile(50), v.percentile(75), v.percentile(99), v.percentile(99.9), v.percentile(99.99))
	b.WriteString("------------------------------------------------------\n")
	if n == 0 {
		return b.String()
	}
	mult := 100 / float64(n)
	var cum uint64
	for i, c := range v.buckets {
		if c == 0 {
			continue
		}
		cum += c
		open, left := byte('('), uint64(0)
		if i == 0 {
			open = '['
		} else {
			left = bucketLimits[i-1]
		}
		pct := float64(mult * float64(c))
		fmt.Fprintf(&b, "%c %7d, %7d ] %8d %7.3f%% %7.3f%% ", open, left, bucketLimits[i], c,
			pct, float64(mult*float64(cum)))
		// 20 marks for 100%, rounded half up as RocksDB's size_t(x + 0.5).
		b.WriteString(strings.Repeat("#", int(pct/5+0.5)))
		b.WriteByte('\n')
	}
	return b.String()
}
