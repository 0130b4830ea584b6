//go:build unix

package cpubench

import (
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time (user and system) the process has used,
// every thread together; ok is false when the system would not say.
func ProcessCPU() (d time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
