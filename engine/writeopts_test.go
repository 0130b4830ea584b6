package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/ratelimit"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

var (
	bgCtx      = context.Background()
	syncCtx    = ioctx.WithWriteOptions(context.Background(), ioctx.WriteOptions{Sync: true})
	noWALCtx   = ioctx.WithWriteOptions(context.Background(), ioctx.WriteOptions{DisableWAL: true})
	crashedDir = "/db"
)

// reopenCrashed opens the durable state of fs, as after a power loss.
func reopenCrashed(t *testing.T, fs *vfs.MemFS) *database {
	t.Helper()
	db, err := openDatabase(crashedDir, smallOptions(fs.CrashClone()))
	require.NoError(t, err)
	checkDB(t, db)
	return db
}

func requireValue(t *testing.T, db *database, k, want string) {
	t.Helper()
	v, err := db.Get(bgCtx, []byte(k))
	if want == "" {
		require.ErrorIs(t, err, ErrNotFound, "key %s", k)
		return
	}
	require.NoError(t, err, "key %s", k)
	require.Equal(t, want, string(v), "key %s", k)
}

// TestSyncWriteOption: a write made with WriteOptions.Sync survives a power
// loss, and so does every write before it; an unsynced write made after the
// last synced one does not (MemFS.CrashClone keeps only synced bytes), which
// shows the option is what made the difference.
func TestSyncWriteOption(t *testing.T) {
	db, fs := openTestDB(t, nil)
	require.NoError(t, db.Put(bgCtx, []byte("a"), []byte("1")))
	require.NoError(t, db.Put(syncCtx, []byte("b"), []byte("2")))
	require.NoError(t, db.Put(bgCtx, []byte("c"), []byte("3")))
	crashed := reopenCrashed(t, fs)
	requireValue(t, crashed, "a", "1")
	requireValue(t, crashed, "b", "2")
	requireValue(t, crashed, "c", "")

	// Write with explicit options overrides the context's.
	b := newWriteBatch()
	b.Put([]byte("d"), []byte("4"))
	require.NoError(t, db.Write(bgCtx, b, &writeOptions{Sync: true}))
	requireValue(t, reopenCrashed(t, fs), "d", "4")
}

// TestSyncWAL: SyncWAL makes the unsynced writes before it durable.
func TestSyncWAL(t *testing.T) {
	db, fs := openTestDB(t, nil)
	for i := range 100 {
		require.NoError(t, db.Put(bgCtx, key(i), []byte("v")))
	}
	requireValue(t, reopenCrashed(t, fs), string(key(99)), "")
	synced := db.Statistics().TickerCount(statistics.WALFileSynced)
	require.NoError(t, db.SyncWAL(bgCtx))
	require.Equal(t, synced+1, db.Statistics().TickerCount(statistics.WALFileSynced))
	crashed := reopenCrashed(t, fs)
	for i := range 100 {
		requireValue(t, crashed, string(key(i)), "v")
	}

	cancelled, cancel := context.WithCancel(bgCtx)
	cancel()
	require.ErrorIs(t, db.SyncWAL(cancelled), context.Canceled)
}

// TestDisableWAL: a DisableWAL write is visible at once, lost by a crash
// until flushed (even when synced writes follow it), durable after a flush;
// recovery replays the WAL records around the gap it leaves, and the
// sequence numbers stay consistent across reopen.
func TestDisableWAL(t *testing.T) {
	db, fs := openTestDB(t, nil)
	require.NoError(t, db.Put(bgCtx, []byte("k"), []byte("logged-1")))
	require.NoError(t, db.Put(noWALCtx, []byte("k"), []byte("unlogged-2")))
	require.NoError(t, db.Put(noWALCtx, []byte("only-unlogged"), []byte("x")))
	require.NoError(t, db.Put(syncCtx, []byte("later"), []byte("logged-3")))
	requireValue(t, db, "k", "unlogged-2")
	requireValue(t, db, "only-unlogged", "x")

	crashed := reopenCrashed(t, fs)
	requireValue(t, crashed, "k", "logged-1")
	requireValue(t, crashed, "only-unlogged", "")
	requireValue(t, crashed, "later", "logged-3")
	// The recovered database takes new writes above every replayed one.
	require.NoError(t, crashed.Put(bgCtx, []byte("k"), []byte("after-crash")))
	requireValue(t, crashed, "k", "after-crash")

	// A flush makes them durable; logged writes after it replay on top.
	require.NoError(t, db.Flush(bgCtx))
	require.NoError(t, db.Put(syncCtx, []byte("k"), []byte("logged-4")))
	require.NoError(t, db.Put(noWALCtx, []byte("lost"), []byte("y")))
	require.NoError(t, db.Put(syncCtx, []byte("last"), []byte("z")))
	crashed = reopenCrashed(t, fs)
	requireValue(t, crashed, "k", "logged-4")
	requireValue(t, crashed, "only-unlogged", "x")
	requireValue(t, crashed, "lost", "")
	requireValue(t, crashed, "last", "z")

	// Sync and DisableWAL together are refused, as in RocksDB.
	both := ioctx.WithWriteOptions(bgCtx, ioctx.WriteOptions{Sync: true, DisableWAL: true})
	require.ErrorIs(t, db.Put(both, []byte("k"), []byte("v")), ErrInvalidArgument)
	// The database's sync default does not apply to DisableWAL writes.
	syncDB, _ := openTestDB(t, &Options{Sync: true})
	require.NoError(t, syncDB.Put(noWALCtx, []byte("k"), []byte("v")))
	require.Zero(t, syncDB.Statistics().TickerCount(statistics.WALFileBytes))
}

// TestDisableWALConcurrent: DisableWAL and logged writes from many
// goroutines commit in separate groups and all become visible.
func TestDisableWALConcurrent(t *testing.T) {
	db, _ := openTestDB(t, nil)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := bgCtx
			if g%2 == 0 {
				ctx = noWALCtx
			}
			for i := range 200 {
				if err := db.Put(ctx, []byte(fmt.Sprintf("g%d-%03d", g, i)), []byte("v")); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for g := range 8 {
		for i := range 200 {
			requireValue(t, db, fmt.Sprintf("g%d-%03d", g, i), "v")
		}
	}
}

// TestWALRateLimiterCharge: a write at a priority other than Total charges
// its batch's bytes to the limiter when the limiter covers writes.
func TestWALRateLimiterCharge(t *testing.T) {
	b := newWriteBatch()
	b.Put([]byte("key"), make([]byte, 1000))
	for _, tc := range []struct {
		name string
		mode ratelimit.Mode
		wo   writeOptions
		want int64
	}{
		{"writes/high", ratelimit.ModeWrites, writeOptions{RateLimiterPriority: ioctx.PriorityHigh}, int64(b.Len())},
		{"all/user", ratelimit.ModeAll, writeOptions{RateLimiterPriority: ioctx.PriorityUser}, int64(b.Len())},
		{"reads only", ratelimit.ModeReads, writeOptions{RateLimiterPriority: ioctx.PriorityHigh}, 0},
		{"total", ratelimit.ModeWrites, writeOptions{}, 0},
		{"no WAL", ratelimit.ModeWrites, writeOptions{RateLimiterPriority: ioctx.PriorityHigh, DisableWAL: true}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim := ratelimit.NewGeneric(1<<30, 0, 0, tc.mode)
			opts := smallOptions(nil)
			opts.RateLimiter = lim
			db, _ := openTestDB(t, opts)
			require.NoError(t, db.Write(bgCtx, b, &tc.wo))
			require.Equal(t, tc.want, lim.TotalBytesThrough(ioctx.PriorityTotal))
			if tc.want > 0 {
				require.Equal(t, tc.want, lim.TotalBytesThrough(tc.wo.RateLimiterPriority))
				require.EqualValues(t, tc.want, db.Statistics().TickerCount(statistics.RateLimiterBytesWrite))
			}
		})
	}

	// A write waiting for the limiter gives up with its context.
	lim := ratelimit.NewGeneric(1, 0, 0, ratelimit.ModeWrites)
	opts := smallOptions(nil)
	opts.RateLimiter = lim
	db, _ := openTestDB(t, opts)
	ctx, cancel := context.WithCancel(ioctx.WithWriteOptions(bgCtx, ioctx.WriteOptions{RateLimiterPriority: ioctx.PriorityLow}))
	cancel()
	err := db.Put(ctx, []byte("k"), make([]byte, 100))
	require.ErrorIs(t, err, context.Canceled)
	requireValue(t, db, "k", "")
}

// TestDriverWriteOptions: the façade's resolved options reach the engine
// through the driver: a Conn whose session syncs makes every write durable.
func TestDriverWriteOptions(t *testing.T) {
	fs := vfs.NewMem()
	db := driver.OpenDB(NewConnector(crashedDir, smallOptions(fs)))
	defer db.Close()
	c, err := db.Conn(bgCtx)
	require.NoError(t, err)
	require.NoError(t, db.Put(bgCtx, []byte("unsynced"), []byte("1")))
	c.SetWriteOptions(ioctx.WriteOptions{Sync: true})
	require.NoError(t, c.Put(bgCtx, []byte("synced"), []byte("2")))
	var b driver.Batch
	b.Put([]byte("batch"), []byte("3"))
	b.Delete([]byte("nothing"))
	require.NoError(t, c.Write(bgCtx, &b))
	crashed := reopenCrashed(t, fs)
	requireValue(t, crashed, "unsynced", "1") // before a synced write
	requireValue(t, crashed, "synced", "2")
	requireValue(t, crashed, "batch", "3")

	require.NoError(t, db.Put(noWALCtx, []byte("memtable-only"), []byte("4")))
	v, err := db.Get(bgCtx, []byte("memtable-only"))
	require.NoError(t, err)
	require.Equal(t, "4", string(v))
	require.NoError(t, db.SyncWAL(bgCtx))
	requireValue(t, reopenCrashed(t, fs), "memtable-only", "")

	// A Tx whose BeginTx ctx asks for Sync commits durably.
	tx, err := db.BeginTx(syncCtx, nil)
	require.NoError(t, err)
	require.NoError(t, tx.Put(bgCtx, []byte("tx"), []byte("5")))
	require.NoError(t, tx.Commit())
	requireValue(t, reopenCrashed(t, fs), "tx", "5")
}

// TestDriverSnapshot: a façade snapshot over the engine reads the state at
// its creation, tagged with each API's activity, and closes cleanly.
func TestDriverSnapshot(t *testing.T) {
	db := driver.OpenDB(NewConnector(crashedDir, smallOptions(vfs.NewMem())))
	defer db.Close()
	for i := range 10 {
		require.NoError(t, db.Put(bgCtx, key(i), []byte("old")))
	}
	snap, err := db.NewSnapshot(bgCtx)
	require.NoError(t, err)
	for i := range 10 {
		require.NoError(t, db.Put(bgCtx, key(i), []byte("new")))
	}
	require.NoError(t, db.Delete(bgCtx, key(0)))
	require.NoError(t, db.Flush(bgCtx))

	v, err := snap.Get(bgCtx, key(0))
	require.NoError(t, err)
	require.Equal(t, "old", string(v))
	vals, err := snap.MultiGet(bgCtx, [][]byte{key(1), key(99)})
	require.NoError(t, err)
	require.Equal(t, [][]byte{[]byte("old"), nil}, vals)
	it, err := snap.NewIterator(bgCtx, nil)
	require.NoError(t, err)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		require.Equal(t, "old", string(it.Value()))
		n++
	}
	require.NoError(t, it.Error())
	require.Equal(t, 10, n)
	require.NoError(t, snap.Close())
	require.NoError(t, it.Close())
	_, err = snap.Get(bgCtx, key(0))
	require.ErrorIs(t, err, driver.ErrClosed)
	v, err = db.Get(bgCtx, key(1))
	require.NoError(t, err)
	require.Equal(t, "new", string(v))

	// A snapshot left open is released by Close.
	_, err = db.NewSnapshot(bgCtx)
	require.NoError(t, err)
}

// TestDriverDeleteRange: DB.DeleteRange, a Batch's range deletion and
// Tx.DeleteRange reach the engine through the façade.
func TestDriverDeleteRange(t *testing.T) {
	db := driver.OpenDB(NewConnector(crashedDir, smallOptions(vfs.NewMem())))
	defer db.Close()
	for i := range 20 {
		require.NoError(t, db.Put(bgCtx, key(i), []byte("v")))
	}
	require.NoError(t, db.DeleteRange(bgCtx, key(2), key(5)))
	var b driver.Batch
	b.Put(key(100), []byte("v"))
	b.DeleteRange(key(8), key(10))
	b.Put(key(9), []byte("again")) // after the range deletion: it stays
	require.NoError(t, db.Write(bgCtx, &b))
	tx, err := db.BeginTx(bgCtx, nil)
	require.NoError(t, err)
	require.NoError(t, tx.DeleteRange(bgCtx, key(12), key(14)))
	require.NoError(t, tx.Commit())
	require.NoError(t, db.Flush(bgCtx))

	it, err := db.NewIterator(bgCtx, nil)
	require.NoError(t, err)
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, string(it.Key()))
	}
	require.NoError(t, it.Close())
	var want []string
	for _, i := range []int{0, 1, 5, 6, 7, 9, 10, 11, 14, 15, 16, 17, 18, 19, 100} {
		want = append(want, string(key(i)))
	}
	require.Equal(t, want, got)
	v, err := db.Get(bgCtx, key(9))
	require.NoError(t, err)
	require.Equal(t, "again", string(v))
}

// TestDriverWriteAllocations: a Put, and a Write of a small batch, through
// the façade into the engine allocate nothing once the memtable's arena
// and the pools are warm, with write options in ctx.
func TestDriverWriteAllocations(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	opts := smallOptions(vfs.NewMem())
	opts.WriteBufferSize = 64 << 20 // no memtable switch during the runs
	db := driver.OpenDB(NewConnector(crashedDir, opts))
	defer db.Close()
	ctx := ioctx.WithWriteOptions(bgCtx, ioctx.WriteOptions{RateLimiterPriority: ioctx.PriorityLow})
	k, v := []byte("key-00000000"), make([]byte, 100)
	var b driver.Batch
	b.Put(k, v)
	b.Delete([]byte("gone"))
	for _, tc := range []struct {
		name string
		f    func() error
	}{
		{"Put", func() error { return db.Put(ctx, k, v) }},
		{"Delete", func() error { return db.Delete(ctx, k) }},
		{"Write", func() error { return db.Write(ctx, &b) }},
	} {
		require.NoError(t, tc.f()) // warm the pools
		allocs := testing.AllocsPerRun(1000, func() {
			if err := tc.f(); err != nil {
				t.Fatal(err)
			}
		})
		require.Zero(t, allocs, tc.name)
	}
}

// TestTxWriteOptions: a transaction's commit is written with its TxOptions'
// write options: DisableWAL keeps it out of the WAL (a crash loses it), a
// priority charges its WAL bytes, and Sync with DisableWAL is refused at
// BeginTx.
func TestTxWriteOptions(t *testing.T) {
	lim := ratelimit.NewGeneric(1<<30, 0, 0, ratelimit.ModeWrites)
	opts := smallOptions(nil)
	opts.RateLimiter = lim
	db, fs := openTestDB(t, opts)

	commit := func(o *txnOptions, key string) {
		t.Helper()
		tx, err := db.BeginTx(bgCtx, o)
		require.NoError(t, err)
		require.NoError(t, tx.Put(bgCtx, []byte(key), []byte("v")))
		require.NoError(t, tx.Commit())
	}
	commit(&txnOptions{Sync: true}, "logged")
	require.Zero(t, lim.TotalBytesThrough(ioctx.PriorityTotal), "an uncharged commit")
	commit(&txnOptions{DisableWAL: true, RateLimiterPriority: ioctx.PriorityHigh}, "unlogged")
	require.Zero(t, lim.TotalBytesThrough(ioctx.PriorityTotal), "a commit without WAL writes no WAL bytes to charge")
	commit(&txnOptions{Sync: true, RateLimiterPriority: ioctx.PriorityHigh}, "charged")
	require.NotZero(t, lim.TotalBytesThrough(ioctx.PriorityHigh))
	requireValue(t, db, "unlogged", "v")

	crashed := reopenCrashed(t, fs)
	requireValue(t, crashed, "logged", "v")
	requireValue(t, crashed, "charged", "v")
	requireValue(t, crashed, "unlogged", "")

	_, err := db.BeginTx(bgCtx, &txnOptions{Sync: true, DisableWAL: true})
	require.ErrorIs(t, err, ErrInvalidArgument)
}

// TestCloseFlushesUnloggedWrites: DisableWAL writes live only in memtables,
// so a clean Close flushes them and a reopen finds them; a crash still loses
// them.
func TestCloseFlushesUnloggedWrites(t *testing.T) {
	fs := vfs.NewMem()
	db, err := openDatabase("/db", smallOptions(fs))
	require.NoError(t, err)
	require.NoError(t, db.Put(noWALCtx, []byte("unlogged"), []byte("v")))
	require.NoError(t, db.Put(bgCtx, []byte("logged"), []byte("v")))
	require.NoError(t, db.Close())

	db, err = openDatabase("/db", smallOptions(fs))
	require.NoError(t, err)
	requireValue(t, db, "unlogged", "v")
	requireValue(t, db, "logged", "v")
	require.NoError(t, db.Close())
}

// TestOversizedBatchArenaNotPooled: a batch larger than the write buffer
// gets a memtable of its own size, and once that memtable is flushed its
// arena is freed rather than kept for reuse by normal memtables.
func TestOversizedBatchArenaNotPooled(t *testing.T) {
	db, _ := openTestDB(t, smallOptions(nil))
	b := newWriteBatch()
	for i := range 4000 { // about 10 times the 64 KiB write buffer, nodes included
		b.Put([]byte(fmt.Sprintf("key-%06d", i)), make([]byte, 100))
	}
	require.NoError(t, db.Write(bgCtx, b, nil))
	require.NoError(t, db.Flush(bgCtx))
	require.NoError(t, db.Put(bgCtx, []byte("small"), []byte("v")))
	require.NoError(t, db.Flush(bgCtx))
	requireValue(t, db, "key-003999", string(make([]byte, 100)))

	// Neither the memtables in use nor the pool hold the big arena.
	standard := int(db.opts.WriteBufferSize + db.opts.WriteBufferSize/8)
	db.mu.Lock()
	capacities := []int{db.mu.mem.Capacity()}
	db.mu.Unlock()
	db.arenas.mu.Lock()
	for _, m := range db.arenas.free {
		capacities = append(capacities, m.Capacity())
	}
	db.arenas.mu.Unlock()
	for _, c := range capacities {
		require.LessOrEqual(t, c, 2*standard, "an arena of %d bytes is in use or pooled: %v", c, capacities)
	}
}
