package main

import (
	"bufio"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/errors"
)

// Keys follow RocksDB's db_basic_bench KeyGenerator: the big-endian uint32
// k*3+offset, zero-filled to keySize bytes. Offset 0 is a written key,
// offset 1 a key that is never written but falls between written ones.
const (
	keySize    = 16
	multiplier = 3
)

func makeKey(buf []byte, k, offset int) []byte {
	buf = buf[:keySize]
	clear(buf)
	v := uint32(k*multiplier + offset)
	buf[0], buf[1], buf[2], buf[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
	return buf
}

// valuePool holds random printable bytes (RocksDB's RandomString) that
// values are sliced from, so that generating a value costs nothing inside
// a timed loop. Such values barely compress with snappy.
var valuePool = sync.OnceValue(func() []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = ' ' + byte(rng.IntN(95))
	}
	return buf
})

func makeValue(k, size int) []byte {
	pool := valuePool()
	off := (k * 7919) % (len(pool) - size)
	return pool[off : off+size]
}

// samplePeriod: one operation in samplePeriod is timed individually, so the
// clock reads add little to the mean (which comes from the wall time of the
// whole phase) while the percentiles still rest on many samples.
const samplePeriod = 8

// reservoir keeps a uniform sample of up to cap latencies (Algorithm R).
// It belongs to one goroutine.
type reservoir struct {
	s   []int64
	n   int64
	rng *rand.Rand
}

func newReservoir(capacity int, seed uint64) *reservoir {
	return &reservoir{s: make([]int64, 0, capacity), rng: rand.New(rand.NewPCG(seed, 7))}
}

func (r *reservoir) add(d time.Duration) {
	r.n++
	if len(r.s) < cap(r.s) {
		r.s = append(r.s, int64(d))
		return
	}
	if j := r.rng.Int64N(r.n); j < int64(len(r.s)) {
		r.s[j] = int64(d)
	}
}

// percentile returns the p-th percentile (0..100) of sorted samples, by the
// nearest-rank method.
func percentile(sorted []int64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.5) - 1
	i = max(0, min(len(sorted)-1, i))
	return float64(sorted[i])
}

// phaseResult is one measured phase.
type phaseResult struct {
	Name    string  `json:"name"`
	Threads int     `json:"threads"`
	Ops     int64   `json:"ops"`       // calls
	Keys    int64   `json:"keys"`      // keys (Ops × keys per call)
	Seconds float64 `json:"seconds"`   // wall time of the measured part
	NsPerOp float64 `json:"ns_per_op"` // wall time / keys: inverse throughput per key
	// CPUNsPerOp is the process's CPU time (user + system, every thread)
	// over the measured part / keys. Unlike the wall time it does not grow
	// when other processes take the CPUs, so it is the steadier figure on a
	// shared machine; it also counts background work (GC, compactions).
	CPUNsPerOp float64 `json:"cpu_ns_per_op"`
	P50Ns      float64 `json:"p50_ns"` // per call
	P99Ns      float64 `json:"p99_ns"` // per call
	Samples    int     `json:"samples"`
}

func (r *phaseResult) finish(samples [][]int64, keysPerOp int, wall, cpu time.Duration) {
	var all []int64
	for _, s := range samples {
		all = append(all, s...)
	}
	slices.Sort(all)
	r.Keys = r.Ops * int64(keysPerOp)
	r.Seconds = wall.Seconds()
	if r.Keys > 0 {
		r.NsPerOp = float64(wall.Nanoseconds()) / float64(r.Keys)
		r.CPUNsPerOp = float64(cpu.Nanoseconds()) / float64(r.Keys)
	}
	r.P50Ns = percentile(all, 50)
	r.P99Ns = percentile(all, 99)
	r.Samples = len(all)
}

// opFactory makes one thread's operation (and its cleanup, which may be
// nil). Operations run on one goroutine each.
type opFactory func(thread int) (op func() error, cleanup func() error, err error)

// runTimed runs mk's operations on threads goroutines: warm untimed, then
// for dur, timing one call in samplePeriod.
func runTimed(name string, threads, keysPerOp int, warm, dur time.Duration, mk opFactory) (phaseResult, error) {
	ops := make([]func() error, threads)
	var cleanups []func() error
	defer func() {
		for _, c := range cleanups {
			_ = c()
		}
	}()
	for t := range threads {
		op, cleanup, err := mk(t)
		if err != nil {
			return phaseResult{}, err
		}
		ops[t] = op
		if cleanup != nil {
			cleanups = append(cleanups, cleanup)
		}
	}
	if warm > 0 {
		if _, _, _, _, err := runFor(ops, warm, false); err != nil {
			return phaseResult{}, errors.Wrapf(err, "%s warm-up", name)
		}
	}
	n, samples, wall, cpu, err := runFor(ops, dur, true)
	if err != nil {
		return phaseResult{}, errors.Wrap(err, name)
	}
	for _, c := range cleanups {
		if err := c(); err != nil {
			return phaseResult{}, errors.Wrapf(err, "%s cleanup", name)
		}
	}
	cleanups = nil
	r := phaseResult{Name: name, Threads: threads, Ops: n}
	r.finish(samples, keysPerOp, wall, cpu)
	return r, nil
}

// runFor runs every op on its own goroutine until dur has passed and
// returns the total number of calls, the sampled latencies, the wall time
// until the last goroutine stopped and the process CPU time meanwhile.
func runFor(ops []func() error, dur time.Duration, timed bool) (int64, [][]int64, time.Duration, time.Duration, error) {
	var stop atomic.Bool
	var total atomic.Int64
	samples := make([][]int64, len(ops))
	errs := make([]error, len(ops))
	var wg sync.WaitGroup
	cpu0 := cpuTime()
	start := time.Now()
	timer := time.AfterFunc(dur, func() { stop.Store(true) })
	defer timer.Stop()
	for t, op := range ops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var res *reservoir
			if timed {
				res = newReservoir(1<<17, uint64(t)+1)
			}
			var n int64
			for !stop.Load() {
				for j := range 64 {
					var err error
					if timed && j%samplePeriod == 0 {
						t0 := time.Now()
						err = op()
						res.add(time.Since(t0))
					} else {
						err = op()
					}
					if err != nil {
						errs[t] = err
						stop.Store(true)
						break
					}
					n++
				}
			}
			total.Add(n)
			if res != nil {
				samples[t] = res.s
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	cpu := cpuTime() - cpu0
	return total.Load(), samples, wall, cpu, errors.Join(errs...)
}

// runCount runs op(i) for i in [0, n) on one goroutine, timing one call in
// samplePeriod.
func runCount(name string, n, keysPerOp int, op func(i int) error) (phaseResult, error) {
	res := newReservoir(1<<17, 1)
	cpu0 := cpuTime()
	start := time.Now()
	for i := range n {
		var err error
		if i%samplePeriod == 0 {
			t0 := time.Now()
			err = op(i)
			res.add(time.Since(t0))
		} else {
			err = op(i)
		}
		if err != nil {
			return phaseResult{}, errors.Wrapf(err, "%s: op %d", name, i)
		}
	}
	wall := time.Since(start)
	cpu := cpuTime() - cpu0
	r := phaseResult{Name: name, Threads: 1, Ops: int64(n)}
	r.finish([][]int64{res.s}, keysPerOp, wall, cpu)
	return r, nil
}

// cpuTime returns the CPU time (user + system) the process has used, all
// threads together.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procStatusKiB returns a "VmXxx:" field of /proc/self/status in KiB, or
// falls back to getrusage's maxrss for VmHWM where /proc is missing.
func procStatusKiB(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, field+":"); ok {
				fields := strings.Fields(rest)
				if len(fields) > 0 {
					if v, err := strconv.ParseInt(fields[0], 10, 64); err == nil {
						return v
					}
				}
			}
		}
	}
	if field == "VmHWM" {
		var ru syscall.Rusage
		if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
			return int64(ru.Maxrss) // KiB on Linux; int32 on 386
		}
	}
	return 0
}

// diskUsage returns the bytes dir's files occupy (allocated blocks, so
// preallocated WAL space counts and sparse holes do not) and the apparent
// size of its table files (*.sst, goleveldb's *.ldb).
func diskUsage(dir string) (allocated, tables int64) {
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			allocated += st.Blocks * 512
		} else {
			allocated += fi.Size()
		}
		if ext := filepath.Ext(path); ext == ".sst" || ext == ".ldb" {
			tables += fi.Size()
		}
		return nil
	})
	return allocated, tables
}

// copyDir copies the regular files of src into a new directory dst.
func copyDir(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if err := copyFile(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
