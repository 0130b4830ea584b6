package statistics

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// wantLimits is RocksDB's bucket table, from the algorithm in the spec (§4.6)
// run by testdata/refgen.c, not by this package. Note the quirk the spec's
// algorithm has and this table keeps: a value whose leading digits are
// 101–109 keeps three digits (108e12, 107e15), because 108/10 is not > 10.
var wantLimits = [...]uint64{
	1, 2, 3, 4, 6, 10,
	15, 22, 34, 51, 76, 110,
	170, 250, 380, 580, 870, 1300,
	1900, 2900, 4400, 6600, 9900, 14000,
	22000, 33000, 50000, 75000, 110000, 170000,
	250000, 380000, 570000, 860000, 1200000, 1900000,
	2900000, 4300000, 6500000, 9800000, 14000000, 22000000,
	33000000, 49000000, 74000000, 110000000, 160000000, 250000000,
	370000000, 560000000, 850000000, 1200000000, 1900000000, 2800000000,
	4300000000, 6400000000, 9600000000, 14000000000, 21000000000, 32000000000,
	49000000000, 73000000000, 110000000000, 160000000000, 240000000000, 370000000000,
	550000000000, 830000000000, 1200000000000, 1800000000000, 2800000000000, 4200000000000,
	6300000000000, 9500000000000, 14000000000000, 21000000000000, 32000000000000, 48000000000000,
	72000000000000, 108000000000000, 160000000000000, 240000000000000, 360000000000000, 550000000000000,
	820000000000000, 1200000000000000, 1800000000000000, 2700000000000000, 4100000000000000, 6200000000000000,
	9400000000000000, 14000000000000000, 21000000000000000, 31000000000000000, 47000000000000000, 71000000000000000,
	107000000000000000, 160000000000000000, 240000000000000000, 360000000000000000, 540000000000000000, 810000000000000000,
	1200000000000000000, 1800000000000000000, 2700000000000000000, 4100000000000000000, 6100000000000000000, 9200000000000000000,
	13000000000000000000,
}

func TestBucketLimits(t *testing.T) {
	require.Len(t, wantLimits, 109)
	// The generator must stop by itself at 109, not be cut off by the array.
	require.Len(t, generateBucketLimits(), 109)
	got := BucketLimits()
	require.Equal(t, wantLimits[:], got)
	// BucketLimits hands out a copy.
	got[0] = 99
	require.Equal(t, uint64(1), BucketLimits()[0])
}

func TestBucketIndex(t *testing.T) {
	for _, tc := range []struct {
		v    uint64
		want int
	}{
		{0, 0}, {1, 0}, // bucket 0 is [0, 1]
		{2, 1},
		{3, 2},
		{4, 3},
		{5, 4}, {6, 4}, // (4, 6]
		{7, 5}, {10, 5},
		{11, 6},
		{100, 11}, {110, 11}, {111, 12},
		{1_000_000, 34}, // (860000, 1200000]
		{9_200_000_000_000_000_000, 107},
		{9_200_000_000_000_000_001, 108},
		{12_999_999_999_999_999_999, 108},
		{13_000_000_000_000_000_000, 108},
		{13_000_000_000_000_000_001, 108}, // above the last limit: the last bucket
		{math.MaxUint64, 108},
	} {
		require.Equal(t, tc.want, bucketIndex(tc.v), "value %d", tc.v)
	}
	// Every limit falls in its own bucket and limit+1 in the next.
	for b, l := range wantLimits {
		require.Equal(t, b, bucketIndex(l))
		if b < len(wantLimits)-1 {
			require.Equal(t, b+1, bucketIndex(l+1))
		}
	}
}

// TestBucketStart checks what bucketIndex's two steps rely on: every value of
// bit length k lies at most two buckets above bucketStart[k]. Buckets grow
// with the value, so checking the largest value of each length suffices.
func TestBucketStart(t *testing.T) {
	for k := range 65 {
		lo, hi := uint64(0), uint64(0)
		if k > 0 {
			lo, hi = 1<<(k-1), 1<<(k-1)|(1<<(k-1)-1)
		}
		start := int(bucketStart[k])
		require.Equal(t, bucketIndexSearch(lo), start, "bit length %d", k)
		require.LessOrEqual(t, bucketIndexSearch(hi), start+2, "bit length %d: %d needs more than two steps", k, hi)
	}
}

// TestBucketIndexMatchesSearch compares bucketIndex with the binary search
// it replaces at every limit and power of two, one either side of each, and
// at random values of every bit length.
func TestBucketIndexMatchesSearch(t *testing.T) {
	check := func(v uint64) {
		require.Equal(t, bucketIndexSearch(v), bucketIndex(v), "value %d", v)
	}
	for _, l := range wantLimits {
		check(l - 1)
		check(l)
		check(l + 1)
	}
	for k := range 64 {
		p := uint64(1) << k
		check(p - 1)
		check(p)
		check(p + 1)
	}
	check(math.MaxUint64)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		check(rng.Uint64() >> rng.IntN(64))
	}
}

// TestHistogramDataByHand checks Data on inputs small enough to work out on
// paper, following the spec's formulas.
func TestHistogramDataByHand(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []uint64
		want   HistogramData
	}{{
		// Empty: percentiles 0 (r is clamped up to min = 1.3e19, then down
		// to max = 0); Min is RocksDB's raw min, the last limit.
		name: "empty",
		want: HistogramData{Min: 13_000_000_000_000_000_000},
	}, {
		// One value per bucket 0..3. P50: threshold 2 is reached in bucket
		// (1,2] with cumulative 2; pos = (2-1)/1 = 1, r = 1 + 1·1 = 2.
		// P95: threshold 3.8, bucket (3,4], pos = 0.8, r = 3.8.
		// P99: threshold 3.96, r = 3.96. StdDev = sqrt((30·4 − 100)/16).
		name:   "one-to-four",
		values: []uint64{1, 2, 3, 4},
		want: HistogramData{Count: 4, Sum: 10, Min: 1, Max: 4, Average: 2.5,
			StdDev: math.Sqrt(1.25), Median: 2, P95: 3.8, P99: 3.96},
	}, {
		// 100 lands in (76, 110]; interpolation gives 76 + 34·0.5 = 93 for
		// the median, which is clamped up to min = 100.
		name:   "single-100",
		values: []uint64{100},
		want: HistogramData{Count: 1, Sum: 100, Min: 100, Max: 100, Average: 100,
			Median: 100, P95: 100, P99: 100},
	}, {
		// Zeros count in bucket 0 and lower the min, but add nothing to
		// the sums (Add skips those adds). P50: threshold 1.5 in bucket
		// [0, 1] of 2, r = 0.75; P95 and P99 interpolate past 5 in (4, 6]
		// and are clamped to max = 5. StdDev = sqrt((25·3 − 25)/9).
		name:   "zeros",
		values: []uint64{0, 0, 5},
		want: HistogramData{Count: 3, Sum: 5, Min: 0, Max: 5, Average: 5.0 / 3,
			StdDev: math.Sqrt(50.0 / 9), Median: 0.75, P95: 5, P99: 5},
	}, {
		// Only values above the last limit: min never drops below 1.3e19
		// (RocksDB starts it there), so Min and every percentile are 1.3e19
		// while Max is the true max. Sum wraps; so does the sum of squares,
		// and the negative variance reads as 0.
		name:   "two-max",
		values: []uint64{math.MaxUint64, math.MaxUint64},
		want: HistogramData{Count: 2, Sum: math.MaxUint64 - 1, Min: 13e18, Max: math.MaxUint64,
			Average: float64(math.MaxUint64-1) / 2, Median: 13e18, P95: 13e18, P99: 13e18},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var h HistogramStat
			for _, v := range tc.values {
				h.Add(v)
			}
			require.Equal(t, tc.want, h.Data())
			require.Equal(t, tc.want.Count, h.Count())
		})
	}
}

// TestPercentileByHand: 0..999 once each. The median threshold 500 is
// reached in bucket (380, 580], which holds 381..580 (200 values) after 381
// values below it: r = 380 + 200·(500−381)/200 = 499.
func TestPercentileByHand(t *testing.T) {
	var h HistogramStat
	for v := range uint64(1000) {
		h.Add(v)
	}
	require.Equal(t, 499.0, h.Percentile(50))
	// P0: threshold 0 is met by bucket 0 with pos 0, r = 0 = min.
	require.Equal(t, 0.0, h.Percentile(0))
	// P100: bucket (870, 1300] holds 871..999; r = 1300, clamped to max.
	require.Equal(t, 999.0, h.Percentile(100))
	// P10: threshold 100, bucket (76, 110] (77..110, 34 values) after 77
	// values: r = 76 + 34·(100−77)/34 = 99.
	require.InDelta(t, 99.0, h.Percentile(10), 1e-12)
	// Out of range: above 100 no bucket reaches the threshold, so max; below
	// 0 the interpolation goes negative and is clamped to min; NaN compares
	// false everywhere, so max, as in RocksDB.
	require.Equal(t, 999.0, h.Percentile(150))
	require.Equal(t, 0.0, h.Percentile(-5))
	require.Equal(t, 999.0, h.Percentile(math.NaN()))
}

func TestHistogramStringByHand(t *testing.T) {
	var h HistogramStat
	require.Equal(t, ""+
		"Count: 0 Average: 0.0000  StdDev: 0.00\n"+
		"Min: 0  Median: 0.0000  Max: 0\n"+
		"Percentiles: P50: 0.00 P75: 0.00 P99: 0.00 P99.9: 0.00 P99.99: 0.00\n"+
		"------------------------------------------------------\n", h.String())

	for _, v := range []uint64{1, 2, 3, 4} {
		h.Add(v)
	}
	// StdDev sqrt(1.25) = 1.118… → 1.12. Each bucket holds 25%: 5 marks.
	require.Equal(t, ""+
		"Count: 4 Average: 2.5000  StdDev: 1.12\n"+
		"Min: 1  Median: 2.0000  Max: 4\n"+
		"Percentiles: P50: 2.00 P75: 3.00 P99: 3.96 P99.9: 4.00 P99.99: 4.00\n"+
		"------------------------------------------------------\n"+
		"[       0,       1 ]        1  25.000%  25.000% #####\n"+
		"(       1,       2 ]        1  25.000%  50.000% #####\n"+
		"(       2,       3 ]        1  25.000%  75.000% #####\n"+
		"(       3,       4 ]        1  25.000% 100.000% #####\n", h.String())
}

func TestHistogramMergeClear(t *testing.T) {
	var a, b, all HistogramStat
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		v := rng.Uint64N(1 << uint(i%40))
		all.Add(v)
		if i%3 == 0 {
			a.Add(v)
		} else {
			b.Add(v)
		}
	}
	a.Merge(&b)
	require.Equal(t, all.Data(), a.Data())
	require.Equal(t, all.String(), a.String())

	// Merging an empty histogram changes nothing, min included.
	var empty HistogramStat
	a.Merge(&empty)
	require.Equal(t, all.Data(), a.Data())
	// Merging into an empty one copies.
	empty.Merge(&all)
	require.Equal(t, all.Data(), empty.Data())

	a.Clear()
	var zero HistogramStat
	require.Equal(t, zero.Data(), a.Data())
	require.Equal(t, uint64(0), a.Count())
	a.Add(7)
	require.Equal(t, HistogramData{Count: 1, Sum: 7, Min: 7, Max: 7, Average: 7, Median: 7, P95: 7, P99: 7}, a.Data())
}

// TestHistogramConcurrentExact: concurrent Add and Merge lose nothing.
func TestHistogramConcurrentExact(t *testing.T) {
	const goroutines, perG = 8, 20000
	var h, sink HistogramStat
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range goroutines {
		wg.Go(func() {
			<-start
			for i := range perG {
				h.Add(uint64(g*perG + i))
			}
		})
	}
	// A concurrent reader and merger must not disturb the writers.
	wg.Go(func() {
		<-start
		for range 50 {
			_ = h.Data()
			var tmp HistogramStat
			tmp.Merge(&h)
			sink.Merge(&tmp)
		}
	})
	close(start)
	wg.Wait()
	const n = goroutines * perG
	d := h.Data()
	require.Equal(t, uint64(n), d.Count)
	require.Equal(t, uint64(n*(n-1)/2), d.Sum)
	require.Equal(t, uint64(0), d.Min)
	require.Equal(t, uint64(n-1), d.Max)
	var byValue HistogramStat
	for v := range uint64(n) {
		byValue.Add(v)
	}
	require.Equal(t, byValue.String(), h.String())
}

func TestHistogramAllocs(t *testing.T) {
	skipIfRace(t)
	var h HistogramStat
	var v uint64
	require.Zero(t, testing.AllocsPerRun(1000, func() {
		v = v*31 + 7
		h.Add(v)
	}))
}

// FuzzHistogram feeds arbitrary samples (8 bytes each, little-endian) to a
// HistogramStat and checks it against a plain model: exact count, sum, min,
// max and bucket counts, percentiles within [min, max] and non-decreasing in
// p, and one String line per non-empty bucket.
func FuzzHistogram(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{100, 0, 0, 0, 0, 0, 0, 0, 101, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		var h HistogramStat
		var count, sum, maxV uint64
		minV := uint64(13e18)
		var buckets [109]uint64
		for ; len(data) >= 8; data = data[8:] {
			var v uint64
			for i := 7; i >= 0; i-- {
				v = v<<8 | uint64(data[i])
			}
			h.Add(v)
			count++
			sum += v
			minV = min(minV, v)
			maxV = max(maxV, v)
			// The model finds the bucket by linear scan over the pinned table.
			b := len(wantLimits) - 1
			for i, l := range wantLimits {
				if v <= l {
					b = i
					break
				}
			}
			buckets[b]++
		}
		d := h.Data()
		if d.Count != count || d.Sum != sum || d.Min != minV || d.Max != maxV {
			t.Fatalf("data %+v, model count=%d sum=%d min=%d max=%d", d, count, sum, minV, maxV)
		}
		var v histValues
		v.addFrom(&h)
		if v.buckets != buckets {
			t.Fatalf("buckets %v, model %v", v.buckets, buckets)
		}
		prev := math.Inf(-1)
		for _, p := range []float64{0, 1, 10, 25, 50, 75, 90, 95, 99, 99.9, 99.99, 100} {
			r := h.Percentile(p)
			if count > 0 && (r < float64(d.Min) || r > float64(d.Max)) {
				t.Fatalf("P%v = %v outside [%d, %d]", p, r, d.Min, d.Max)
			}
			if count == 0 && r != 0 {
				t.Fatalf("P%v = %v of an empty histogram", p, r)
			}
			if r < prev {
				t.Fatalf("P%v = %v below a lower percentile's %v", p, r, prev)
			}
			prev = r
		}
		nonEmpty := 0
		for _, c := range buckets {
			if c != 0 {
				nonEmpty++
			}
		}
		lines := 0
		for _, c := range h.String() {
			if c == '\n' {
				lines++
			}
		}
		if lines != 4+nonEmpty {
			t.Fatalf("String has %d lines, want %d", lines, 4+nonEmpty)
		}
	})
}

// TestRecordZeroOwned: the inlined record of a 0 sample leaves a histogram
// exactly as record(0) does, empty or not.
func TestRecordZeroOwned(t *testing.T) {
	for _, prior := range [][]uint64{nil, {5}, {0, 7, 1 << 40}} {
		var got, want HistogramStat
		for _, v := range prior {
			got.Add(v)
			want.Add(v)
		}
		got.recordZeroOwned()
		want.record(0, true)
		require.Equal(t, want.Data(), got.Data(), "after %v", prior)
		require.Equal(t, want.String(), got.String(), "after %v", prior)
	}
}
