package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/compact"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/readpath"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
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
	rs := mustReadState(t, db)
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
	}, 2*time.Minute, time.Millisecond)
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

// TestCompactWaitsForOutputLevelBusyBeyondRange: Compact(k, k) must not skip
// a level whose table over a–m would compact into a table over b–c that a
// background compaction holds, although b–c does not overlap k. The picker
// declines because it looks at the output level over the inputs' whole key
// range; Compact used to look for busy files over [k, k] only, found none
// and moved on, leaving the a–m table where it was.
func TestCompactWaitsForOutputLevelBusyBeyondRange(t *testing.T) {
	ctx := context.Background()
	held, release := make(chan *compact.Compaction, 1), make(chan struct{})
	var once atomic.Bool
	hook := func(d *database, c *compact.Compaction) {
		if c.Level == 2 && once.CompareAndSwap(false, true) {
			held <- c
			<-release
		}
	}
	compactionStartHook.Store(&hook)
	t.Cleanup(func() { compactionStartHook.Store(nil) })
	released := false
	releaseOnce := func() {
		if !released {
			released = true
			close(release)
		}
	}

	// L1 holds 16 KiB and L2 32 KiB; every L0 table is compacted at once.
	fs := vfs.NewMem()
	db, _ := openTestDB(t, &Options{
		FS:                             fs,
		WriteBufferSize:                1 << 20,
		Level0FileNumCompactionTrigger: 1,
		MaxBytesForLevelBase:           16 << 10,
		MaxBytesForLevelMultiplier:     2,
		TargetFileSizeBase:             256 << 10,
		Compression:                    CompressionNone,
	})
	t.Cleanup(releaseOnce) // registered after the database's close, so it runs first
	rng := rand.New(rand.NewPCG(3, 4))
	putRange := func(prefix string, n int) {
		for i := range n {
			v := make([]byte, 100)
			for j := range v {
				v[j] = byte(rng.Uint32())
			}
			require.NoError(t, db.Put(ctx, []byte(fmt.Sprintf("%s%04d", prefix, i)), v))
		}
		require.NoError(t, db.Flush(ctx))
	}
	levelFiles := func() (levels [manifest.NumLevels][]*manifest.FileMetadata) {
		rs := mustReadState(t, db)
		defer rs.unref()
		for l := range levels {
			levels[l] = append(levels[l], rs.current.Levels[l]...)
		}
		return levels
	}
	shapeIs := func(want [manifest.NumLevels]int) func() bool {
		return func() bool {
			levels := levelFiles()
			for l := range levels {
				if len(levels[l]) != want[l] {
					return false
				}
			}
			return true
		}
	}
	// b–c (about 20 KiB) passes L1, over its 16 KiB, and stays in L2.
	putRange("b", 200)
	require.Eventually(t, shapeIs([7]int{0, 0, 1}), 2*time.Minute, time.Millisecond, "b–c in L2")
	// a–m, small, stays in L1.
	require.NoError(t, db.Put(ctx, []byte("a"), []byte("a")))
	require.NoError(t, db.Put(ctx, []byte("m"), []byte("m")))
	require.NoError(t, db.Flush(ctx))
	require.Eventually(t, shapeIs([7]int{0, 1, 1}), 2*time.Minute, time.Millisecond, "a–m in L1")
	// x–z fills L1 over its limit, moves to L2 and fills L2 over its own:
	// the background compacts b–c, the first by key, out of L2, and holds.
	putRange("x", 170)
	c := <-held
	require.Equal(t, 2, c.Level)
	require.Equal(t, "b0000", string(c.Inputs[0][0].Smallest.UserKey))
	levels := levelFiles()
	require.Len(t, levels[1], 1)
	am := levels[1][0]
	require.Equal(t, "a", string(am.Smallest.UserKey))
	require.Equal(t, "m", string(am.Largest.UserKey))
	require.Len(t, levels[2], 2)

	done := make(chan error, 1)
	go func() { done <- db.Compact(ctx, []byte("k"), []byte("k")) }()
	// Compact must wait for the held compaction; let it go after a while
	// (or once Compact has returned without waiting).
	select {
	case err := <-done:
		releaseOnce()
		done <- err
	case <-time.After(100 * time.Millisecond):
		releaseOnce()
	}
	require.NoError(t, <-done)
	for l, files := range levelFiles() {
		for _, f := range files {
			require.NotEqual(t, am.FileNum, f.FileNum, "the a–m table is still in L%d after Compact(k, k): skipped", l)
		}
	}
	for _, k := range []string{"a", "m"} {
		got, err := db.Get(ctx, []byte(k))
		require.NoError(t, err)
		require.Equal(t, k, string(got))
	}
}
