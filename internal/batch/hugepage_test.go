package batch

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGrowHuge: buffers from growHuge keep their contents and capacity
// whatever their size and alignment (the advice covers only the whole huge
// pages inside them).
func TestGrowHuge(t *testing.T) {
	for _, tc := range []struct{ n, c int }{
		{0, 1}, {10, hugePage - 1}, {100, 2 * hugePage}, {hugePage + 7, 3*hugePage + 5}, {5 << 20, 9 << 20},
	} {
		t.Run(fmt.Sprintf("len=%d/cap=%d", tc.n, tc.c), func(t *testing.T) {
			data := make([]byte, tc.n)
			for i := range data {
				data[i] = byte(i * 7)
			}
			got := growHuge(data, tc.c)
			require.Equal(t, data, got)
			require.GreaterOrEqual(t, cap(got), tc.c)
			adviseHugePages(got[:cap(got)]) // advising twice is harmless
		})
	}
}

// TestLargeBatchGrowsThroughHugeBuffers: a batch that grows past
// hugeBufferMin reads back every record it was given, in order.
func TestLargeBatchGrowsThroughHugeBuffers(t *testing.T) {
	b := New()
	value := bytes.Repeat([]byte("v"), 200)
	var want []byte
	n := 0
	for ; b.Len() < 3*hugeBufferMin; n++ {
		want = fmt.Appendf(want[:0], "key%09d", n)
		b.Set(want, value)
	}
	require.GreaterOrEqual(t, cap(b.Repr()), 3*hugeBufferMin)
	// ~110,000 records: each is compared in plain code and require reports
	// only a difference, as four require calls a record (a t.Helper stack
	// walk each) were most of the test's time under -race.
	r := b.Reader()
	for i := range n {
		_, key, val, ok, err := r.Next()
		want = fmt.Appendf(want[:0], "key%09d", i)
		if err == nil && ok && bytes.Equal(key, want) && bytes.Equal(val, value) {
			continue
		}
		require.NoError(t, err, "record %d of %d", i, n)
		require.True(t, ok, "record %d of %d", i, n)
		require.Equal(t, string(want), string(key))
		require.Equal(t, value, val)
	}
	_, _, _, ok, err := r.Next()
	require.NoError(t, err)
	require.False(t, ok)
}
