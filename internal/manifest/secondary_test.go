package manifest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// TestSecondaryFollowsRotations follows a primary VersionSet that rotates
// its MANIFEST every few edits and whose old MANIFESTs are deleted at once,
// as the engine does: after each CatchUp the secondary's state is the
// primary's.
func TestSecondaryFollowsRotations(t *testing.T) {
	mem := newMemDB(t)
	vs, err := Create(mem, dbDir)
	require.NoError(t, err)
	defer vs.Close()
	vs.SetMaxManifestFileSize(1)
	sec, err := LoadSecondary(mem, dbDir)
	require.NoError(t, err)
	defer sec.Close()
	require.Equal(t, state(vs), state(sec))
	require.True(t, sec.IsSecondary())
	requireIs(t, sec.LogAndApply(&VersionEdit{}), base.ErrInvalidArgument, "LogAndApply on a secondary")

	g := newEditGen(11)
	rotations := 0
	for i := range 100 {
		before := vs.ManifestFileNum()
		require.NoError(t, vs.LogAndApply(g.edit(vs)))
		if vs.ManifestFileNum() != before {
			rotations++
			require.NoError(t, mem.Remove(ManifestFileName(dbDir, before)))
		}
		if i%3 == 0 {
			continue // several edits, maybe a rotation, between catch-ups
		}
		changed, err := sec.CatchUp()
		require.NoError(t, err, "edit %d", i)
		require.True(t, changed)
		require.Equal(t, state(vs), state(sec), "edit %d", i)
		changed, err = sec.CatchUp()
		require.NoError(t, err)
		require.False(t, changed, "nothing new")
	}
	require.Greater(t, rotations, 3)
}

// TestSecondaryTornTail gives a secondary every prefix of a MANIFEST the
// primary is appending to: it sees the edits that are complete, no error,
// and once the rest is written a CatchUp sees all of them.
func TestSecondaryTornTail(t *testing.T) {
	mem := newMemDB(t)
	vs, err := Create(mem, dbDir)
	require.NoError(t, err)
	states := []string{state(vs)}
	g := newEditGen(5)
	for range 5 {
		require.NoError(t, vs.LogAndApply(g.edit(vs)))
		states = append(states, state(vs))
	}
	require.NoError(t, vs.Close())
	data := readFile(t, mem, ManifestFileName(dbDir, 1))
	ends := manifestRecords(t, data)

	dir := t.TempDir()
	name := ManifestFileName(dir, 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "CURRENT"), []byte("MANIFEST-000001\n"), 0o644))
	for cut := int(ends[0]); cut <= len(data); cut += 7 {
		require.NoError(t, os.WriteFile(name, []byte(data[:cut]), 0o644))
		sec, err := LoadSecondary(vfs.Default, dir)
		require.NoError(t, err, "cut %d", cut)
		complete := 0
		for complete < len(ends) && ends[complete] <= int64(cut) {
			complete++
		}
		require.Equal(t, states[complete-1], state(sec), "cut %d", cut)
		// The primary finishes its append, in the same file.
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
		require.NoError(t, err)
		_, err = f.WriteString(data[cut:])
		require.NoError(t, err)
		require.NoError(t, f.Close())
		_, err = sec.CatchUp()
		require.NoError(t, err, "cut %d", cut)
		require.Equal(t, states[len(states)-1], state(sec), "cut %d", cut)
		require.NoError(t, sec.Close())
	}

	// Damage with an intact record after it is corruption, not a tail.
	bad := []byte(data)
	bad[ends[1]+10] ^= 0xff
	require.NoError(t, os.WriteFile(name, bad, 0o644))
	_, err = LoadSecondary(vfs.Default, dir)
	requireIs(t, err, base.ErrCorruption, "damaged middle")
}
