package statistics

import (
	"testing"
	"time"
)

// TestMonoNowTracksNanotime checks that the stopwatch clock, once
// calibrated, measures a span as the runtime's clock does, to well under a
// microsecond per millisecond, and that it does not go backwards.
func TestMonoNowTracksNanotime(t *testing.T) {
	startClock()
	for _, span := range []time.Duration{5 * time.Millisecond, 30 * time.Millisecond} {
		m0, n0 := monoNow(), nanotime()
		time.Sleep(span)
		m1, n1 := monoNow(), nanotime()
		got, want := m1-m0, time.Duration(n1-n0)
		// Each pair is read a few hundred nanoseconds apart at worst (more
		// if preempted between the two reads, hence the absolute slack).
		if diff := (got - want).Abs(); diff > want/1000+50*time.Microsecond {
			t.Errorf("over %v: stopwatch clock measured %v, nanotime %v", span, got, want)
		}
	}
	prev := monoNow()
	for range 100000 {
		now := monoNow()
		if now < prev {
			t.Fatalf("clock went back from %v to %v", prev, now)
		}
		prev = now
	}
}

// TestMonoNowNearNanotime checks that the clock reads in nanotime's
// timeline, so a reading taken before calibration can be subtracted from
// one taken after.
func TestMonoNowNearNanotime(t *testing.T) {
	startClock()
	if d := (monoNow() - time.Duration(nanotime())).Abs(); d > 10*time.Millisecond {
		t.Errorf("stopwatch clock is %v away from nanotime", d)
	}
}
