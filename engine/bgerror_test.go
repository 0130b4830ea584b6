package engine

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/compact"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// fullDiskDB is a database on a MemFS whose space a DiskFull limits.
type fullDiskDB struct {
	t     *testing.T
	mem   *vfs.MemFS
	full  *errorfs.DiskFull
	db    *database
	acked map[string]string
	rng   *rand.Rand
}

func openFullDiskDB(t *testing.T, opts *Options, injs ...errorfs.Injector) *fullDiskDB {
	f := &fullDiskDB{t: t, mem: vfs.NewMem(), full: errorfs.NewDiskFull(1 << 40), acked: map[string]string{},
		rng: rand.New(rand.NewPCG(5, 6))}
	opts.FS = errorfs.Wrap(f.mem, errorfs.Any(append(injs, f.full)...))
	db, err := openDatabase("/db", opts)
	require.NoError(t, err)
	f.db = db
	checkDB(t, db)
	return f
}

// put writes a value of n random bytes under key and remembers it if the
// write is acknowledged.
func (f *fullDiskDB) put(key string, n int, sync bool) error {
	v := make([]byte, n)
	for i := range v {
		v[i] = byte(f.rng.Uint32())
	}
	b := newWriteBatch()
	b.Put([]byte(key), v)
	err := f.db.Write(context.Background(), b, &writeOptions{Sync: sync})
	if err == nil {
		f.acked[key] = string(v)
	}
	return err
}

// putUntilWALFails writes unsynced values of 1000 bytes under keys k000000,
// k000001, ... until a write fails, and returns that write's key and error.
// The WAL's file write happens after a write is acknowledged, on a goroutine
// of its own, so on a busy machine any number of writes may be acknowledged
// before it runs and fails (and with enough of them the memtable fills and
// a flush fails first, with another error): past the room left, the test
// waits for that failure itself — the WAL file's sticky error, which the
// next write reports — polled with a deadline far beyond any machine's
// slowness, rather than for a number of writes.
func (f *fullDiskDB) putUntilWALFails() (failedKey string, err error) {
	f.t.Helper()
	giveUp := time.Now().Add(2 * time.Minute)
	for i := 0; ; i++ {
		failedKey = fmt.Sprintf("k%06d", i)
		if err = f.put(failedKey, 1000, false); err != nil {
			return failedKey, err
		}
		if i < 20 {
			continue // still within the room left, or just past it
		}
		for !f.walWriteFailed() {
			if time.Now().After(giveUp) {
				f.t.Fatalf("%d writes and no failed WAL write after 2 minutes", i+1)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// walWriteFailed reports whether the current WAL's background writer has
// failed. Only the write leader touches d.commit, and the test's goroutine
// is the only writer, so it may read it between writes.
func (f *fullDiskDB) walWriteFailed() bool {
	w := f.db.commit.logFile
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err != nil
}

// leaveRoom sets the free space to n bytes, once every WAL byte written so
// far is on the filesystem and the files that flushes made obsolete are
// deleted (the flush loop deletes them after Flush returns: this deletes
// them first, so that no deletion frees space after the budget is set).
func (f *fullDiskDB) leaveRoom(n int64) {
	require.NoError(f.t, f.put("sync", 10, true))
	f.db.deleteObsoleteFiles(false)
	f.full.SetBudget(f.full.Used() + n)
}

// checkAcked reads back every acknowledged write from db.
func (f *fullDiskDB) checkAcked(db *database) {
	f.t.Helper()
	for k, v := range f.acked {
		got, err := db.Get(context.Background(), []byte(k))
		require.NoError(f.t, err, "acknowledged key %s", k)
		require.Equal(f.t, v, string(got), "acknowledged key %s", k)
	}
}

// reopen closes the database and opens it again on the same MemFS without
// fault injection, and checks every acknowledged write.
func (f *fullDiskDB) reopen() {
	f.t.Helper()
	require.NoError(f.t, f.db.Close())
	db, err := openDatabase("/db", &Options{FS: f.mem})
	require.NoError(f.t, err, "reopen")
	checkDB(f.t, db)
	f.checkAcked(db)
	require.NoError(f.t, db.Put(context.Background(), []byte("after-reopen"), []byte("v")))
}

// resumeOrWait frees no space itself; it waits for the database to accept
// writes again, by Resume or by its own retries.
func (f *fullDiskDB) resumeOrWait(resume bool) {
	f.t.Helper()
	ctx := context.Background()
	if resume {
		require.NoError(f.t, f.db.Resume(ctx))
		require.NoError(f.t, f.put("after-resume", 100, false), "writes go on once Resume returned nil")
		return
	}
	var err error
	require.Eventually(f.t, func() bool {
		err = f.put("after-retry", 100, false)
		return err == nil
	}, 2*time.Minute, 2*time.Millisecond, "writes must resume without a reopen: %v", err)
}

const noSpaceStopsWrites = "(no space left on device): writes are stopped until space is freed"

// TestNoSpaceStopsWritesUntilSpaceIsFreed fills the disk during a WAL write
// and during a flush: writes then fail with an error that says so and what
// happens next; once space is freed they go on without a reopen, by the
// database's own retry or by Resume; and every acknowledged write is there,
// also after a reopen.
func TestNoSpaceStopsWritesUntilSpaceIsFreed(t *testing.T) {
	ctx := context.Background()
	for _, where := range []string{"wal", "flush"} {
		for _, resume := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/resume=%t", where, resume), func(t *testing.T) {
				f := openFullDiskDB(t, &Options{WriteBufferSize: 1 << 20, DisableAutoCompactions: true})
				var err error
				var failedKey string
				switch where {
				case "wal":
					// Unsynced writes: the WAL's file write happens after
					// the write is acknowledged, and a later write finds
					// it failed.
					f.leaveRoom(8 << 10)
					failedKey, err = f.putUntilWALFails()
					require.Error(t, err)
					require.Contains(t, err.Error(), "engine: background WAL write failed "+noSpaceStopsWrites)
					require.Contains(t, err.Error(), "switches to a new WAL")
				case "flush":
					for i := range 20 {
						require.NoError(t, f.put(fmt.Sprintf("k%04d", i), 1000, false))
					}
					f.leaveRoom(1 << 10)
					err = f.db.Flush(ctx)
					require.Error(t, err)
					require.Contains(t, err.Error(), "engine: background flush failed "+noSpaceStopsWrites)
					require.Contains(t, err.Error(), "retries the flush")
				}
				require.ErrorIs(t, err, syscall.ENOSPC)
				require.Contains(t, err.Error(), "DB.Resume")

				// Writes, Flush and Compact stop with the same error;
				// reads go on.
				err2 := f.put("stopped", 10, false)
				require.ErrorIs(t, err2, syscall.ENOSPC)
				require.Contains(t, err2.Error(), noSpaceStopsWrites)
				require.ErrorIs(t, f.db.Flush(ctx), syscall.ENOSPC)
				require.ErrorIs(t, f.db.Compact(ctx, nil, nil), syscall.ENOSPC)
				f.checkAcked(f.db)
				// With the disk still full, a retry fails.
				require.ErrorIs(t, f.db.Resume(ctx), syscall.ENOSPC)

				f.full.SetBudget(1 << 40)
				f.resumeOrWait(resume)
				f.checkAcked(f.db)
				if where == "wal" {
					// The write that saw the WAL fail was not applied.
					_, err := f.db.Get(ctx, []byte(failedKey))
					require.ErrorIs(t, err, ErrNotFound)
				}
				require.NoError(t, f.db.Check(ctx))
				f.reopen()
			})
		}
	}
}

// TestReopenBeforeWALRecovery: closed while writes are stopped by a WAL
// that ran out of space, the database reports the failure from Close and
// reopens (the failed WAL is still the newest, so its torn tail is
// tolerated), with every write synced before the failure.
func TestReopenBeforeWALRecovery(t *testing.T) {
	f := openFullDiskDB(t, &Options{WriteBufferSize: 1 << 20, DisableAutoCompactions: true})
	for i := range 10 {
		require.NoError(t, f.put(fmt.Sprintf("synced%02d", i), 1000, true))
	}
	synced := maps.Clone(f.acked)
	f.leaveRoom(8 << 10)
	_, err := f.putUntilWALFails()
	require.ErrorIs(t, err, syscall.ENOSPC)
	err = f.db.Close()
	require.ErrorIs(t, err, syscall.ENOSPC, "Close reports the WAL's failure")
	db, err := openDatabase("/db", &Options{FS: f.mem})
	require.NoError(t, err)
	checkDB(t, db)
	f.acked = synced
	f.checkAcked(db)
}

// TestCompactionNoSpaceIsSoft: a compaction that runs out of space pauses
// compactions but not writes, until L0 is full: then a write that needs a
// new memtable fails with the error instead of waiting for a compaction that
// cannot run. Compactions resume once space is freed.
func TestCompactionNoSpaceIsSoft(t *testing.T) {
	ctx := context.Background()
	for _, resume := range []bool{false, true} {
		t.Run(fmt.Sprintf("resume=%t", resume), func(t *testing.T) {
			held, release := make(chan struct{}), make(chan struct{})
			var once atomic.Bool
			hook := func(d *database, c *compact.Compaction) {
				if once.CompareAndSwap(false, true) {
					close(held)
					<-release
				}
			}
			compactionStartHook.Store(&hook)
			t.Cleanup(func() { compactionStartHook.Store(nil) })
			f := openFullDiskDB(t, &Options{
				WriteBufferSize:                1 << 20,
				Level0FileNumCompactionTrigger: 2,
				Level0SlowdownWritesTrigger:    2,
				Level0StopWritesTrigger:        2,
			})
			released := false
			releaseOnce := func() {
				if !released {
					released = true
					close(release)
				}
			}
			t.Cleanup(releaseOnce) // registered after the database's close, so it runs first
			for round := range 2 {
				// Overlapping tables, so the compaction is no trivial move.
				for i := range 20 {
					require.NoError(t, f.put(fmt.Sprintf("k%04d", 2*i+round), 1000, false))
				}
				require.NoError(t, f.db.Flush(ctx))
			}
			// Two L0 tables: the background compaction starts and holds
			// until the disk is full.
			<-held
			f.leaveRoom(2 << 10)
			releaseOnce()

			require.Eventually(t, func() bool {
				f.db.mu.Lock()
				defer f.db.mu.Unlock()
				return f.db.bgErrorLocked() != nil
			}, 2*time.Minute, time.Millisecond)

			require.NoError(t, f.put("small", 10, false), "a compaction out of space does not stop writes")
			err := f.db.Resume(ctx)
			require.ErrorIs(t, err, syscall.ENOSPC, "the retry fails while the disk is full")
			require.Contains(t, err.Error(), "engine: background compaction failed (no space left on device): "+
				"compactions are paused until space is freed")
			// A write that needs a new memtable while L0 is full fails.
			err = f.put("big", 3<<19, false)
			require.ErrorIs(t, err, syscall.ENOSPC)
			require.Contains(t, err.Error(), "writes go on until L0 fills")

			f.full.SetBudget(1 << 40)
			if resume {
				require.NoError(t, f.db.Resume(ctx))
			}
			require.Eventually(t, func() bool {
				f.db.mu.Lock()
				defer f.db.mu.Unlock()
				return f.db.bgErrorLocked() == nil && f.db.l0CountLocked() == 0
			}, 2*time.Minute, time.Millisecond, "compactions resume once space is freed")
			// The unsynced "small" write may have reached the WAL while the
			// disk was full, after the check above: a hard error, which the
			// flush loop recovers from by itself. Writes resume once it has.
			require.Eventually(t, func() bool { return f.put("big", 3<<19, false) == nil },
				2*time.Minute, 10*time.Millisecond, "writes resume once space is freed")
			f.checkAcked(f.db)
			f.reopen()
		})
	}
}

// TestFatalBackgroundErrorStopsWritesUntilReopen: errors that freeing space
// does not cure (an IO error, corruption, a failed MANIFEST write, even one
// for lack of space) stop writes until a reopen, which recovers everything
// acknowledged; no retry runs meanwhile, and after a failed MANIFEST edit
// no file is deleted.
func TestFatalBackgroundErrorStopsWritesUntilReopen(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		err   error
		match func(errorfs.Op) bool
		is    error
		want  string
	}{{
		name:  "EIO writing a table",
		err:   syscall.EIO,
		match: func(op errorfs.Op) bool { return op.Kind == errorfs.OpFileWrite && strings.HasSuffix(op.Path, ".sst") },
		is:    syscall.EIO,
		want:  "engine: background flush failed: writes are stopped until the database is reopened",
	}, {
		name: "corruption reading a new table back",
		err:  base.CorruptionErrorf("test: bad block"),
		match: func(op errorfs.Op) bool {
			return op.Kind == errorfs.OpFileRead && op.IO.Activity == ioctx.ActivityFlush
		},
		is:   ErrCorruption,
		want: "engine: background flush failed (corruption): writes are stopped until the database is reopened; run DB.Check then",
	}, {
		name: "no space writing the MANIFEST",
		err:  syscall.ENOSPC,
		match: func(op errorfs.Op) bool {
			return op.Kind == errorfs.OpFileWrite && strings.Contains(op.Path, "MANIFEST")
		},
		is: syscall.ENOSPC,
		want: "engine: background flush failed (no space left on device), and a MANIFEST edit may or may not be durable: " +
			"writes, flushes, compactions and file deletions are stopped until the database is reopened",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var inject atomic.Bool
			inj := errorfs.InjectError(tc.err, errorfs.PredicateFunc(tc.name, func(op errorfs.Op) bool {
				return inject.Load() && tc.match(op)
			}))
			f := openFullDiskDB(t, &Options{WriteBufferSize: 1 << 20, DisableAutoCompactions: true}, inj)
			for i := range 20 {
				require.NoError(t, f.put(fmt.Sprintf("k%04d", i), 100, false))
			}
			tables := func() (n int) {
				names, err := f.mem.List("/db")
				require.NoError(t, err)
				for _, name := range names {
					if kind, _, ok := manifest.ParseFileName(name); ok && kind == manifest.FileKindTable {
						n++
					}
				}
				return n
			}
			inject.Store(true)
			err := f.db.Flush(ctx)
			require.ErrorIs(t, err, tc.is)
			require.Contains(t, err.Error(), tc.want)
			inject.Store(false)
			tablesAfterFailure := tables()

			// Nothing retries: the error stands, past several backoffs.
			err = f.db.Resume(ctx)
			require.ErrorIs(t, err, tc.is)
			require.Contains(t, err.Error(), tc.want)
			time.Sleep(5 * bgRetryMin)
			err = f.put("stopped", 10, false)
			require.ErrorIs(t, err, tc.is)
			require.Contains(t, err.Error(), tc.want)
			require.ErrorIs(t, f.db.Flush(ctx), tc.is)
			f.checkAcked(f.db)
			require.Equal(t, tablesAfterFailure, tables(), "no file is written or deleted")
			f.reopen()
		})
	}
}
