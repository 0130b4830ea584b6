package main

import (
	"context"
	"text/tabwriter"

	"github.com/shaledb/shale/engine"
)

const dsnDoc = `
Prints the parameters a shale DSN may carry, with their defaults. A DSN is
a directory (or :memory:) with URL-style parameters:

	/var/lib/app/db?stats_level=all&block_cache_size=32MiB&rate_limit=8MiB

Sizes take plain bytes or units (64KiB, 32MiB, 1GB).`

func runDSN(_ context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "dsn", dsnDoc)
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("unexpected argument %q", fs.Arg(0))
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 8, 2, ' ', 0)
	writeRow(tw, "KEY", "DEFAULT", "MEANING")
	for _, row := range engine.DSNKeys() {
		writeRow(tw, row[0], row[1], row[2])
	}
	return tw.Flush()
}

func writeRow(tw *tabwriter.Writer, cols ...string) {
	for i, c := range cols {
		if i > 0 {
			_, _ = tw.Write([]byte{'\t'})
		}
		_, _ = tw.Write([]byte(c))
	}
	_, _ = tw.Write([]byte{'\n'})
}
