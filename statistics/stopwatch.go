package statistics

import "time"

// StopWatch times one sample for up to two time histograms: an aggregate such
// as SSTReadMicros and a per-activity one such as FileReadGetMicros, as
// RocksDB's StopWatch does. It is a value: starting one does not allocate.
//
// A disabled StopWatch (the zero value, or one whose histograms were all
// gated off when it started) never reads the clock, and Stop records nothing.
//
// A StopWatch is not safe for concurrent use; it belongs to the goroutine
// timing the operation.
type StopWatch struct {
	s          *Statistics // nil when disabled or already stopped
	h1, h2     Histogram   // HistogramNone for a slot that was not kept
	start      time.Duration
	delayStart time.Duration
	delay      time.Duration
	delayOpen  bool
}

// StartStopWatch starts timing a sample for h1 and h2 (either may be
// HistogramNone). Each slot is kept only if HistogramEnabled(h) at start, so
// a per-activity histogram gated off at the current level is skipped while
// the aggregate is still recorded. If neither slot is kept, or s is nil, the
// watch is disabled: it never reads the clock and Stop records nothing and
// returns 0.
func (s *Statistics) StartStopWatch(h1, h2 Histogram) StopWatch {
	// Levels below LevelExceptTimers time nothing; this early-out inlines
	// into the caller.
	if s == nil || Level(s.level.Load()) < LevelExceptTimers {
		return StopWatch{}
	}
	return s.startStopWatch(h1, h2)
}

func (s *Statistics) startStopWatch(h1, h2 Histogram) StopWatch {
	l := Level(s.level.Load())
	if l < h1.MinLevel() {
		h1 = HistogramNone
	}
	if l < h2.MinLevel() {
		h2 = HistogramNone
	}
	if h1 == HistogramNone && h2 == HistogramNone {
		return StopWatch{}
	}
	return StopWatch{s: s, h1: h1, h2: h2, start: monoNow()}
}

// Enabled reports whether the watch is running and will record when it
// stops.
func (w *StopWatch) Enabled() bool { return w.s != nil }

// DelayStart starts a delay, time that the sample must not include (the
// read path excludes rate-limiter waits this way). It does nothing when the
// watch is disabled or a delay is already open.
func (w *StopWatch) DelayStart() {
	if w.s == nil || w.delayOpen {
		return
	}
	w.delayStart = monoNow()
	w.delayOpen = true
}

// DelayStop ends the open delay, if any, and adds it to the time excluded
// from the sample.
func (w *StopWatch) DelayStop() {
	if w.s == nil || !w.delayOpen {
		return
	}
	w.delay += monoNow() - w.delayStart
	w.delayOpen = false
}

// Stop ends the sample: the time since StartStopWatch minus every delay, in
// whole microseconds (rounded down). It records that one sample into each
// kept slot, if the level still allows it (see SetLevel), and returns it; the
// two CompressionTimesNanos/DecompressionTimesNanos histograms, if given a
// stopwatch, get the same span in nanoseconds. A delay still open at Stop
// ends there, so it is excluded too.
//
// Stop on a disabled or already stopped watch records nothing and returns 0.
func (w *StopWatch) Stop() uint64 {
	if w.s == nil {
		return 0
	}
	return w.stop()
}

func (w *StopWatch) stop() uint64 {
	s := w.s
	w.s = nil
	end := monoNow()
	if w.delayOpen {
		w.delay += end - w.delayStart
		w.delayOpen = false
	}
	d := max(end-w.start-w.delay, 0)
	us := uint64(d / time.Microsecond)
	// The level is checked again (SetLevel may have lowered it), once for
	// both slots, and both samples go to one shard: picking it is a call.
	l := Level(s.level.Load())
	keep1, keep2 := l >= w.h1.MinLevel(), l >= w.h2.MinLevel()
	if !keep1 && !keep2 {
		return us
	}
	sh, own := s.pin()
	if keep1 {
		sh.hists[w.h1].record(spanIn(w.h1, d, us), own)
	}
	if keep2 {
		sh.hists[w.h2].record(spanIn(w.h2, d, us), own)
	}
	procUnpin()
	return us
}

// spanIn is a span in h's unit: nanoseconds for the two *Nanos histograms,
// microseconds for the rest.
func spanIn(h Histogram, d time.Duration, us uint64) uint64 {
	if h.isNanos() {
		return uint64(d)
	}
	return us
}

// MonoNow reads the monotonic clock the StopWatch reads (see monoNow): one
// counter read on amd64, one runtime.nanotime elsewhere, a fraction of
// time.Now's two. Only differences of its readings mean anything.
// Code that times something a StopWatch does not (a per-request sink with
// statistics off) uses it to pay the same.
func MonoNow() time.Duration { return monoNow() }
