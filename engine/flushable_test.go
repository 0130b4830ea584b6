package engine

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/memtable"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// isBatchMem reports whether m is a memtable made from a large batch, which
// has no arena.
func isBatchMem(m *memTable) bool { return m.Capacity() == 0 }

// lastImmIsBatch reports whether the newest immutable memtable, if any is
// still waiting for its flush, was made from a batch; ok is false when the
// flush already took it.
func lastImmIsBatch(db *database) (isBatch, ok bool) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if len(db.mu.imm) == 0 {
		return false, false
	}
	return isBatchMem(db.mu.imm[len(db.mu.imm)-1]), true
}

// largeTestBatch fills b with random sets (overwriting keys within the
// batch), deletes and a range deletion or two, applying them to m, until b
// is a large batch for smallOptions' 64 KiB write buffer.
func largeTestBatch(rng *rand.Rand, b *writeBatch, m model, nkeys int, tag string) {
	for i := 0; b.Len() < 40<<10; i++ {
		switch p := rng.IntN(100); {
		case p < 75:
			k := key(rng.IntN(nkeys))
			v := fmt.Sprintf("%s-%d-%s", tag, i, value(rng, 50+rng.IntN(300)))
			b.Put(k, []byte(v))
			m[string(k)] = v
		case p < 98:
			k := key(rng.IntN(nkeys))
			b.Delete(k)
			delete(m, string(k))
		default:
			s, e := key(rng.IntN(nkeys)), key(rng.IntN(nkeys+1))
			b.DeleteRange(s, e)
			m.deleteRange(s, e)
		}
	}
}

// TestFlushableBatchModel writes large batches (each a memtable of its own)
// among small writes, flushes, compactions, reopens, crashes after a
// SyncWAL, and snapshots, and checks every read API against a map after
// each step: Get, MultiGet and iterators both ways with random bounds, for
// the database and for the snapshots taken before each batch.
func TestFlushableBatchModel(t *testing.T) {
	steps := 160
	if testing.Short() {
		steps = 60
	}
	for _, seed := range []uint64{1, 2, 3, 4} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			runFlushableModel(t, seed, steps)
		})
	}
}

func runFlushableModel(t *testing.T, seed uint64, steps int) {
	const nkeys = 150
	rng := rand.New(rand.NewPCG(seed, 12))
	ctx := context.Background()
	fs := vfs.NewMem()
	opts := smallOptions(fs)
	db, err := openDatabase("/db", opts)
	require.NoError(t, err)
	defer func() { _ = db.Close() }()

	m := model{}
	var snaps []modelSnap
	dropSnaps := func() {
		closeSnaps(snaps)
		snaps = nil
	}
	defer dropSnaps()
	batches := 0
	for step := range steps {
		switch op := rng.IntN(100); {
		case op < 30:
			b := newWriteBatch()
			largeTestBatch(rng, b, m, nkeys, fmt.Sprintf("L%d", step))
			var wo *writeOptions
			if rng.IntN(4) == 0 {
				wo = &writeOptions{Sync: true}
			}
			require.NoError(t, db.Write(ctx, b, wo))
			if isBatch, ok := lastImmIsBatch(db); ok {
				require.True(t, isBatch, "step %d: the large batch is the newest immutable memtable", step)
			}
			batches++
		case op < 55:
			k, v := key(rng.IntN(nkeys)), fmt.Sprintf("p%d", step)
			require.NoError(t, db.Put(ctx, k, []byte(v)))
			m[string(k)] = v
		case op < 60:
			k := key(rng.IntN(nkeys))
			require.NoError(t, db.Delete(ctx, k))
			delete(m, string(k))
		case op < 64:
			require.NoError(t, db.Flush(ctx))
		case op < 67:
			require.NoError(t, db.Compact(ctx, nil, nil))
		case op < 70:
			dropSnaps()
			require.NoError(t, db.Close())
			db, err = openDatabase("/db", opts)
			require.NoError(t, err)
		case op < 73:
			// A crash once everything is synced: the WALs of the batches not
			// yet flushed must still be there.
			require.NoError(t, db.SyncWAL(ctx))
			crashed := fs.CrashClone()
			dropSnaps()
			require.NoError(t, db.Close())
			fs = crashed
			opts.FS = fs
			db, err = openDatabase("/db", opts)
			require.NoError(t, err)
		case op < 80 && len(snaps) < 4:
			s, err := db.NewSnapshot()
			require.NoError(t, err)
			snaps = append(snaps, modelSnap{s, m.clone()})
		default:
			checkAgainst(t, rng, db, m, nkeys, fmt.Sprintf("step %d", step))
			checkSnapsAgainst(t, rng, snaps, nkeys, fmt.Sprintf("step %d", step))
		}
	}
	require.Positive(t, batches)
	checkAgainst(t, rng, db, m, nkeys, "end")
	checkSnapsAgainst(t, rng, snaps, nkeys, "end")
	require.NoError(t, db.Compact(ctx, nil, nil))
	checkAgainst(t, rng, db, m, nkeys, "after a full compaction")
	checkVersion(t, db)
	require.NoError(t, db.VerifyChecksum(ctx))
}

// TestFlushableBatchQueue: a large batch becomes an immutable memtable of its
// own, queued after the memtable made immutable for it. The WAL that holds
// it is that memtable's, and its logNum keeps that WAL when the memtable
// before it is flushed: with its own flush held back, a crash (after
// SyncWAL) must still find it; once it is flushed, a reopen must not replay
// it again. Later writes go to the new mutable memtable and shadow it.
func TestFlushableBatchQueue(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	opts := smallOptions(fs)
	opts.MaxWriteBufferNumber = 4
	db, err := openDatabase("/db", opts)
	require.NoError(t, err)
	release := make(chan struct{})
	released := sync.OnceFunc(func() { close(release) })
	hook := func(d *database, mem *memtable.MemTable) {
		if d == db && mem.Capacity() == 0 {
			<-release
		}
	}
	flushStartHook.Store(&hook)
	t.Cleanup(func() {
		released()
		flushStartHook.Store(nil)
	})
	require.NoError(t, db.Put(ctx, []byte("a"), []byte("before")))
	require.NoError(t, db.Put(ctx, []byte("m-only"), []byte("x")))
	m := model{"a": "before", "m-only": "x"}

	seq := db.visibleSeq.Load()
	b := newWriteBatch()
	largeTestBatch(rand.New(rand.NewPCG(1, 1)), b, m, 100, "L")
	b.Put([]byte("a"), []byte("batch"))
	m["a"] = "batch"
	require.NoError(t, db.Write(ctx, b, nil))
	require.Equal(t, seq+uint64(b.Count()), db.visibleSeq.Load(), "one sequence number per record")
	got, err := db.Get(ctx, []byte("a"))
	require.NoError(t, err)
	require.Equal(t, "batch", string(got), "visible once Write returns")

	// The memtable before the batch gets flushed; the batch's flush waits,
	// and its WAL stays.
	db.mu.Lock()
	require.GreaterOrEqual(t, len(db.mu.imm), 1)
	fb, mem := db.mu.imm[len(db.mu.imm)-1], db.mu.mem
	require.True(t, isBatchMem(fb))
	require.True(t, mem.Empty(), "the new mutable memtable holds nothing yet")
	require.Less(t, fb.logNum, mem.logNum, "the batch is in a WAL before the new memtable's")
	require.False(t, fb.OffHeap([]byte("x")))
	if len(db.mu.imm) == 2 {
		require.Less(t, db.mu.imm[0].logNum, fb.logNum, "the batch has a WAL of its own")
	}
	db.mu.Unlock()
	require.Eventually(t, func() bool {
		db.mu.Lock()
		defer db.mu.Unlock()
		return len(db.mu.imm) == 1
	}, 2*time.Minute, time.Millisecond)
	_, err = fs.Stat(manifest.LogFileName("/db", fb.logNum))
	require.NoError(t, err, "the batch's WAL outlives the flush of the memtable before it")

	require.NoError(t, db.Put(ctx, []byte("a"), []byte("after")))
	m["a"] = "after"
	rng := rand.New(rand.NewPCG(2, 2))
	checkAgainst(t, rng, db, m, 100, "the batch not flushed")

	require.NoError(t, db.SyncWAL(ctx))
	crashed := fs.CrashClone()
	released()
	require.NoError(t, db.Flush(ctx))
	checkAgainst(t, rng, db, m, 100, "after the flush")
	require.NoError(t, db.Close())
	// The flushed batch is not replayed (twice the same keys and sequence
	// numbers would fail the check and compaction).
	db, err = openDatabase("/db", opts)
	require.NoError(t, err)
	require.NoError(t, db.Compact(ctx, nil, nil))
	checkAgainst(t, rng, db, m, 100, "reopened after the flush")
	require.NoError(t, db.Check(ctx))
	require.NoError(t, db.Close())

	opts.FS = crashed
	db, err = openDatabase("/db", opts)
	require.NoError(t, err)
	checkDB(t, db)
	checkAgainst(t, rng, db, m, 100, "recovered from the crash before the batch's flush")
	// The memtable flushed before the crash is not replayed again either.
	require.NoError(t, db.Compact(ctx, nil, nil))
	checkAgainst(t, rng, db, m, 100, "recovered and compacted")
}

// TestFlushableBatchReuse: the engine keeps a large batch's buffer as a
// memtable, so a Batch reset and reused after Write, or added to and written
// again, must not change what was written; and writing the same Batch twice
// applies it twice, at new sequence numbers.
func TestFlushableBatchReuse(t *testing.T) {
	ctx := context.Background()
	db, _ := openTestDB(t, nil)
	rng := rand.New(rand.NewPCG(3, 3))
	m := model{}
	b := newWriteBatch()
	largeTestBatch(rng, b, m, 100, "first")
	require.NoError(t, db.Write(ctx, b, nil))
	first := m.clone()

	// Reused after Reset: the first batch's records stay as they were.
	b.Reset()
	m2 := first.clone()
	largeTestBatch(rng, b, m2, 100, "second")
	checkAgainst(t, rng, db, first, 100, "after refilling the written batch")
	require.NoError(t, db.Write(ctx, b, nil))
	checkAgainst(t, rng, db, m2, 100, "second batch")

	// Written twice, with a write in between: the second Write wins again.
	require.NoError(t, db.Put(ctx, key(5), []byte("between")))
	require.NoError(t, db.Write(ctx, b, nil))
	checkAgainst(t, rng, db, m2, 100, "the same batch again")

	// Added to after Write and written again: the old records and the new
	// one, without touching the memtable made of the first Write.
	b.Put(key(6), []byte("appended"))
	m3 := m2.clone()
	m3[string(key(6))] = "appended"
	require.NoError(t, db.Put(ctx, key(6), []byte("between")))
	m2[string(key(6))] = "between"
	snap, err := db.NewSnapshot()
	require.NoError(t, err)
	defer snap.Close()
	require.NoError(t, db.Write(ctx, b, nil))
	checkAgainst(t, rng, db, m3, 100, "the batch with one more record")
	checkAgainst(t, rng, snap, m2, 100, "a snapshot before it")
}

// TestFlushableBatchWriteOptions: a large batch honours DisableWAL (kept by
// the clean Close's flush) and Sync (kept by a crash).
func TestFlushableBatchWriteOptions(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		wo    writeOptions
		crash bool
	}{
		{"DisableWAL", writeOptions{DisableWAL: true}, false},
		{"Sync", writeOptions{Sync: true}, true},
		{"default", writeOptions{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			opts := smallOptions(fs)
			db, err := openDatabase("/db", opts)
			require.NoError(t, err)
			rng := rand.New(rand.NewPCG(4, 4))
			m := model{}
			require.NoError(t, db.Put(ctx, key(1), []byte("small")))
			m[string(key(1))] = "small"
			b := newWriteBatch()
			largeTestBatch(rng, b, m, 100, tc.name)
			require.NoError(t, db.Write(ctx, b, &tc.wo))
			checkAgainst(t, rng, db, m, 100, "written")
			if tc.crash {
				crashed := fs.CrashClone()
				require.NoError(t, db.Close())
				opts.FS = crashed
			} else {
				require.NoError(t, db.Close())
			}
			db, err = openDatabase("/db", opts)
			require.NoError(t, err)
			checkDB(t, db)
			checkAgainst(t, rng, db, m, 100, "reopened")
		})
	}
}

// TestFlushableBatchConcurrentWriters: small writers keep committing in
// groups while large batches commit alone between them; every write is
// applied once, in its own order.
func TestFlushableBatchConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	db, _ := openTestDB(t, nil)
	const writers, perWriter = 4, 300
	var wg sync.WaitGroup
	errs := make(chan error, writers+1)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				k := fmt.Appendf(nil, "w%d-%04d", w, i)
				if err := db.Put(ctx, k, k); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	m := model{}
	rng := rand.New(rand.NewPCG(5, 5))
	for i := range 6 {
		b := newWriteBatch()
		largeTestBatch(rng, b, m, 100, fmt.Sprint("L", i))
		if err := db.Write(ctx, b, nil); err != nil {
			errs <- err
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for w := range writers {
		for i := range perWriter {
			k := fmt.Sprintf("w%d-%04d", w, i)
			m[k] = k
		}
	}
	checkAgainst(t, rng, db, m, 100, "large batches and small writes")
	require.NoError(t, db.Flush(ctx))
	checkAgainst(t, rng, db, m, 100, "flushed")
}

// TestFlushableBatchRangeOnly: a large batch of range deletions alone holds
// no point records; its tombstones delete, before and after its flush.
func TestFlushableBatchRangeOnly(t *testing.T) {
	ctx := context.Background()
	db, _ := openTestDB(t, nil)
	b := newWriteBatch()
	for i := range 2000 {
		b.DeleteRange(key(i), key(i+1))
	}
	require.NoError(t, db.Put(ctx, key(10), []byte("x")))
	require.NoError(t, db.Write(ctx, b, nil))
	_, err := db.Get(ctx, key(10))
	require.True(t, errors.Is(err, ErrNotFound), "%v", err)
	require.NoError(t, db.Flush(ctx))
	_, err = db.Get(ctx, key(10))
	require.True(t, errors.Is(err, ErrNotFound), "%v", err)
}

// TestFlushableBatchWALSyncInBackground: a large batch's Write does not wait
// for the fsync of its WAL, which the switch to the next WAL leaves to the
// background; but nothing reaches the next WAL before that fsync is done, so
// a crash cannot keep a later write and lose the batch. A synced write after
// the batch waits for it, and then both survive a crash.
func TestFlushableBatchWALSyncInBackground(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	opts := smallOptions(fs)
	db, err := openDatabase("/db", opts)
	require.NoError(t, err)
	release := make(chan struct{})
	released := sync.OnceFunc(func() { close(release) })
	hook := func(d *database) {
		if d == db {
			<-release
		}
	}
	prevWALSyncHook.Store(&hook)
	t.Cleanup(func() {
		released()
		prevWALSyncHook.Store(nil)
	})

	m := model{}
	b := newWriteBatch()
	largeTestBatch(rand.New(rand.NewPCG(6, 6)), b, m, 100, "L")
	require.NoError(t, db.Write(ctx, b, nil), "returns with the WAL's sync held back")

	putDone := make(chan error, 1)
	go func() {
		putDone <- db.Put(ioctx.WithWriteOptions(ctx, writeOptions{Sync: true}), key(1), []byte("after"))
	}()
	select {
	case err := <-putDone:
		t.Fatalf("a write after the batch reached the next WAL before the batch's was synced (err %v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	released()
	require.NoError(t, <-putDone)
	m[string(key(1))] = "after"

	crashed := fs.CrashClone()
	require.NoError(t, db.Close())
	opts.FS = crashed
	db, err = openDatabase("/db", opts)
	require.NoError(t, err)
	checkDB(t, db)
	checkAgainst(t, rand.New(rand.NewPCG(7, 7)), db, m, 100, "after a crash")
}

// TestRecoveryTornWALBeforeEmptyWAL: a WAL whose last record is torn, with
// only empty WALs after it, is the crash's trace (the state a crash leaves
// while a large batch's WAL is synced in the background): the database
// opens without that record. A WAL after it that holds records still makes
// the tear damage.
func TestRecoveryTornWALBeforeEmptyWAL(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		nextBytes []byte // the contents of the WAL after the torn one
		wantErr   bool
	}{
		{"empty next WAL", nil, false},
		{"next WAL with data", []byte("x"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			opts := smallOptions(fs)
			db, err := openDatabase("/db", opts)
			require.NoError(t, err)
			require.NoError(t, db.Put(ctx, key(1), []byte("kept")))
			require.NoError(t, db.Put(ctx, key(2), bytes.Repeat([]byte("t"), 100)))
			logNum := db.commit.logNum
			require.NoError(t, db.Close())

			name := manifest.LogFileName("/db", logNum)
			data := readAll(t, fs, name)
			writeAll(t, fs, name, data[:len(data)-10])
			writeAll(t, fs, manifest.LogFileName("/db", logNum+100), tc.nextBytes)

			db, err = openDatabase("/db", opts)
			if tc.wantErr {
				require.ErrorIs(t, err, ErrCorruption)
				return
			}
			require.NoError(t, err)
			checkDB(t, db)
			got, err := db.Get(ctx, key(1))
			require.NoError(t, err)
			require.Equal(t, "kept", string(got))
			_, err = db.Get(ctx, key(2))
			require.ErrorIs(t, err, ErrNotFound, "the torn record is dropped")
		})
	}
}

// TestFlushableBatchTransaction: a transaction whose batch is large commits
// it as a memtable of its own, after its conflict check, which still sees
// every earlier write.
func TestFlushableBatchTransaction(t *testing.T) {
	ctx := context.Background()
	db, _ := openTestDB(t, nil)
	big, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	other, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	m := model{}
	for i := range 300 {
		v := fmt.Sprintf("tx-%d-%s", i, bytes.Repeat([]byte("v"), 150))
		require.NoError(t, big.Put(ctx, key(i), []byte(v)))
		m[string(key(i))] = v
	}
	require.NoError(t, other.Put(ctx, key(1000), []byte("other")))
	require.NoError(t, other.Commit())
	m[string(key(1000))] = "other"
	require.NoError(t, big.Commit())
	checkAgainst(t, rand.New(rand.NewPCG(8, 8)), db, m, 1001, "committed")

	// A large transaction that conflicts is refused whole.
	loser, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	for i := range 300 {
		require.NoError(t, loser.Put(ctx, key(i), bytes.Repeat([]byte("x"), 150)))
	}
	require.NoError(t, db.Put(ctx, key(5), []byte("winner")))
	m[string(key(5))] = "winner"
	require.ErrorIs(t, loser.Commit(), ErrConflict)
	checkAgainst(t, rand.New(rand.NewPCG(9, 9)), db, m, 1001, "after the conflict")
}
