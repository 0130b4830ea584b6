package memtable

import (
	"encoding/binary"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/batch"
	"github.com/stretchr/testify/require"
)

// TestApplyOneRecord covers Apply's path for a batch of one record (the
// engine's single-key write): each kind lands as Apply of a longer batch
// lands it, and a batch whose header claims one record while it holds more
// bytes, or none, is refused as corrupt before anything is inserted.
func TestApplyOneRecord(t *testing.T) {
	setCount := func(b *batch.Batch, n uint32) {
		binary.LittleEndian.PutUint32(b.Repr()[8:batch.HeaderLen], n)
	}
	for _, tc := range []struct {
		name    string
		build   func(b *batch.Batch)
		corrupt bool
		check   func(t *testing.T, m *MemTable)
	}{
		{name: "set", build: func(b *batch.Batch) { b.Set([]byte("k"), []byte("v")) }, check: func(t *testing.T, m *MemTable) {
			v, kind, found := m.Get([]byte("k"), base.MaxSeqNum)
			require.True(t, found)
			require.Equal(t, base.KindSet, kind)
			require.Equal(t, "v", string(v))
			require.Equal(t, 1, m.Count())
		}},
		{name: "set empty value", build: func(b *batch.Batch) { b.Set([]byte("k"), nil) }, check: func(t *testing.T, m *MemTable) {
			v, _, found := m.Get([]byte("k"), base.MaxSeqNum)
			require.True(t, found)
			require.NotNil(t, v)
			require.Empty(t, v)
		}},
		{name: "delete", build: func(b *batch.Batch) { b.Delete([]byte("k")) }, check: func(t *testing.T, m *MemTable) {
			v, kind, found := m.Get([]byte("k"), base.MaxSeqNum)
			require.True(t, found)
			require.Equal(t, base.KindDelete, kind)
			require.Nil(t, v)
		}},
		{name: "range delete", build: func(b *batch.Batch) { b.DeleteRange([]byte("a"), []byte("c")) }, check: func(t *testing.T, m *MemTable) {
			require.Equal(t, 0, m.Count())
			require.Equal(t, 1, m.NumRangeDeletions())
		}},
		{name: "two records, header says one", build: func(b *batch.Batch) {
			b.Set([]byte("k1"), []byte("v"))
			b.Set([]byte("k2"), []byte("v"))
			setCount(b, 1)
		}, corrupt: true},
		{name: "no record, header says one", build: func(b *batch.Batch) {
			b.Set([]byte("k1"), []byte("v"))
			b.Reset()
			setCount(b, 1)
		}, corrupt: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := batch.New()
			tc.build(b)
			m := New(1 << 20)
			defer m.Free()
			err := m.Apply(b, 7)
			if tc.corrupt {
				require.True(t, errors.Is(err, base.ErrCorruption), "%v", err)
				require.True(t, m.Empty())
				return
			}
			require.NoError(t, err)
			tc.check(t, m)
		})
	}
}
