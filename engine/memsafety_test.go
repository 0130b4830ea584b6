package engine

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/shaledb/shale/driver"
	"github.com/stretchr/testify/require"
)

// heldSlicesEnv names the scenario a child process of
// TestHeldSlicesOutliveClose runs.
const heldSlicesEnv = "SHALE_HELD_SLICES_CHILD"

// TestHeldSlicesOutliveClose holds slices the API handed out — iterator
// keys and values, pinned values — across the database's Close, the
// collection of the objects that handed them out, and a second database's
// Open and writes, then checks they still hold their own bytes. Memtable
// arenas and memory-mapped tables live outside the Go heap, so a slice into
// them would fault (a fatal error no recover catches) or show the second
// database's bytes once the first one's memory is unmapped. Each scenario
// runs in a child process, so that a fault fails the test instead of killing
// the test binary.
func TestHeldSlicesOutliveClose(t *testing.T) {
	if name := os.Getenv(heldSlicesEnv); name != "" {
		f, ok := heldSliceScenarios[name]
		require.True(t, ok, "unknown scenario %q", name)
		f(t, t.TempDir())
		return
	}
	for name := range heldSliceScenarios {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestHeldSlicesOutliveClose$", "-test.count=1")
			cmd.Env = append(os.Environ(), heldSlicesEnv+"="+name)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "the child process failed:\n%s", out)
		})
	}
}

// heldSliceScenarios hold slices in different ways; each fails its test if
// the bytes changed.
var heldSliceScenarios = map[string]func(t *testing.T, dir string){
	// The façade's DB.Close closes the iterators still open.
	"facade-iterator-memtable": func(t *testing.T, dir string) {
		heldFacadeIterator(t, dir, "", false)
	},
	"facade-iterator-mmap-table": func(t *testing.T, dir string) {
		heldFacadeIterator(t, dir, "?mmap_reads=true&compression=none&block_cache_size=0", true)
	},
	// An engine iterator dropped without Close while its key is kept: the
	// garbage collector's cleanup unmaps the arena.
	"engine-iterator-dropped": func(t *testing.T, dir string) {
		db := openHeld(t, filepath.Join(dir, "a"))
		k, v := func() ([]byte, []byte) {
			it, err := db.NewIterator(context.Background(), nil)
			require.NoError(t, err)
			require.True(t, it.First())
			return it.Key(), it.Value()
		}()
		require.NoError(t, db.Close())
		churn(t, filepath.Join(dir, "b"))
		checkHeld(t, k, v)
	},
	// A pinned value dropped without Release while its bytes are kept.
	"engine-pinned-dropped": func(t *testing.T, dir string) {
		db := openHeld(t, filepath.Join(dir, "a"))
		v := func() []byte {
			pv, err := db.GetPinned(context.Background(), heldKey(0))
			require.NoError(t, err)
			return pv.Data
		}()
		require.NoError(t, db.Close())
		churn(t, filepath.Join(dir, "b"))
		checkHeld(t, heldKey(0), v)
	},
	// Values and keys read from a table block in the block cache, whose
	// buffers live in a region outside the Go heap that is unmapped once
	// the cache is unreachable: held past the iterator's (or the
	// transaction's, or the pin's) end and the database's Close.
	"engine-iterator-cached-block": func(t *testing.T, dir string) {
		db := openCachedHeld(t, filepath.Join(dir, "a"))
		it, err := db.NewIterator(context.Background(), nil)
		require.NoError(t, err)
		require.True(t, it.First())
		k, v := it.Key(), it.Value()
		require.NoError(t, it.Close())
		require.NoError(t, db.Close())
		churnCached(t, filepath.Join(dir, "b"))
		checkHeld(t, k, v)
	},
	"engine-txiterator-cached-block": func(t *testing.T, dir string) {
		ctx := context.Background()
		db := openCachedHeld(t, filepath.Join(dir, "a"))
		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		it, err := tx.NewIterator(ctx, nil)
		require.NoError(t, err)
		require.True(t, it.First())
		k, v := it.Key(), it.Value()
		require.NoError(t, it.Close())
		require.NoError(t, tx.Rollback())
		require.NoError(t, db.Close())
		churnCached(t, filepath.Join(dir, "b"))
		checkHeld(t, k, v)
	},
	"engine-pinned-cached-block-released": func(t *testing.T, dir string) {
		db := openCachedHeld(t, filepath.Join(dir, "a"))
		pv, err := db.GetPinned(context.Background(), heldKey(0))
		require.NoError(t, err)
		v := pv.Data
		pv.Release()
		require.NoError(t, db.Close())
		churnCached(t, filepath.Join(dir, "b"))
		checkHeld(t, heldKey(0), v)
	},
	"engine-pinned-cached-block-dropped": func(t *testing.T, dir string) {
		db := openCachedHeld(t, filepath.Join(dir, "a"))
		v := func() []byte {
			pv, err := db.GetPinned(context.Background(), heldKey(0))
			require.NoError(t, err)
			return pv.Data
		}()
		require.NoError(t, db.Close())
		churnCached(t, filepath.Join(dir, "b"))
		checkHeld(t, heldKey(0), v)
	},
}

// openCachedHeld is openHeld with the keys flushed to a table, so that reads
// find them in table blocks loaded into the block cache, which (with the
// default options on 64-bit unix) keeps them outside the Go heap.
func openCachedHeld(t *testing.T, dir string) *database {
	db := openHeld(t, dir)
	require.NoError(t, db.Flush(context.Background()))
	if !db.cache.HasOffHeap() {
		t.Skipf("the block cache has no off-heap region on %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	return db
}

// churnCached is churn with the second database's writes flushed and read
// back through its own block cache, whose region may take the addresses the
// first one's had.
func churnCached(t *testing.T, dir string) {
	churn(t, dir)
	db, err := openDatabase(dir, nil)
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, db.Flush(ctx))
	it, err := db.NewIterator(ctx, nil)
	require.NoError(t, err)
	for ok := it.First(); ok; ok = it.Next() {
	}
	require.NoError(t, it.Close())
	require.NoError(t, db.Close())
	runtime.GC()
	runtime.GC()
}

func heldFacadeIterator(t *testing.T, dir, params string, flush bool) {
	ctx := context.Background()
	db, err := driver.Open("shale", filepath.Join(dir, "a")+params)
	require.NoError(t, err)
	for i := range 100 {
		require.NoError(t, db.Put(ctx, heldKey(i), heldValue(i)))
	}
	if flush {
		require.NoError(t, db.Flush(ctx))
	}
	it, err := db.NewIterator(ctx, nil)
	require.NoError(t, err)
	require.True(t, it.First())
	k, v := it.Key(), it.Value()
	require.NoError(t, db.Close())
	churn(t, filepath.Join(dir, "b"))
	checkHeld(t, k, v)
	require.ErrorIs(t, it.Close(), driver.ErrClosed)
}

func openHeld(t *testing.T, dir string) *database {
	db, err := openDatabase(dir, nil)
	require.NoError(t, err)
	for i := range 100 {
		require.NoError(t, db.Put(context.Background(), heldKey(i), heldValue(i)))
	}
	return db
}

// churn collects garbage (running cleanups that unmap memory) and opens a
// second database and writes to it, so that its arena may take the
// addresses the first one's had.
func churn(t *testing.T, dir string) {
	runtime.GC()
	runtime.GC()
	db, err := openDatabase(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	junk := bytes.Repeat([]byte{0xEE}, 64)
	for i := range 1000 {
		require.NoError(t, db.Put(context.Background(), fmt.Appendf(nil, "other%05d", i), junk))
	}
	runtime.GC()
}

func checkHeld(t *testing.T, k, v []byte) {
	require.Equal(t, string(heldKey(0)), string(k), "a key held across Close changed")
	require.Equal(t, string(heldValue(0)), string(v), "a value held across Close changed")
}

func heldKey(i int) []byte   { return fmt.Appendf(nil, "held%05d", i) }
func heldValue(i int) []byte { return fmt.Appendf(nil, "value-of-held-key-%05d", i) }
