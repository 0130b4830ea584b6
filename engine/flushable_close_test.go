package engine

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"syscall"
	"testing"

	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// TestCloseReportsLargeBatchWALSyncFailure: the background sync of a large
// batch's WAL fails after its Write returned and no write follows; Close is
// the last call that can say so, and must.
func TestCloseReportsLargeBatchWALSyncFailure(t *testing.T) {
	ctx := context.Background()
	mem := vfs.NewMem()
	var mu sync.Mutex
	failSync := "" // the WAL whose Sync fails
	fs := errorfs.Wrap(mem, errorfs.InjectError(syscall.EIO, errorfs.PredicateFunc("the batch's WAL sync", func(op errorfs.Op) bool {
		mu.Lock()
		defer mu.Unlock()
		return op.Kind == errorfs.OpFileSync && failSync != "" && op.Path == failSync
	})))
	opts := smallOptions(fs)
	db, err := openDatabase("/db", opts)
	require.NoError(t, err)
	release := make(chan struct{})
	hook := func(d *database) {
		if d == db {
			<-release
		}
	}
	prevWALSyncHook.Store(&hook)
	t.Cleanup(func() { prevWALSyncHook.Store(nil) })

	b := newWriteBatch()
	largeTestBatch(rand.New(rand.NewPCG(8, 8)), b, model{}, 100, "L")
	require.NoError(t, db.Write(ctx, b, nil), "returns with the WAL's sync held back")

	// The batch's WAL is the older of the two; the newer takes later writes.
	logs := recFiles(t, mem, "/db", manifest.FileKindLog)
	slices.Sort(logs)
	require.GreaterOrEqual(t, len(logs), 2, "%v", logs)
	mu.Lock()
	failSync = logs[len(logs)-2]
	mu.Unlock()
	close(release)

	err = db.Close()
	require.Error(t, err, "the failed sync of the batch's WAL must not go unreported")
	require.ErrorIs(t, err, syscall.EIO)
	require.Contains(t, err.Error(), "syncing WAL")
}
