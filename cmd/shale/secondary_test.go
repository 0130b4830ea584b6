package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shaledb/shale/engine"
	"github.com/stretchr/testify/require"
)

// TestInspectInUseDatabase runs stats, verify and checkpoint on a database
// this process holds open (its LOCK is taken, as by another process): each
// reads it as a secondary instance, says so in one line on stderr, and
// sees the holder's writes, those only in its WAL included.
func TestInspectInUseDatabase(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	makeDB(t, dir, dbSpec{tables: [][2]int{{0, 300}, {300, 600}}})
	holder := openEngine(t, dir, &engine.Options{DisableAutoCompactions: true})
	defer holder.Close()
	for i := 600; i < 700; i++ {
		require.NoError(t, holder.Put(ctx, testKey(i), testValue(i)))
	}
	require.NoError(t, holder.Delete(ctx, testKey(5)))
	require.NoError(t, holder.SyncWAL(ctx)) // in the file, for another reader

	// Without the fallback the open is refused: the lock is held.
	r := runTool(t, "verify", dir+"?secondary=false")
	require.Equal(t, exitFailure, r.code, "%s", r)
	require.Contains(t, r.stderr, "is in use")

	for _, args := range [][]string{
		{"stats", dir},
		{"verify", "-files", dir},
		{"checkpoint", dir, filepath.Join(t.TempDir(), "cp")},
	} {
		r := runTool(t, args...)
		require.Equal(t, exitOK, r.code, "%v: %s", args, r)
		require.Equal(t, "shale "+args[0]+": "+secondaryNote+"\n", r.stderr, "%v", args)
		require.NotContains(t, r.stdout, "in use")
		if args[0] == "checkpoint" {
			cp := openEngine(t, args[2], nil)
			requireTestKeys(t, cp, 700, 5)
			require.NoError(t, cp.Check(ctx))
			require.NoError(t, cp.Close())
		}
	}

	// Released, the database is opened as before, with no note.
	require.NoError(t, holder.Close())
	r = runTool(t, "verify", dir)
	require.Equal(t, exitOK, r.code, "%s", r)
	require.False(t, strings.Contains(r.stderr, "secondary"), "%s", r)
}
