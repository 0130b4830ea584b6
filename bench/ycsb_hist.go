package main

import (
	"math/bits"
	"time"
)

// latencyHist is a log-bucketed latency histogram in the manner of
// HdrHistogram: values below 2^histSubBits ns exactly, above that 2^histSubBits
// buckets per power of two, so a percentile is within 1/2^histSubBits (3%)
// of the true value at any scale, in a fixed 16 KiB whatever the number of
// operations. It belongs to one goroutine; merge combines threads'.
type latencyHist struct {
	counts [histBuckets]int64
	n      int64
	max    int64
}

const (
	histSubBits = 5
	histSub     = 1 << histSubBits
	histBuckets = (64 - histSubBits + 1) * histSub
)

func histBucket(v int64) int {
	if v < histSub {
		return int(max(v, 0))
	}
	e := bits.Len64(uint64(v)) - 1 // ≥ histSubBits
	sub := int(v>>(e-histSubBits)) & (histSub - 1)
	return (e-histSubBits+1)*histSub + sub
}

// bucketHigh is the largest value of bucket i.
func bucketHigh(i int) int64 {
	if i < histSub {
		return int64(i)
	}
	e := i/histSub + histSubBits - 1
	sub := int64(i % histSub)
	lo := int64(1)<<e | sub<<(e-histSubBits)
	return lo + int64(1)<<(e-histSubBits) - 1
}

func (h *latencyHist) record(d time.Duration) {
	v := int64(d)
	h.counts[histBucket(v)]++
	h.n++
	h.max = max(h.max, v)
}

func (h *latencyHist) merge(o *latencyHist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// percentile is the p-th percentile (0..100) in ns: the upper bound of the
// bucket holding the value of nearest rank, capped at the largest value
// recorded (HdrHistogram reports its buckets' equivalent values too).
func (h *latencyHist) percentile(p float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := int64(float64(h.n)*p/100 + 0.5)
	rank = max(1, min(h.n, rank))
	var seen int64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return float64(min(bucketHigh(i), h.max))
		}
	}
	return float64(h.max)
}
