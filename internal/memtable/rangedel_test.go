package memtable

import (
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/batch"
	"github.com/stretchr/testify/require"
)

// TestApplyRangeDelete checks that a batch's range deletion joins the
// memtable's tombstones at its own sequence number and not the skiplist, and
// that the fragmented Set follows later additions.
func TestApplyRangeDelete(t *testing.T) {
	m := New(1 << 16)
	require.Nil(t, m.RangeDeletions(), "no tombstones: nil")
	b := batch.New()
	b.Set([]byte("a"), []byte("1"))
	b.DeleteRange([]byte("a"), []byte("c"))
	b.Set([]byte("b"), []byte("2"))
	require.NoError(t, m.Apply(b, 10))
	require.Equal(t, 2, m.Count(), "the tombstone is not a skiplist entry")
	require.False(t, m.Empty())

	s := m.RangeDeletions()
	seq, _ := s.Covering([]byte("a"), base.MaxSeqNum)
	require.Equal(t, base.SeqNum(11), seq, "the record's own sequence number")
	seq, _ = s.Covering([]byte("a"), 10)
	require.Zero(t, seq, "invisible below its sequence number")
	require.Same(t, s, m.RangeDeletions(), "unchanged: the same Set")

	require.NoError(t, m.AddRangeDelete(20, []byte("x"), []byte("z")))
	seq, _ = m.RangeDeletions().Covering([]byte("y"), base.MaxSeqNum)
	require.Equal(t, base.SeqNum(20), seq)
	require.Equal(t, 2, m.NumRangeDeletions())

	m.Reset()
	require.Nil(t, m.RangeDeletions())
	require.True(t, m.Empty())
}

// TestOnlyRangeDeleteNotEmpty: a memtable holding only a tombstone must be
// flushed, not dropped as empty.
func TestOnlyRangeDeleteNotEmpty(t *testing.T) {
	m := New(1 << 16)
	require.NoError(t, m.AddRangeDelete(1, []byte("a"), []byte("b")))
	require.False(t, m.Empty())
}

// TestRangeDeletionsConcurrent: readers take the fragmented Set while a
// writer adds tombstones; each Set they get is complete for some prefix of
// the writes and never changes afterwards.
func TestRangeDeletionsConcurrent(t *testing.T) {
	m := New(1 << 20)
	const n = 200
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			b := batch.New()
			b.DeleteRange([]byte{byte(i)}, []byte{byte(i), 0})
			if err := m.Apply(b, base.SeqNum(i+1)); err != nil {
				panic(err)
			}
		}
	}()
	for {
		s := m.RangeDeletions()
		k := s.Len()
		// The Set holds tombstones 1..k (single-byte keys 0..k-1).
		for i := range k {
			if seq, _ := s.Covering([]byte{byte(i)}, base.MaxSeqNum); seq != base.SeqNum(i+1) {
				t.Fatalf("tombstone %d: seq %d", i, seq)
			}
		}
		select {
		case <-done:
			require.Equal(t, n, m.RangeDeletions().Len())
			return
		default:
		}
	}
}

// TestApplyRangeDeleteUnbounded checks that an unbounded range deletion (an
// empty end), whichever way it arrives (one record, a batch of several, a
// batch made a memtable), covers every key from its start.
func TestApplyRangeDeleteUnbounded(t *testing.T) {
	b := batch.New()
	b.Set([]byte("a"), []byte("1"))
	b.DeleteRange([]byte("b"), nil)
	b.Set([]byte("z"), []byte("2"))
	one := batch.New()
	one.DeleteRange([]byte("b"), nil)
	for name, apply := range map[string]func(m *MemTable) (base.SeqNum, error){
		"batch":  func(m *MemTable) (base.SeqNum, error) { return 11, m.Apply(b, 10) },
		"single": func(m *MemTable) (base.SeqNum, error) { return 10, m.Apply(one, 10) },
		"direct": func(m *MemTable) (base.SeqNum, error) { return 10, m.AddRangeDelete(10, []byte("b"), nil) },
	} {
		t.Run(name, func(t *testing.T) {
			m := New(1 << 16)
			want, err := apply(m)
			require.NoError(t, err)
			s := m.RangeDeletions()
			require.True(t, s.Unbounded())
			for key, seq := range map[string]base.SeqNum{"a": 0, "b": want, "z": want, "zzzz\xff": want} {
				got, _ := s.Covering([]byte(key), base.MaxSeqNum)
				require.Equal(t, seq, got, "%q", key)
			}
		})
	}
	bm, err := NewFromBatch(b, 10)
	require.NoError(t, err)
	got, _ := bm.RangeDeletions().Covering([]byte("zzzz"), base.MaxSeqNum)
	require.Equal(t, base.SeqNum(11), got, "a batch made a memtable")
}
