package statistics

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// gatingRow says which of one probe's records land at one level (1) or are
// dropped (0).
type gatingRow struct {
	tick, mutexTick, sizeHist, timeHist, flushRead, userRead, detailed,
	timeViaRecord, sizeViaReport, watchAggregate, watchUserRead int
}

// TestGatingTable checks RocksDB's gating table (spec §4.2) level by level:
// tickers from 1, plain histograms from 2, timers from 3, the five user-read
// file histograms and the compression timers from 4, mutex time at 5. A
// histogram passed to the "wrong" method keeps its own class's gate.
func TestGatingTable(t *testing.T) {
	want := []gatingRow{
		LevelDisableAll:              {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		LevelExceptHistogramOrTimers: {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		LevelExceptTimers:            {1, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0},
		LevelExceptDetailedTimers:    {1, 0, 1, 1, 1, 0, 0, 1, 1, 1, 0},
		LevelExceptTimeForMutex:      {1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1},
		LevelAll:                     {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
	}
	probe := func(s *Statistics) gatingRow {
		s.RecordTick(BlockCacheHit, 1)
		s.RecordTick(DBMutexWaitMicros, 1)
		s.RecordInHistogram(BytesPerRead, 10)
		s.ReportTimeToHistogram(DBGet, 10)
		s.ReportTimeToHistogram(FileReadFlushMicros, 10)
		s.ReportTimeToHistogram(FileReadGetMicros, 10)
		s.ReportTimeToHistogram(DecompressionTimesNanos, 10)
		s.RecordInHistogram(DBSeek, 10)            // a time histogram via the size method
		s.ReportTimeToHistogram(BytesPerWrite, 10) // a size histogram via the time method
		w := s.StartStopWatch(SSTReadMicros, FileReadMultiGetMicros)
		w.Stop()
		c := func(h Histogram) int { return int(s.HistogramData(h).Count) }
		return gatingRow{
			tick: int(s.TickerCount(BlockCacheHit)), mutexTick: int(s.TickerCount(DBMutexWaitMicros)),
			sizeHist: c(BytesPerRead), timeHist: c(DBGet), flushRead: c(FileReadFlushMicros),
			userRead: c(FileReadGetMicros), detailed: c(DecompressionTimesNanos),
			timeViaRecord: c(DBSeek), sizeViaReport: c(BytesPerWrite),
			watchAggregate: c(SSTReadMicros), watchUserRead: c(FileReadMultiGetMicros),
		}
	}
	for l := range want {
		level := Level(l)
		t.Run(level.String(), func(t *testing.T) {
			require.Equal(t, want[l], probe(New(level)), "fresh at %s", level)

			// The same at run time: a Statistics moved to this level from
			// another records the same way.
			s := New(LevelAll)
			s.SetLevel(level)
			require.Equal(t, level, s.Level())
			require.Equal(t, want[l], probe(s), "after SetLevel(%s)", level)
		})
	}
}

// TestGatingEveryStatistic: for every ticker and histogram at every level,
// the Enabled predicates agree with what is recorded and with MinLevel.
func TestGatingEveryStatistic(t *testing.T) {
	for level := LevelDisableAll; level <= LevelAll; level++ {
		s := New(level)
		for tk := range NumTickers {
			on := level >= tk.MinLevel()
			require.Equal(t, on, s.TickerEnabled(tk))
			s.RecordTick(tk, 3)
			require.Equal(t, map[bool]uint64{true: 3, false: 0}[on], s.TickerCount(tk), "%s at %s", tk, level)
		}
		for h := range NumHistograms {
			on := level >= h.MinLevel()
			require.Equal(t, on, s.HistogramEnabled(h))
			s.RecordInHistogram(h, 5)
			s.ReportTimeToHistogram(h, 5)
			require.Equal(t, map[bool]uint64{true: 2, false: 0}[on], s.HistogramData(h).Count, "%s at %s", h, level)
		}
		require.False(t, s.HistogramEnabled(HistogramNone))
		require.False(t, s.TickerEnabled(NumTickers))
	}
}

func TestLevelChangesAtRunTime(t *testing.T) {
	s := New(DefaultLevel)
	require.Equal(t, LevelExceptDetailedTimers, s.Level())
	s.ReportTimeToHistogram(FileReadGetMicros, 1)
	s.SetLevel(LevelExceptTimeForMutex)
	s.ReportTimeToHistogram(FileReadGetMicros, 2)
	s.SetLevel(LevelDisableAll)
	s.ReportTimeToHistogram(FileReadGetMicros, 4)
	s.RecordTick(BytesRead, 1)
	require.Equal(t, uint64(1), s.HistogramData(FileReadGetMicros).Count)
	require.Equal(t, uint64(2), s.HistogramData(FileReadGetMicros).Sum)
	require.Zero(t, s.TickerCount(BytesRead))

	// Out-of-range levels are clamped, so nothing indexes past the tables.
	s.SetLevel(Level(100))
	require.Equal(t, LevelAll, s.Level())
	s.SetLevel(Level(-3))
	require.Equal(t, LevelDisableAll, s.Level())
	require.Equal(t, LevelAll, New(Level(math.MaxInt32)).Level())
}

func TestOutOfRangeIgnored(t *testing.T) {
	s := New(LevelAll)
	s.RecordTick(NumTickers, 1)
	s.RecordTick(Ticker(math.MaxUint32), 1)
	s.RecordInHistogram(HistogramNone, 1)
	s.ReportTimeToHistogram(Histogram(math.MaxUint32), 1)
	require.Zero(t, s.TickerCount(NumTickers))
	require.Equal(t, New(LevelAll).String(), s.String())
	require.Equal(t, HistogramData{Min: 13e18}, s.HistogramData(HistogramNone))
}

func TestNilStatistics(t *testing.T) {
	var s *Statistics
	s.SetLevel(LevelAll)
	s.RecordTick(BytesRead, 1)
	s.RecordInHistogram(BytesPerRead, 1)
	s.ReportTimeToHistogram(DBGet, 1)
	s.Reset()
	w := s.StartStopWatch(SSTReadMicros, FileReadGetMicros)
	require.False(t, w.Enabled())
	w.DelayStart()
	w.DelayStop()
	require.Zero(t, w.Stop())
	require.Equal(t, LevelDisableAll, s.Level())
	require.Zero(t, s.TickerCount(BytesRead))
	require.False(t, s.HistogramEnabled(DBGet))
	require.False(t, s.TickerEnabled(BytesRead))
	// A nil Statistics reads as an empty one.
	empty := New(LevelAll)
	require.Equal(t, empty.HistogramData(DBGet), s.HistogramData(DBGet))
	require.Equal(t, empty.HistogramString(DBGet), s.HistogramString(DBGet))
	require.Equal(t, empty.TickerMap(), s.TickerMap())
	require.Equal(t, empty.String(), s.String())
	require.Equal(t, empty.Snapshot(), s.Snapshot())
}

func TestResetAndTickerMap(t *testing.T) {
	s := New(LevelAll)
	s.RecordTick(BlockCacheHit, 3)
	s.RecordTick(BlockCacheHit, 4)
	s.RecordTick(TxnConflicts, 1)
	s.ReportTimeToHistogram(SSTReadMicros, 12)
	m := s.TickerMap()
	require.Len(t, m, int(NumTickers))
	require.Equal(t, uint64(7), m["shale.block.cache.hit"])
	require.Equal(t, uint64(1), m["shale.txn.conflicts"])
	require.Equal(t, uint64(0), m["shale.block.cache.miss"])

	s.Reset()
	require.Equal(t, LevelAll, s.Level(), "Reset keeps the level")
	require.Equal(t, New(LevelAll).String(), s.String())
	require.Equal(t, HistogramData{Min: 13e18}, s.HistogramData(SSTReadMicros))
	s.ReportTimeToHistogram(SSTReadMicros, 5)
	require.Equal(t, HistogramData{Count: 1, Sum: 5, Min: 5, Max: 5, Average: 5, Median: 5, P95: 5, P99: 5},
		s.HistogramData(SSTReadMicros))
}

func TestSnapshotSub(t *testing.T) {
	s := New(LevelAll)
	s.RecordTick(BytesRead, 100)
	s.RecordInHistogram(BytesPerRead, 10)
	before := s.Snapshot()
	s.RecordTick(BytesRead, 23)
	s.RecordTick(BytesWritten, 5)
	s.RecordInHistogram(BytesPerRead, 30)
	s.RecordInHistogram(BytesPerRead, 50)
	after := s.Snapshot()

	require.Equal(t, uint64(123), after.Tickers[BytesRead])
	require.Equal(t, s.HistogramData(BytesPerRead), after.Histograms[BytesPerRead])
	d := after.Sub(before)
	require.Equal(t, uint64(23), d[BytesRead])
	require.Equal(t, uint64(5), d[BytesWritten])
	require.Zero(t, d[BlockCacheHit])
	require.Equal(t, uint64(2), after.CountDelta(before, BytesPerRead))
	require.Equal(t, uint64(80), after.SumDelta(before, BytesPerRead))
	require.Zero(t, after.CountDelta(before, HistogramNone))
	require.Zero(t, after.SumDelta(before, HistogramNone))

	// Across a Reset, deltas read 0 instead of wrapping around.
	s.Reset()
	s.RecordTick(BytesRead, 1)
	later := s.Snapshot()
	require.Zero(t, later.Sub(after)[BytesRead])
	require.Zero(t, later.CountDelta(after, BytesPerRead))
	require.Zero(t, later.SumDelta(after, BytesPerRead))
}

// TestConcurrentExact records from many goroutines at once (run it with
// -race too) and expects exact totals: neither striping nor the atomic adds
// may lose an update. One shard makes every recorder hit the same counters,
// which is where a lost update (a load-then-store, as RocksDB does) shows.
func TestConcurrentExact(t *testing.T) {
	const goroutines = 8
	perG := 20000
	switch {
	case testing.Short():
		perG = 2000
	case raceEnabled:
		// The race detector serialises contended atomics through its own
		// locks; fewer rounds keep the run to seconds.
		perG = 5000
	}
	for _, shards := range []int{1, shardCount(runtime.GOMAXPROCS(0))} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			s := newWithShards(LevelAll, shards)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for g := range goroutines {
				wg.Go(func() {
					<-start
					for i := range perG {
						v := uint64(g*perG + i)
						s.RecordTick(BytesRead, v)
						s.RecordTick(BlockCacheHit, 1)
						s.RecordInHistogram(BytesPerRead, v)
						s.ReportTimeToHistogram(SSTReadMicros, v%1000)
						if i%16 == 0 {
							w := s.StartStopWatch(FileReadGetMicros, HistogramNone)
							w.Stop()
						}
					}
				})
			}
			// Readers and a level flip that changes nothing run alongside.
			wg.Go(func() {
				<-start
				for range 20 {
					_ = s.String()
					_ = s.Snapshot()
					s.SetLevel(LevelAll)
				}
			})
			close(start)
			wg.Wait()

			n := goroutines * perG
			require.Equal(t, uint64(n*(n-1)/2), s.TickerCount(BytesRead))
			require.Equal(t, uint64(n), s.TickerCount(BlockCacheHit))
			d := s.HistogramData(BytesPerRead)
			require.Equal(t, uint64(n), d.Count)
			require.Equal(t, uint64(n*(n-1)/2), d.Sum)
			require.Equal(t, uint64(0), d.Min)
			require.Equal(t, uint64(n-1), d.Max)
			var want HistogramStat
			for v := range uint64(n) {
				want.Add(v)
			}
			require.Equal(t, want.String(), s.HistogramString(BytesPerRead))
			require.Equal(t, uint64(n), s.HistogramData(SSTReadMicros).Count)
			var wantSum uint64
			for v := range uint64(n) {
				wantSum += v % 1000
			}
			require.Equal(t, wantSum, s.HistogramData(SSTReadMicros).Sum)
			require.Equal(t, uint64(goroutines*((perG+15)/16)), s.HistogramData(FileReadGetMicros).Count)
		})
	}
}

// TestConcurrentTicksOneLine hammers one ticker of a one-shard Statistics
// from more goroutines than CPUs, nothing else in the loop, so the recorders
// contend on one cache line as hard as they can; the count must be exact.
func TestConcurrentTicksOneLine(t *testing.T) {
	goroutines := 2 * runtime.GOMAXPROCS(0)
	perG := 200000
	if testing.Short() {
		perG = 10000
	}
	s := newWithShards(LevelAll, 1)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range goroutines {
		wg.Go(func() {
			<-start
			for range perG {
				s.RecordTick(NumberKeysRead, 1)
			}
		})
	}
	close(start)
	wg.Wait()
	require.Equal(t, uint64(goroutines*perG), s.TickerCount(NumberKeysRead))
}

// TestRecordAllocs: the hot paths allocate nothing.
func TestRecordAllocs(t *testing.T) {
	skipIfRace(t)
	for _, level := range []Level{LevelDisableAll, DefaultLevel, LevelAll} {
		s := New(level)
		for _, tc := range []struct {
			name string
			f    func()
		}{
			{"RecordTick", func() { s.RecordTick(BlockCacheHit, 1) }},
			{"RecordInHistogram", func() { s.RecordInHistogram(BytesPerRead, 4096) }},
			{"ReportTimeToHistogram", func() { s.ReportTimeToHistogram(SSTReadMicros, 120) }},
			{"RecordGet", func() {
				t := s.StartGet()
				s.RecordGet(&t, &GetCounts{Hit: GetHitL1, Found: true, Bytes: 100})
			}},
			{"StopWatch", func() {
				w := s.StartStopWatch(SSTReadMicros, FileReadGetMicros)
				w.DelayStart()
				w.DelayStop()
				w.Stop()
			}},
		} {
			require.Zero(t, testing.AllocsPerRun(1000, tc.f), "%s at %s", tc.name, level)
		}
	}
}

// TestShardPerP: recording picks the shard of the caller's P, so one
// goroutine ticking in a short tight loop, which the scheduler has no reason
// to move, puts every tick in one shard; a random pick would spread them
// over all eight. The goroutine may still move to another P now and then,
// so the test wants one clean round out of ten, not ten.
func TestShardPerP(t *testing.T) {
	const rounds, n = 10, 100
	clean := 0
	for range rounds {
		s := newWithShards(LevelAll, 8)
		for range n {
			s.RecordTick(BlockCacheHit, 1)
		}
		for i := range s.shards {
			if s.shards[i].tickers[BlockCacheHit].Load() == n {
				clean++
			}
		}
	}
	require.Positive(t, clean, "no round of %d ticks stayed in one shard", n)
}

func TestShardLayout(t *testing.T) {
	for _, tc := range []struct{ procs, want int }{
		{1, 4}, {2, 8}, {3, 16}, {4, 16}, {5, 32}, {8, 32}, {9, 64}, {16, 64}, {1000, 64},
	} {
		require.Equal(t, tc.want, shardCount(tc.procs), "GOMAXPROCS=%d", tc.procs)
	}
	// The Ps' stripes and one spare for Ps above the mask (see pin).
	require.Len(t, New(DefaultLevel).shards, shardCount(runtime.GOMAXPROCS(0))+1)
	// Whole pairs of cache lines, so no two shards share one.
	require.Equal(t, uintptr(shardDataSize), unsafe.Sizeof(shardData{}))
	require.Zero(t, unsafe.Sizeof(shard{})%cacheLinePair)
	require.GreaterOrEqual(t, unsafe.Sizeof(shard{}), unsafe.Sizeof(shardData{})+1)
	s := New(DefaultLevel)
	base := uintptr(unsafe.Pointer(&s.shards[0]))
	require.Zero(t, base%cacheLinePair, "the shard array starts on a line pair")
}
