package statistics

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

// latencies are sample values shaped like read latencies in microseconds,
// from a fixed seed.
var latencies = func() []uint64 {
	rng := rand.New(rand.NewPCG(1, 2))
	v := make([]uint64, 1024)
	for i := range v {
		v[i] = 1 + rng.Uint64N(1<<uint(rng.IntN(20)+1))
	}
	return v
}()

func forEachLevel(b *testing.B, f func(b *testing.B, s *Statistics)) {
	for l := LevelDisableAll; l <= LevelAll; l++ {
		b.Run("level="+l.String(), func(b *testing.B) {
			b.ReportAllocs()
			f(b, New(l))
		})
	}
}

func BenchmarkRecordTick(b *testing.B) {
	forEachLevel(b, func(b *testing.B, s *Statistics) {
		for b.Loop() {
			s.RecordTick(BlockCacheHit, 1)
		}
	})
}

func BenchmarkRecordInHistogram(b *testing.B) {
	forEachLevel(b, func(b *testing.B, s *Statistics) {
		i := 0
		for b.Loop() {
			s.RecordInHistogram(BytesPerRead, latencies[i&1023])
			i++
		}
	})
}

// BenchmarkReportTime records into the aggregate read histogram, on at the
// default level, and into a user-read one, on only above it.
func BenchmarkReportTime(b *testing.B) {
	forEachLevel(b, func(b *testing.B, s *Statistics) {
		i := 0
		for b.Loop() {
			v := latencies[i&1023]
			s.ReportTimeToHistogram(SSTReadMicros, v)
			s.ReportTimeToHistogram(FileReadGetMicros, v)
			i++
		}
	})
}

// BenchmarkStopWatch is what a file read pays: StartStopWatch + Stop for the
// aggregate and the Get breakdown, clock reads included.
func BenchmarkStopWatch(b *testing.B) {
	forEachLevel(b, func(b *testing.B, s *Statistics) {
		for b.Loop() {
			w := s.StartStopWatch(SSTReadMicros, FileReadGetMicros)
			w.Stop()
		}
	})
}

func BenchmarkStopWatchNil(b *testing.B) {
	b.ReportAllocs()
	var s *Statistics
	for b.Loop() {
		w := s.StartStopWatch(SSTReadMicros, FileReadGetMicros)
		w.Stop()
	}
}

func BenchmarkHistogramStatAdd(b *testing.B) {
	b.ReportAllocs()
	var h HistogramStat
	i := 0
	for b.Loop() {
		h.Add(latencies[i&1023])
		i++
	}
}

// The parallel benchmarks run one recorder per P (use -cpu to vary it) and
// compare one shard, where every recorder writes the same cache lines, with
// the shard count New picks.
func parallelShards(b *testing.B, f func(pb *testing.PB, s *Statistics)) {
	for _, n := range []int{1, shardCount(runtime.GOMAXPROCS(0))} {
		b.Run(fmt.Sprintf("shards=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			s := newWithShards(LevelAll, n)
			b.RunParallel(func(pb *testing.PB) { f(pb, s) })
		})
	}
}

func BenchmarkRecordTickParallel(b *testing.B) {
	parallelShards(b, func(pb *testing.PB, s *Statistics) {
		for pb.Next() {
			s.RecordTick(BlockCacheHit, 1)
		}
	})
}

func BenchmarkReportTimeParallel(b *testing.B) {
	parallelShards(b, func(pb *testing.PB, s *Statistics) {
		i := 0
		for pb.Next() {
			s.ReportTimeToHistogram(SSTReadMicros, latencies[i&1023])
			i++
		}
	})
}

// Reads sum or merge every shard; these show what that costs.
func BenchmarkTickerCount(b *testing.B) {
	s := New(LevelAll)
	s.RecordTick(BlockCacheHit, 1)
	b.ReportAllocs()
	for b.Loop() {
		_ = s.TickerCount(BlockCacheHit)
	}
}

func BenchmarkHistogramData(b *testing.B) {
	s := New(LevelAll)
	for _, v := range latencies {
		s.ReportTimeToHistogram(SSTReadMicros, v)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = s.HistogramData(SSTReadMicros)
	}
}
