package readpath

import (
	"fmt"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/memtable"
	"github.com/shaledb/shale/internal/rangedel"
	"github.com/stretchr/testify/require"
)

// countingIter counts the moves made on an internal iterator.
type countingIter struct {
	base.InternalIterator
	steps, seeks int
}

func (c *countingIter) Next() *base.InternalKV { c.steps++; return c.InternalIterator.Next() }
func (c *countingIter) Prev() *base.InternalKV { c.steps++; return c.InternalIterator.Prev() }
func (c *countingIter) SeekGE(k []byte) *base.InternalKV {
	c.seeks++
	return c.InternalIterator.SeekGE(k)
}
func (c *countingIter) SeekLT(k []byte) *base.InternalKV {
	c.seeks++
	return c.InternalIterator.SeekLT(k)
}

// TestDelFilterSeeksPast: entries of an older source that a newer source's
// tombstone covers are skipped with one seek each way, not stepped over;
// entries the source's own tombstone covers are stepped over, and those
// newer than it survive.
func TestDelFilterSeeksPast(t *testing.T) {
	m := memtable.New(1 << 20)
	for i := range 1000 {
		require.NoError(t, m.Add(base.SeqNum(2*(i+1)), base.KindSet, fmt.Appendf(nil, "k%04d", i), []byte("v")))
	}
	newer := rangedel.New([]rangedel.Tombstone{{Start: []byte("k0001"), End: []byte("k0999"), Seq: 5000}})
	c := &countingIter{InternalIterator: m.NewIter(nil, nil)}
	f := &delFilter{iter: c, seq: base.MaxSeqNum, newer: []tombstones{{set: newer}}}
	var keys []string
	for kv := f.First(); kv != nil; kv = f.Next() {
		keys = append(keys, string(kv.K.UserKey))
	}
	require.Equal(t, []string{"k0000", "k0999"}, keys)
	require.Equal(t, 1, c.seeks, "one seek past the tombstone")
	require.LessOrEqual(t, c.steps, 3)

	c.seeks, c.steps, keys = 0, 0, nil
	for kv := f.Last(); kv != nil; kv = f.Prev() {
		keys = append(keys, string(kv.K.UserKey))
	}
	require.Equal(t, []string{"k0999", "k0000"}, keys)
	require.Equal(t, 1, c.seeks, "one seek before the tombstone")

	// The source's own tombstone at seq 1001 hides only the entries below
	// it; invisible to a reader at 400, it hides nothing.
	own := rangedel.New([]rangedel.Tombstone{{Start: []byte("k0000"), End: []byte("k1000"), Seq: 1001}})
	f = &delFilter{iter: m.NewIter(nil, nil), seq: base.MaxSeqNum, own: tombstones{set: own}}
	n := 0
	for kv := f.First(); kv != nil; kv = f.Next() {
		require.Greater(t, kv.K.SeqNum(), base.SeqNum(1001))
		n++
	}
	require.Equal(t, 500, n)
	f = &delFilter{iter: m.NewIter(nil, nil), seq: 400, own: tombstones{set: own}}
	n = 0
	for kv := f.First(); kv != nil; kv = f.Next() {
		n++
	}
	require.Equal(t, 1000, n, "entries above the read seq pass through for the Iterator to skip")
}
