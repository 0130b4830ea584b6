package main

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/vfs"
)

// secondaryNote is the line stats, verify and checkpoint print on stderr
// when the database is held open by another process and they read it as a
// secondary instance instead.
const secondaryNote = "database is in use by another process; reading it as a secondary instance (a snapshot as of now)"

// maxRemovedRetries bounds how often a command catches up and tries again
// when the primary deleted a table it was about to read.
const maxRemovedRetries = 10

// openInspect opens the database d names with read_only=true, for the
// commands that inspect or copy a database. When another process holds it
// open (its LOCK is taken), it opens it as a secondary instance
// (secondary=true), which needs no lock and writes nothing, and says so on
// stderr. It returns the DSN it opened, its configuration, and whether the
// database is a secondary.
func openInspect(ctx context.Context, env *cmdEnv, d *dsnBuilder) (*driver.DB, string, parsedDSN, bool, error) {
	d.set("read_only", "true")
	final, cfg, err := d.build()
	if err != nil {
		return nil, "", parsedDSN{}, false, err
	}
	db, err := openDB(ctx, final)
	if err == nil || !errors.Is(err, vfs.ErrLocked) {
		return db, final, cfg, false, err
	}
	if v, ok := d.get("secondary"); ok {
		if on, perr := driver.ParseBool(v); perr == nil && !on {
			return nil, "", parsedDSN{}, false, err // the DSN asks for no secondary
		}
	}
	d.set("secondary", "true")
	if final, cfg, err = d.build(); err != nil {
		return nil, "", parsedDSN{}, false, err
	}
	if db, err = openDB(ctx, final); err != nil {
		return nil, "", parsedDSN{}, false, err
	}
	fmt.Fprintf(env.stderr, "shale %s: %s\n", env.name, secondaryNote)
	return db, final, cfg, true, nil
}

// retryRemoved returns fn, which reads every table of a secondary's view
// anew (a verification, a checkpoint), made to catch up and try again when
// the primary deleted one of those tables since the last catch-up (a
// compaction replaced it): the error says so and matches fs.ErrNotExist.
func retryRemoved(db *driver.DB, fn func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		for attempt := 0; ; attempt++ {
			err := fn(ctx)
			if err == nil || !errors.Is(err, fs.ErrNotExist) || attempt >= maxRemovedRetries {
				return err
			}
			if cerr := db.CatchUp(ctx); cerr != nil {
				return errors.CombineErrors(err, cerr)
			}
		}
	}
}
