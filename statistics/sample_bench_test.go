package statistics

import (
	"math/bits"
	"testing"
)

// BenchmarkSampleDependency shows why bucketIndex branches for 0 and 1: a
// sample taken from two clock reads and recorded costs little more than the
// clock reads (dep=none, two reads alone) when the bucket it goes to is
// known from a predicted branch, but, where the bucket's address waits for
// the clock's latency (dep=address, the lookup alone), up to the cost of
// the clock reads again.
func BenchmarkSampleDependency(b *testing.B) {
	startClock()
	s := New(DefaultLevel)
	sample := func() uint64 {
		t0 := clockTicks()
		return uint64(ticksNanos(clockTicks()-t0) / 1000)
	}
	b.Run("dep=none", func(b *testing.B) {
		reportCPU(b, func() {
			var x uint64
			for b.Loop() {
				x += sample()
			}
			sinkCounter.Add(x)
		})
	})
	b.Run("dep=address", func(b *testing.B) {
		reportCPU(b, func() {
			for b.Loop() {
				us := sample()
				sh, own := s.pin()
				i := int(bucketStart[bits.Len64(us)])
				i += b2i(us > searchLimits[i])
				i += b2i(us > searchLimits[i])
				addIn(&sh.hists[DBGet].buckets[i], 1, own)
				procUnpin()
			}
		})
	})
	b.Run("dep=branch", func(b *testing.B) {
		reportCPU(b, func() {
			for b.Loop() {
				us := sample()
				sh, own := s.pin()
				addIn(&sh.hists[DBGet].buckets[bucketIndex(us)], 1, own)
				procUnpin()
			}
		})
	})
}
