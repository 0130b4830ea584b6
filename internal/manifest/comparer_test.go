package manifest

import (
	"bytes"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// TestComparerRecorded checks that a non-bytewise comparer's name survives
// MANIFEST rotations, orders the levels, and that opening with another
// comparer fails before anything is written; a bytewise database records no
// name (as those written before names were recorded) and opens as bytewise.
func TestComparerRecorded(t *testing.T) {
	rev := base.ReverseBytewiseComparer
	for _, tc := range []struct {
		name       string
		create     *base.Comparer
		open       *base.Comparer
		wantErr    string
		wantInFile bool
	}{
		{"bytewise", nil, nil, "", false},
		{"bytewise by name", nil, base.DefaultComparer, "", false},
		{"reverse", rev, rev, "", true},
		{"reverse opened bytewise", rev, nil, `ordered by comparer "rocksdb.ReverseBytewiseComparator", but it is opened with comparer "leveldb.BytewiseComparator"`, true},
		{"bytewise opened reverse", nil, rev, `ordered by comparer "leveldb.BytewiseComparator", but it is opened with comparer "rocksdb.ReverseBytewiseComparator"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			require.NoError(t, fs.MkdirAll("db", 0o755))
			vs, err := Create(fs, "db", WithComparer(tc.create))
			require.NoError(t, err)
			// Two files of L1 in the comparer's order: "b" before "a" when reversed.
			first, second := file(2, "a", "a", 1, 1), file(3, "b", "b", 2, 2)
			if tc.create == rev {
				first, second = second, first
			}
			e := &VersionEdit{}
			e.SetNextFileNumber(4)
			e.SetLastSeqNum(2)
			e.AddFile(1, second)
			e.AddFile(1, first)
			require.NoError(t, vs.LogAndApply(e))
			require.Equal(t, []FileNum{first.FileNum, second.FileNum}, fileNums(vs.Current().Levels[1]))
			require.NoError(t, vs.Close())

			names, err := fs.List("db")
			require.NoError(t, err)
			before := len(names)
			vs, err = Recover(fs, "db", WithComparer(tc.open))
			if tc.wantErr != "" {
				require.ErrorIs(t, err, base.ErrInvalidArgument)
				require.ErrorContains(t, err, tc.wantErr)
				names, err := fs.List("db")
				require.NoError(t, err)
				require.Len(t, names, before, "a refused open wrote a file")
				return
			}
			require.NoError(t, err)
			require.Equal(t, []FileNum{first.FileNum, second.FileNum}, fileNums(vs.Current().Levels[1]))
			// Recover started a new MANIFEST: the name is in its snapshot.
			f, err := fs.Open(ManifestFileName("db", vs.ManifestFileNum()))
			require.NoError(t, err)
			buf := make([]byte, 4096)
			n, _ := f.ReadAt(buf, 0)
			require.NoError(t, f.Close())
			require.Equal(t, tc.wantInFile, bytes.Contains(buf[:n], []byte(base.ReverseBytewiseName)))
			require.NoError(t, vs.Close())
		})
	}
}
