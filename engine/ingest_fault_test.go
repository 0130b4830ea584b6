package engine

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// ingestedKeys counts the keys of ingestFaultTables visible in db.
func ingestedKeys(t testing.TB, db *database) int {
	t.Helper()
	n := 0
	for _, kv := range scanDB(t, db, nil) {
		if strings.Contains(kv, "=ingested-") {
			n++
		}
	}
	return n
}

const ingestFaultKeys = 10

// ingestFaultSetup opens a database holding a and z on fs (over mem), and
// writes two tables to ingest, of ingestFaultKeys keys in all, into mem.
func ingestFaultSetup(t *testing.T, mem *vfs.MemFS, fs vfs.FS) (*database, []string) {
	t.Helper()
	ctx := context.Background()
	opts := smallOptions(fs)
	opts.DisableAutoCompactions = true
	db, err := openDatabase("/db", opts)
	require.NoError(t, err)
	require.NoError(t, db.Put(ctx, []byte("a"), []byte("old")))
	require.NoError(t, db.Put(ctx, []byte("z"), []byte("old")))
	require.NoError(t, db.Flush(ctx))
	require.NoError(t, mem.MkdirAll("/ext", 0o755))
	var paths []string
	for i, prefix := range []string{"b", "m"} {
		var entries []ingestEntry
		for j := range ingestFaultKeys / 2 {
			entries = append(entries, ingestEntry{key: fmt.Sprintf("%s%d", prefix, j), value: "ingested-" + prefix})
		}
		p := fmt.Sprintf("/ext/%d.sst", i)
		writeTable(t, mem, p, smallOptions(mem), entries...)
		paths = append(paths, p)
	}
	return db, paths
}

// checkReopened opens the database a crash left in mem and checks that it
// holds all of the ingest or none of it (all when must), with no temporary
// file left and a consistent structure; it returns whether the ingest is
// there.
func checkReopened(t *testing.T, mem *vfs.MemFS, must bool) bool {
	t.Helper()
	db, err := openDatabase("/db", smallOptions(mem))
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	require.NoError(t, db.Check(context.Background()))
	n := ingestedKeys(t, db)
	require.Contains(t, []int{0, ingestFaultKeys}, n, "a partial ingest survived the crash")
	if must {
		require.Equal(t, ingestFaultKeys, n)
	}
	for _, name := range dirNames(t, mem, "/db") {
		require.False(t, strings.HasSuffix(name, ".dbtmp"), "temporary file %s left after Open", name)
	}
	return n == ingestFaultKeys
}

// TestIngestFaults fails each filesystem operation of an ingest in turn
// (errorfs): the ingest fails with the injected error and changes nothing,
// neither what reads see nor the directory (unless the MANIFEST write
// itself failed, the one ambiguous step), and the database reopens after a
// crash at that point with all of the ingest or none of it. It also
// crashes (MemFS.CrashClone) before each operation of a successful ingest:
// the reopened database again holds all of it or none, and all of it once
// the ingest has returned.
func TestIngestFaults(t *testing.T) {
	ctx := context.Background()
	for i := int64(0); ; i++ {
		mem := vfs.NewMem()
		var armed atomic.Bool
		var n atomic.Int64
		fail := errorfs.PredicateFunc(fmt.Sprintf("ingest op %d", i), func(errorfs.Op) bool {
			return armed.Load() && n.Add(1)-1 == i
		})
		fs := errorfs.Wrap(mem, fail)
		db, paths := ingestFaultSetup(t, mem, fs)
		before := dirNames(t, mem, "/db")
		armed.Store(true)
		err := db.Ingest(ctx, paths)
		armed.Store(false)
		if fs.Injected() == 0 {
			require.NoError(t, err)
			require.Equal(t, ingestFaultKeys, ingestedKeys(t, db))
			require.NoError(t, db.Close())
			t.Logf("an ingest takes %d filesystem operations", i)
			require.Greater(t, i, int64(10))
			break
		}
		crash := mem.CrashClone()
		if err == nil {
			// The failed operation did not matter (a close of a source
			// file after its read, say): the ingest is all there.
			require.Equal(t, ingestFaultKeys, ingestedKeys(t, db), "op %d", i)
		} else {
			require.ErrorIs(t, err, errorfs.ErrInjected, "op %d", i)
			db.mu.Lock()
			ambiguous := db.mu.manifestFailed
			db.mu.Unlock()
			if !ambiguous {
				require.Equal(t, 0, ingestedKeys(t, db), "op %d: %v", i, err)
				require.Equal(t, before, dirNames(t, mem, "/db"), "op %d: %v", i, err)
			}
		}
		_ = db.Close()
		checkReopened(t, crash, err == nil)
	}

	// Crash before each operation of an ingest that succeeds.
	for i := int64(0); ; i++ {
		mem := vfs.NewMem()
		var armed atomic.Bool
		var n atomic.Int64
		var crash *vfs.MemFS
		fs := errorfs.Wrap(mem, errorfs.Observe(func(errorfs.Op) {
			if armed.Load() && n.Add(1)-1 == i {
				crash = mem.CrashClone()
			}
		}))
		db, paths := ingestFaultSetup(t, mem, fs)
		armed.Store(true)
		require.NoError(t, db.Ingest(ctx, paths))
		armed.Store(false)
		require.NoError(t, db.Close())
		if crash == nil {
			break
		}
		checkReopened(t, crash, false)
	}
}
