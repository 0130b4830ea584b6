package sstable

import (
	"bytes"
	"context"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/bloom"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/internal/rangedel"
	"github.com/shaledb/shale/internal/sstable/block"
	"github.com/stretchr/testify/require"
)

func frag(start, end string, seqs ...base.SeqNum) rangedel.Fragment {
	return rangedel.Fragment{Start: []byte(start), End: []byte(end), Seqs: seqs}
}

// writeWithRangeDels writes a table of es and frags (added first).
func writeWithRangeDels(t testing.TB, es []entry, frags []rangedel.Fragment) ([]byte, WriterMetadata) {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf, WriterOptions{BloomBitsPerKey: 10})
	for _, f := range frags {
		require.NoError(t, w.AddRangeDeletion(f))
	}
	for _, e := range es {
		require.NoError(t, w.Add(e.key, e.value))
	}
	meta, err := w.Close()
	require.NoError(t, err)
	return buf.Bytes(), meta
}

// TestRangeDelBlock checks the range deletion block's round trip, the
// format version it implies and the bounds it widens.
func TestRangeDelBlock(t *testing.T) {
	es := []entry{
		{key: base.MakeInternalKey([]byte("c"), 3, base.KindSet), value: []byte("v")},
		{key: base.MakeInternalKey([]byte("d"), 4, base.KindSet), value: []byte("w")},
	}
	frags := []rangedel.Fragment{frag("a", "b", 9), frag("b", "f", 7, 2)}
	data, meta := writeWithRangeDels(t, es, frags)
	require.Equal(t, uint64(2), meta.NumRangeDeletions)
	require.Equal(t, base.MakeInternalKey([]byte("a"), 9, base.KindRangeDelete), meta.Smallest)
	require.Equal(t, base.MakeRangeDeleteSentinel([]byte("f")), meta.Largest)
	require.True(t, meta.Largest.IsExclusiveSentinel())
	require.Equal(t, base.SeqNum(2), meta.SmallestSeqNum)
	require.Equal(t, base.SeqNum(9), meta.LargestSeqNum)

	for _, cfg := range readerCombos() {
		r := openTable(t, data, cfg)
		require.Equal(t, uint32(FormatVersionRangeDel), r.footer.FormatVersion)
		s := r.RangeDeletions()
		require.Equal(t, 2, s.Len())
		seq, f := s.Covering([]byte("c"), base.MaxSeqNum)
		require.Equal(t, base.SeqNum(7), seq)
		require.Equal(t, "f", string(f.End))
		seq, _ = s.Covering([]byte("c"), 5)
		require.Equal(t, base.SeqNum(2), seq)
		v, kind, es, found, pin, err := r.GetHashSeq(context.Background(), cfg.env, []byte("d"), bloom.Hash([]byte("d")), base.MaxSeqNum)
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, base.KindSet, kind)
		require.Equal(t, base.SeqNum(4), es)
		require.Equal(t, "w", string(v))
		pin.Release()
		require.NoError(t, r.VerifyChecksums(context.Background(), cfg.env))
	}
}

// TestRangeDelOnlyTable: a table may hold tombstones and no point entry
// (a flushed memtable holding only a DeleteRange).
func TestRangeDelOnlyTable(t *testing.T) {
	data, meta := writeWithRangeDels(t, nil, []rangedel.Fragment{frag("k", "p", 5)})
	require.Equal(t, base.MakeInternalKey([]byte("k"), 5, base.KindRangeDelete), meta.Smallest)
	require.Equal(t, base.MakeRangeDeleteSentinel([]byte("p")), meta.Largest)
	r := openTable(t, data, openConfig{})
	require.Equal(t, 1, r.RangeDeletions().Len())
	_, _, found, _, err := r.Get(context.Background(), verifyEnv, []byte("m"), base.MaxSeqNum)
	require.NoError(t, err)
	require.False(t, found)
	it, err := r.NewIter(context.Background(), verifyEnv, nil, nil)
	require.NoError(t, err)
	require.Nil(t, it.First())
	require.NoError(t, it.Close())
}

// TestTableWithoutRangeDelsUnchanged: a table without tombstones is still
// FormatVersion 1 with no range deletion block, so old readers read it.
func TestTableWithoutRangeDelsUnchanged(t *testing.T) {
	data, meta := writeWithRangeDels(t, []entry{{key: base.MakeInternalKey([]byte("a"), 1, base.KindSet)}}, nil)
	require.Zero(t, meta.NumRangeDeletions)
	r := openTable(t, data, openConfig{})
	require.Equal(t, uint32(FormatVersion), r.footer.FormatVersion)
	require.Nil(t, r.RangeDeletions())
}

func TestAddRangeDeletionOrder(t *testing.T) {
	w := NewWriter(&bytes.Buffer{}, WriterOptions{})
	require.NoError(t, w.AddRangeDeletion(frag("c", "e", 3)))
	for name, f := range map[string]rangedel.Fragment{
		"overlap":         frag("d", "f", 3),
		"empty":           frag("g", "g", 3),
		"increasing seqs": frag("g", "h", 3, 4),
	} {
		add := func() error { return w.AddRangeDeletion(f) }
		if invariants.Enabled {
			require.Panics(t, func() { _ = add() }, name)
		} else {
			require.True(t, errors.IsAssertionFailure(add()), name)
		}
	}
	require.NoError(t, w.AddRangeDeletion(frag("e", "f", 2)), "the bad fragments were not added")
}

// TestRangeDelBlockCorrupt: a damaged range deletion block fails Open, which
// verifies every meta block, and VerifyChecksums names it.
func TestRangeDelBlockCorrupt(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, WriterOptions{Checksum: checksum.XXHash64})
	require.NoError(t, w.AddRangeDeletion(frag("a", "q", 4)))
	require.NoError(t, w.Add(base.MakeInternalKey([]byte("b"), 1, base.KindSet), []byte("v")))
	_, err := w.Close()
	require.NoError(t, err)
	data := buf.Bytes()
	r := openTable(t, data, openConfig{})
	var h block.Handle
	for _, m := range r.metaHandles {
		if m.name == MetaRangeDelName {
			h = m.h
		}
	}
	require.NotZero(t, h.Length)
	bad := bytes.Clone(data)
	bad[h.Offset+1] ^= 0x40
	_, err = tryOpen(memWith(t, bad), openConfig{})
	require.True(t, base.IsCorruption(err), "%v", err)
	require.Contains(t, err.Error(), "range deletion")
}

// unboundedRangeDelTable returns a table whose range deletion block holds a
// fragment with an empty end, which the Writer refuses to write (a table
// never holds an unbounded tombstone: the engine's flush clamps it), made
// by slipping the fragment past AddRangeDeletion's checks.
func unboundedRangeDelTable(t testing.TB, ck checksum.Type) []byte {
	var buf bytes.Buffer
	w := NewWriter(&buf, WriterOptions{BlockSize: 32, Checksum: ck})
	require.NoError(t, w.AddRangeDeletion(frag("a", "c", 4)))
	w.rangeDels = append(w.rangeDels, rangedel.Fragment{Start: []byte("m"), Seqs: []base.SeqNum{7}})
	require.NoError(t, w.Add(base.MakeInternalKey([]byte("b"), 1, base.KindSet), []byte("v")))
	_, err := w.Close()
	require.NoError(t, err)
	return buf.Bytes()
}

// TestRangeDelBlockUnbounded: the Writer refuses an unbounded fragment (an
// empty end), and a reader takes a block holding one for corruption rather
// than reading it as an empty range.
func TestRangeDelBlockUnbounded(t *testing.T) {
	w := NewWriter(&bytes.Buffer{}, WriterOptions{})
	add := func() error { return w.AddRangeDeletion(rangedel.Fragment{Start: []byte("m"), Seqs: []base.SeqNum{7}}) }
	if invariants.Enabled {
		require.Panics(t, func() { _ = add() })
	} else {
		err := add()
		require.True(t, errors.IsAssertionFailure(err), "%v", err)
		require.Contains(t, err.Error(), "unbounded")
	}
	for _, ck := range []checksum.Type{checksum.None, checksum.CRC32C} {
		_, err := tryOpen(memWith(t, unboundedRangeDelTable(t, ck)), openConfig{})
		require.True(t, base.IsCorruption(err), "checksum %v: %v", ck, err)
		require.Contains(t, err.Error(), "no end")
	}
}
