package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// The secondary tests run the primary and the secondary in one process on
// one directory of the real filesystem: the secondary takes no LOCK, and
// what the tests are about (a file deleted while open stays readable) is
// the operating system's.

// openPrimarySecondary opens a primary in a new directory and a secondary
// of it, closed at the end of the test.
func openPrimarySecondary(t *testing.T, secOpts *Options) (dir string, primary, sec *database) {
	t.Helper()
	dir = t.TempDir()
	po := smallOptions(vfs.Default)
	po.Level0FileNumCompactionTrigger = 8 // compactions only when a test asks
	primary, err := openDatabase(dir, po)
	require.NoError(t, err)
	t.Cleanup(func() { _ = primary.Close() })
	require.NoError(t, primary.Put(context.Background(), []byte("seed"), []byte("0")))
	// An unsynced write reaches the file when the WAL writer gets to it.
	require.NoError(t, primary.SyncWAL(context.Background()))
	if secOpts == nil {
		secOpts = &Options{}
	}
	secOpts.Secondary = true
	sec, err = openDatabase(dir, secOpts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sec.Close() })
	return dir, primary, sec
}

// dump returns every key and value it yields, as "k=v" lines.
func dump(t *testing.T, it *iterator) string {
	t.Helper()
	var b strings.Builder
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Fprintf(&b, "%s=%s\n", it.Key(), it.Value())
	}
	require.NoError(t, it.Error())
	require.NoError(t, it.Close())
	return b.String()
}

func dumpDB(t *testing.T, db *database) string {
	t.Helper()
	it, err := db.NewIterator(context.Background(), nil)
	require.NoError(t, err)
	return dump(t, it)
}

// TestSecondaryFollowsPrimary writes, overwrites, deletes, flushes and
// compacts in the primary, and after each CatchUp the secondary holds
// exactly the primary's data, while the iterators and snapshots it opened
// before keep the view they had.
func TestSecondaryFollowsPrimary(t *testing.T) {
	ctx := context.Background()
	_, primary, sec := openPrimarySecondary(t, nil)
	require.Equal(t, "seed=0\n", dumpDB(t, sec))
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 12 {
		for range 300 {
			k := key(rng.IntN(2000))
			if rng.IntN(8) == 0 {
				require.NoError(t, primary.Delete(ctx, k))
			} else {
				require.NoError(t, primary.Put(ctx, k, fmt.Appendf(nil, "r%d-%s", round, value(rng, 20))))
			}
		}
		switch round % 4 {
		case 1:
			require.NoError(t, primary.Flush(ctx))
		case 3:
			require.NoError(t, primary.Compact(ctx, nil, nil))
		}
		before := dumpDB(t, sec)
		it, err := sec.NewIterator(ctx, nil)
		require.NoError(t, err)
		snap, err := sec.NewSnapshot()
		require.NoError(t, err)

		require.NoError(t, primary.SyncWAL(ctx))
		require.NoError(t, sec.CatchUp(ctx))
		want := dumpDB(t, primary)
		require.Equal(t, want, dumpDB(t, sec), "round %d", round)
		require.Equal(t, before, dump(t, it), "round %d: an iterator keeps its view", round)
		sit, err := snap.NewIterator(ctx, nil)
		require.NoError(t, err)
		require.Equal(t, before, dump(t, sit), "round %d: a snapshot keeps its view", round)
		require.NoError(t, snap.Close())
		require.NoError(t, sec.VerifyChecksum(ctx))
		require.NoError(t, sec.VerifyFileChecksums(ctx))
	}
	// Point reads agree too.
	for i := range 2000 {
		want, werr := primary.Get(ctx, key(i))
		got, gerr := sec.Get(ctx, key(i))
		require.Equal(t, werr == nil, gerr == nil, "key %d: %v / %v", i, werr, gerr)
		require.Equal(t, want, got)
	}
}

// TestSecondaryRefusesWrites checks that every write is refused with an
// error that says why.
func TestSecondaryRefusesWrites(t *testing.T) {
	ctx := context.Background()
	_, _, sec := openPrimarySecondary(t, nil)
	for name, err := range map[string]error{
		"Put":         sec.Put(ctx, []byte("a"), []byte("b")),
		"Delete":      sec.Delete(ctx, []byte("a")),
		"DeleteRange": sec.DeleteRange(ctx, []byte("a"), []byte("b")),
		"Flush":       sec.Flush(ctx),
		"Compact":     sec.Compact(ctx, nil, nil),
	} {
		require.ErrorIs(t, err, ErrInvalidArgument, name)
		require.ErrorContains(t, err, "secondary instance", name)
	}
}

// TestSecondaryKeepsOpenTables: a table the secondary has open stays
// readable after the primary compacts it away and deletes it.
func TestSecondaryKeepsOpenTables(t *testing.T) {
	ctx := context.Background()
	dir, primary, sec := openPrimarySecondary(t, nil)
	for i := range 100 {
		require.NoError(t, primary.Put(ctx, key(i), []byte("v1")))
	}
	require.NoError(t, primary.Flush(ctx))
	require.NoError(t, sec.CatchUp(ctx)) // opens the flushed table
	old := tableNums(t, dir)
	require.NotEmpty(t, old)
	for i := range 100 {
		require.NoError(t, primary.Put(ctx, key(i), []byte("v2")))
	}
	require.NoError(t, primary.Compact(ctx, nil, nil))
	require.Eventually(t, func() bool { return !containsAny(tableNums(t, dir), old) }, 2*time.Minute, time.Millisecond,
		"the primary deletes the compacted tables")
	got, err := sec.Get(ctx, key(7))
	require.NoError(t, err)
	require.Equal(t, "v1", string(got))
	// A verification opens every table anew, and says why it cannot.
	err = sec.VerifyChecksum(ctx)
	require.ErrorContains(t, err, "call CatchUp and verify again")
	require.False(t, errors.Is(err, ErrCorruption), "not corruption: %v", err)
	require.NoError(t, sec.CatchUp(ctx))
	require.NoError(t, sec.VerifyChecksum(ctx))
	got, err = sec.Get(ctx, key(7))
	require.NoError(t, err)
	require.Equal(t, "v2", string(got))
}

// TestSecondaryTableRemovedBeforeOpen: with a bounded table cache the
// secondary opens tables when it reads them; one the primary deleted by
// then fails the read with an error that says to call CatchUp, which is not
// a corruption report, and CatchUp cures it.
func TestSecondaryTableRemovedBeforeOpen(t *testing.T) {
	ctx := context.Background()
	dir, primary, sec := openPrimarySecondary(t, &Options{MaxOpenFiles: 8})
	for i := range 100 {
		require.NoError(t, primary.Put(ctx, key(i), []byte("v1")))
	}
	require.NoError(t, primary.Flush(ctx))
	require.NoError(t, sec.CatchUp(ctx)) // names the table, does not open it
	old := tableNums(t, dir)
	require.NoError(t, primary.Compact(ctx, nil, nil))
	require.Eventually(t, func() bool { return !containsAny(tableNums(t, dir), old) }, 2*time.Minute, time.Millisecond)

	_, err := sec.Get(ctx, key(7))
	require.Error(t, err)
	require.ErrorContains(t, err, "was removed by the primary")
	require.ErrorContains(t, err, "call CatchUp")
	require.ErrorIs(t, err, os.ErrNotExist)
	require.False(t, errors.Is(err, ErrCorruption), "not corruption: %v", err)

	require.NoError(t, sec.CatchUp(ctx))
	got, err := sec.Get(ctx, key(7))
	require.NoError(t, err)
	require.Equal(t, "v1", string(got))
}

// hookFS runs a hook before the first Open of a file whose name ends in
// suffix.
type hookFS struct {
	vfs.FS
	suffix string
	hook   func()
}

func (h *hookFS) Open(name string) (vfs.File, error) {
	if h.hook != nil && strings.HasSuffix(name, h.suffix) {
		hook := h.hook
		h.hook = nil
		hook()
	}
	return h.FS.Open(name)
}

// TestSecondaryFileVanishesDuringCatchUp deletes, through the primary, the
// WAL (or table) a CatchUp is about to open, after it read the MANIFEST
// that names it: the CatchUp reads the MANIFEST again, finds the flush (or
// compaction) that made the file obsolete, and ends with the primary's
// data.
func TestSecondaryFileVanishesDuringCatchUp(t *testing.T) {
	for _, suffix := range []string{".log", ".sst"} {
		t.Run(suffix, func(t *testing.T) {
			ctx := context.Background()
			fs := &hookFS{FS: vfs.Default}
			dir, primary, sec := openPrimarySecondary(t, &Options{FS: fs})
			// A WAL the secondary has not opened yet.
			require.NoError(t, primary.Flush(ctx))
			for i := range 50 {
				require.NoError(t, primary.Put(ctx, key(i), []byte("v1")))
			}
			require.NoError(t, primary.SyncWAL(ctx))
			if suffix == ".sst" {
				require.NoError(t, primary.Flush(ctx))
			}
			vanished := false
			fs.suffix = suffix
			fs.hook = func() {
				before := fileNames(t, dir, suffix)
				// Flush twice: the WAL a flush makes obsolete is deleted
				// after the next edit. Compact replaces the tables.
				for i := range 50 {
					require.NoError(t, primary.Put(ctx, key(i), []byte("v2")))
				}
				require.NoError(t, primary.Flush(ctx))
				require.NoError(t, primary.Put(ctx, []byte("z"), []byte("z")))
				require.NoError(t, primary.Flush(ctx))
				require.NoError(t, primary.Compact(ctx, nil, nil))
				require.NoError(t, primary.SyncWAL(ctx))
				require.Eventually(t, func() bool { return !containsAnyName(fileNames(t, dir, suffix), before) },
					2*time.Minute, time.Millisecond)
				vanished = true
			}
			require.NoError(t, sec.CatchUp(ctx))
			require.True(t, vanished, "the hook ran")
			require.Equal(t, dumpDB(t, primary), dumpDB(t, sec))
		})
	}
}

// TestSecondaryChangesNothing: a secondary that opens, catches up, reads,
// checkpoints elsewhere and closes leaves every file of the directory as
// it was (names, sizes, modification times), and so does a secondary open
// that fails.
func TestSecondaryChangesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	primary, err := openDatabase(dir, smallOptions(vfs.Default))
	require.NoError(t, err)
	for i := range 2000 {
		require.NoError(t, primary.Put(ctx, key(i), value(rand.New(rand.NewPCG(uint64(i), 1)), 50)))
	}
	require.NoError(t, primary.Flush(ctx))
	require.NoError(t, primary.Put(ctx, []byte("in-wal"), []byte("x")))
	// Closed, so that no background work of the primary changes the
	// directory during the comparison; the write stays in the WAL.
	require.NoError(t, primary.Close())
	before := dirState(t, dir)

	sec, err := openDatabase(dir, &Options{Secondary: true})
	require.NoError(t, err)
	require.NoError(t, sec.CatchUp(ctx))
	got, err := sec.Get(ctx, []byte("in-wal"))
	require.NoError(t, err)
	require.Equal(t, "x", string(got))
	require.NoError(t, sec.Checkpoint(ctx, filepath.Join(t.TempDir(), "cp")))
	require.NoError(t, sec.Close())
	require.Equal(t, before, dirState(t, dir))

	// Failed opens: a CURRENT naming a missing MANIFEST, and a directory
	// that holds no database.
	cur, err := os.ReadFile(filepath.Join(dir, "CURRENT"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "CURRENT"), []byte("MANIFEST-999999\n"), 0o644))
	before2 := dirState(t, dir)
	_, err = openDatabase(dir, &Options{Secondary: true})
	require.ErrorIs(t, err, ErrCorruption)
	require.Equal(t, before2, dirState(t, dir))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "CURRENT"), cur, 0o644))

	empty := t.TempDir()
	_, err = openDatabase(empty, &Options{Secondary: true})
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.ErrorContains(t, err, "does not exist")
	names, err := os.ReadDir(empty)
	require.NoError(t, err)
	require.Empty(t, names)
}

// TestSecondaryCheckpoint: a checkpoint of a secondary reopens as a normal
// database holding exactly the secondary's view, the writes it replayed
// from the WALs included and the writes it has not caught up with
// excluded.
func TestSecondaryCheckpoint(t *testing.T) {
	ctx := context.Background()
	_, primary, sec := openPrimarySecondary(t, nil)
	for i := range 500 {
		require.NoError(t, primary.Put(ctx, key(i), []byte("flushed")))
	}
	require.NoError(t, primary.Flush(ctx))
	for i := range 100 {
		require.NoError(t, primary.Put(ctx, key(i), []byte("in-wal")))
	}
	require.NoError(t, primary.SyncWAL(ctx))
	require.NoError(t, sec.CatchUp(ctx))
	view := dumpDB(t, sec)
	for i := range 100 {
		require.NoError(t, primary.Put(ctx, key(i), []byte("not-seen")))
	}
	cp := filepath.Join(t.TempDir(), "cp")
	require.NoError(t, sec.Checkpoint(ctx, cp))
	db, err := openDatabase(cp, &Options{ErrorIfMissing: true})
	require.NoError(t, err)
	require.Equal(t, view, dumpDB(t, db))
	require.NoError(t, db.Put(ctx, []byte("writable"), []byte("yes")))
	require.NoError(t, db.Close())
}

func tableNums(t *testing.T, dir string) []string { return fileNames(t, dir, ".sst") }

func fileNames(t *testing.T, dir, suffix string) []string {
	t.Helper()
	names, err := vfs.Default.List(dir)
	require.NoError(t, err)
	var out []string
	for _, n := range names {
		if kind, _, ok := manifest.ParseFileName(n); ok && strings.HasSuffix(n, suffix) &&
			(kind == manifest.FileKindTable || kind == manifest.FileKindLog) {
			out = append(out, n)
		}
	}
	return out
}

func containsAny(names, of []string) bool { return containsAnyName(names, of) }

func containsAnyName(names, of []string) bool {
	for _, n := range of {
		for _, m := range names {
			if n == m {
				return true
			}
		}
	}
	return false
}

// dirState describes every file in dir: name, size, modification time.
func dirState(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var lines []string
	for _, e := range entries {
		info, err := e.Info()
		require.NoError(t, err)
		lines = append(lines, fmt.Sprintf("%s %d %s", e.Name(), info.Size(), info.ModTime().Format(time.RFC3339Nano)))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
