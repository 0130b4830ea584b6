//go:build windows

package cpubench

import (
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time (user and system) the process has used,
// every thread together; ok is false when the system would not say.
func ProcessCPU() (d time.Duration, ok bool) {
	var creation, exit, kernel, user syscall.Filetime
	h, err := syscall.GetCurrentProcess()
	if err != nil {
		return 0, false
	}
	if err := syscall.GetProcessTimes(h, &creation, &exit, &kernel, &user); err != nil {
		return 0, false
	}
	return filetimeDuration(kernel) + filetimeDuration(user), true
}

// filetimeDuration reads a FILETIME that holds a duration, in 100 ns
// units. Filetime.Nanoseconds would subtract the 1601-to-1970 offset of a
// point in time from it.
func filetimeDuration(ft syscall.Filetime) time.Duration {
	return time.Duration(int64(ft.HighDateTime)<<32|int64(ft.LowDateTime)) * 100
}
