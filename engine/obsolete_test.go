package engine

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// TestCleanupKeepsTablesItCannotAccountFor checks the deletion rule on a
// running database: a table that appears in the directory while the
// database is open and that the MANIFEST cannot account for (no version
// holds it, no flush or compaction is writing it, no installed edit
// deleted it), here tables of another database copied in, is set aside as
// NNNNNN.sst.orphan and logged by the cleanup that follows a flush and a
// compaction, never deleted, whatever its number. Before the cleanup had
// one owner, the cleanup after a flush deleted any table no version held
// and reported it as an obsolete table deleted.
func TestCleanupKeepsTablesItCannotAccountFor(t *testing.T) {
	ctx := context.Background()
	mem := vfs.NewMem()
	o := smallOptions(mem)
	o.DisableAutoCompactions = true

	other, err := openDatabase("/other", o)
	require.NoError(t, err)
	for i := range 100 {
		require.NoError(t, other.Put(ctx, key(i), []byte(fmt.Sprintf("foreign-%d", i))))
	}
	require.NoError(t, other.Flush(ctx))
	require.NoError(t, other.Close())
	foreign := recFiles(t, mem, "/other", manifest.FileKindTable)
	require.Len(t, foreign, 1)
	data := recRead(t, mem, foreign[0])

	var log recLog
	var deletedMu sync.Mutex
	var deleted []uint64
	o = smallOptions(mem)
	o.DisableAutoCompactions = true
	o.Logger = log.logger()
	o.EventListener = &EventListener{TableDeleted: func(i TableDeleteInfo) {
		deletedMu.Lock()
		defer deletedMu.Unlock()
		deleted = append(deleted, i.FileNum)
	}}
	db, err := openDatabase("/db", o)
	require.NoError(t, err)
	for i := range 200 {
		require.NoError(t, db.Put(ctx, key(i), []byte("v1")))
	}
	require.NoError(t, db.Flush(ctx))

	// One copy numbered above every number handed out, one below, at a
	// number no table of this database had.
	next := db.vs.NextFileNum()
	below := manifest.FileNum(1)
	for recHas(t, mem, manifest.TableFileName("/db", below)) {
		below++
	}
	require.Less(t, below, next)
	copies := []manifest.FileNum{next + 50, below}
	for _, num := range copies {
		writeAll(t, mem, manifest.TableFileName("/db", num), data)
	}

	for i := range 200 {
		require.NoError(t, db.Put(ctx, key(i), []byte("v2")))
	}
	require.NoError(t, db.Flush(ctx), "a flush and its cleanup")
	require.NoError(t, db.Compact(ctx, nil, nil), "a compaction and its cleanup")
	for i := range 200 {
		v, err := db.Get(ctx, key(i))
		require.NoError(t, err)
		require.Equal(t, "v2", string(v))
	}
	require.NoError(t, db.Close())

	deletedMu.Lock()
	defer deletedMu.Unlock()
	require.NotEmpty(t, deleted, "the compaction's inputs are deleted")
	for _, num := range copies {
		name := manifest.TableFileName("/db", num)
		require.False(t, recHas(t, mem, name), "%s is set aside", name)
		require.True(t, recHas(t, mem, name+orphanSuffix), "%s is kept as %s", name, name+orphanSuffix)
		require.True(t, bytes.Equal(data, recRead(t, mem, name+orphanSuffix)), "%s is unchanged", name)
		require.Contains(t, log.String(), name+orphanSuffix, "and logged")
		require.NotContains(t, deleted, uint64(num), "%s is not reported deleted", name)
	}

	// The orphans stay through a reopen, which reads none of them.
	db, err = openDatabase("/db", smallOptions(mem))
	require.NoError(t, err)
	checkDB(t, db)
	v, err := db.Get(ctx, key(0))
	require.NoError(t, err)
	require.Equal(t, "v2", string(v))
	for _, num := range copies {
		require.True(t, recHas(t, mem, manifest.TableFileName("/db", num)+orphanSuffix))
	}
}

// TestCleanupSparesOutputsInProgress checks that a cleanup leaves alone a
// table that a flush or compaction is writing (its file number is reserved
// and no version names it yet): it is neither deleted nor set aside. Once
// abandoned, the output is gone, with no orphan left.
func TestCleanupSparesOutputsInProgress(t *testing.T) {
	ctx := context.Background()
	var log recLog
	o := smallOptions(nil)
	o.Logger = log.logger()
	db, fs := openTestDB(t, o)
	require.NoError(t, db.Put(ctx, []byte("a"), []byte("1")))
	require.NoError(t, db.Flush(ctx))

	// One output still being written, one finished and not yet installed.
	writing, err := db.newTableWriter(ctx, ioctx.PriorityLow, 1)
	require.NoError(t, err)
	finished, err := db.newTableWriter(ctx, ioctx.PriorityLow, 1)
	require.NoError(t, err)
	require.NoError(t, finished.w.Add(base.MakeInternalKey([]byte("b"), 1, base.KindSet), []byte("2")))
	require.NoError(t, finished.finish())

	db.deleteObsoleteFiles(false)
	for _, tw := range []*tableWriter{writing, finished} {
		require.True(t, recHas(t, fs, tw.name), "%s is being written", tw.name)
		require.False(t, recHas(t, fs, tw.name+orphanSuffix))
	}
	require.NotContains(t, log.String(), orphanSuffix)

	writing.abandon()
	finished.abandon()
	for _, tw := range []*tableWriter{writing, finished} {
		require.False(t, recHas(t, fs, tw.name), "%s is abandoned", tw.name)
		require.False(t, recHas(t, fs, tw.name+orphanSuffix))
	}
	db.mu.Lock()
	require.Empty(t, db.mu.pendingOutputs)
	db.mu.Unlock()
}

// TestCleanupRetriesAbandonedOutput checks that an abandoned output whose
// deletion failed is the engine's own garbage: the next cleanup deletes it
// (and does not take it for a table it cannot account for).
func TestCleanupRetriesAbandonedOutput(t *testing.T) {
	ctx := context.Background()
	var armed, injected atomic.Bool
	inj := errorfs.InjectError(syscall.EIO, errorfs.PredicateFunc("remove table", func(op errorfs.Op) bool {
		return armed.Load() && op.Kind == errorfs.OpRemove && strings.HasSuffix(op.Path, ".sst") &&
			injected.CompareAndSwap(false, true)
	}))
	var log recLog
	o := smallOptions(nil)
	o.Logger = log.logger()
	f := openFullDiskDB(t, o, inj)
	db := f.db

	tw, err := db.newTableWriter(ctx, ioctx.PriorityLow, 1)
	require.NoError(t, err)
	require.NoError(t, tw.w.Add(base.MakeInternalKey([]byte("b"), 1, base.KindSet), []byte("2")))
	require.NoError(t, tw.finish())
	armed.Store(true)
	tw.abandon()
	require.True(t, injected.Load())
	require.True(t, recHas(t, f.mem, tw.name), "the failed deletion left the table")

	db.deleteObsoleteFiles(false)
	require.False(t, recHas(t, f.mem, tw.name), "the next cleanup deletes it")
	require.False(t, recHas(t, f.mem, tw.name+orphanSuffix))
	require.NotContains(t, log.String(), orphanSuffix)
}

// TestCleanupSetsNothingAsideUnderLoad runs flushes, automatic and manual
// compactions, iterators that hold old versions, checkpoints and the
// cleanups that follow all of them concurrently, for a fixed amount of work:
// every table the engine makes is one the MANIFEST accounts for, so no
// cleanup may take one for an orphan (a cleanup that read the versions and
// the obsolete tables in the wrong order would), and none may delete a table
// a version still holds; after Close, only the tables of the last version
// are left.
func TestCleanupSetsNothingAsideUnderLoad(t *testing.T) {
	ctx := context.Background()
	var log recLog
	o := smallOptions(nil)
	o.Logger = log.logger()
	db, fs := openTestDB(t, o)
	rounds := 40
	if testing.Short() {
		rounds = 15
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	run := func(f func(i int) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	val := bytes.Repeat([]byte("v"), 200)
	for w := range 2 {
		run(func(i int) error {
			for j := range 100 {
				if err := db.Put(ctx, key((i*100+j)%1500), append(val, byte(w))); err != nil {
					return err
				}
			}
			return nil
		})
	}
	run(func(i int) error {
		// An iterator holds its version while others replace it.
		it, err := db.NewIterator(ctx, nil)
		if err != nil {
			return err
		}
		n := 0
		for ok := it.First(); ok && n < 200; ok = it.Next() {
			n++
		}
		if err := db.Compact(ctx, key(i*30), key(i*30+300)); err != nil {
			_ = it.Close()
			return err
		}
		for ok := it.Next(); ok; ok = it.Next() {
		}
		return it.Close()
	})
	run(func(i int) error {
		if i%5 == 0 {
			return db.Checkpoint(ctx, fmt.Sprintf("/cp%d", i))
		}
		return db.Flush(ctx)
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, db.Compact(ctx, nil, nil))
	// Close's cleanup runs with no reader, flush or compaction left: every
	// obsolete table goes.
	require.NoError(t, db.Close())
	names, err := fs.List("/db")
	require.NoError(t, err)
	for _, name := range names {
		require.False(t, strings.HasSuffix(name, orphanSuffix), "%s: a table the engine made was set aside", name)
	}
	require.NotContains(t, log.String(), orphanSuffix)
	vs, err := manifest.Load(fs, "/db")
	require.NoError(t, err)
	defer vs.Close()
	v := vs.Current()
	defer v.Unref()
	live := map[manifest.FileNum]bool{}
	for _, files := range v.Levels {
		for _, f := range files {
			live[f.FileNum] = true
		}
	}
	for _, name := range recFiles(t, fs, "/db", manifest.FileKindTable) {
		_, num, _ := manifest.ParseFileName(filepath.Base(name))
		require.True(t, live[num], "%s: an obsolete table is left after Close", name)
	}
}
