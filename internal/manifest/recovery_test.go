package manifest

import (
	"fmt"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// dirSnapshot maps every file of dir to its contents.
func dirSnapshot(t *testing.T, fs vfs.FS, dir string) map[string]string {
	t.Helper()
	names, err := fs.List(dir)
	require.NoError(t, err)
	m := map[string]string{}
	for _, n := range names {
		m[n] = readFile(t, fs, dir+"/"+n)
	}
	return m
}

// TestLoadWritesNothing checks that Load only reads, and that Start then
// writes the loaded state plus its edit as a new MANIFEST that CURRENT
// names.
func TestLoadWritesNothing(t *testing.T) {
	mem := newMemDB(t)
	vs, err := Create(mem, dbDir)
	require.NoError(t, err)
	g := newEditGen(21)
	for range 5 {
		require.NoError(t, vs.LogAndApply(g.edit(vs)))
	}
	want := state(vs)
	require.NoError(t, vs.Close())
	before := dirSnapshot(t, mem, dbDir)

	vs, err = Load(mem, dbDir)
	require.NoError(t, err)
	require.Equal(t, want, state(vs))
	require.NoError(t, vs.TornTail())
	requireIs(t, vs.LogAndApply(g.edit(vs)), base.ErrInvalidArgument, "not started")
	require.Equal(t, before, dirSnapshot(t, mem, dbDir), "Load writes nothing")

	e := g.edit(vs)
	e.SetLogNumber(vs.NewFileNum())
	after := pendingState(t, vs, e)
	_, err = vs.Start(e)
	require.NoError(t, err)
	require.Equal(t, after, state(vs))
	require.Equal(t, fmt.Sprintf("MANIFEST-%s\n", vs.ManifestFileNum()), readFile(t, mem, CurrentFileName(dbDir)))
	_, err = vs.Start(&VersionEdit{})
	requireIs(t, err, base.ErrInvalidArgument, "a second Start")
	require.NoError(t, vs.LogAndApply(g.edit(vs)), "writable after Start")
	want = state(vs)
	require.NoError(t, vs.Close())

	vs, err = Load(mem, dbDir)
	require.NoError(t, err)
	require.Equal(t, want, state(vs))
	require.NoError(t, vs.Close(), "an unstarted VersionSet closes")
}

// TestNewStart creates a database through New and Start.
func TestNewStart(t *testing.T) {
	mem := newMemDB(t)
	vs := New(mem, dbDir)
	names, err := mem.List(dbDir)
	require.NoError(t, err)
	require.Empty(t, names, "New writes nothing")
	var e VersionEdit
	e.SetLogNumber(vs.NewFileNum())
	e.AddFile(0, file(vs.NewFileNum(), "a", "b", 1, 2))
	_, err = vs.Start(&e)
	require.NoError(t, err)
	want := state(vs)
	require.NoError(t, vs.Close())
	vs, err = Load(mem, dbDir)
	require.NoError(t, err)
	require.Equal(t, want, state(vs))
	require.NoError(t, vs.Close())
}

// TestTornTailReported checks that Load reports the incomplete record it
// dropped, and that damage to a complete last record is corruption, not a
// torn tail: a crash during an append cannot make it.
func TestTornTailReported(t *testing.T) {
	mem := newMemDB(t)
	vs, err := Create(mem, dbDir)
	require.NoError(t, err)
	g := newEditGen(22)
	var states []string
	for range 3 {
		require.NoError(t, vs.LogAndApply(g.edit(vs)))
		states = append(states, state(vs))
	}
	require.NoError(t, vs.Close())
	name := ManifestFileName(dbDir, 1)
	data := readFile(t, mem, name)
	ends := manifestRecords(t, data)
	lastStart := ends[len(ends)-2]

	for _, tc := range []struct {
		name     string
		contents string
		torn     bool   // else corruption
		want     string // the state recovered, with torn
		lost     bool   // TornTail reports a dropped tail
	}{
		{"intact", data, true, states[2], false},
		{"cut in the last record", data[:len(data)-3], true, states[1], true},
		{"cut in the last header", data[:lastStart+3], true, states[1], true},
		// Zeros where an edit's data was never written: it may be lost.
		{"zeros appended", data + string(make([]byte, 50)), true, states[2], true},
		{"checksum of the last record", flipAt(data, len(data)-2), false, "", false},
		{"type of the last record", setAt(data, int(lastStart)+6, 9), false, "", false},
		{"garbage appended", data + "\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8\xf7", false, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mem.CrashClone()
			writeFile(t, c, name, []byte(tc.contents))
			vs, err := Load(c, dbDir)
			if !tc.torn {
				require.True(t, base.IsCorruption(err), "%v", err)
				require.ErrorContains(t, err, "MANIFEST-000001")
				require.ErrorContains(t, err, "not by a torn write")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, state(vs))
			if !tc.lost {
				require.NoError(t, vs.TornTail())
			} else {
				require.Error(t, vs.TornTail())
				require.ErrorContains(t, vs.TornTail(), "MANIFEST-000001")
			}
			require.NoError(t, vs.Close())
		})
	}
}

func flipAt(s string, i int) string {
	b := []byte(s)
	b[i] ^= 0x20
	return string(b)
}

func setAt(s string, i int, c byte) string {
	b := []byte(s)
	b[i] = c
	return string(b)
}

// TestReplayLogNumber checks that the WAL an edit made obsolete stays
// needed until another record follows the edit's.
func TestReplayLogNumber(t *testing.T) {
	mem := newMemDB(t)
	vs, err := Create(mem, dbDir)
	require.NoError(t, err)
	require.Equal(t, FileNum(0), vs.ReplayLogNumber())
	first := vs.NewFileNum()
	var e VersionEdit
	e.SetLogNumber(first)
	require.NoError(t, vs.LogAndApply(&e))
	require.Equal(t, first, vs.LogNumber())
	require.Equal(t, FileNum(0), vs.ReplayLogNumber(), "the edit that set it could be torn away")

	second := vs.NewFileNum()
	e = VersionEdit{}
	e.SetLogNumber(second)
	require.NoError(t, vs.LogAndApply(&e))
	require.Equal(t, first, vs.ReplayLogNumber())
	require.NoError(t, vs.LogAndApply(&VersionEdit{}))
	require.Equal(t, second, vs.ReplayLogNumber(), "an edit without a log number follows")
	require.NoError(t, vs.Close())

	vs, err = Recover(mem, dbDir)
	require.NoError(t, err)
	require.Equal(t, second, vs.ReplayLogNumber(), "a new MANIFEST starts with a snapshot")
	require.NoError(t, vs.Close())
}

// TestIsEmptyManifest tells what an interrupted creation leaves from a
// MANIFEST that holds data.
func TestIsEmptyManifest(t *testing.T) {
	mem := newMemDB(t)
	vs, err := Create(mem, dbDir)
	require.NoError(t, err)
	require.NoError(t, vs.Close())
	name := ManifestFileName(dbDir, 1)
	data := readFile(t, mem, name)
	require.True(t, IsEmptyManifest(mem, dbDir, 1), "a new database's MANIFEST")
	for cut := range len(data) {
		writeFile(t, mem, name, []byte(data[:cut]))
		require.True(t, IsEmptyManifest(mem, dbDir, 1), "cut %d", cut)
	}
	require.False(t, IsEmptyManifest(mem, dbDir, 7), "missing")

	writeFile(t, mem, name, []byte(data))
	vs, err = Recover(mem, dbDir)
	require.NoError(t, err)
	var e VersionEdit
	e.AddFile(0, file(vs.NewFileNum(), "a", "b", 1, 2))
	require.NoError(t, vs.LogAndApply(&e))
	require.False(t, IsEmptyManifest(mem, dbDir, vs.ManifestFileNum()), "names a table")
	e = VersionEdit{}
	e.SetLastSeqNum(9)
	require.NoError(t, vs.Close())

	vs = New(mem, "other")
	require.NoError(t, mem.MkdirAll("other", 0o755))
	e = VersionEdit{}
	e.SetLastSeqNum(9)
	_, err = vs.Start(&e)
	require.NoError(t, err)
	require.False(t, IsEmptyManifest(mem, "other", vs.ManifestFileNum()), "records writes")
	require.NoError(t, vs.Close())

	writeFile(t, mem, name, []byte("\x00\x01garbage that is no log"))
	require.False(t, IsEmptyManifest(mem, dbDir, 1), "undecodable")
}

// TestLoadAccounting checks what Load remembers of the MANIFEST's history:
// the tables its edits deleted (moves are not deletions) and the last next
// file number recorded.
func TestLoadAccounting(t *testing.T) {
	mem := newMemDB(t)
	vs, err := Create(mem, dbDir)
	require.NoError(t, err)
	var e VersionEdit
	e.AddFile(0, file(5, "a", "b", 1, 2))
	e.AddFile(0, file(6, "c", "d", 3, 4))
	e.AddFile(0, file(7, "e", "f", 5, 6))
	require.NoError(t, vs.LogAndApply(&e))
	e = VersionEdit{}
	e.DeleteFile(0, 5)                    // compacted away
	e.DeleteFile(0, 6)                    // moved
	e.AddFile(1, file(6, "c", "d", 3, 4)) // ... here
	e.AddFile(1, file(8, "a", "b", 1, 2))
	require.NoError(t, vs.LogAndApply(&e))
	next := vs.NextFileNum()
	require.NoError(t, vs.Close())

	vs, err = Load(mem, dbDir)
	require.NoError(t, err)
	require.True(t, vs.DeletedByEdit(5))
	for _, n := range []FileNum{6, 7, 8, 9} {
		require.False(t, vs.DeletedByEdit(n), "%s", n)
	}
	require.Equal(t, next, vs.RecordedNextFileNum())
	require.NoError(t, vs.Close())
}
