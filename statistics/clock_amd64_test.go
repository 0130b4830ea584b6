package statistics

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestTSCMult(t *testing.T) {
	for _, c := range []struct {
		ticks, nanos int64
		ok           bool
		perTick      float64
	}{
		{2096000, 1000000, true, 1 / 2.096},
		{1000, 1000, true, 1},
		{0, 1000, false, 0},
		{1000, 0, false, 0},
		{-5, 1000, false, 0},
		{10, 1000000, false, 0},   // 100 ns per tick: 10 MHz
		{1000000, 1000, false, 0}, // 1000 ticks per ns
	} {
		mult, ok := tscMult(c.ticks, c.nanos)
		if ok != c.ok {
			t.Errorf("tscMult(%d, %d): ok %t, want %t", c.ticks, c.nanos, ok, c.ok)
			continue
		}
		if ok {
			if got := float64(mult) / (1 << 32); got < c.perTick*0.999999 || got > c.perTick*1.000001 {
				t.Errorf("tscMult(%d, %d) = %v ns per tick, want %v", c.ticks, c.nanos, got, c.perTick)
			}
		}
	}
}

// TestTSCNanos checks the scaling on a clock calibrated at 2.5 ticks per
// nanosecond: an hour of ticks is an hour, and a reading below the
// calibration point is the calibration point.
func TestTSCNanos(t *testing.T) {
	startClock()
	if !tscClock.ready.Load() {
		t.Skip("no invariant time-stamp counter: monoNow reads nanotime")
	}
	saved := struct {
		t0, n0 int64
		mult   uint64
	}{tscClock.t0, tscClock.n0, tscClock.mult}
	defer func() { tscClock.t0, tscClock.n0, tscClock.mult = saved.t0, saved.n0, saved.mult }()
	mult, _ := tscMult(5, 2)
	tscClock.t0, tscClock.n0, tscClock.mult = 1000, 7, mult
	hourTicks := int64(2.5 * float64(time.Hour))
	if got := tscNanos(1000+hourTicks) - 7; (got - time.Hour).Abs() > time.Microsecond {
		t.Errorf("an hour of ticks scaled to %v", got)
	}
	if got := tscNanos(900); got != 7 {
		t.Errorf("a reading before t0 scaled to %v, want 7", got)
	}
}

// TestCalibrationInSynctestBubble: calibrating inside a testing/synctest
// bubble, whose Sleep returns at once in real time, still measures the
// counter over calibrationSpan of real time, and the rate matches the one
// calibrated outside.
func TestCalibrationInSynctestBubble(t *testing.T) {
	startClock()
	if !tscClock.ready.Load() {
		t.Skip("no invariant time-stamp counter: monoNow reads nanotime")
	}
	want := tscClock.mult
	t0, n0 := tscClock.t0, tscClock.n0
	defer func() {
		tscClock.t0, tscClock.n0, tscClock.mult = t0, n0, want
		tscClock.ready.Store(true)
	}()
	tscClock.ready.Store(false)
	tscClock.once = sync.Once{}
	var took time.Duration
	synctest.Test(t, func(t *testing.T) {
		start := nanotime()
		startClock()
		took = time.Duration(nanotime() - start)
	})
	if took < calibrationSpan {
		t.Errorf("calibration in a bubble took %v of real time, want at least %v", took, calibrationSpan)
	}
	if got := tscClock.mult; float64(got) < 0.99*float64(want) || float64(got) > 1.01*float64(want) {
		t.Errorf("calibrated in a bubble at %v ns per tick, outside at %v",
			float64(got)/(1<<32), float64(want)/(1<<32))
	}
}
