//go:build !unix && !windows

package memtable

import "time"

// processCPU would be the process's CPU time; this system (js, wasip1,
// plan9) has no call for it that the syscall package offers, so ok is
// false and BenchmarkFillApply reports no CPU metric.
func processCPU() (d time.Duration, ok bool) { return 0, false }
