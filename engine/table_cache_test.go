package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// TestTableCachePinnedAcquire: a cache that keeps every table open hands
// out a table a version lists without a reference (nothing to count, no
// lock), and a bounded cache still counts every Acquire.
func TestTableCachePinnedAcquire(t *testing.T) {
	ctx := context.Background()
	for _, bounded := range []bool{false, true} {
		t.Run(fmt.Sprintf("bounded=%t", bounded), func(t *testing.T) {
			opts := smallOptions(vfs.NewMem())
			if bounded {
				opts.MaxOpenFiles = 100
			}
			db, _ := openTestDB(t, opts)
			require.NoError(t, db.Put(ctx, []byte("k"), []byte("v")))
			require.NoError(t, db.Flush(ctx))
			rs := mustReadState(t, db)
			defer rs.unref()
			meta := rs.current.Levels[0][0]
			ref, err := db.tables.Acquire(ctx, openReadEnv, meta, 0)
			require.NoError(t, err)
			defer ref.Release()
			db.tables.mu.RLock()
			e := db.tables.entries[meta.FileNum]
			db.tables.mu.RUnlock()
			require.NotNil(t, e)
			if bounded {
				require.EqualValues(t, 2, e.refs.Load(), "the cache's reference and the Acquire's")
			} else {
				require.EqualValues(t, 1, e.refs.Load(), "only the cache's reference: the table is pinned")
			}
		})
	}
}

// TestIteratorOutlivesClose: tables read through the pinned path stay open
// for an iterator (and a pinned value) that the caller still holds when the
// database closes, and are closed when the last of them is released. With
// memory-mapped tables, reading a closed one would fault.
func TestIteratorOutlivesClose(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	opts := smallOptions(vfs.Default)
	opts.MmapReads = true
	db, err := openDatabase(dir, opts)
	require.NoError(t, err)
	const n = 2000
	for i := range n {
		require.NoError(t, db.Put(ctx, fmt.Appendf(nil, "key%05d", i), fmt.Appendf(nil, "value%05d", i)))
	}
	require.NoError(t, db.Flush(ctx))
	it, err := db.NewIterator(ctx, nil)
	require.NoError(t, err)
	pinned, err := db.GetPinned(ctx, []byte("key01000"))
	require.NoError(t, err)
	require.NoError(t, db.Close())

	require.Equal(t, "value01000", string(pinned.Data))
	pinned.Release()
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		require.Equal(t, fmt.Sprintf("key%05d", i), string(it.Key()))
		require.Equal(t, fmt.Sprintf("value%05d", i), string(it.Value()))
		i++
	}
	require.NoError(t, it.Error())
	require.Equal(t, n, i)
	require.NoError(t, it.Close())
	require.Zero(t, db.tables.users.Load(), "the last release closes the readers")
}
