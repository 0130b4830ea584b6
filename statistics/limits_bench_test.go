package statistics

import (
	"testing"
	"time"
)

// BenchmarkLimits times, one at a time, the parts of what a Get pays for
// statistics at the default level, so that a whole Get's recording
// (BenchmarkGetRecording) can be read against its floor: a clock read, a
// pin of the caller's stripe, one RecordTick, one histogram sample in the
// caller's stripe, RecordGet without its clock reads, and a DBGet timer.
func BenchmarkLimits(b *testing.B) {
	startClock()
	s := New(DefaultLevel)
	b.Run("part=clock", func(b *testing.B) {
		reportCPU(b, func() {
			var x int64
			for b.Loop() {
				x += clockTicks()
			}
			sinkDuration += time.Duration(x)
		})
	})
	b.Run("part=pin", func(b *testing.B) {
		reportCPU(b, func() {
			for b.Loop() {
				s.pin()
				procUnpin()
			}
		})
	})
	b.Run("part=tick", func(b *testing.B) {
		reportCPU(b, func() {
			for b.Loop() {
				s.RecordTick(BloomFilterUseful, 1)
			}
		})
	})
	b.Run("part=sample", func(b *testing.B) {
		sh, own := s.pin()
		procUnpin()
		reportCPU(b, func() {
			for b.Loop() {
				sh.hists[BytesPerRead].record(0, own)
			}
		})
	})
	b.Run("part=recordget-untimed", func(b *testing.B) {
		reportCPU(b, func() {
			for b.Loop() {
				s.RecordGet(nil, &GetCounts{Hit: NumTickers})
			}
		})
	})
	b.Run("part=gettimer", func(b *testing.B) {
		reportCPU(b, func() {
			for b.Loop() {
				t := s.StartGet()
				s.RecordGet(&t, &GetCounts{Hit: NumTickers})
			}
		})
	})
}
