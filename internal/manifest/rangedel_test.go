package manifest

import (
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/stretchr/testify/require"
)

// rangeDelFile is a table whose tombstones end, exclusively, at end.
func rangeDelFile(num FileNum, smallest, end string) *FileMetadata {
	f := file(num, smallest, smallest, 3, 9)
	f.Largest = base.MakeRangeDeleteSentinel([]byte(end))
	f.HasRangeDels = true
	return f
}

// TestRangeDelFileRoundTrip: tag 101 carries HasRangeDels, and a sentinel
// largest key decodes although its sequence number is outside the file's.
func TestRangeDelFileRoundTrip(t *testing.T) {
	f := rangeDelFile(7, "a", "m")
	e := &VersionEdit{NewFiles: []NewFileEntry{{Level: 1, Meta: f}, {Level: 1, Meta: file(8, "m", "p", 1, 2)}}}
	enc := e.Encode(nil)
	require.Equal(t, byte(tagNewFileRangeDels), enc[0])
	var d VersionEdit
	require.NoError(t, d.Decode(enc))
	require.True(t, d.NewFiles[0].Meta.HasRangeDels)
	require.False(t, d.NewFiles[1].Meta.HasRangeDels)
	require.True(t, d.NewFiles[0].Meta.Largest.IsExclusiveSentinel())
}

// TestSentinelAdjacency: a file whose tombstones end at m may precede one
// starting at m in L1; a real key m may not.
func TestSentinelAdjacency(t *testing.T) {
	v := &Version{}
	v.Levels[1] = []*FileMetadata{rangeDelFile(1, "a", "m"), file(2, "m", "p", 1, 2)}
	require.NoError(t, v.CheckConsistency())
	require.True(t, v.HasRangeDels())

	w := &Version{}
	w.Levels[1] = []*FileMetadata{file(1, "a", "m", 3, 9), file(2, "m", "p", 1, 2)}
	require.Error(t, w.CheckConsistency())
	require.False(t, w.HasRangeDels())
}
