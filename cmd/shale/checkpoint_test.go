package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckpoint(t *testing.T) {
	dir := t.TempDir()
	makeDB(t, dir, dbSpec{tables: [][2]int{{0, 500}, {500, 1000}}, logged: [2]int{1000, 1100}, deleted: []int{3}})
	before, err := os.ReadDir(dir)
	require.NoError(t, err)

	dest := filepath.Join(t.TempDir(), "cp")
	r := runTool(t, "checkpoint", dir, dest)
	require.Equal(t, exitOK, r.code, "%s", r)
	require.Regexp(t, `^checkpoint of .* written to .*/cp: \d+ files, `, r.stdout)
	require.Empty(t, r.stderr)

	after, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Equal(t, len(before), len(after), "the source is opened read-only and not changed")

	ctx := context.Background()
	db := openEngine(t, dest, nil)
	defer db.Close()
	requireTestKeys(t, db, 1100, 3)
	// The checkpoint is consistent: the engine's deep check (levels, key
	// order, every block's checksum) and the whole-file checksums.
	require.NoError(t, db.Check(ctx))
	require.NoError(t, db.VerifyFileChecksums(ctx))

	// DEST must be new or empty; nothing is left behind on failure.
	r = runTool(t, "checkpoint", dir, dest)
	require.Equal(t, exitUsage, r.code, "%s", r)
	require.Regexp(t, `^shale checkpoint: .*not empty`, r.stderr)

	r = runTool(t, "checkpoint", filepath.Join(dir, "missing"), filepath.Join(t.TempDir(), "cp"))
	require.Equal(t, exitFailure, r.code, "%s", r)

	for _, args := range [][]string{{"checkpoint"}, {"checkpoint", dir}, {"checkpoint", dir, dest, "x"}} {
		r = runTool(t, args...)
		require.Equal(t, exitUsage, r.code, "%s", r)
		require.Regexp(t, `^shale checkpoint: want DIR and DEST`, r.stderr)
	}
	r = runTool(t, "help", "checkpoint")
	require.Equal(t, exitOK, r.code)
	require.Contains(t, r.stdout, "Usage: shale checkpoint DIR DEST")
}
