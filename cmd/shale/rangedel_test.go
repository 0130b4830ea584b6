package main

import (
	"context"
	"testing"

	"github.com/shaledb/shale/engine"
	"github.com/stretchr/testify/require"
)

// TestDumpRangeDeletions: wal dump prints a DeleteRange record and sst dump
// the range deletion block of the table it is flushed to.
func TestDumpRangeDeletions(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	db := openEngine(t, dir, &engine.Options{DisableAutoCompactions: true})
	require.NoError(t, db.Put(ctx, testKey(1), testValue(1)))
	require.NoError(t, db.DeleteRange(ctx, testKey(0), testKey(5)))
	require.NoError(t, db.Close())

	logs := filesWithSuffix(t, dir, ".log")
	require.NotEmpty(t, logs)
	r := runTool(t, "wal", "dump", logs[len(logs)-1])
	require.Equal(t, exitOK, r.code, "%s", r)
	require.Contains(t, r.stdout, `  DELRANGE ["key000000", "key000005")`)

	db = openEngine(t, dir, &engine.Options{DisableAutoCompactions: true})
	require.NoError(t, db.Flush(ctx))
	require.NoError(t, db.Close())
	tables := filesWithSuffix(t, dir, ".sst")
	require.NotEmpty(t, tables)
	r = runTool(t, "sst", "dump", tables[len(tables)-1])
	require.Equal(t, exitOK, r.code, "%s", r)
	require.Regexp(t, `(?m)^  format version: +2$`, r.stdout)
	require.Regexp(t, `(?m)^range deletions \(1 fragments\)\n  \["key000000", "key000005"\) #2$`, r.stdout)
}
