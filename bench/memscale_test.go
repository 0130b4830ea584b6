package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMemScaling checks the machine's read-scaling figure end to end: it
// is measured, kept in the round and read back as the ratio recorded, and
// the target that divides shale's Get hit scaling by it uses it.
func TestMemScaling(t *testing.T) {
	require.Positive(t, memReads(1, 10*time.Millisecond))
	rr := roundResults{}
	s := recordMemScaling(rr, 1, 8, 10*time.Millisecond)
	require.Positive(t, s)
	got, ok := machineScaling(rr, 1, 8)
	require.True(t, ok)
	require.InDelta(t, s, got, 1e-9)
	_, ok = machineScaling(roundResults{}, 1, 8)
	require.False(t, ok, "a round without the measurement")

	// Shale's Get hit: 10 µs per key with one thread, 5 with eight, so 2×;
	// against the machine's s.
	rr[resultKey("shale", variantMain)] = &engineResult{Engine: "shale", Variant: variantMain, Reads: []phaseResult{
		{Name: phaseGetHit, Threads: 1, Ops: 1, NsPerOp: 10_000}, {Name: phaseGetHit, Threads: 8, Ops: 1, NsPerOp: 5_000}}}
	cfg := &config{threads: []int{1, 8}}
	var found bool
	for _, tg := range targets(cfg) {
		if tg.what == "Get hit throughput, 1 → 8 threads, vs the machine's scaling" {
			found = true
			v, ok := tg.ratio(rr)
			require.True(t, ok)
			require.InDelta(t, 2/s, v, 1e-9)
		}
	}
	require.True(t, found)
}
