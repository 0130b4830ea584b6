package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/memtable"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// TestCommitGroupFitsMemtable drives one commit group whose batches fit the
// mutable memtable each on its own but not all together: a leader that
// checked only its own batch against the memtable's room applied the group
// into an arena too small for it, failed with "memtable: arena full" after
// writing the group's WAL record, and stopped every write until a reopen
// (internal/crashtest's TestConcurrentBatchesSmallMemtable). The group must stop
// at the batches that fit; the next leader switches memtables first.
//
// The queue is held (headAloneLocked, as Flush does) while the writers
// queue, so the group forms whatever the scheduling.
func TestCommitGroupFitsMemtable(t *testing.T) {
	for _, disableWAL := range []bool{false, true} {
		t.Run(fmt.Sprintf("disableWAL=%v", disableWAL), func(t *testing.T) {
			opts := smallOptions(nil)
			db, _ := openTestDB(t, opts)
			ctx := context.Background()
			wo := &writeOptions{DisableWAL: disableWAL}

			n := fillMemtable(t, db)
			const writers = 4
			batches := groupBatches(writers)

			// Hold the queue while the writers queue behind it.
			head := db.headAloneLocked(ctx)
			db.mu.Unlock()
			errs := make(chan error, writers)
			var wg sync.WaitGroup
			for _, b := range batches {
				wg.Go(func() { errs <- db.Write(ctx, b, wo) })
			}
			for {
				db.mu.Lock()
				queued := len(db.mu.writers)
				db.mu.Unlock()
				if queued == writers+1 {
					break
				}
				time.Sleep(100 * time.Microsecond)
			}
			db.mu.Lock()
			db.finishGroupLocked(db.mu.writers[:1], nil)
			db.mu.Unlock()
			writerPool.Put(head)
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}

			// Every write is there, and the database still takes writes.
			for g := range batches {
				for i := range 3 {
					v, err := db.Get(ctx, []byte(fmt.Sprintf("group%d-%d", g, i)))
					require.NoError(t, err)
					require.Len(t, v, 1000)
				}
			}
			require.NoError(t, db.Put(ctx, []byte("after"), fillValue))
			for i := range n {
				v, err := db.Get(ctx, key(i))
				require.NoError(t, err)
				require.Equal(t, fillValue, v)
			}
		})
	}
}

// fillValue is fillMemtable's value.
var fillValue = make([]byte, 100)

// fillMemtable fills db's memtable (smallOptions: 64 KiB) with keys 0, 1,
// ... of fillValue to just below the write buffer size, and returns how
// many it wrote. The memtable still takes writes, and its arena's headroom
// (an eighth of the write buffer, 8 KiB) holds one or two of
// groupBatches's batches, not four.
func fillMemtable(t *testing.T, db *database) int {
	t.Helper()
	memSize := func() int {
		db.mu.Lock()
		defer db.mu.Unlock()
		return db.mu.mem.ApproximateSize()
	}
	n := 0
	for memSize() < int(db.opts.WriteBufferSize)-300 {
		require.NoError(t, db.Put(context.Background(), key(n), fillValue))
		n++
	}
	require.Less(t, memSize(), int(db.opts.WriteBufferSize), "the fill switched memtables")
	return n
}

// groupBatches returns n batches of three 1,000-byte values, batch g's
// keys group<g>-0..2.
func groupBatches(n int) []*writeBatch {
	batches := make([]*writeBatch, n)
	for g := range batches {
		batches[g] = newWriteBatch()
		for i := range 3 {
			batches[g].Put([]byte(fmt.Sprintf("group%d-%d", g, i)), make([]byte, 1000))
		}
	}
	return batches
}

// TestConcurrentBatchesFitMemtable is internal/crashtest's reproduction of
// the arena-full bug inside the engine: four goroutines writing batches of
// 1 to 10 values of up to 1,200 bytes into 64 KiB memtables. Before commit
// groups were bounded by the memtable's room, a write failed with "memtable:
// arena full" within a few hundred writes per goroutine; the bound makes
// every write fit whatever the groups are.
func TestConcurrentBatchesFitMemtable(t *testing.T) {
	db, _ := openTestDB(t, nil)
	ctx := context.Background()
	writes := 600
	if testing.Short() {
		writes = 200
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			b := newWriteBatch()
			for i := range writes {
				b.Reset()
				n := 1 + rng.IntN(10)
				for range n {
					b.Put(fmt.Appendf(nil, "k%06d", rng.IntN(100000)), make([]byte, rng.IntN(1200)))
				}
				if err := db.Write(ctx, b, nil); err != nil {
					errs <- fmt.Errorf("goroutine %d, write %d (%d puts, %d bytes): %w", g, i, n, b.Len(), err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestCommitGroupOverflow commits a group too big for the memtable's room
// directly (commitLocked, bypassing leadLocked's bound), as the bound
// being wrong would: the batches that do not fit must go to a memtable of
// their own, queued after the full one with its WAL, and the write must
// succeed without stopping later writes. Every write survives a crash
// before and after a flush.
func TestCommitGroupOverflow(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	opts := smallOptions(fs)
	db, err := openDatabase("/db", opts)
	require.NoError(t, err)
	checkDB(t, db)
	n := fillMemtable(t, db)
	batches := groupBatches(4)

	group := make([]*writer, len(batches))
	for g, b := range batches {
		group[g] = &writer{batch: &b.b, ctx: ctx}
	}
	// No assertion while d.mu is held: a failing one would leave it
	// locked, and the cleanup's Close waiting for it.
	head := db.headAloneLocked(ctx)
	full := db.mu.mem
	room := full.Room()
	err = db.commitLocked(group, false)
	bgErr := db.bgErrorLocked()
	mem := db.mu.mem
	db.finishGroupLocked(db.mu.writers[:1], nil)
	db.mu.Unlock()
	writerPool.Put(head)
	require.Less(t, room, 4*memtable.ApplyBound(&batches[0].b), "the group fits: the test tests nothing")
	require.NoError(t, err)
	require.Nil(t, bgErr)
	require.NotSame(t, full, mem, "the overflow switched memtables")

	require.NoError(t, db.Put(ctx, []byte("after"), fillValue))
	require.NoError(t, db.SyncWAL(ctx))
	check := func(db *database, what string) {
		t.Helper()
		for g := range batches {
			for i := range 3 {
				v, err := db.Get(ctx, []byte(fmt.Sprintf("group%d-%d", g, i)))
				require.NoError(t, err, what)
				require.Len(t, v, 1000, what)
			}
		}
		for _, k := range append([][]byte{[]byte("after")}, key(0), key(n-1)) {
			v, err := db.Get(ctx, k)
			require.NoError(t, err, "%s: %s", what, k)
			require.Equal(t, fillValue, v, what)
		}
	}
	check(db, "after the overflow")
	crashed := func(what string) {
		t.Helper()
		db2, err := openDatabase("/db", smallOptions(fs.CrashClone()))
		require.NoError(t, err, what)
		check(db2, what)
		require.NoError(t, db2.Check(ctx))
		require.NoError(t, db2.Close())
	}
	crashed("a crash before the flush")
	require.NoError(t, db.Flush(ctx))
	crashed("a crash after the flush")
}
