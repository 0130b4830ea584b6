//go:build linux

package engine

import (
	"syscall"
	"time"
	"unsafe"
)

// threadCPU returns the CPU time of the calling OS thread (Linux's
// CLOCK_THREAD_CPUTIME_ID), or, where that clock is missing, the wall
// clock; ok reports which. Benchmarks lock their goroutine to its thread
// (runtime.LockOSThread) and time blocks with it: time the thread waits
// while other processes run on the shared cores is not counted. Other
// systems have the wall clock only (stats_cputime_other_test.go): the
// syscall package has neither SYS_CLOCK_GETTIME nor a thread clock there.
func threadCPU() (d time.Duration, ok bool) {
	const clockThreadCPUTimeID = 3
	var ts syscall.Timespec
	_, _, errno := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0)
	if errno == 0 {
		return time.Duration(ts.Nano()), true
	}
	return time.Duration(time.Now().UnixNano()), false
}
