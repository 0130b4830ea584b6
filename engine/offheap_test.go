package engine

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOffHeapBytesAreCopied checks that every read that hands bytes to the
// caller copies those of a table block in the block cache's off-heap
// region, whatever path it takes: iterators (engine, transaction, façade),
// pinned values, snapshot reads. The memory-safety test shows what
// happens otherwise (a fault once the cache is gone); this one checks the
// bytes themselves, on every key.
func TestOffHeapBytesAreCopied(t *testing.T) {
	opts := smallOptions(nil)
	opts.BlockCacheSize = 8 << 20 // every block stays cached
	db, _ := openTestDB(t, opts)
	if !db.cache.HasOffHeap() {
		t.Skipf("the block cache has no off-heap region on %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	ctx := context.Background()
	const n = 500
	k := func(i int) []byte { return fmt.Appendf(nil, "key%05d", i) }
	v := func(i int) []byte { return fmt.Appendf(nil, "value%05d-%0100d", i, i) }
	for i := range n {
		require.NoError(t, db.Put(ctx, k(i), v(i)))
	}
	require.NoError(t, db.Flush(ctx))
	// Read once so that every block is loaded; then the reads below hit.
	for i := range n {
		got, err := db.Get(ctx, k(i))
		require.NoError(t, err)
		require.Equal(t, v(i), got)
	}
	onHeap := func(what string, i int, b []byte) {
		t.Helper()
		require.False(t, db.cache.OffHeap(b), "%s of key %d points into the block cache's region", what, i)
	}

	for i := range n {
		pv, err := db.GetPinned(ctx, k(i))
		require.NoError(t, err)
		require.Equal(t, v(i), pv.Data)
		onHeap("GetPinned", i, pv.Data)
		pv.Release()
	}

	it, err := db.NewIterator(ctx, nil)
	require.NoError(t, err)
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		require.Equal(t, k(i), it.Key())
		require.Equal(t, v(i), it.Value())
		onHeap("Iterator.Key", i, it.Key())
		onHeap("Iterator.Value", i, it.Value())
		i++
	}
	require.Equal(t, n, i)
	require.NoError(t, it.Close())

	snap, err := db.NewSnapshot()
	require.NoError(t, err)
	sit, err := snap.NewIterator(ctx, nil)
	require.NoError(t, err)
	require.True(t, sit.SeekGE(k(7)))
	onHeap("snapshot Iterator.Value", 7, sit.Value())
	require.NoError(t, sit.Close())
	require.NoError(t, snap.Close())

	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	tit, err := tx.NewIterator(ctx, nil)
	require.NoError(t, err)
	i = 0
	for ok := tit.First(); ok; ok = tit.Next() {
		require.Equal(t, v(i), tit.Value())
		onHeap("TxIterator.Key", i, tit.Key())
		onHeap("TxIterator.Value", i, tit.Value())
		i++
	}
	require.Equal(t, n, i)
	require.NoError(t, tit.Close())
	require.NoError(t, tx.Rollback())
}

// TestPinnedValueDoubleRelease checks that releasing two copies of a
// PinnedValue whose bytes were copied out of the block cache's region
// panics, rather than recycling its buffer twice (two later readers would
// then share it), even after the buffer went to another reader.
func TestPinnedValueDoubleRelease(t *testing.T) {
	opts := smallOptions(nil)
	db, _ := openTestDB(t, opts)
	if !db.cache.HasOffHeap() {
		t.Skipf("the block cache has no off-heap region on %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	ctx := context.Background()
	require.NoError(t, db.Put(ctx, []byte("k"), []byte("v")))
	require.NoError(t, db.Flush(ctx))
	pv, err := db.GetPinned(ctx, []byte("k"))
	require.NoError(t, err)
	require.NotNil(t, pv.buf, "the value was not copied out of the region")
	twin := pv
	pv.Release()
	again, err := db.GetPinned(ctx, []byte("k"))
	require.NoError(t, err)
	require.Panics(t, twin.Release)
	require.Equal(t, "v", string(again.Data))
	again.Release()
}

// TestBlockCacheOnGoHeap checks the option and its DSN key: by default the
// block cache keeps its blocks off the Go heap where the platform allows,
// and BlockCacheOnGoHeap (block_cache_off_heap=false) keeps them on it, so
// that iterators hand out cached values without a copy.
func TestBlockCacheOnGoHeap(t *testing.T) {
	for _, tc := range []struct {
		dsn    string
		goHeap bool
	}{
		{"", false},
		{"?block_cache_off_heap=true", false},
		{"?block_cache_off_heap=false", true},
	} {
		t.Run(tc.dsn, func(t *testing.T) {
			dir, opts, err := ParseDSN(t.TempDir() + tc.dsn)
			require.NoError(t, err)
			require.Equal(t, tc.goHeap, opts.BlockCacheOnGoHeap)
			db, err := openDatabase(dir, opts)
			require.NoError(t, err)
			defer func() { require.NoError(t, db.Close()) }()
			if tc.goHeap {
				require.False(t, db.cache.HasOffHeap(), "the cache has an off-heap region")
				return
			}
			if !db.cache.HasOffHeap() {
				t.Skipf("the block cache has no off-heap region on %s/%s", runtime.GOOS, runtime.GOARCH)
			}
		})
	}
}
