package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"testing"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/stretchr/testify/require"
)

// TestLookupsThroughFacade checks Has, ValueSize and GetPinned through the
// façade on the engine's optional interfaces, on the DB, a snapshot and a
// transaction (whose own writes come from its batch), against Get.
func TestLookupsThroughFacade(t *testing.T) {
	ctx := context.Background()
	db := driver.OpenDB(NewConnector(MemoryPath, &Options{WriteBufferSize: 64 << 10, BlockSize: 512}))
	defer func() { require.NoError(t, db.Close()) }()
	require.NoError(t, db.Ping(ctx))
	big := bytes.Repeat([]byte("x"), 100<<10)
	require.NoError(t, db.Put(ctx, []byte("flushed"), []byte("in a table")))
	require.NoError(t, db.Put(ctx, []byte("big"), big))
	require.NoError(t, db.Put(ctx, []byte("empty"), []byte{}))
	require.NoError(t, db.Flush(ctx))
	require.NoError(t, db.Put(ctx, []byte("mem"), []byte("in the memtable")))

	snap, err := db.NewSnapshot(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, snap.Close()) }()
	require.NoError(t, db.Put(ctx, []byte("later"), []byte("after the snapshot")))

	want := map[string][]byte{"flushed": []byte("in a table"), "big": big, "empty": {}, "mem": []byte("in the memtable"),
		"later": []byte("after the snapshot")}
	for _, k := range []string{"flushed", "big", "empty", "mem", "later", "absent"} {
		v, ok := want[k]
		has, err := db.Has(ctx, []byte(k))
		require.NoError(t, err, k)
		require.Equal(t, ok, has, k)
		n, err := db.ValueSize(ctx, []byte(k))
		if !ok {
			require.ErrorIs(t, err, driver.ErrNotFound, k)
			_, _, err = db.GetPinned(ctx, []byte(k))
			require.ErrorIs(t, err, driver.ErrNotFound, k)
			continue
		}
		require.NoError(t, err, k)
		require.Equal(t, len(v), n, k)
		pv, closer, err := db.GetPinned(ctx, []byte(k))
		require.NoError(t, err, k)
		require.Equal(t, v, pv, k)
		require.NoError(t, closer.Close())
		require.ErrorIs(t, closer.Close(), driver.ErrClosed, "a second Close")

		// The snapshot does not see "later".
		has, err = snap.Has(ctx, []byte(k))
		require.NoError(t, err)
		require.Equal(t, k != "later", has, k)
		if k != "later" {
			n, err = snap.ValueSize(ctx, []byte(k))
			require.NoError(t, err)
			require.Equal(t, len(v), n, k)
			pv, closer, err = snap.GetPinned(ctx, []byte(k))
			require.NoError(t, err)
			require.Equal(t, v, pv, k)
			require.NoError(t, closer.Close())
		}
	}

	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, tx.Put(ctx, []byte("mine"), []byte("tx write")))
	require.NoError(t, tx.Put(ctx, []byte("flushed"), []byte("shadowed")))
	require.NoError(t, tx.Delete(ctx, []byte("mem")))
	for _, tc := range []struct {
		key string
		n   int
	}{{"mine", 8}, {"flushed", 8}, {"mem", -1}, {"big", len(big)}, {"absent", -1}} {
		n, err := tx.ValueSize(ctx, []byte(tc.key))
		has, herr := tx.Has(ctx, []byte(tc.key))
		require.NoError(t, herr)
		if tc.n < 0 {
			require.ErrorIs(t, err, driver.ErrNotFound, tc.key)
			require.False(t, has, tc.key)
			continue
		}
		require.NoError(t, err, tc.key)
		require.Equal(t, tc.n, n, tc.key)
		require.True(t, has, tc.key)
	}
	require.NoError(t, tx.Rollback())
}

// TestPinnedValueOutlivesClose holds values from GetPinned across the
// database's Close, and reads them afterwards: values in a memory-mapped
// table (mmap_reads, no cache, no compression: the value points into the
// mapping, which the value's references keep mapped, also once the files are
// removed), in the off-heap block cache and in a memtable's arena (both
// copied to the Go heap first, since the engine unmaps them on its own
// schedule), and in a block cache on the Go heap.
func TestPinnedValueOutlivesClose(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		dsn string
		// inPlace: a table's value is handed out where it is (two reads
		// return the same bytes), not copied; the others copy, at least
		// values from the off-heap cache.
		inPlace bool
	}{
		{"?mmap_reads=true&block_cache_size=0&compression=none", true},
		{"?mmap_reads=true", false},
		{"?block_cache_off_heap=true", false},
		{"?block_cache_off_heap=false", true},
	} {
		dsn := tc.dsn
		t.Run(dsn, func(t *testing.T) {
			base := t.TempDir() + "/db"
			dir, opts, err := ParseDSN(base + dsn + "&write_buffer_size=64KiB&block_size=1KiB")
			require.NoError(t, err)
			db := driver.OpenDB(NewConnector(dir, opts))
			require.NoError(t, db.Ping(ctx))
			want := map[string][]byte{}
			for i := range 200 {
				k := fmt.Sprintf("key%04d", i)
				want[k] = bytes.Repeat([]byte{byte('a' + i%26)}, 100+i*13)
				require.NoError(t, db.Put(ctx, []byte(k), want[k]))
			}
			require.NoError(t, db.Flush(ctx))
			want["memtable"] = []byte("a value still in the memtable")
			require.NoError(t, db.Put(ctx, []byte("memtable"), want["memtable"]))

			type held struct {
				key   string
				v     []byte
				close io.Closer
			}
			var vals []held
			for k := range want {
				v, c, err := db.GetPinned(ctx, []byte(k))
				require.NoError(t, err, k)
				vals = append(vals, held{k, v, c})
			}
			// Twice: a value from a cached block, once it is cached.
			for i, k := range slices.Sorted(maps.Keys(want)) {
				v, c, err := db.GetPinned(ctx, []byte(k))
				require.NoError(t, err, k)
				vals = append(vals, held{k, v, c})
				if tc.inPlace && k != "memtable" && i%10 == 0 {
					first := vals[slices.IndexFunc(vals, func(h held) bool { return h.key == k })].v
					require.Same(t, &first[0], &v[0], "%s: the same bytes", k)
				}
			}
			require.NoError(t, db.Close())
			require.NoError(t, os.RemoveAll(base))
			for range 3 {
				runtime.GC() // let the cache's region go, were it unreachable
			}
			for _, h := range vals {
				require.Equal(t, want[h.key], h.v, h.key)
			}
			for _, h := range vals {
				require.NoError(t, h.close.Close(), h.key)
				require.ErrorIs(t, h.close.Close(), driver.ErrClosed, h.key)
			}
		})
	}
}

// TestLookupAllocations pins the allocation budgets of the façade's reads
// that hand out no copy, on cached hits: Has and ValueSize 0, GetPinned 1
// (its Closer), with small and large values, on the off-heap and the Go
// heap block cache. A large value in the off-heap cache is the exception:
// GetPinned copies it to the Go heap (see getPinnedImpl), and a buffer that
// large is not recycled.
func TestLookupAllocations(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	ctx := context.Background()
	for _, tc := range []struct {
		size   int
		goHeap bool
		pinned float64
	}{
		{256, false, 1}, {256, true, 1}, {256 << 10, true, 1}, {256 << 10, false, 2},
	} {
		t.Run(fmt.Sprintf("value_size=%d/go_heap=%t", tc.size, tc.goHeap), func(t *testing.T) {
			db, keys := openLookupBench(t, tc.size, tc.goHeap)
			i := 0
			next := func() []byte { i++; return keys[i%len(keys)] }
			allocs := testing.AllocsPerRun(500, func() {
				if ok, err := db.Has(ctx, next()); err != nil || !ok {
					t.Fatal(ok, err)
				}
			})
			require.Zero(t, allocs, "Has")
			allocs = testing.AllocsPerRun(500, func() {
				if n, err := db.ValueSize(ctx, next()); err != nil || n != tc.size {
					t.Fatal(n, err)
				}
			})
			require.Zero(t, allocs, "ValueSize")
			allocs = testing.AllocsPerRun(500, func() {
				_, c, err := db.GetPinned(ctx, next())
				if err != nil {
					t.Fatal(err)
				}
				_ = c.Close()
			})
			require.LessOrEqual(t, allocs, tc.pinned, "GetPinned")
		})
	}
}

// openLookupBench opens a database through the façade holding enough
// values of size bytes to span several tables, all flushed and cached, and
// returns it with its keys, after reading every value once.
func openLookupBench(tb testing.TB, size int, goHeap bool) (*driver.DB, [][]byte) {
	tb.Helper()
	ctx := context.Background()
	n := max(64, (4<<20)/size) // 4 MiB of values, at least 64
	db := driver.OpenDB(NewConnector(tb.TempDir(), &Options{
		BlockCacheSize: 64 << 20, BlockCacheOnGoHeap: goHeap, DisableAutoCompactions: true,
		WriteBufferSize: 1 << 20,
	}))
	tb.Cleanup(func() { _ = db.Close() })
	keys := make([][]byte, n)
	v := bytes.Repeat([]byte{'v'}, size)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key%08d", i)
		require.NoError(tb, db.Put(ctx, keys[i], v))
	}
	require.NoError(tb, db.Flush(ctx))
	for _, k := range keys {
		if _, err := db.Get(ctx, k); err != nil {
			tb.Fatal(err)
		}
	}
	return db, keys
}
