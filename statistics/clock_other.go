//go:build !amd64

package statistics

import "time"

// monoNow reads the monotonic clock: one runtime.nanotime (time.Now makes
// two, wall and monotonic), never going backwards. Only differences of its
// readings mean anything. (amd64 reads the time-stamp counter instead; see
// clock_amd64.go.)
func monoNow() time.Duration { return time.Duration(nanotime()) }

// startClock has nothing to calibrate here.
func startClock() {}
