package engine

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/shaledb/shale/ioctx"
	"github.com/stretchr/testify/require"
)

// The unbounded range deletion crash test: TestDeleteRangeUnboundedCrashChild,
// in a child process on a database opened with Sync false and small
// memtables (so flushes, with their clamp of the tombstone, and compactions
// run while it writes), writes keys k-0..k-2999, then DeleteRange(k-1000,
// nil) with Sync true, then keys m-0, m-1, ... (after the deletion's start,
// written after it) with every eighth synced, printing each acknowledgement.
// The parent kills it with SIGKILL and checks, after reopening, that the
// deletion survived (k-1000 onward absent, k-0..k-999 present) and that
// every m- key acknowledged before the last synced one is present.
const rdelCrashChildEnv = "SHALE_RDEL_CRASH_CHILD_DIR"

func TestDeleteRangeUnboundedCrashChild(t *testing.T) {
	dir := childDir(t, rdelCrashChildEnv, "TestDeleteRangeUnboundedSurvivesSIGKILL")
	round := os.Getenv("SHALE_RDEL_CRASH_ROUND")
	db := openChildDatabase(dir, childOptions(false))
	ctx := context.Background()
	syncCtx := ioctx.WithWriteOptions(ctx, ioctx.WriteOptions{Sync: true})
	out := bufio.NewWriter(os.Stdout)
	rng := rand.New(rand.NewPCG(1, 2))
	val := func() []byte { return value(rng, 100) }
	for i := range 3000 {
		if err := db.Put(ctx, fmt.Appendf(nil, "r%s-k-%06d", round, i), val()); err != nil {
			childExit(3, "put", err)
		}
	}
	if err := db.DeleteRange(syncCtx, fmt.Appendf(nil, "r%s-k-%06d", round, 1000), nil); err != nil {
		childExit(3, "delete range", err)
	}
	fmt.Fprintln(out, "D")
	out.Flush()
	for i := 0; ; i++ {
		c, kind := ctx, "U"
		if i%8 == 7 {
			c, kind = syncCtx, "S"
		}
		k := fmt.Sprintf("r%s-m-%06d", round, i)
		if err := db.Put(c, []byte(k), []byte(k)); err != nil {
			childExit(3, "put", err)
		}
		fmt.Fprintf(out, "%s %d %s\n", kind, i, k)
		out.Flush()
	}
}

func TestDeleteRangeUnboundedSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "db")
	for round := range 3 {
		cmd := childCommand(t, "^TestDeleteRangeUnboundedCrashChild$",
			rdelCrashChildEnv+"="+dir, "SHALE_RDEL_CRASH_ROUND="+strconv.Itoa(round))
		deleted := false
		var acked []ackedWrite
		n := killChildAfter(t, cmd, 2+rand.IntN(3000), func(f []string) bool {
			switch {
			case len(f) == 1 && f[0] == "D":
				deleted = true
				return true
			case len(f) == 3 && (f[0] == "S" || f[0] == "U"):
				acked = append(acked, ackedWrite{key: f[2], synced: f[0] == "S"})
				return true
			}
			return false
		})
		require.True(t, deleted, "round %d: the child was killed before its range deletion", round)

		db, err := openDatabase(dir, nil)
		require.NoError(t, err, "round %d: reopen after SIGKILL", round)
		ctx := context.Background()
		for i := range 3000 {
			k := fmt.Sprintf("r%d-k-%06d", round, i)
			_, err := db.Get(ctx, []byte(k))
			if i < 1000 {
				require.NoError(t, err, "round %d: %s, before the deletion's start", round, k)
			} else {
				require.ErrorIs(t, err, ErrNotFound, "round %d: %s, deleted by a synced DeleteRange(_, nil)", round, k)
			}
		}
		lastSync := -1
		for i, w := range acked {
			if w.synced {
				lastSync = i
			}
		}
		for _, w := range acked[:lastSync+1] {
			v, err := db.Get(ctx, []byte(w.key))
			require.NoError(t, err, "round %d: %s, written after the deletion and synced, lost", round, w.key)
			require.Equal(t, w.key, string(v))
		}
		// The earlier rounds' keys are all before this round's deletion.
		for r := range round {
			_, err := db.Get(ctx, fmt.Appendf(nil, "r%d-k-%06d", r, 999))
			require.NoError(t, err, "round %d: round %d's key", round, r)
		}
		require.NoError(t, db.Check(ctx))
		require.NoError(t, db.Compact(ctx, nil, nil))
		require.NoError(t, db.Check(ctx))
		_, err = db.Get(ctx, fmt.Appendf(nil, "r%d-k-%06d", round, 2999))
		require.ErrorIs(t, err, ErrNotFound, "round %d: after a full compaction", round)
		require.NoError(t, db.Close())
		t.Logf("round %d: %d acknowledgements, %d writes after the deletion up to the last sync", round, n, lastSync+1)
	}
}
