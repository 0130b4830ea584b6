package fileio

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/cpubench"
	"github.com/stretchr/testify/require"
)

// BenchmarkPreadScaling measures random 4 KiB preads of a 64 MiB file on
// tmpfs (SHALE_BENCH_DIR, else /dev/shm) made by one goroutine or by two at
// once: whether the second core reads as fast as the first (ns/read is the
// wall time per read, cpu-ns/op the process's CPU time). On the 2-vCPU VM,
// idle, two goroutines read 1.9 times as fast as one, at the same CPU per
// read.
func BenchmarkPreadScaling(b *testing.B) {
	const size, block = 64 << 20, 4096
	dir := os.Getenv("SHALE_BENCH_DIR")
	if dir == "" {
		dir = "/dev/shm"
	}
	name := filepath.Join(dir, fmt.Sprintf("mgpar-pread-%d", os.Getpid()))
	require.NoError(b, os.WriteFile(name, make([]byte, size), 0o644))
	b.Cleanup(func() { _ = os.Remove(name) })
	f, err := os.Open(name)
	require.NoError(b, err)
	defer f.Close()
	for _, g := range []int{1, 2} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			per := 1024
			cpu := cpubench.Start(b)
			for b.Loop() {
				var wg sync.WaitGroup
				for w := range g {
					wg.Go(func() {
						rng := rand.New(rand.NewPCG(uint64(w), 1))
						buf := make([]byte, block)
						for range per / g {
							if _, err := f.ReadAt(buf, int64(rng.IntN(size/block))*block); err != nil {
								panic(err)
							}
						}
					})
				}
				wg.Wait()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*per), "ns/read")
			cpu()
		})
	}
}

// BenchmarkHelperWake measures how long a goroutine started with go takes
// to begin running while its creator keeps its own core busy for up to
// 2 ms, as a MultiGet would with its share of the reads: the latency a
// helper goroutine starts with (start-ns), and the wall and CPU time of the
// whole round trip. Variants: the new goroutine left in the creator's
// runnext slot (go), pushed out of it into the run queue by a second, empty
// goroutine (go+noop), or the creator yielding its core to it (go+gosched).
//
// On the 2-vCPU firecracker VM, idle, a helper started with go begins about
// 100 µs later, and with go+noop too: the wait is the other core's wake-up,
// not the delay before another P steals runnext. With go+gosched it runs at
// once, but on the creator's core, and the creator waits for the other core
// instead. So handing part of a MultiGet's reads and decodes (a 16-key
// batch of page-cache reads takes about 90 µs, see BenchmarkMultiGetMiss in
// internal/sstable) to another goroutine does not pay on this machine.
func BenchmarkHelperWake(b *testing.B) {
	if runtime.GOMAXPROCS(0) < 2 {
		b.Skip("needs two cores")
	}
	const spinFor = 2 * time.Millisecond
	for _, mode := range []string{"go", "go+noop", "go+gosched"} {
		b.Run(mode, func(b *testing.B) {
			var started atomic.Int64
			var total time.Duration
			done := make(chan struct{}, 1)
			helper := func(t0 time.Time) {
				started.Add(int64(time.Since(t0)))
				done <- struct{}{}
			}
			cpu := cpubench.Start(b)
			for b.Loop() {
				t0 := time.Now()
				go helper(t0)
				switch mode {
				case "go+noop":
					go func() {}()
				case "go+gosched":
					runtime.Gosched()
				}
				// Keep this core busy for up to spinFor, or until the helper ran.
				for time.Since(t0) < spinFor && started.Load() == 0 {
				}
				<-done
				total += time.Duration(started.Swap(0))
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "start-ns")
			cpu()
		})
	}
}
