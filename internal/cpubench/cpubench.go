// Package cpubench reports a benchmark's CPU time per operation, user and
// system, as the metric cpu-ns/op. On a shared machine it is steadier than
// the wall time, which grows while other processes hold the CPU. It is
// imported by benchmarks only.
package cpubench

import "testing"

// Start begins measuring the CPU time of the whole process. The function it
// returns, called after the benchmark loop, reports it per op. Where the
// process's CPU time cannot be read it reports nothing.
func Start(b *testing.B) (stop func()) {
	start, ok := ProcessCPU()
	if !ok {
		return func() {}
	}
	return func() {
		end, ok := ProcessCPU()
		if ok && b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	}
}
