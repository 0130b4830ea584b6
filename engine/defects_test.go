package engine

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/internal/vfs/errorfs"
	"github.com/shaledb/shale/readpath"
	"github.com/stretchr/testify/require"
)

// TestTableCacheWaiterOutlivesOpenersContext: when the goroutine opening a
// table has its context cancelled mid-open, another Acquire of the same
// table waiting with a live context must not take the opener's context
// error: it opens the table itself and succeeds.
func TestTableCacheWaiterOutlivesOpenersContext(t *testing.T) {
	ctx := context.Background()
	db, fs := openTestDB(t, nil)
	require.NoError(t, db.Put(ctx, []byte("k"), []byte("v")))
	require.NoError(t, db.Flush(ctx))
	rs := db.loadReadState()
	meta := rs.current.Levels[0][0]
	rs.unref()

	// The first read of the table blocks until the test lets it go.
	var first atomic.Bool
	entered, gate := make(chan struct{}), make(chan struct{})
	efs := errorfs.WrapObserver(fs, func(op errorfs.Op) {
		if op.Kind == errorfs.OpFileRead && strings.HasSuffix(op.Path, ".sst") && first.CompareAndSwap(false, true) {
			close(entered)
			<-gate
		}
	})
	tc := newTableCache(efs, "/db", fileio.Options{}, nil, 0, nil, 0)
	defer tc.close()

	openerCtx, cancelOpener := context.WithCancel(ctx)
	type result struct {
		ref readpath.TableRef
		err error
	}
	opener, waiter := make(chan result, 1), make(chan result, 1)
	go func() {
		ref, err := tc.Acquire(openerCtx, openReadEnv, meta, 0)
		opener <- result{ref, err}
	}()
	<-entered
	go func() {
		ref, err := tc.Acquire(ctx, openReadEnv, meta, 0)
		waiter <- result{ref, err}
	}()
	// Wait until the second Acquire holds its reference to the entry being
	// opened (the cache's, the opener's and its own).
	require.Eventually(t, func() bool {
		tc.mu.RLock()
		defer tc.mu.RUnlock()
		e := tc.entries[meta.FileNum]
		return e != nil && e.refs.Load() == 3
	}, 5*time.Second, time.Millisecond)
	cancelOpener()
	close(gate)

	r := <-opener
	require.ErrorIs(t, r.err, context.Canceled, "the opener fails with its own context's error")
	r = <-waiter
	require.NoError(t, r.err, "a waiter with a live context must not take the opener's context error")
	require.NotNil(t, r.ref.Reader)
	r.ref.Release()
	// The table is cached now: a later Acquire finds it open.
	ref, err := tc.Acquire(ctx, openReadEnv, meta, 0)
	require.NoError(t, err)
	ref.Release()
}
