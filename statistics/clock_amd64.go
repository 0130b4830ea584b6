package statistics

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// On amd64 the stopwatch clock is the CPU's time-stamp counter, read with
// RDTSC and scaled to nanoseconds, when the CPU says the counter is
// invariant (it ticks at a constant rate in every power state, and the
// kernel keeps it in step across cores). A RDTSC costs a third to a half of
// runtime.nanotime on a virtual machine, where nanotime goes through the
// vDSO's paravirtual clock (BenchmarkClock compares them: 12 ns a read
// against 27 on this project's VM at dc96db7): two clock reads are most of
// what a timed Get pays for statistics. The counter is
// calibrated against nanotime once, when the first Statistics is made, and
// scaled into nanotime's timeline from that instant, so readings taken
// before and after the switch can still be subtracted.

// rdtsc returns the time-stamp counter.
func rdtsc() int64

// cpuid returns EAX and EDX of CPUID leaf (sub-leaf 0).
func cpuid(leaf uint32) (eax, edx uint32)

// tscClock converts counter readings to nanotime's timeline:
// ns = n0 + (tsc - t0) × mult / 2^32. Its fields are written once, before
// ready is set.
var tscClock struct {
	ready  atomic.Bool
	t0, n0 int64
	mult   uint64 // nanoseconds per tick, in 32.32 fixed point
	once   sync.Once
}

// monoNow reads the monotonic clock: one counter read and a multiply once
// calibrated, one runtime.nanotime before. Only differences of its readings
// mean anything.
func monoNow() time.Duration {
	if !tscClock.ready.Load() {
		return time.Duration(nanotime())
	}
	return tscNanos(rdtsc())
}

// clockTicks reads the stopwatch clock unscaled: the counter once
// calibrated, nanotime before. Only the difference of two readings means
// anything, scaled by ticksNanos; a Statistics exists only once New has
// settled which clock this is (startClock), so two readings taken for one
// Statistics come from the same clock. It saves monoNow's scaling at the
// start of a span. A counter or nanotime reading is never 0 in practice;
// max keeps 0 meaning "not timed" in a GetTimer even then, at the cost of a
// tick's error in one sample.
func clockTicks() int64 {
	if tscClock.ready.Load() {
		return max(rdtsc(), 1)
	}
	return max(nanotime(), 1)
}

// ticksNanos scales the difference of two clockTicks readings to
// nanoseconds; a negative one (a core whose counter lags another's by a few
// ticks) is 0.
func ticksNanos(dt int64) time.Duration {
	if !tscClock.ready.Load() {
		return time.Duration(max(dt, 0))
	}
	return tscSpan(dt)
}

// tscNanos scales a counter reading into nanotime's timeline. A reading
// below t0 (a core whose counter lags the calibrating core's by a few ticks)
// maps to n0.
func tscNanos(tsc int64) time.Duration {
	return time.Duration(tscClock.n0) + tscSpan(tsc-tscClock.t0)
}

// tscSpan scales a span of dt counter ticks to nanoseconds, a negative one
// to 0.
func tscSpan(dt int64) time.Duration {
	hi, lo := bits.Mul64(uint64(max(dt, 0)), tscClock.mult)
	return time.Duration(hi<<32 | lo>>32)
}

// invariantTSC reports whether CPUID says the time-stamp counter is
// invariant (leaf 0x80000007, EDX bit 8).
func invariantTSC() bool {
	if maxExt, _ := cpuid(0x80000000); maxExt < 0x80000007 {
		return false
	}
	_, edx := cpuid(0x80000007)
	return edx&(1<<8) != 0
}

// calibrationSpan is how long calibration measures the counter's rate. Each
// reading pair at its ends brackets one nanotime call (27 ns on this
// project's VM at dc96db7, BenchmarkClock), so even an error of 100 ns at
// each end leaves the rate exact to 1e-4: a tenth of a microsecond on a
// millisecond sample.
const calibrationSpan = 2 * time.Millisecond

// startClock calibrates the counter, once per process, and switches monoNow
// to it; New calls it. It sleeps for calibrationSpan (no CPU) the first
// time. Without an invariant counter, or with an implausible rate, monoNow
// stays on nanotime.
func startClock() {
	tscClock.once.Do(func() {
		if !invariantTSC() {
			return
		}
		t0, n0 := tscPair()
		// Sleep until calibrationSpan of real time has passed: in a
		// testing/synctest bubble, whose clock is fake, one Sleep may
		// return at once.
		for d := time.Duration(nanotime() - n0); d < calibrationSpan; d = time.Duration(nanotime() - n0) {
			time.Sleep(calibrationSpan - d)
		}
		t1, n1 := tscPair()
		mult, ok := tscMult(t1-t0, n1-n0)
		if !ok {
			return
		}
		tscClock.t0, tscClock.n0, tscClock.mult = t1, n1, mult
		tscClock.ready.Store(true)
	})
}

// tscMult returns nanoseconds per tick in 32.32 fixed point, given ticks
// counted over nanos; ok is false for a rate outside 0.1 to 20 ticks per
// nanosecond (100 MHz to 20 GHz), which no invariant counter has.
func tscMult(ticks, nanos int64) (uint64, bool) {
	if ticks <= 0 || nanos <= 0 {
		return 0, false
	}
	perTick := float64(nanos) / float64(ticks)
	if perTick < 0.05 || perTick > 10 {
		return 0, false
	}
	return uint64(perTick * (1 << 32)), true
}

// tscPair reads the counter and nanotime at about one instant: nanotime
// between two counter reads, retried (a few times) when a preemption or an
// interrupt widens the bracket, and the counter reading taken as the
// bracket's middle.
func tscPair() (tsc, nanos int64) {
	best := int64(-1)
	for range 8 {
		a := rdtsc()
		n := nanotime()
		b := rdtsc()
		if w := b - a; best < 0 || w < best {
			best, tsc, nanos = w, a+w/2, n
		}
	}
	return tsc, nanos
}
