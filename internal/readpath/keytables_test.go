package readpath

import (
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/stretchr/testify/require"
)

// TestKeyTables pins the order a point lookup searches tables in: the L0
// tables whose range holds the key, newest (first listed) first, then the
// one table of each deeper level whose range holds it.
func TestKeyTables(t *testing.T) {
	table := func(n manifest.FileNum, smallest, largest string) *manifest.FileMetadata {
		return &manifest.FileMetadata{FileNum: n,
			Smallest: base.MakeInternalKey([]byte(smallest), 1, base.KindSet),
			Largest:  base.MakeInternalKey([]byte(largest), 1, base.KindSet)}
	}
	levels := [][]*manifest.FileMetadata{
		{table(9, "a", "z"), table(8, "m", "p"), table(7, "a", "c")},
		{table(5, "a", "f"), table(6, "g", "q")},
		nil,
		{table(1, "a", "l"), table(2, "n", "z")},
	}
	for _, tc := range []struct {
		key  string
		want []manifest.FileNum
	}{
		{"n", []manifest.FileNum{9, 8, 6, 2}},
		{"b", []manifest.FileNum{9, 7, 5, 1}},
		{"m", []manifest.FileNum{9, 8, 6}}, // "m" falls between L3's tables
		{"0", nil},                         // before everything
		{"zz", nil},                        // after everything
	} {
		w := keyTables{levels: levels, key: []byte(tc.key)}
		var got []manifest.FileNum
		var lastLevel int
		for f, level, ok := w.next(); ok; f, level, ok = w.next() {
			require.GreaterOrEqual(t, level, lastLevel, "levels go down")
			lastLevel = level
			got = append(got, f.FileNum)
		}
		require.Equal(t, tc.want, got, "key %q", tc.key)
	}
}
