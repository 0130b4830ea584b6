//go:build !unix

package statistics

// cpuTime is not measured here; reportCPU then reports nothing.
func cpuTime() int64 { return -1 }
