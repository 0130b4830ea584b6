package memtable

import (
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/stretchr/testify/require"
)

// TestOffHeap checks that OffHeap recognises exactly the slices into a
// mapped arena: what Get returns from one, and nothing on the Go heap.
func TestOffHeap(t *testing.T) {
	m := New(1 << 20)
	defer m.Free()
	require.NoError(t, m.Add(1, base.KindSet, []byte("k"), []byte("value")))
	require.NoError(t, m.Add(2, base.KindSet, []byte("empty"), nil))
	v, _, ok := m.Get([]byte("k"), 10)
	require.True(t, ok)
	require.Equal(t, m.arena.mapped, m.OffHeap(v), "a value in the arena")
	require.Equal(t, m.arena.mapped, m.OffHeap(v[1:2]), "a part of a value in the arena")

	empty, _, ok := m.Get([]byte("empty"), 10)
	require.True(t, ok)
	require.False(t, m.OffHeap(empty), "an empty value has no bytes to read or write")

	require.False(t, m.OffHeap([]byte("value")), "a heap slice")
	require.False(t, m.OffHeap(nil))

	other := New(1 << 20)
	defer other.Free()
	require.False(t, other.OffHeap(v), "a slice into another memtable's arena")
}
