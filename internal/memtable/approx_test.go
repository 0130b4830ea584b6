package memtable

import (
	"fmt"
	"math"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/batch"
	"github.com/stretchr/testify/require"
)

func approxKey(i int) []byte { return fmt.Appendf(nil, "k%07d", i) }

// TestApproximateStats: a range of fewer than approxSample entries is
// counted exactly, bytes included; a larger one is sampled within the
// documented accuracy (checked at five standard deviations, so the random
// tower heights do not make the test flaky); bounds outside the keys give
// zero; a memtable made from a batch counts exactly.
func TestApproximateStats(t *testing.T) {
	const n = 100000
	m := New(64 << 20)
	defer m.Free()
	value := make([]byte, 50)
	for i := range n {
		require.NoError(t, m.Add(base.SeqNum(i+1), base.KindSet, approxKey(i), value))
	}
	entry := uint64(nodeHeaderSize + 2*linkSize + len(approxKey(0)) + len(value))

	c, s := m.ApproximateStats(approxKey(1000), approxKey(1400))
	require.Equal(t, uint64(400), c)
	require.Equal(t, 400*entry, s)
	c, _ = m.ApproximateStats(nil, approxKey(300))
	require.Equal(t, uint64(300), c)
	c, _ = m.ApproximateStats(approxKey(n-10), nil)
	require.Equal(t, uint64(10), c)
	c, s = m.ApproximateStats([]byte("z"), nil)
	require.Zero(t, c+s)
	c, s = m.ApproximateStats(nil, []byte("a"))
	require.Zero(t, c+s)
	c, s = m.ApproximateStats(approxKey(5), approxKey(5))
	require.Zero(t, c+s)

	for _, r := range [][2]int{{0, n}, {10000, 60000}, {20000, 21000}, {50000, 55000}} {
		var lo, hi []byte
		if r[0] > 0 {
			lo = approxKey(r[0])
		}
		if r[1] < n {
			hi = approxKey(r[1])
		}
		want := float64(r[1] - r[0])
		c, s := m.ApproximateStats(lo, hi)
		rel := math.Abs(float64(c)-want) / want
		t.Logf("[%d, %d): %d entries estimated, %+.2f%%", r[0], r[1], c, 100*(float64(c)-want)/want)
		require.Less(t, rel, 0.3, "five standard deviations of a 256-node sample")
		require.Equal(t, c*entry, s, "bytes scale with the sample")
	}

	b := batch.New()
	for i := range 1000 {
		b.Set(approxKey(i), value)
	}
	bm, err := NewFromBatch(b, 1)
	require.NoError(t, err)
	c, s = bm.ApproximateStats(approxKey(100), approxKey(700))
	require.Equal(t, uint64(600), c)
	require.Positive(t, s)
	c, _ = bm.ApproximateStats(nil, nil)
	require.Equal(t, uint64(1000), c)
}

// TestApproximateStatsConcurrent: estimates taken while writers add
// entries never exceed what has been added by the time they return, up to
// the sample's error, and race with nothing (run with -race).
func TestApproximateStatsConcurrent(t *testing.T) {
	m := New(16 << 20)
	defer m.Free()
	const writers, each = 4, 5000
	done := make(chan struct{})
	for w := range writers {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range each {
				k := approxKey(i*writers + w)
				if err := m.Add(base.SeqNum(i*writers+w+1), base.KindSet, k, k); err != nil {
					panic(err)
				}
			}
		}()
	}
	for finished := 0; finished < writers; {
		select {
		case <-done:
			finished++
		default:
			c, _ := m.ApproximateStats(approxKey(1000), approxKey(9000))
			require.LessOrEqual(t, c, uint64(8000*13/10))
		}
	}
	c, _ := m.ApproximateStats(approxKey(1000), approxKey(9000))
	require.InDelta(t, 8000, float64(c), 8000*0.3)
}
