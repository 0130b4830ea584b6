package base

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKindRangeDelete pins the range tombstone's kind byte (part of the WAL
// and table formats) and that it is not a point kind.
func TestKindRangeDelete(t *testing.T) {
	require.Equal(t, Kind(0x0F), KindRangeDelete)
	require.Equal(t, "RANGEDEL", KindRangeDelete.String())
	k := MakeInternalKey([]byte("a"), 7, KindRangeDelete)
	require.False(t, k.Valid(), "a range tombstone is not a point key")
	require.Equal(t, KindMerge, KindMax)
}

// TestKindMerge pins the merge operand's kind byte (RocksDB's kTypeMerge)
// and that a search key at seq sorts before every point entry of its user
// key at seq, whatever its kind: SeekGE finds the newest visible one.
func TestKindMerge(t *testing.T) {
	require.Equal(t, Kind(2), KindMerge)
	require.Equal(t, "MERGE", KindMerge.String())
	require.True(t, MakeInternalKey([]byte("a"), 7, KindMerge).Valid())
	s := MakeSearchKey([]byte("a"), 7)
	for _, k := range []Kind{KindDelete, KindSet, KindMerge} {
		require.LessOrEqual(t, CompareInternal(s, MakeInternalKey([]byte("a"), 7, k)), 0, "%s", k)
		require.Negative(t, CompareInternal(MakeInternalKey([]byte("a"), 8, k), s), "%s", k)
		require.Positive(t, CompareInternal(MakeInternalKey([]byte("a"), 6, k), s), "%s", k)
	}
}

// TestRangeDeleteSentinel: the sentinel sorts before every entry of its user
// key, so a bound made of it excludes that key.
func TestRangeDeleteSentinel(t *testing.T) {
	s := MakeRangeDeleteSentinel([]byte("m"))
	require.True(t, s.IsExclusiveSentinel())
	require.Equal(t, KindRangeDelete, s.Kind())
	require.Negative(t, CompareInternal(s, MakeInternalKey([]byte("m"), MaxSeqNum, KindSet)))
	require.Positive(t, CompareInternal(s, MakeInternalKey([]byte("l"), 1, KindSet)))
	require.False(t, MakeSearchKey([]byte("m"), MaxSeqNum).IsExclusiveSentinel())
}
