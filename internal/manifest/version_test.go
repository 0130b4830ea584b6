package manifest

import (
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/stretchr/testify/require"
)

func TestOverlaps(t *testing.T) {
	// L0, newest first: 10 [m-p], 9 [a-c], 8 [b-e], 7 [x-z], 6 [d-h]
	// L1: 1 [a-c], 2 [e-g], 3 [k-k], 4 [m-q]
	v := version(map[int][]*FileMetadata{
		0: {
			file(10, "m", "p", 50, 60),
			file(9, "a", "c", 40, 45),
			file(8, "b", "e", 30, 35),
			file(7, "x", "z", 20, 25),
			file(6, "d", "h", 10, 15),
		},
		1: {file(1, "a", "c", 1, 2), file(2, "e", "g", 1, 2), file(3, "k", "k", 1, 2), file(4, "m", "q", 1, 2)},
	})
	require.NoError(t, v.CheckConsistency())
	k := func(s string) []byte { return []byte(s) }
	for _, tc := range []struct {
		name            string
		level           int
		smallest, large []byte
		want            []FileNum
	}{
		// L0 grows transitively: [a] hits 9 [a-c], which hits 8 [b-e],
		// which hits 6 [d-h].
		{"L0 transitive", 0, k("a"), k("a"), []FileNum{9, 8, 6}},
		{"L0 transitive from the other end", 0, k("h"), k("h"), []FileNum{9, 8, 6}},
		{"L0 single", 0, k("n"), k("o"), []FileNum{10}},
		{"L0 boundary inclusive", 0, k("p"), k("p"), []FileNum{10}},
		{"L0 gap", 0, k("i"), k("l"), nil},
		{"L0 past the end", 0, k("za"), nil, nil},
		{"L0 unbounded below", 0, nil, k("b"), []FileNum{9, 8, 6}},
		{"L0 everything", 0, nil, nil, []FileNum{10, 9, 8, 7, 6}},
		{"L1 exact", 1, k("e"), k("g"), []FileNum{2}},
		{"L1 span", 1, k("b"), k("l"), []FileNum{1, 2, 3}},
		{"L1 boundaries inclusive", 1, k("c"), k("e"), []FileNum{1, 2}},
		{"L1 gap", 1, k("h"), k("j"), nil},
		{"L1 gap between single-key file", 1, k("ka"), k("l"), nil},
		{"L1 before all", 1, k(""), k("0"), nil},
		{"L1 empty key bound", 1, k(""), k("a"), []FileNum{1}},
		{"L1 after all", 1, k("r"), nil, nil},
		{"L1 unbounded above", 1, k("h"), nil, []FileNum{3, 4}},
		{"L1 everything", 1, nil, nil, []FileNum{1, 2, 3, 4}},
		{"L2 empty", 2, nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, fileNums(v.Overlaps(tc.level, tc.smallest, tc.large)))
		})
	}
}

// TestOverlapsModel checks L1+ Overlaps against a linear scan over random
// levels and ranges.
func TestOverlapsModel(t *testing.T) {
	var files []*FileMetadata
	for i := range 50 {
		lo := string(rune('a'+i/2)) + string(rune('a'+i%2*10))
		hi := lo + "z"
		files = append(files, file(FileNum(i+1), lo, hi, 1, 1))
	}
	v := version(map[int][]*FileMetadata{3: files})
	require.NoError(t, v.CheckConsistency())
	keys := [][]byte{nil, []byte(""), []byte("a"), []byte("aa"), []byte("ak"), []byte("akz"), []byte("b"), []byte("m"), []byte("zz"), []byte("~")}
	for _, lo := range keys {
		for _, hi := range keys {
			var want []FileNum
			for _, f := range v.Levels[3] {
				if f.Overlaps(lo, hi) {
					want = append(want, f.FileNum)
				}
			}
			require.Equal(t, want, fileNums(v.Overlaps(3, lo, hi)), "[%q, %q]", lo, hi)
		}
	}
}

func TestCheckConsistency(t *testing.T) {
	bad := file(5, "b", "a", 1, 1)
	for _, tc := range []struct {
		name   string
		levels [NumLevels][]*FileMetadata
		want   string
	}{
		{"empty", [NumLevels][]*FileMetadata{}, ""},
		{"good", [NumLevels][]*FileMetadata{
			0: {file(9, "a", "z", 10, 20), file(8, "a", "z", 5, 20), file(7, "a", "z", 1, 4)},
			1: {file(1, "a", "b", 1, 1), file(2, "c", "d", 1, 1)},
		}, ""},
		{"L0 oldest first", [NumLevels][]*FileMetadata{
			0: {file(7, "a", "z", 1, 4), file(9, "a", "z", 10, 20)},
		}, "L0 out of order"},
		{"L0 seq tie broken by file number", [NumLevels][]*FileMetadata{
			0: {file(7, "a", "z", 1, 20), file(9, "a", "z", 10, 20)},
		}, "L0 out of order"},
		{"L1 overlap", [NumLevels][]*FileMetadata{
			1: {file(1, "a", "c", 1, 1), file(2, "b", "d", 1, 1)},
		}, "L1 files overlap or are out of order"},
		{"L1 shared boundary key", [NumLevels][]*FileMetadata{
			2: {file(1, "a", "c", 2, 2), file(2, "c", "d", 1, 1)},
		}, "L2 files overlap"},
		{"L1 unsorted", [NumLevels][]*FileMetadata{
			3: {file(2, "c", "d", 1, 1), file(1, "a", "b", 1, 1)},
		}, "L3 files overlap or are out of order"},
		{"smallest after largest", [NumLevels][]*FileMetadata{4: {bad}}, "smallest key after largest"},
		{"seqs reversed", [NumLevels][]*FileMetadata{4: {{FileNum: 3,
			Smallest: base.MakeInternalKey([]byte("a"), 5, base.KindSet), Largest: base.MakeInternalKey([]byte("b"), 5, base.KindSet),
			SmallestSeqNum: 6, LargestSeqNum: 5}}}, "smallest seqnum 6 > largest seqnum 5"},
		{"key outside seqs", [NumLevels][]*FileMetadata{4: {{FileNum: 3,
			Smallest: base.MakeInternalKey([]byte("a"), 9, base.KindSet), Largest: base.MakeInternalKey([]byte("b"), 5, base.KindSet),
			SmallestSeqNum: 1, LargestSeqNum: 5}}}, "outside seqnum range"},
		{"file in two levels", [NumLevels][]*FileMetadata{
			1: {file(4, "a", "b", 1, 1)}, 5: {file(4, "a", "b", 1, 1)},
		}, "file 000004 is in L1 and in L5"},
		{"file twice in a level", [NumLevels][]*FileMetadata{
			0: {file(4, "a", "b", 1, 1), file(4, "a", "b", 1, 1)},
		}, "file 000004 is in L0 and in L0"},
		{"nil file", [NumLevels][]*FileMetadata{6: {nil}}, "nil file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &Version{Levels: tc.levels}
			err := v.CheckConsistency()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestVersionAccessors(t *testing.T) {
	v := version(map[int][]*FileMetadata{
		0: {file(3, "a", "b", 1, 1), file(4, "c", "d", 2, 2)},
		2: {file(5, "e", "f", 1, 1)},
	})
	require.Equal(t, 2, v.NumFiles(0))
	require.Equal(t, 0, v.NumFiles(1))
	require.Equal(t, uint64(700), v.LevelSize(0))
	require.Equal(t, uint64(500), v.LevelSize(2))
	require.Equal(t,
		"L0 000004 size=400 [\"c\"#2,SET-\"d\"#2,SET] seqs=2-2\n"+
			"L0 000003 size=300 [\"a\"#1,SET-\"b\"#1,SET] seqs=1-1\n"+
			"L2 000005 size=500 [\"e\"#1,SET-\"f\"#1,SET] seqs=1-1\n", v.String())
	// A hand-built version counts references but belongs to no set.
	v.Ref()
	v.Ref()
	require.Equal(t, int32(2), v.Refs())
	v.Unref()
	v.Unref()
	require.Zero(t, v.Refs())
}
