package engine

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/shaledb/shale/ioctx"
	"github.com/stretchr/testify/require"
)

// The sync-option crash test runs TestSyncOptionCrashChild in a child
// process on a database opened with Sync false: each of its goroutines
// alternates runs of unsynced writes with a write made with
// WriteOptions{Sync: true}, printing each acknowledged write. The parent
// kills it with SIGKILL and checks, after reopening, that every write
// acknowledged as synced survived, and with it every write its goroutine
// made before it (the WAL is sequential: a sync covers what precedes it).
//
// Unsynced writes acknowledged after a goroutine's last synced one may be
// lost: an unsynced write is acknowledged when its record is in the WAL's
// in-process buffer (walFile), which reaches the operating system
// microseconds later; a SIGKILL in between loses it, and a machine crash
// loses whatever the operating system had not written back. The test counts
// those losses but does not require any.
const syncCrashChildEnv = "SHALE_SYNC_CRASH_CHILD_DIR"

// TestSyncOptionCrashChild is the child's body; it is skipped unless the
// parent started it.
func TestSyncOptionCrashChild(t *testing.T) {
	dir := childDir(t, syncCrashChildEnv, "TestSyncOptionSurvivesSIGKILL")
	round := os.Getenv("SHALE_SYNC_CRASH_ROUND")
	db := openChildDatabase(dir, childOptions(false))
	syncCtx := ioctx.WithWriteOptions(context.Background(), ioctx.WriteOptions{Sync: true})
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 42))
			for i := 0; ; i++ {
				k := fmt.Sprintf("r%s-g%d-%06d", round, g, i)
				ctx, kind := context.Background(), "U"
				if rng.IntN(8) == 0 {
					ctx, kind = syncCtx, "S"
				}
				if err := db.Put(ctx, []byte(k), []byte(k)); err != nil {
					childExit(3, "put", err)
				}
				mu.Lock()
				fmt.Fprintf(out, "%s %d %d %s\n", kind, g, i, k)
				out.Flush()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// ackedWrite is one write the child acknowledged.
type ackedWrite struct {
	key    string
	synced bool
}

func TestSyncOptionSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "db")
	for round := range 4 {
		cmd := childCommand(t, "^TestSyncOptionCrashChild$",
			syncCrashChildEnv+"="+dir, "SHALE_SYNC_CRASH_ROUND="+strconv.Itoa(round))
		// perG holds each goroutine's acknowledged writes in order.
		perG := make([][]ackedWrite, 4)
		n := killChildAfter(t, cmd, 500+rand.IntN(2000), func(f []string) bool {
			if len(f) != 4 || (f[0] != "S" && f[0] != "U") {
				return false
			}
			g, _ := strconv.Atoi(f[1])
			perG[g] = append(perG[g], ackedWrite{key: f[3], synced: f[0] == "S"})
			return true
		})

		db, err := openDatabase(dir, nil)
		require.NoError(t, err, "round %d: reopen after SIGKILL", round)
		ctx := context.Background()
		synced, covered, lost := 0, 0, 0
		for _, ws := range perG {
			lastSync := -1
			for i, w := range ws {
				if w.synced {
					lastSync = i
				}
			}
			for i, w := range ws {
				v, err := db.Get(ctx, []byte(w.key))
				switch {
				case i <= lastSync:
					require.NoError(t, err, "round %d: write %s, acknowledged before a synced write of its goroutine, lost", round, w.key)
					require.Equal(t, w.key, string(v))
					if w.synced {
						synced++
					} else {
						covered++
					}
				case err != nil:
					require.ErrorIs(t, err, ErrNotFound)
					lost++
				}
			}
		}
		require.NoError(t, db.Check(ctx))
		require.NoError(t, db.Close())
		t.Logf("round %d: %d acknowledged writes; %d synced and %d before them survived; %d unsynced after the last sync lost",
			round, n, synced, covered, lost)
	}
}
