package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// ackedPut is one acknowledged write of TestInlineWALModel. start is how
// many writes had been acknowledged when it was called, ack its own place in
// the order of acknowledgements (from 1): every write with ack <= start has
// a lower sequence number, so its WAL record comes first.
type ackedPut struct {
	key, value string
	synced     bool
	start, ack int
}

// putModel records acknowledged writes in the order they were
// acknowledged.
type putModel struct {
	mu   sync.Mutex
	puts []ackedPut
}

// put writes key=value, synced or not, and records it once acknowledged.
func (m *putModel) put(db *database, key, value string, synced bool) error {
	ctx := bgCtx
	if synced {
		ctx = syncCtx
	}
	m.mu.Lock()
	start := len(m.puts)
	m.mu.Unlock()
	if err := db.Put(ctx, []byte(key), []byte(value)); err != nil {
		return err
	}
	m.mu.Lock()
	m.puts = append(m.puts, ackedPut{key: key, value: value, synced: synced, start: start, ack: len(m.puts) + 1})
	m.mu.Unlock()
	return nil
}

func (m *putModel) acked() []ackedPut {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]ackedPut(nil), m.puts...)
}

// checkCrash opens clone, the durable state taken once cut writes had been
// acknowledged, and checks it against puts (acknowledged by now): every
// synced write among the first cut is there; every write there has its
// value, and so has every write acknowledged before it was called (the WAL
// holds records in sequence order, and a crash keeps a prefix of it).
func checkCrash(t *testing.T, clone *vfs.MemFS, cut int, puts []ackedPut) {
	t.Helper()
	db, err := openDatabase("/db", smallOptions(clone))
	require.NoError(t, err)
	present := make([]bool, len(puts))
	for i, p := range puts {
		v, err := db.Get(bgCtx, []byte(p.key))
		if err == nil {
			require.Equal(t, p.value, string(v), "key %s", p.key)
			present[i] = true
			continue
		}
		require.ErrorIs(t, err, ErrNotFound, "key %s", p.key)
		require.False(t, p.synced && p.ack <= cut, "synced write %s (ack %d of %d before the crash) is lost", p.key, p.ack, cut)
	}
	// The writes there form a prefix: none is there without every write
	// acknowledged before it began.
	missing := len(puts) + 1 // the first ack missing
	for i, p := range puts {
		if !present[i] {
			missing = min(missing, p.ack)
		}
	}
	for i, p := range puts {
		if present[i] {
			require.Less(t, p.start, missing, "write %s is there but write %d, acknowledged before it began, is not", p.key, missing)
		}
	}
	require.NoError(t, db.Check(bgCtx))
	require.NoError(t, db.Close())
}

// TestInlineWALModel mixes phases where one goroutine writes alone (its
// records are written to the WAL by the leader itself, with the threshold
// at 0, or as the engine's policy decides) with
// phases of four concurrent writers (commit groups, handed to the WAL's
// background goroutine), synced and unsynced, and checks crash clones taken
// while they write: no synced write lost, the surviving writes a prefix of
// the acknowledged ones, every value right; and, after a clean reopen, every
// write.
func TestInlineWALModel(t *testing.T) {
	// -1: the engine's own policy, with its threshold and wake probes.
	for _, after := range []time.Duration{0, -1} {
		t.Run(fmt.Sprintf("inline_after=%v", after), func(t *testing.T) {
			if after >= 0 {
				setWALInlineAfter(t, after)
			}
			fs := vfs.NewMem()
			db, err := openDatabase("/db", smallOptions(fs))
			require.NoError(t, err)
			var m putModel
			rng := rand.New(rand.NewPCG(1, uint64(after)))
			for phase := range 8 {
				writers, n := 1, 300
				if phase%2 == 1 {
					writers, n = 4, 100
				}
				seeds := make([]uint64, writers)
				for g := range seeds {
					seeds[g] = rng.Uint64()
				}
				// Writer 0 takes two crash clones during the phase, while
				// the others (if any) write; one more follows the phase.
				type crash struct {
					fs  *vfs.MemFS
					cut int
				}
				var crashes []crash
				var wg sync.WaitGroup
				for g := range writers {
					wg.Go(func() {
						rng := rand.New(rand.NewPCG(seeds[g], 7))
						for i := range n {
							if g == 0 && (i == n/3 || i == 2*n/3) {
								cut := len(m.acked())
								crashes = append(crashes, crash{fs.CrashClone(), cut})
							}
							k := fmt.Sprintf("p%d-g%d-%04d", phase, g, i)
							if err := m.put(db, k, strings.Repeat(k, 1+rng.IntN(20)), rng.IntN(5) == 0); err != nil {
								t.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				if t.Failed() {
					return
				}
				crashes = append(crashes, crash{fs.CrashClone(), len(m.acked())})
				for _, c := range crashes {
					checkCrash(t, c.fs, c.cut, m.acked())
				}
			}
			require.NoError(t, db.Close())
			db, err = openDatabase("/db", smallOptions(fs))
			require.NoError(t, err)
			checkDB(t, db)
			for _, p := range m.acked() {
				requireValue(t, db, p.key, p.value)
			}
		})
	}
}

// walFileSize returns the size of db's current WAL as the file system has
// it, and the bytes the WAL's writer has framed. Only the write leader
// touches d.commit; the caller is the only writer, between writes.
func walFileSize(t *testing.T, db *database, fs vfs.FS) (inFile, framed int64) {
	t.Helper()
	info, err := fs.Stat(manifest.LogFileName("/db", db.commit.logNum))
	require.NoError(t, err)
	return info.Size(), db.commit.log.Size()
}

// TestLoneWriteReachesWALFile checks that an unsynced write made alone, on
// a quiet WAL, is in the WAL's file when it is acknowledged: the leader
// wrote it, rather than leaving it for the background goroutine.
func TestLoneWriteReachesWALFile(t *testing.T) {
	setWALInlineAfter(t, 0)
	db, fs := openTestDB(t, nil)
	for i := range 50 {
		require.NoError(t, db.Put(bgCtx, key(i), []byte("v")))
		inFile, framed := walFileSize(t, db, fs)
		require.Equal(t, framed, inFile, "write %d", i)
	}
}

// TestInlineWALWriteFailure checks that a failed WAL write the leader makes
// itself fails that write, which is not applied, and stops later writes;
// every write acknowledged before it survives a reopen.
func TestInlineWALWriteFailure(t *testing.T) {
	setWALInlineAfter(t, 0)
	for _, synced := range []bool{false, true} {
		t.Run(fmt.Sprintf("sync=%t", synced), func(t *testing.T) {
			mem := vfs.NewMem()
			var armed atomic.Bool
			inj := errorfs.And(errorfs.OnKind(errorfs.OpFileWrite), errorfs.PathMatch("*.log"),
				errorfs.PredicateFunc("armed", func(errorfs.Op) bool { return armed.Load() }))
			opts := smallOptions(errorfs.Wrap(mem, inj))
			db, err := openDatabase("/db", opts)
			require.NoError(t, err)
			ctx := context.Background()
			for i := range 20 {
				require.NoError(t, db.Put(ctx, key(i), []byte("v")))
			}
			armed.Store(true)
			wctx := bgCtx
			if synced {
				wctx = syncCtx
			}
			err = db.Put(wctx, []byte("failed"), []byte("v"))
			require.ErrorIs(t, err, errorfs.ErrInjected, "the write whose record could not be written fails")
			_, err = db.Get(ctx, []byte("failed"))
			require.ErrorIs(t, err, ErrNotFound, "a failed write is not applied")
			armed.Store(false)
			require.Error(t, db.Put(ctx, []byte("later"), []byte("v")), "later writes stop")
			_ = db.Close()

			db, err = openDatabase("/db", smallOptions(mem))
			require.NoError(t, err)
			checkDB(t, db)
			for i := range 20 {
				requireValue(t, db, string(key(i)), "v")
			}
			requireValue(t, db, "failed", "")
			requireValue(t, db, "later", "")
		})
	}
}
