package statistics

import (
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHistogramSnapshotByHand checks each field against samples placed by
// hand, the last bucket's catch-all included.
func TestHistogramSnapshotByHand(t *testing.T) {
	var h HistogramStat
	for _, v := range []uint64{0, 1, 2, 5, 6, 7, 10, math.MaxUint64} {
		h.Add(v)
	}
	snap := h.Snapshot()

	var want [NumBuckets]uint64
	want[0] = 2            // [0, 1]: 0 and 1
	want[1] = 1            // (1, 2]
	want[4] = 2            // (4, 6]: 5 and 6
	want[5] = 2            // (6, 10]: 7 and 10
	want[NumBuckets-1] = 1 // above 1.3e19
	require.Equal(t, want, snap.Buckets)
	require.Equal(t, uint64(8), snap.Count)
	require.Equal(t, uint64(0+1+2+5+6+7+10-1), snap.Sum, "MaxUint64 wraps the sum around, as RocksDB's does")
	require.Equal(t, uint64(0), snap.Min)
	require.Equal(t, uint64(math.MaxUint64), snap.Max)
	require.Len(t, BucketLimits(), NumBuckets)

	// The summary computed from the snapshot is the one HistogramStat gives.
	require.Equal(t, h.Data(), snap.Data())
	for _, p := range []float64{0, 50, 75, 99, 100} {
		require.Equal(t, h.Percentile(p), snap.Percentile(p), "P%v", p)
	}
}

// TestHistogramSnapshotEmpty: an empty histogram, a nil Statistics and a
// value that names no histogram all read as HistogramData's empty summary.
func TestHistogramSnapshotEmpty(t *testing.T) {
	var h HistogramStat
	var nilStats *Statistics
	for name, snap := range map[string]HistogramSnapshot{
		"empty HistogramStat": h.Snapshot(),
		"nil Statistics":      nilStats.HistogramSnapshot(DBGet),
		"HistogramNone":       New(LevelAll).HistogramSnapshot(HistogramNone),
	} {
		require.Equal(t, HistogramSnapshot{Min: lastLimit}, snap, name)
		require.Equal(t, HistogramData{Min: lastLimit}, snap.Data(), name)
	}
}

// TestStatisticsHistogramSnapshot: recorded from goroutines on every P, the
// snapshot is merged over the shards and agrees with HistogramData and
// HistogramString.
func TestStatisticsHistogramSnapshot(t *testing.T) {
	s := newWithShards(LevelAll, 8)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				s.ReportTimeToHistogram(SSTReadMicros, uint64(g*1000+i))
			}
		})
	}
	wg.Wait()
	snap := s.HistogramSnapshot(SSTReadMicros)
	require.Equal(t, uint64(8000), snap.Count)
	require.Equal(t, uint64(8000*7999/2), snap.Sum)
	require.Equal(t, s.HistogramData(SSTReadMicros), snap.Data())

	var v histValues
	s.merged(SSTReadMicros, &v)
	require.Equal(t, v.buckets, snap.Buckets)
}

// TestExportGating checks, level by level, that Export lists exactly the
// statistics enabled at the level, in enum order, each with its count; and
// that statistics recorded at a higher level are left out once the level is
// lowered.
func TestExportGating(t *testing.T) {
	s := New(LevelAll)
	for tk := range NumTickers {
		s.RecordTick(tk, uint64(tk)+1)
	}
	for h := range NumHistograms {
		s.RecordInHistogram(h, uint64(h)+1)
	}
	for level := LevelDisableAll; level <= LevelAll; level++ {
		t.Run(level.String(), func(t *testing.T) {
			s.SetLevel(level)
			e := s.Export()
			require.Equal(t, level, e.Level)

			var wantTickers []TickerValue
			for tk := range NumTickers {
				if tk.MinLevel() <= level {
					wantTickers = append(wantTickers, TickerValue{tk, uint64(tk) + 1})
				}
			}
			require.Equal(t, wantTickers, e.Tickers)

			var wantHists []Histogram
			for h := range NumHistograms {
				if h.MinLevel() <= level {
					wantHists = append(wantHists, h)
				}
			}
			var got []Histogram
			for _, hv := range e.Histograms {
				got = append(got, hv.Histogram)
				require.Equal(t, s.HistogramSnapshot(hv.Histogram), hv.HistogramSnapshot)
				require.Equal(t, uint64(1), hv.Count, "%s", hv.Histogram)
				require.Equal(t, uint64(hv.Histogram)+1, hv.Sum, "%s", hv.Histogram)
			}
			require.Equal(t, wantHists, got)
		})
	}
	// Spot checks of the table against the package doc's gating table.
	s.SetLevel(DefaultLevel)
	e := s.Export()
	require.True(t, exportHas(e, FileReadFlushMicros))
	require.False(t, exportHas(e, FileReadGetMicros), "detailed timers are off by default")
	require.Len(t, e.Tickers, int(NumTickers)-1, "all tickers but DBMutexWaitMicros")
}

func exportHas(e Export, h Histogram) bool {
	for _, hv := range e.Histograms {
		if hv.Histogram == h {
			return true
		}
	}
	return false
}

func TestExportNil(t *testing.T) {
	var s *Statistics
	require.Equal(t, Export{Level: LevelDisableAll}, s.Export())
}

// TestHistogramSnapshotConcurrent reads a histogram while recorders add the
// same value v to it, and checks the documented guarantees on every read:
// every counted sample is in Sum (Sum >= v·Count), Min and Max; and nothing
// goes down from one read to the next. A reader that loaded the sum before
// the buckets would see Sum < v·Count whenever a sample landed in between.
func TestHistogramSnapshotConcurrent(t *testing.T) {
	const v = 7
	for name, read := range map[string]func(s *Statistics) HistogramSnapshot{
		"Statistics.HistogramSnapshot": func(s *Statistics) HistogramSnapshot { return s.HistogramSnapshot(DBGet) },
		"Statistics.Export": func(s *Statistics) HistogramSnapshot {
			for _, hv := range s.Export().Histograms {
				if hv.Histogram == DBGet {
					return hv.HistogramSnapshot
				}
			}
			panic("DBGet not exported at LevelAll")
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := newWithShards(LevelAll, 4)
			var stop atomic.Bool
			var wg sync.WaitGroup
			for range 3 {
				wg.Go(func() {
					for !stop.Load() {
						s.ReportTimeToHistogram(DBGet, v)
					}
				})
			}
			defer func() { stop.Store(true); wg.Wait() }()

			var prev HistogramSnapshot
			deadline := time.Now().Add(200 * time.Millisecond)
			reads := 0
			for ; time.Now().Before(deadline) || prev.Count == 0; reads++ {
				snap := read(s)
				var n uint64
				for _, c := range snap.Buckets {
					n += c
				}
				require.Equal(t, n, snap.Count, "Count is the sum of the buckets")
				require.GreaterOrEqual(t, snap.Sum, v*snap.Count, "read %d: a counted sample missing from Sum", reads)
				if snap.Count > 0 {
					require.Equal(t, uint64(v), snap.Min, "read %d", reads)
					require.Equal(t, uint64(v), snap.Max, "read %d", reads)
				}
				require.GreaterOrEqual(t, snap.Count, prev.Count, "read %d: Count went down", reads)
				require.GreaterOrEqual(t, snap.Sum, prev.Sum, "read %d: Sum went down", reads)
				prev = snap
			}
			t.Logf("%d reads, %d samples", reads, prev.Count)
		})
	}
}

// TestTimeUnits: the tickers and histograms that count time are exactly
// those whose names say a unit (plus shale.db.write.stall, which RocksDB
// names without one), and the unit is the one the name says.
func TestTimeUnits(t *testing.T) {
	for tk := range NumTickers {
		want := time.Duration(0)
		switch {
		case strings.HasSuffix(tk.String(), ".micros"):
			want = time.Microsecond
		case strings.HasSuffix(tk.String(), ".nanos"):
			want = time.Nanosecond
		}
		require.Equal(t, want, tk.TimeUnit(), "%s", tk)
	}
	for h := range NumHistograms {
		name := h.String()
		var want time.Duration
		switch {
		case strings.HasSuffix(name, ".nanos"):
			want = time.Nanosecond
		case strings.HasSuffix(name, ".micros"), h == WriteStall:
			want = time.Microsecond
		}
		require.Equal(t, want, h.TimeUnit(), "%s", h)
		require.Equal(t, h.IsTime(), want != 0, "%s", h)
	}
	require.Equal(t, time.Duration(0), NumTickers.TimeUnit())
	require.Equal(t, time.Duration(0), HistogramNone.TimeUnit())
}
