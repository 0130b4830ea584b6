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
	require.Equal(t, KindSet, KindMax)
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
