package batch

import (
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/stretchr/testify/require"
)

// TestGrowDoubles checks that appending records at least doubles a full
// buffer, so that building a large batch copies less than its final size in
// all (append's quarter growth for large slices copied four times as much).
func TestGrowDoubles(t *testing.T) {
	for _, tc := range []struct {
		name string
		add  func(b *Batch, key, value []byte)
	}{
		{"set", func(b *Batch, k, v []byte) { b.Set(k, v) }},
		{"delete", func(b *Batch, k, _ []byte) { b.Delete(k) }},
		{"delete-range", func(b *Batch, k, v []byte) { b.DeleteRange(k, v) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := New()
			key, value := make([]byte, 32), make([]byte, 32)
			grows, copied := 0, 0
			// Under -race a quarter of the records: their 0.8-1.7 MB still
			// grow the buffer from 256 bytes at least 11 times, far past the
			// sizes where append grows by a quarter; the full 100,000 run
			// without -race.
			records := 100000
			if invariants.RaceEnabled {
				records /= 4
			}
			for range records {
				before, n := cap(b.data), len(b.data)
				tc.add(b, key, value)
				if cap(b.data) != before {
					require.GreaterOrEqual(t, cap(b.data), 2*before, "grew from %d", before)
					grows++
					copied += n
				}
			}
			// Doubling copies less than the final capacity in all, which
			// is less than twice the final size.
			require.Less(t, copied, cap(b.data), "bytes copied by %d grows", grows)
			require.Equal(t, uint32(records), b.Count())
		})
	}
}

// TestGrow checks that Grow(n) makes room for n bytes of records at once, and
// keeps the batch's contents.
func TestGrow(t *testing.T) {
	var zero Batch
	zero.Grow(100)
	require.Equal(t, HeaderLen, zero.Len())
	require.True(t, zero.Empty())

	b := New()
	b.Set([]byte("a"), []byte("1"))
	b.SetSeqNum(7)
	const n = 1000
	rec := 1 + 1 + 8 + 1 + 8
	// AllocsPerRun runs the function twice.
	b.Grow(2 * n * rec)
	key := []byte("k0000000")
	allocs := testing.AllocsPerRun(1, func() {
		for i := range n {
			key[5], key[6], key[7] = '0'+byte(i/100), '0'+byte(i/10%10), '0'+byte(i%10)
			b.Set(key, []byte("vvvvvvvv"))
		}
	})
	require.Zero(t, allocs, "the batch grew")
	require.Equal(t, uint32(2*n+1), b.Count())
	require.Equal(t, base.SeqNum(7), b.SeqNum())
	r := b.Reader()
	kind, key, value, ok, err := r.Next()
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, base.KindSet, kind)
	require.Equal(t, "a", string(key))
	require.Equal(t, "1", string(value))

	require.Panics(t, func() { b.Grow(-1) })
}
