//go:build !amd64

package statistics

import "time"

// monoNow reads the monotonic clock: one runtime.nanotime (time.Now makes
// two, wall and monotonic), never going backwards. Only differences of its
// readings mean anything. (amd64 reads the time-stamp counter instead; see
// clock_amd64.go.)
func monoNow() time.Duration { return time.Duration(nanotime()) }

// clockTicks reads the stopwatch clock unscaled: here nanotime, already in
// nanoseconds, never 0 (see clock_amd64.go).
func clockTicks() int64 { return max(nanotime(), 1) }

// ticksNanos scales the difference of two clockTicks readings to
// nanoseconds: here it only clamps a negative one to 0.
func ticksNanos(dt int64) time.Duration { return time.Duration(max(dt, 0)) }

// startClock has nothing to calibrate here.
func startClock() {}
