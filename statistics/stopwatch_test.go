package statistics

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestStopWatchSlots(t *testing.T) {
	for _, tc := range []struct {
		level            Level
		h1, h2           Histogram
		enabled          bool
		wantH1, wantH2   Histogram
		countH1, countH2 uint64
	}{
		// Timers off: nothing kept, nothing measured.
		{LevelExceptTimers, SSTReadMicros, FileReadGetMicros, false, HistogramNone, HistogramNone, 0, 0},
		// The default level keeps the aggregate and drops the user-read breakdown.
		{LevelExceptDetailedTimers, SSTReadMicros, FileReadGetMicros, true, SSTReadMicros, HistogramNone, 1, 0},
		// ...but keeps the flush breakdown.
		{LevelExceptDetailedTimers, SSTReadMicros, FileReadFlushMicros, true, SSTReadMicros, FileReadFlushMicros, 1, 1},
		{LevelExceptTimeForMutex, SSTReadMicros, FileReadGetMicros, true, SSTReadMicros, FileReadGetMicros, 1, 1},
		// A lone gated-off histogram disables the watch.
		{LevelExceptDetailedTimers, FileReadGetMicros, HistogramNone, false, HistogramNone, HistogramNone, 0, 0},
		// Slot 2 alone.
		{LevelAll, HistogramNone, FileReadDBIteratorMicros, true, HistogramNone, FileReadDBIteratorMicros, 0, 1},
		{LevelAll, HistogramNone, HistogramNone, false, HistogramNone, HistogramNone, 0, 0},
	} {
		s := New(tc.level)
		w := s.StartStopWatch(tc.h1, tc.h2)
		require.Equal(t, tc.enabled, w.Enabled())
		if !tc.enabled {
			// A disabled watch read no clock: its zero start says so.
			require.Equal(t, StopWatch{}, w)
			w.DelayStart()
			require.Equal(t, StopWatch{}, w, "DelayStart on a disabled watch reads no clock")
		} else {
			require.Equal(t, tc.wantH1, w.h1)
			require.Equal(t, tc.wantH2, w.h2)
		}
		us := w.Stop()
		if !tc.enabled {
			require.Zero(t, us)
		}
		for _, c := range []struct {
			h    Histogram
			want uint64
		}{{tc.h1, tc.countH1}, {tc.h2, tc.countH2}} {
			if c.h != HistogramNone {
				d := s.HistogramData(c.h)
				require.Equal(t, c.want, d.Count, "%s at %s", c.h, tc.level)
				if c.want == 1 {
					require.Equal(t, us, d.Sum, "the sample is the value Stop returned")
				}
			}
		}
	}
}

func TestStopWatchSameSampleInBoth(t *testing.T) {
	s := New(LevelAll)
	w := s.StartStopWatch(SSTReadMicros, FileReadGetMicros)
	time.Sleep(2 * time.Millisecond)
	us := w.Stop()
	require.GreaterOrEqual(t, us, uint64(2000))
	a, b := s.HistogramData(SSTReadMicros), s.HistogramData(FileReadGetMicros)
	require.Equal(t, uint64(1), a.Count)
	require.Equal(t, us, a.Sum)
	require.Equal(t, a, b)

	// A second Stop records nothing.
	require.False(t, w.Enabled())
	require.Zero(t, w.Stop())
	require.Equal(t, uint64(1), s.HistogramData(SSTReadMicros).Count)
}

// TestStopWatchDelayExcluded measures the whole span from outside too: the
// watch's sample is its span minus its delays, each delay at least as long as
// the sleep in it, so the sample can be at most outside - sleeps. That holds
// however the machine schedules the test, and fails if a delay leaks in.
func TestStopWatchDelayExcluded(t *testing.T) {
	const delay = 20 * time.Millisecond
	for _, tc := range []struct {
		name  string
		close bool
	}{
		{"closed", true},
		// A delay still open at Stop ends there and is excluded too.
		{"open-at-stop", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(DefaultLevel)
			outer := time.Now()
			w := s.StartStopWatch(SSTReadMicros, HistogramNone)
			w.DelayStart()
			w.DelayStart() // a nested start is ignored
			time.Sleep(delay)
			if tc.close {
				w.DelayStop()
				w.DelayStop() // no delay open: ignored
			}
			us := w.Stop()
			elapsed := time.Since(outer)
			require.LessOrEqual(t, us, uint64((elapsed-delay)/time.Microsecond))
			require.Equal(t, us, s.HistogramData(SSTReadMicros).Sum)
		})
	}

	// Two delays add up; the time outside them counts.
	s := New(DefaultLevel)
	outer := time.Now()
	w := s.StartStopWatch(SSTReadMicros, HistogramNone)
	time.Sleep(5 * time.Millisecond)
	for range 2 {
		w.DelayStart()
		time.Sleep(delay)
		w.DelayStop()
	}
	us := w.Stop()
	elapsed := time.Since(outer)
	require.GreaterOrEqual(t, us, uint64(5000))
	require.LessOrEqual(t, us, uint64((elapsed-2*delay)/time.Microsecond))
}

func TestStopWatchLevelRecheckedAtStop(t *testing.T) {
	s := New(LevelAll)
	w := s.StartStopWatch(SSTReadMicros, FileReadGetMicros)
	s.SetLevel(LevelExceptDetailedTimers)
	w.Stop()
	require.Equal(t, uint64(1), s.HistogramData(SSTReadMicros).Count)
	require.Zero(t, s.HistogramData(FileReadGetMicros).Count)
}

func TestStopWatchNanos(t *testing.T) {
	s := New(LevelAll)
	w := s.StartStopWatch(SSTReadMicros, DecompressionTimesNanos)
	time.Sleep(time.Millisecond)
	us := w.Stop()
	ns := s.HistogramData(DecompressionTimesNanos).Sum
	require.GreaterOrEqual(t, ns, uint64(time.Millisecond))
	require.Equal(t, us, ns/1000, "the same span, in the histogram's unit")
	require.Equal(t, us, s.HistogramData(SSTReadMicros).Sum)
}
