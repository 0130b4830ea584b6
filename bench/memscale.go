package main

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// The machine's own limit on read scaling (issue 29): how much the
// throughput of random memory reads grows from one goroutine to many on
// this machine, measured in the same run as the engines' Get hit at those
// thread counts, so that shale's scaling is judged against what the cores
// and the memory system allow at that moment (a machine with two vCPUs
// that share a core, or whose other tenants are busy, scales less than
// 2×, and no engine can beat it).
//
// Each goroutine follows a chain of dependent loads through a 64 MiB array
// (larger than a core's L2, as the engines' block caches are): the next
// index is the loaded word plus a step, so every load waits for the one
// before it, as a Get's walk through an index and a block does, and the
// chain never falls into a short cycle that would fit in a cache.

const (
	memScaleWords = 16 << 20 // 64 MiB of uint32
	memScaleCheck = 1 << 12  // loads between looks at the clock and the stop flag
	// memScaleRepeats alternates the thread counts this many times per
	// measurement, so drift in the other load hits both alike.
	memScaleRepeats = 5
)

var memScaleSink atomic.Uint32

var memScaleArray = sync.OnceValue(func() []uint32 {
	a := make([]uint32, memScaleWords)
	rng := rand.New(rand.NewPCG(29, 29))
	for i := range a {
		a[i] = rng.Uint32()
	}
	return a
})

// memReads runs g goroutines of dependent random loads for d and returns
// the loads per second of all of them together.
func memReads(g int, d time.Duration) float64 {
	a := memScaleArray()
	const mask = memScaleWords - 1
	var stop atomic.Bool
	var total atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			idx, n := uint32(w)*0x9e3779b9, int64(0)
			for !stop.Load() {
				for i := range uint32(memScaleCheck) {
					idx = (a[idx&mask] + i) & mask
				}
				n += memScaleCheck
			}
			total.Add(n)
			memScaleSink.Add(idx) // keeps the chain from being optimized away
		}()
	}
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	return float64(total.Load()) / time.Since(start).Seconds()
}

// memScaling returns the machine's random-read throughput with hi
// goroutines over that with lo: the median of memScaleRepeats pairs, each
// lo then hi for d/2, so that a burst of other load spoils one pair, not
// the figure.
func memScaling(lo, hi int, d time.Duration) float64 {
	memScaleArray() // built outside the timed parts
	ratios := make([]float64, memScaleRepeats)
	for i := range ratios {
		l := memReads(lo, d/2)
		ratios[i] = memReads(hi, d/2) / l
	}
	return median(ratios)
}

// machineEngine is the pseudo-engine under which a round keeps the
// machine's figures (see recordMemScaling); it is not an engine of the
// tables.
const machineEngine = "machine"

// phaseMemRead is the machine's random-read phase, one result per thread
// count, NsPerOp the inverse of its throughput.
const phaseMemRead = "memread"

// recordMemScaling measures the machine's read scaling from lo to hi
// goroutines and keeps it in rr, as a pseudo-engine's two read phases
// whose NsPerOp ratio is the scaling (lo's NsPerOp is 1).
func recordMemScaling(rr roundResults, lo, hi int, d time.Duration) float64 {
	s := memScaling(lo, hi, d)
	rr[resultKey(machineEngine, variantMain)] = &engineResult{Engine: machineEngine, Variant: variantMain,
		Reads: []phaseResult{{Name: phaseMemRead, Threads: lo, Ops: 1, NsPerOp: 1}, {Name: phaseMemRead, Threads: hi, Ops: 1, NsPerOp: 1 / s}}}
	return s
}

// machineScaling is the machine's read scaling in round rr, and whether
// the round measured it.
func machineScaling(rr roundResults, lo, hi int) (float64, bool) {
	m := rr.get(machineEngine, variantMain)
	if m == nil {
		return 0, false
	}
	a, ok1 := m.read(phaseMemRead, lo)
	b, ok2 := m.read(phaseMemRead, hi)
	if !ok1 || !ok2 || b.NsPerOp <= 0 {
		return 0, false
	}
	return a.NsPerOp / b.NsPerOp, true
}
