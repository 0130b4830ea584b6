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
