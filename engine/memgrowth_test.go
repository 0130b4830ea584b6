package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMemTableGrowthSchedule: the mutable memtables start at
// minMemTableSize and double at each rotation up to the write buffer size;
// a write buffer smaller than the start is used from the first memtable.
func TestMemTableGrowthSchedule(t *testing.T) {
	for _, tc := range []struct {
		wbs  int64
		want []int
	}{
		{4 << 20, []int{256 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20, 4 << 20}},
		{3 << 20, []int{256 << 10, 512 << 10, 1 << 20, 2 << 20, 3 << 20, 3 << 20}},
		{64 << 10, []int{64 << 10, 64 << 10}},
		{256 << 10, []int{256 << 10, 256 << 10}},
	} {
		t.Run(fmt.Sprint(tc.wbs), func(t *testing.T) {
			d := &database{opts: Options{WriteBufferSize: tc.wbs}}
			var got []int
			for range tc.want {
				got = append(got, d.nextMemTableSizeLocked())
			}
			require.Equal(t, tc.want, got)
		})
	}
}

// TestMemTableGrowth writes through a database and checks what the schedule
// is for: the first memtable after Open is small and is rotated (and
// flushed) once it holds its size, each next one is twice as large, and the
// arenas of the small ones are freed rather than kept for reuse, so the
// pool holds only standard arenas. Every key stays readable throughout.
func TestMemTableGrowth(t *testing.T) {
	ctx := context.Background()
	d, err := openDatabase(t.TempDir(), &Options{WriteBufferSize: 2 << 20, DisableAutoCompactions: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()

	mutableSize := func() int {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.mu.mem.size
	}
	require.Equal(t, minMemTableSize, mutableSize(), "the first memtable after Open")

	value := make([]byte, 1000)
	var sizes []int
	last := mutableSize()
	sizes = append(sizes, last)
	const n = 6000 // about 6 MiB: through 256 KiB, 512 KiB, 1 MiB and 2 MiB memtables
	for i := range n {
		require.NoError(t, d.Put(ctx, fmt.Appendf(nil, "key%06d", i), value))
		if s := mutableSize(); s != last {
			sizes = append(sizes, s)
			last = s
		}
	}
	require.Equal(t, []int{256 << 10, 512 << 10, 1 << 20, 2 << 20}, sizes)
	for i := 0; i < n; i += 97 {
		_, err := d.Get(ctx, fmt.Appendf(nil, "key%06d", i))
		require.NoError(t, err, "key %d", i)
	}

	require.NoError(t, d.Flush(ctx))
	d.arenas.mu.Lock()
	for _, m := range d.arenas.free {
		require.Equal(t, d.standardArenaSize(), m.Capacity(), "the pool keeps standard arenas only")
	}
	d.arenas.mu.Unlock()
}
