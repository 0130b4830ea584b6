//go:build !unix && !windows

package cpubench

import "time"

// ProcessCPU would be the process's CPU time; this system (js, wasip1,
// plan9) has no call for it that the syscall package offers, so ok is
// false and the benchmarks that use it report no CPU metric.
func ProcessCPU() (d time.Duration, ok bool) { return 0, false }
