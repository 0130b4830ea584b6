package main

import (
	"context"
	"fmt"
	"os"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/driver"
)

const checkpointUsage = `checkpoint DIR DEST`

const checkpointDoc = `
Writes a consistent, openable copy of the database DIR (a directory, or a DSN
with parameters) into DEST, which must not exist or be an empty directory:
DB.Checkpoint through the façade. The database is opened read-only, so DIR
is not modified: the tables are hard-linked into DEST when both are on one
filesystem (copied otherwise), the WALs are copied, and DEST gets a MANIFEST
and CURRENT of its own. Opening DEST replays the copied WALs.

If another process holds DIR open, DIR is read as a secondary instance (as
stderr says): the checkpoint holds what that process had written when the
command opened DIR, its WALs copied up to that point. On failure nothing is
left at DEST.

Exit code 0: DEST holds the checkpoint. 2: bad arguments, or DEST exists and
is not empty. 3: the database cannot be opened or the checkpoint failed.`

func runCheckpoint(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, checkpointUsage, checkpointDoc)
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usageErrorf("want DIR and DEST, got %d arguments", fs.NArg())
	}
	src, dest := fs.Arg(0), fs.Arg(1)
	d, err := parseDSNBuilder(src)
	if err != nil {
		return err
	}
	// Read-only: a checkpoint must not change its source, nor replay its
	// WAL into new tables.
	db, _, cfg, secondary, err := openInspect(ctx, env, d)
	if err != nil {
		return err
	}
	defer db.Close()
	checkpoint := func(ctx context.Context) error { return db.Checkpoint(ctx, dest) }
	if secondary {
		checkpoint = retryRemoved(db, checkpoint)
	}
	if err := checkpoint(ctx); err != nil {
		if errors.Is(err, driver.ErrInvalidArgument) {
			return &exitError{code: exitUsage, err: err}
		}
		return &exitError{code: exitFailure, err: err}
	}
	files, size, err := dirUsage(dest)
	if err != nil {
		return &exitError{code: exitFailure, err: err}
	}
	fmt.Fprintf(env.stdout, "checkpoint of %s written to %s: %d files, %s\n", cfg.Dir, dest, files, formatBytes(size))
	return nil
}

// dirUsage counts the files in dir and their bytes (a hard-linked table
// counts in full, though it takes no new space).
func dirUsage(dir string) (files int, size int64, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, err
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			return 0, 0, err
		}
		files++
		size += info.Size()
	}
	return files, size, nil
}
