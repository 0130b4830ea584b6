package manifest

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/internal/wal"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

const dbDir = "db"

// newMemDB returns a MemFS with a durable, empty database directory.
func newMemDB(t testing.TB) *vfs.MemFS {
	t.Helper()
	mem := vfs.NewMem()
	require.NoError(t, mem.MkdirAll(dbDir, 0o755))
	syncDir(t, mem, "/")
	return mem
}

func syncDir(t testing.TB, fs vfs.FS, dir string) {
	t.Helper()
	d, err := fs.OpenDir(dir)
	require.NoError(t, err)
	require.NoError(t, d.Sync())
	require.NoError(t, d.Close())
}

// state describes what a VersionSet recovers: its counters and files.
func state(vs *VersionSet) string {
	v := vs.Current()
	defer v.Unref()
	return fmt.Sprintf("log=%s last=%d\n%s", vs.LogNumber(), vs.LastSeqNum(), v.String())
}

// editGen makes random, valid edits against a VersionSet's current version:
// new files with fresh numbers in random levels (every file's key range is
// its own, so no two files ever overlap), deletions, and moves.
type editGen struct {
	rng *rand.Rand
	seq base.SeqNum
}

func newEditGen(seed uint64) *editGen {
	return &editGen{rng: rand.New(rand.NewPCG(seed, 2))}
}

func (g *editGen) edit(vs *VersionSet) *VersionEdit {
	v := vs.Current()
	defer v.Unref()
	e := &VersionEdit{}
	type placed struct {
		level int
		f     *FileMetadata
	}
	var all []placed
	for level, files := range v.Levels {
		for _, f := range files {
			all = append(all, placed{level, f})
		}
	}
	for range g.rng.IntN(3) {
		if len(all) == 0 {
			break
		}
		i := g.rng.IntN(len(all))
		p := all[i]
		all = slices.Delete(all, i, i+1)
		e.DeleteFile(p.level, p.f.FileNum)
		if g.rng.IntN(3) == 0 { // a trivial move
			e.AddFile((p.level+1+g.rng.IntN(NumLevels-1))%NumLevels, p.f)
		}
	}
	for range 1 + g.rng.IntN(2) {
		n := vs.NewFileNum()
		lo := g.seq + 1
		g.seq += 1 + base.SeqNum(g.rng.IntN(5))
		e.AddFile(g.rng.IntN(NumLevels), file(n, fmt.Sprintf("k%06d-a", n), fmt.Sprintf("k%06d-b", n), lo, g.seq))
	}
	if g.rng.IntN(3) == 0 {
		e.SetLogNumber(vs.NewFileNum())
	}
	e.SetLastSeqNum(g.seq)
	return e
}

// emptyState is the state of a new database.
const emptyState = "log=000000 last=0\n"

// requireIs checks that err is target both for cockroachdb/errors' Is and
// for the standard library's (which require.ErrorIs uses): users test
// shale's errors with either.
func requireIs(t testing.TB, err, target error, format string, args ...any) {
	t.Helper()
	require.True(t, errors.Is(err, target), "%v is not %v: %s", err, target, fmt.Sprintf(format, args...))
	require.ErrorIs(t, err, target, append([]any{format}, args...)...)
}

// pendingState returns what state(vs) will be once LogAndApply(e) succeeds.
func pendingState(t testing.TB, vs *VersionSet, e *VersionEdit) string {
	v := vs.Current()
	defer v.Unref()
	b := newVersionBuilder(v)
	require.NoError(t, b.apply(e))
	nv, _ := b.build()
	log, last := vs.LogNumber(), vs.LastSeqNum()
	if e.HasLogNumber {
		log = e.LogNumber
	}
	if e.HasLastSeqNum {
		last = max(last, e.LastSeqNum)
	}
	return fmt.Sprintf("log=%s last=%d\n%s", log, last, nv.String())
}

func TestCreateApplyRecover(t *testing.T) {
	mem := newMemDB(t)
	vs, err := Create(mem, dbDir)
	require.NoError(t, err)
	require.Equal(t, FileNum(1), vs.ManifestFileNum())
	require.Equal(t, "MANIFEST-000001\n", readFile(t, mem, CurrentFileName(dbDir)))
	require.Equal(t, FileNum(2), vs.NextFileNum())
	require.Equal(t, emptyState, state(vs))

	_, err = Create(mem, dbDir)
	requireIs(t, err, os.ErrExist, "")

	g := newEditGen(1)
	var want string
	for range 20 {
		e := g.edit(vs)
		require.NoError(t, vs.LogAndApply(e))
		require.True(t, e.HasNextFileNumber && e.HasLastSeqNum && e.HasLogNumber, "LogAndApply fills the counters")
		require.Equal(t, vs.NextFileNum(), e.NextFileNumber)
		want = state(vs)
		v := vs.Current()
		require.NoError(t, v.CheckConsistency())
		v.Unref()
	}
	next := vs.NextFileNum()
	require.NoError(t, vs.Close())
	require.NoError(t, vs.Close(), "a second Close does nothing")
	err = vs.LogAndApply(&VersionEdit{})
	requireIs(t, err, base.ErrClosed, "")

	for round := range 3 {
		vs, err = Recover(mem, dbDir)
		require.NoError(t, err)
		require.Equal(t, want, state(vs), "round %d", round)
		require.Greater(t, vs.NextFileNum(), next, "the new MANIFEST took a number")
		require.Equal(t, fmt.Sprintf("MANIFEST-%s\n", vs.ManifestFileNum()), readFile(t, mem, CurrentFileName(dbDir)))
		next = vs.NextFileNum()
		require.NoError(t, vs.Close())
	}
	// Recover deletes nothing: the old MANIFESTs are the engine's to delete.
	names, err := mem.List(dbDir)
	require.NoError(t, err)
	require.Equal(t, 4, countKind(names, FileKindManifest))
	require.Zero(t, countKind(names, FileKindTemp))
}

func countKind(names []string, kind FileKind) int {
	n := 0
	for _, name := range names {
		if k, _, ok := ParseFileName(name); ok && k == kind {
			n++
		}
	}
	return n
}

func readFile(t testing.TB, fs vfs.FS, name string) string {
	t.Helper()
	f, err := fs.Open(name)
	require.NoError(t, err)
	defer f.Close()
	st, err := f.Stat()
	require.NoError(t, err)
	buf := make([]byte, st.Size())
	_, err = f.ReadAt(buf, 0)
	require.NoError(t, err)
	return string(buf)
}

func writeFile(t testing.TB, fs vfs.FS, name string, data []byte) {
	t.Helper()
	f, err := fs.Create(name)
	require.NoError(t, err)
	_, err = f.Write(data)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
}

func TestFileNumCounters(t *testing.T) {
	mem := newMemDB(t)
	// A file a crash left behind, unknown to the MANIFEST.
	writeFile(t, mem, TableFileName(dbDir, 100), nil)
	writeFile(t, mem, dbDir+"/notes.txt", nil)
	vs, err := Create(mem, dbDir)
	require.NoError(t, err)
	require.Equal(t, FileNum(2), vs.NewFileNum())
	require.Equal(t, FileNum(3), vs.NewFileNum())
	vs.MarkFileNumUsed(2) // below next: no change
	require.Equal(t, FileNum(4), vs.NextFileNum())
	vs.MarkFileNumUsed(10)
	require.Equal(t, FileNum(11), vs.NewFileNum())

	vs.SetLastSeqNum(50)
	vs.SetLastSeqNum(40) // never lowers
	require.Equal(t, base.SeqNum(50), vs.LastSeqNum())

	// LogAndApply raises the next file number past files it adds and keeps
	// the larger last seqnum.
	e := &VersionEdit{}
	e.AddFile(1, file(30, "a", "b", 1, 2))
	e.SetLastSeqNum(7)
	require.NoError(t, vs.LogAndApply(e))
	require.Equal(t, FileNum(31), e.NextFileNumber)
	require.Equal(t, base.SeqNum(50), e.LastSeqNum)
	e = &VersionEdit{}
	e.SetLastSeqNum(70)
	e.SetLogNumber(40)
	require.NoError(t, vs.LogAndApply(e))
	require.Equal(t, base.SeqNum(70), vs.LastSeqNum())
	require.Equal(t, FileNum(40), vs.LogNumber())
	require.Equal(t, FileNum(41), e.NextFileNumber)
	require.NoError(t, vs.Close())

	vs, err = Recover(mem, dbDir)
	require.NoError(t, err)
	require.Equal(t, base.SeqNum(70), vs.LastSeqNum())
	require.Equal(t, FileNum(40), vs.LogNumber())
	// 100.sst was in the directory: its number is never handed out.
	require.Greater(t, vs.NewFileNum(), FileNum(100))
	require.NoError(t, vs.Close())
}

func TestLogAndApplyRejectsBadEdits(t *testing.T) {
	mem := newMemDB(t)
	vs, err := Create(mem, dbDir)
	require.NoError(t, err)
	e := &VersionEdit{}
	e.AddFile(1, file(2, "c", "d", 1, 1))
	e.SetLogNumber(5)
	require.NoError(t, vs.LogAndApply(e))
	before := state(vs)
	manifestSize := len(readFile(t, mem, ManifestFileName(dbDir, 1)))

	for _, tc := range []struct {
		name string
		edit func() *VersionEdit
		want string
	}{
		{"delete missing", func() *VersionEdit {
			e := &VersionEdit{}
			e.DeleteFile(1, 9)
			return e
		}, "does not hold it"},
		{"delete from wrong level", func() *VersionEdit {
			e := &VersionEdit{}
			e.DeleteFile(2, 2)
			return e
		}, "does not hold it"},
		{"add existing", func() *VersionEdit {
			e := &VersionEdit{}
			e.AddFile(1, file(2, "c", "d", 1, 1))
			return e
		}, "already holds it"},
		{"add to another level", func() *VersionEdit {
			e := &VersionEdit{}
			e.AddFile(3, file(2, "c", "d", 1, 1))
			return e
		}, "file 000002 is in L3 and in L1"},
		{"overlap", func() *VersionEdit {
			e := &VersionEdit{}
			e.AddFile(1, file(3, "a", "c", 1, 1))
			return e
		}, "overlap"},
		{"level out of range", func() *VersionEdit {
			e := &VersionEdit{}
			e.AddFile(NumLevels, file(3, "a", "c", 1, 1))
			return e
		}, "out of range"},
		{"nil file", func() *VersionEdit {
			e := &VersionEdit{}
			e.AddFile(0, nil)
			return e
		}, "nil file"},
		{"log number backwards", func() *VersionEdit {
			e := &VersionEdit{}
			e.SetLogNumber(4)
			return e
		}, "below the current"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := vs.LogAndApply(tc.edit())
			requireIs(t, err, base.ErrInvalidArgument, "")
			require.ErrorContains(t, err, tc.want)
			require.Equal(t, before, state(vs))
			require.Equal(t, manifestSize, len(readFile(t, mem, ManifestFileName(dbDir, 1))), "nothing written")
		})
	}
	// A rejected edit does not fail the VersionSet.
	e = &VersionEdit{}
	e.DeleteFile(1, 2)
	require.NoError(t, vs.LogAndApply(e))
	require.NoError(t, vs.Close())
}

// TestManifestRotation checks that LogAndApply switches to a new MANIFEST
// past the size limit, not on every edit, and that the result recovers.
func TestManifestRotation(t *testing.T) {
	mem := newMemDB(t)
	vs, err := Create(mem, dbDir)
	require.NoError(t, err)
	vs.SetMaxManifestFileSize(1)
	g := newEditGen(7)
	nums := map[FileNum]bool{}
	for range 200 {
		require.NoError(t, vs.LogAndApply(g.edit(vs)))
		nums[vs.ManifestFileNum()] = true
		require.Equal(t, fmt.Sprintf("MANIFEST-%s\n", vs.ManifestFileNum()), readFile(t, mem, CurrentFileName(dbDir)))
	}
	// The MANIFEST doubles past its snapshot before it rotates; with ~10
	// live files the snapshot is a few hundred bytes and an edit ~100.
	require.Greater(t, len(nums), 10)
	require.Less(t, len(nums), 100)
	want := state(vs)
	require.NoError(t, vs.Close())
	vs, err = Recover(mem, dbDir)
	require.NoError(t, err)
	require.Equal(t, want, state(vs))
	require.NoError(t, vs.Close())
}

// manifestRecords returns the end offsets of the records of a MANIFEST.
func manifestRecords(t *testing.T, data string) []int64 {
	r := wal.NewReader(strings.NewReader(data), wal.AbsoluteConsistency)
	var ends []int64
	for {
		_, err := r.Next()
		if err == io.EOF {
			return ends
		}
		require.NoError(t, err)
		ends = append(ends, r.Offset())
	}
}

// TestRecoverTornTail cuts the MANIFEST at every offset: whatever prefix of
// records survives is recovered, as long as the snapshot does.
func TestRecoverTornTail(t *testing.T) {
	mem := newMemDB(t)
	vs, err := Create(mem, dbDir)
	require.NoError(t, err)
	states := []string{state(vs)}
	g := newEditGen(3)
	for range 5 {
		require.NoError(t, vs.LogAndApply(g.edit(vs)))
		states = append(states, state(vs))
	}
	require.NoError(t, vs.Close())
	name := ManifestFileName(dbDir, 1)
	data := readFile(t, mem, name)
	ends := manifestRecords(t, data)
	require.Len(t, ends, len(states))

	for cut := 0; cut <= len(data); cut++ {
		c := mem.CrashClone()
		writeFile(t, c, name, []byte(data[:cut]))
		complete := 0
		for complete < len(ends) && ends[complete] <= int64(cut) {
			complete++
		}
		vs, err := Recover(c, dbDir)
		if complete == 0 {
			requireIs(t, err, base.ErrCorruption, "cut %d", cut)
			require.ErrorContains(t, err, "MANIFEST-000001")
			continue
		}
		require.NoError(t, err, "cut %d", cut)
		require.Equal(t, states[complete-1], state(vs), "cut %d", cut)
		// The new MANIFEST accepts edits and recovers again.
		require.NoError(t, vs.LogAndApply(g.edit(vs)))
		want := state(vs)
		require.NoError(t, vs.Close())
		vs, err = Recover(c, dbDir)
		require.NoError(t, err)
		require.Equal(t, want, state(vs))
		require.NoError(t, vs.Close())
	}

	// A zeroed tail (size made durable, data not) is a torn tail too.
	c := mem.CrashClone()
	writeFile(t, c, name, append([]byte(data), make([]byte, 100)...))
	vs, err = Recover(c, dbDir)
	require.NoError(t, err)
	require.Equal(t, states[len(states)-1], state(vs))
	require.NoError(t, vs.Close())
}

// TestRecoverCorruption damages the MANIFEST and CURRENT in ways that are
// not a torn tail: every one is an error marked corruption that names the
// file.
func TestRecoverCorruption(t *testing.T) {
	mem := newMemDB(t)
	vs, err := Create(mem, dbDir)
	require.NoError(t, err)
	g := newEditGen(4)
	for range 5 {
		require.NoError(t, vs.LogAndApply(g.edit(vs)))
	}
	require.NoError(t, vs.Close())
	name := ManifestFileName(dbDir, 1)
	data := readFile(t, mem, name)
	ends := manifestRecords(t, data)

	// records frames payloads as a MANIFEST; manifestOf frames edits.
	records := func(payloads ...[]byte) []byte {
		var b strings.Builder
		w := wal.NewWriter(&b)
		for _, p := range payloads {
			_, err := w.WriteRecord(p)
			require.NoError(t, err)
		}
		require.NoError(t, w.Close())
		return []byte(b.String())
	}
	manifestOf := func(edits ...*VersionEdit) []byte {
		var payloads [][]byte
		for _, e := range edits {
			payloads = append(payloads, e.Encode(nil))
		}
		return records(payloads...)
	}
	snapshot := &VersionEdit{}
	snapshot.SetLogNumber(0)
	snapshot.SetNextFileNumber(10)
	snapshot.SetLastSeqNum(5)

	for _, tc := range []struct {
		name     string
		file     string
		contents []byte
		want     string
	}{
		{"flipped byte mid-log", name, func() []byte {
			b := []byte(data)
			b[ends[1]+10] ^= 0x40 // inside the third record; two more follow
			return b
		}(), "MANIFEST-000001"},
		{"undecodable edit", name, records(snapshot.Encode(nil), []byte{0x7f, 0x01}, nil), "unknown tag 127"},
		{"missing counters", name, manifestOf(&VersionEdit{}), "lacks a log number"},
		{"edit deletes a missing file", name, manifestOf(snapshot, func() *VersionEdit {
			e := &VersionEdit{}
			e.DeleteFile(3, 4)
			return e
		}()), "does not hold it"},
		{"overlapping files", name, manifestOf(snapshot, func() *VersionEdit {
			e := &VersionEdit{}
			e.AddFile(2, file(4, "a", "m", 1, 1))
			e.AddFile(2, file(5, "c", "z", 1, 1))
			return e
		}()), "L2 files overlap"},
		{"CURRENT without newline", CurrentFileName(dbDir), []byte("MANIFEST-000001"), "not a MANIFEST name"},
		{"CURRENT garbage", CurrentFileName(dbDir), []byte("hello\n"), "not a MANIFEST name"},
		{"CURRENT empty", CurrentFileName(dbDir), nil, "not a MANIFEST name"},
		{"CURRENT too long", CurrentFileName(dbDir), []byte(strings.Repeat("x", maxCurrentSize+10)), "not a MANIFEST name"},
		{"CURRENT names a missing MANIFEST", CurrentFileName(dbDir), []byte("MANIFEST-000099\n"), "MANIFEST-000099, which is missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mem.CrashClone()
			writeFile(t, c, tc.file, tc.contents)
			_, err := Recover(c, dbDir)
			require.Error(t, err)
			require.True(t, base.IsCorruption(err), "%+v", err)
			require.ErrorContains(t, err, tc.want)
			if tc.file == name {
				require.ErrorContains(t, err, "MANIFEST-000001")
			}
		})
	}

	t.Run("no CURRENT", func(t *testing.T) {
		_, err := Recover(vfs.NewMem(), dbDir)
		requireIs(t, err, os.ErrNotExist, "")
		require.False(t, base.IsCorruption(err))
	})
}

// crashPoint is a crash clone of the filesystem taken just before an
// operation, with the number of LogAndApply calls that had returned
// successfully by then (-1: Create had not returned).
type crashPoint struct {
	fs   *vfs.MemFS
	done int
}

// TestCrashAtEveryOperation crash-clones the filesystem before every
// operation of a workload (Create, edits with MANIFEST rotations, Close,
// Recover, more edits) and recovers each clone: it must recover the state
// of the last LogAndApply that returned or of the one in progress, and
// CURRENT must always name a complete MANIFEST.
func TestCrashAtEveryOperation(t *testing.T) {
	mem := newMemDB(t)
	var points []crashPoint
	done := -1
	fs := errorfs.WrapObserver(mem, func(errorfs.Op) {
		points = append(points, crashPoint{fs: mem.CrashClone(), done: done})
	})
	vs, err := Create(fs, dbDir)
	require.NoError(t, err)
	done = 0
	states := []string{state(vs)}
	vs.SetMaxManifestFileSize(1)
	g := newEditGen(5)
	apply := func(n int) {
		for range n {
			require.NoError(t, vs.LogAndApply(g.edit(vs)))
			states = append(states, state(vs))
			done++
		}
	}
	apply(15)
	require.NoError(t, vs.Close())
	vs, err = Recover(fs, dbDir)
	require.NoError(t, err)
	require.Equal(t, states[done], state(vs))
	apply(15)
	require.NoError(t, vs.Close())
	points = append(points, crashPoint{fs: mem.CrashClone(), done: done})
	t.Logf("%d crash points, %d states", len(points), len(states))

	rotations := 0
	for i, p := range points {
		vs, err := Recover(p.fs, dbDir)
		if p.done < 0 {
			if errors.Is(err, os.ErrNotExist) {
				continue // Create had not published CURRENT
			}
			require.NoError(t, err, "point %d", i)
			require.Equal(t, emptyState, state(vs), "point %d", i)
		} else {
			require.NoError(t, err, "point %d (after %d edits)", i, p.done)
			got := state(vs)
			ok := got == states[p.done] || (p.done+1 < len(states) && got == states[p.done+1])
			require.True(t, ok, "point %d (after %d edits): recovered\n%s\nwant state %d or the next:\n%s",
				i, p.done, got, p.done, states[p.done])
		}
		if vs.ManifestFileNum() > 2 {
			rotations++
		}
		require.NoError(t, vs.Close())
	}
	require.Positive(t, rotations)
}

// TestErrorInjection fails each operation of a workload in turn: the
// failure must surface as the injected error, and the directory must then
// recover, with and without a crash, to the last state that LogAndApply
// reported or to the one it was writing.
func TestErrorInjection(t *testing.T) {
	workload := func(fs vfs.FS, states *[]string, done *int) error {
		vs, err := Create(fs, dbDir)
		if err != nil {
			return err
		}
		vs.SetMaxManifestFileSize(1)
		*done = 0
		*states = append(*states, state(vs))
		g := newEditGen(9)
		apply := func(n int) error {
			for range n {
				e := g.edit(vs)
				// states[done+1] is the state being written.
				*states = append((*states)[:*done+1], pendingState(t, vs, e))
				if err := vs.LogAndApply(e); err != nil {
					return err
				}
				*done++
				require.Equal(t, (*states)[*done], state(vs))
			}
			return nil
		}
		if err := apply(8); err != nil {
			return err
		}
		if err := vs.Close(); err != nil {
			return err
		}
		if vs, err = Recover(fs, dbDir); err != nil {
			return err
		}
		if err := apply(8); err != nil {
			return err
		}
		return vs.Close()
	}

	var i int64
	for ; ; i++ {
		mem := newMemDB(t)
		fs := errorfs.Wrap(mem, errorfs.OnIndex(i))
		var states []string
		done := -1
		err := workload(fs, &states, &done)
		if fs.Injected() == 0 {
			require.NoError(t, err)
			break
		}
		requireIs(t, err, errorfs.ErrInjected, "op %d: the injected error must surface", i)
		for _, c := range []struct {
			name string
			fs   vfs.FS
		}{{"restart", mem}, {"crash", mem.CrashClone()}} {
			vs, err := Recover(c.fs, dbDir)
			if done < 0 {
				if errors.Is(err, os.ErrNotExist) {
					continue
				}
				require.NoError(t, err, "op %d, %s", i, c.name)
				require.Equal(t, emptyState, state(vs))
				require.NoError(t, vs.Close())
				continue
			}
			require.NoError(t, err, "op %d, %s", i, c.name)
			got := state(vs)
			ok := got == states[done] || (done+1 < len(states) && got == states[done+1])
			require.True(t, ok, "op %d, %s: recovered\n%s\nwant\n%s", i, c.name, got, states[done])
			require.NoError(t, vs.Close())
		}
	}
	t.Logf("workload has %d operations", i)
	require.Greater(t, i, int64(50))
}

// TestFailedWriteIsSticky fails one MANIFEST sync: that LogAndApply and
// every later one fail, the version is not installed, and a reopen
// recovers.
func TestFailedWriteIsSticky(t *testing.T) {
	mem := newMemDB(t)
	var fail atomic.Bool
	fs := errorfs.Wrap(mem, errorfs.PredicateFunc("manifest sync", func(op errorfs.Op) bool {
		return fail.Load() && op.Kind == errorfs.OpFileSync && strings.Contains(op.Path, "MANIFEST")
	}))
	vs, err := Create(fs, dbDir)
	require.NoError(t, err)
	g := newEditGen(11)
	require.NoError(t, vs.LogAndApply(g.edit(vs)))
	before := state(vs)

	fail.Store(true)
	failed := g.edit(vs)
	err = vs.LogAndApply(failed)
	requireIs(t, err, errorfs.ErrInjected, "")
	require.Equal(t, before, state(vs), "not installed")
	fail.Store(false)
	err = vs.LogAndApply(&VersionEdit{})
	requireIs(t, err, errorfs.ErrInjected, "sticky")
	require.ErrorContains(t, err, "earlier MANIFEST write failed")
	require.Equal(t, before, state(vs))
	require.NoError(t, vs.Close())

	// The edit was written but not synced: a restart sees it, a crash may
	// not.
	vs, err = Recover(mem.CrashClone(), dbDir)
	require.NoError(t, err)
	require.Equal(t, before, state(vs))
	require.NoError(t, vs.Close())
	vs, err = Recover(mem, dbDir)
	require.NoError(t, err)
	v := vs.Current()
	for _, nf := range failed.NewFiles {
		require.Contains(t, fileNums(v.Levels[nf.Level]), nf.Meta.FileNum)
	}
	v.Unref()
	require.NoError(t, vs.Close())
}

// TestVersionRefsConcurrent runs readers that take and hold versions
// against a writer applying edits, under -race: a held version's files are
// always in LiveFileNums, and once every reader is done only the current
// version is live.
func TestVersionRefsConcurrent(t *testing.T) {
	mem := newMemDB(t)
	vs, err := Create(mem, dbDir)
	require.NoError(t, err)
	g := newEditGen(13)
	const edits = 200
	var wg sync.WaitGroup
	var stop atomic.Bool
	errs := make(chan error, 8)
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 3))
			var held []*Version
			for !stop.Load() {
				v := vs.Current()
				held = append(held, v)
				if rng.IntN(2) == 0 || len(held) > 5 {
					i := rng.IntN(len(held))
					held[i].Unref()
					held = slices.Delete(held, i, i+1)
				}
				live := vs.LiveFileNums()
				for _, h := range held {
					for _, files := range h.Levels {
						for _, f := range files {
							if _, ok := live[f.FileNum]; !ok {
								errs <- errors.Newf("held version's file %s not live", f.FileNum)
								return
							}
						}
					}
					if err := h.CheckConsistency(); err != nil {
						errs <- err
						return
					}
				}
			}
			for _, h := range held {
				h.Unref()
			}
		}()
	}
	for range edits {
		require.NoError(t, vs.LogAndApply(g.edit(vs)))
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	require.Equal(t, 1, vs.NumLiveVersions())
	v := vs.Current()
	want := map[FileNum]struct{}{}
	for _, files := range v.Levels {
		for _, f := range files {
			want[f.FileNum] = struct{}{}
		}
	}
	require.Equal(t, int32(2), v.Refs(), "the set's and ours")
	v.Unref()
	require.Equal(t, want, vs.LiveFileNums())
	require.NoError(t, vs.Close())
}

// TestLiveFileNums checks that a file deleted by an edit stays live while
// an old version holding it is referenced.
func TestLiveFileNums(t *testing.T) {
	mem := newMemDB(t)
	vs, err := Create(mem, dbDir)
	require.NoError(t, err)
	e := &VersionEdit{}
	e.AddFile(0, file(2, "a", "b", 1, 2))
	e.AddFile(1, file(3, "c", "d", 1, 2))
	require.NoError(t, vs.LogAndApply(e))
	old := vs.Current()

	e = &VersionEdit{}
	e.DeleteFile(0, 2)
	e.AddFile(1, file(4, "a", "b", 1, 2))
	require.NoError(t, vs.LogAndApply(e))
	require.Equal(t, map[FileNum]struct{}{2: {}, 3: {}, 4: {}}, vs.LiveFileNums())
	require.Equal(t, 2, vs.NumLiveVersions())
	old.Unref()
	require.Equal(t, map[FileNum]struct{}{3: {}, 4: {}}, vs.LiveFileNums())
	require.Equal(t, 1, vs.NumLiveVersions())

	// A trivial move keeps the same FileMetadata.
	cur := vs.Current()
	moved := cur.Levels[1][0]
	cur.Unref()
	e = &VersionEdit{}
	e.DeleteFile(1, moved.FileNum)
	e.AddFile(2, moved)
	require.NoError(t, vs.LogAndApply(e))
	cur = vs.Current()
	require.Same(t, moved, cur.Levels[2][0])
	cur.Unref()
	require.NoError(t, vs.Close())
}

func BenchmarkLogAndApply(b *testing.B) {
	for _, files := range []int{10, 1000} {
		b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
			mem := newMemDB(b)
			vs, err := Create(mem, dbDir)
			require.NoError(b, err)
			e := &VersionEdit{}
			for range files {
				n := vs.NewFileNum()
				e.AddFile(6, file(n, fmt.Sprintf("k%06d-a", n), fmt.Sprintf("k%06d-b", n), 1, 1))
			}
			require.NoError(b, vs.LogAndApply(e))
			seq := base.SeqNum(1)
			b.ReportAllocs()
			for b.Loop() {
				// A flush: one L0 file in, and the previous one out.
				n := vs.NewFileNum()
				e := &VersionEdit{}
				e.AddFile(0, file(n, "a", "b", seq+1, seq+2))
				v := vs.Current()
				for _, f := range v.Levels[0] {
					e.DeleteFile(0, f.FileNum)
				}
				v.Unref()
				seq += 2
				if err := vs.LogAndApply(e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestCurrentAllocs: every read takes and drops a version reference, so it
// must not allocate.
func TestCurrentAllocs(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	vs, err := Create(newMemDB(t), dbDir)
	require.NoError(t, err)
	require.NoError(t, vs.LogAndApply(newEditGen(1).edit(vs)))
	require.Zero(t, testing.AllocsPerRun(100, func() {
		v := vs.Current()
		v.Unref()
	}))
	require.NoError(t, vs.Close())
}

func BenchmarkCurrent(b *testing.B) {
	vs, err := Create(newMemDB(b), dbDir)
	require.NoError(b, err)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			v := vs.Current()
			v.Unref()
		}
	})
	require.NoError(b, vs.Close())
}

func TestRecoverReadOnly(t *testing.T) {
	mem := newMemDB(t)
	vs, err := Create(mem, dbDir)
	require.NoError(t, err)
	g := newEditGen(7)
	for range 10 {
		require.NoError(t, vs.LogAndApply(g.edit(vs)))
	}
	want := state(vs)
	require.NoError(t, vs.Close())
	before, err := mem.List(dbDir)
	require.NoError(t, err)
	current := readFile(t, mem, CurrentFileName(dbDir))

	ro, err := RecoverReadOnly(mem, dbDir)
	require.NoError(t, err)
	require.Equal(t, want, state(ro))
	err = ro.LogAndApply(g.edit(ro))
	requireIs(t, err, base.ErrInvalidArgument, "read-only")
	require.NoError(t, ro.Close())

	after, err := mem.List(dbDir)
	require.NoError(t, err)
	require.Equal(t, before, after, "a read-only recovery writes no file")
	require.Equal(t, current, readFile(t, mem, CurrentFileName(dbDir)))
}
