package main

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestOtherCPUShare(t *testing.T) {
	at := time.Unix(0, 0)
	mark := func(sec float64, busy, own time.Duration) cpuMark {
		return cpuMark{at: at.Add(time.Duration(sec * float64(time.Second))), busy: busy, own: own, ok: true}
	}
	for _, tc := range []struct {
		name string
		a, b cpuMark
		cpus int
		want float64
		ok   bool
	}{
		{"idle but us", mark(0, 0, 0), mark(10, 10*time.Second, 10*time.Second), 2, 0, true},
		{"another process took a core", mark(0, 0, 0), mark(10, 20*time.Second, 10*time.Second), 2, 0.5, true},
		{"tick rounding", mark(0, 0, 0), mark(10, 9990*time.Millisecond, 10*time.Second), 2, 0, true},
		{"no wall time", mark(0, 0, 0), mark(0, time.Second, 0), 2, 0, false},
		{"unknown", cpuMark{}, mark(10, 0, 0), 2, 0, false},
	} {
		got, ok := otherCPUShare(tc.a, tc.b, tc.cpus)
		require.Equal(t, tc.ok, ok, tc.name)
		require.InDelta(t, tc.want, got, 1e-9, tc.name)
	}
}

// TestMarkCPUSeesOwnWork: a second of this process's CPU shows up in its
// own time, not as other work (on Linux, where /proc/stat exists).
func TestMarkCPUSeesOwnWork(t *testing.T) {
	a := markCPU()
	if !a.ok {
		t.Skip("no /proc/stat")
	}
	// Spin until the process has used 200 ms of CPU. A fixed 300 ms of wall
	// time was not enough on a loaded VM, where the CPU steal took more
	// than a third of it (162 ms seen); the bound only catches a mark that
	// never sees the work.
	deadline := time.Now().Add(10 * time.Second)
	x := 0
	b := markCPU()
	for b.own-a.own < 200*time.Millisecond && time.Now().Before(deadline) {
		for range 100000 {
			x++
		}
		b = markCPU()
	}
	require.GreaterOrEqual(t, b.own-a.own, 200*time.Millisecond, "own CPU time (%d spins in 10 s)", x)
	share, ok := otherCPUShare(a, b, runtime.NumCPU())
	require.True(t, ok)
	require.GreaterOrEqual(t, share, 0.0)
	require.LessOrEqual(t, share, 1.0)
}

func TestUnderLoad(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    runMeta
		want bool
		why  string
	}{
		{"quiet", runMeta{OtherCPU: []float64{0.001, 0.02}, Load1: []float64{1.5}}, false, ""},
		{"one busy child", runMeta{OtherCPU: []float64{0.001, 0.3}}, true, "other work took up to 30.0% of the machine's CPU"},
		{"older run: load only", runMeta{Load1: []float64{0.2, 1.5}, CPUs: 2}, true, "load average reached 1.50 on 2 cores"},
		{"older quiet run", runMeta{Load1: []float64{0.2}}, false, ""},
	} {
		got, why := underLoad(tc.m)
		require.Equal(t, tc.want, got, tc.name)
		require.Contains(t, why, tc.why, tc.name)
	}
}
