package statistics

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
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
			s := New(l)
			reportCPU(b, func() { f(b, s) })
		})
	}
}

// reportCPU runs f, a benchmark body, and reports the CPU time the process
// spent per iteration as cpu-ns/op (summed over threads for a parallel
// body). On a shared machine it is steadier than ns/op, which also counts
// the time other processes held the CPU.
func reportCPU(b *testing.B, f func()) {
	t0 := cpuTime()
	f()
	if t1 := cpuTime(); t0 >= 0 && t1 >= 0 && b.N > 0 {
		b.ReportMetric(float64(t1-t0)/float64(b.N), "cpu-ns/op")
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

// BenchmarkGetRecording records what one Get records in engine, readpath,
// sstable and fileio, clock reads included: the per-Get cost of statistics.
// Each op records as the engine does: the file reader's and the table
// reader's other ticks one by one, the table lookups' bloom filter and data
// block cache ticks counted in GetCounts.Tables, then the Get's counts and
// its DBGet sample in one RecordGet. op=read finds its key in a data block
// read from the file (the SSTReadMicros stopwatch and 3 ticks, then
// RecordGet's 4 ticks, 4 table ticks and BytesPerRead sample); op=miss is
// turned away by the bloom filter (RecordGet's 2 ticks, 1 table tick and a
// BytesPerRead sample of 0).
func BenchmarkGetRecording(b *testing.B) {
	b.Run("op=read", func(b *testing.B) {
		forEachLevel(b, func(b *testing.B, s *Statistics) {
			for b.Loop() {
				get := s.StartGet()
				c := GetCounts{Hit: GetHitL2AndUp, Found: true, Bytes: 256}
				c.Tables.BloomPositive++
				c.Tables.DataMisses++
				read := s.StartStopWatch(SSTReadMicros, FileReadGetMicros)
				read.Stop()
				s.RecordTick(LastLevelReadBytes, 4096)
				s.RecordTick(LastLevelReadCount, 1)
				s.RecordTick(BlockChecksumComputeCount, 1)
				c.Tables.BloomTruePositive++
				s.RecordGet(&get, &c)
			}
		})
	})
	b.Run("op=miss", func(b *testing.B) {
		forEachLevel(b, func(b *testing.B, s *Statistics) {
			for b.Loop() {
				get := s.StartGet()
				c := GetCounts{Hit: NumTickers}
				c.Tables.BloomUseful++
				s.RecordGet(&get, &c)
			}
		})
	})
	// op=cached is a Get whose block is in the block cache: the DBGet
	// timer, the table reader's five ticks counted, and RecordGet.
	b.Run("op=cached", func(b *testing.B) {
		forEachLevel(b, func(b *testing.B, s *Statistics) {
			for b.Loop() {
				get := s.StartGet()
				c := GetCounts{Hit: GetHitL0, Found: true, Bytes: 100}
				c.Tables.BloomPositive++
				c.Tables.DataHits++
				c.Tables.DataHitBytes += 4096
				c.Tables.BloomTruePositive++
				s.RecordGet(&get, &c)
			}
		})
	})
	// op=clock is the two clock reads of a timed Get alone, the floor of
	// what op=miss can cost at the default level.
	b.Run("op=clock", func(b *testing.B) {
		startClock()
		reportCPU(b, func() {
			for b.Loop() {
				start := monoNow()
				sinkDuration += monoNow() - start
			}
		})
	})
}

func BenchmarkStopWatchNil(b *testing.B) {
	b.ReportAllocs()
	var s *Statistics
	reportCPU(b, func() {
		for b.Loop() {
			w := s.StartStopWatch(SSTReadMicros, FileReadGetMicros)
			w.Stop()
		}
	})
}

func BenchmarkHistogramStatAdd(b *testing.B) {
	b.ReportAllocs()
	var h HistogramStat
	reportCPU(b, func() {
		i := 0
		for b.Loop() {
			h.Add(latencies[i&1023])
			i++
		}
	})
}

// The parallel benchmarks run one recorder per P (use -cpu to vary it) and
// compare one shard, where every recorder writes the same cache lines, with
// the shard count New picks.
func parallelShards(b *testing.B, f func(pb *testing.PB, s *Statistics)) {
	for _, n := range []int{1, shardCount(runtime.GOMAXPROCS(0))} {
		b.Run(fmt.Sprintf("shards=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			s := newWithShards(LevelAll, n)
			reportCPU(b, func() { b.RunParallel(func(pb *testing.PB) { f(pb, s) }) })
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

func BenchmarkStopWatchParallel(b *testing.B) {
	parallelShards(b, func(pb *testing.PB, s *Statistics) {
		for pb.Next() {
			w := s.StartStopWatch(SSTReadMicros, FileReadGetMicros)
			w.Stop()
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

var sinkInt int

// BenchmarkBucketIndex compares the lookup Add uses with the binary search
// it replaced, on varied samples (a branch predictor cannot learn them).
func BenchmarkBucketIndex(b *testing.B) {
	for _, bc := range []struct {
		name string
		f    func(uint64) int
	}{{"impl=lookup", bucketIndex}, {"impl=search", bucketIndexSearch}} {
		b.Run(bc.name, func(b *testing.B) {
			reportCPU(b, func() {
				i := 0
				for b.Loop() {
					sinkInt += bc.f(latencies[i&1023])
					i++
				}
			})
		})
	}
}

var sinkDuration time.Duration

// BenchmarkClock compares the stopwatch clock (monoNow: the time-stamp
// counter on amd64) with the runtime's nanotime and with time.Since, which
// reads nanotime through a few more steps.
func BenchmarkClock(b *testing.B) {
	startClock()
	b.Run("clock=stopwatch", func(b *testing.B) {
		reportCPU(b, func() {
			for b.Loop() {
				sinkDuration += monoNow()
			}
		})
	})
	b.Run("clock=nanotime", func(b *testing.B) {
		reportCPU(b, func() {
			for b.Loop() {
				sinkDuration += time.Duration(nanotime())
			}
		})
	})
	base := time.Now()
	b.Run("clock=time.Since", func(b *testing.B) {
		reportCPU(b, func() {
			for b.Loop() {
				sinkDuration += time.Since(base)
			}
		})
	})
}

var sinkCounter atomic.Uint64

// BenchmarkOwnedAdd compares the locked add of a shared counter with the
// add a P makes to a counter of its own stripe (plain on amd64 without the
// race detector; see owned_amd64.go).
func BenchmarkOwnedAdd(b *testing.B) {
	b.Run("add=atomic", func(b *testing.B) {
		reportCPU(b, func() {
			for b.Loop() {
				sinkCounter.Add(1)
			}
		})
	})
	b.Run("add=owned", func(b *testing.B) {
		reportCPU(b, func() {
			for b.Loop() {
				addOwned(&sinkCounter, 1)
			}
		})
	})
}
