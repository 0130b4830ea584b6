package main

import (
	"context"
	"fmt"
	"runtime"
	"text/tabwriter"

	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/internal/version"
)

const versionDoc = `
Prints the shale release this binary holds, the Go release that built it,
its platform, and the on-disk formats it reads and writes (FORMAT.md in the
repository says what each format version holds and what later releases
promise to open).

The release is the module's tag when the binary was built from one ("go
install github.com/shaledb/shale/cmd/shale@v0.3.0"); a build from a
checkout says "-devel" after the release it becomes, and the commit when
the go command recorded one.`

func runVersion(_ context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "version", versionDoc)
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("unexpected argument %q", fs.Arg(0))
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 8, 2, ' ', 0)
	writeRow(tw, "shale", version.String())
	writeRow(tw, "go", runtime.Version())
	writeRow(tw, "platform", runtime.GOOS+"/"+runtime.GOARCH)
	writeRow(tw, "table format", fmt.Sprintf("reads versions %d to %d; writes %d, %d (with range deletions), %d (partitioned index)",
		sstable.FormatVersion, sstable.FormatVersionPartitioned,
		sstable.FormatVersion, sstable.FormatVersionRangeDel, sstable.FormatVersionPartitioned))
	writeRow(tw, "WAL format", "LevelDB's log framing of write batches; no version number in its files")
	writeRow(tw, "MANIFEST format", "LevelDB's log framing of version edits; no version number in its files")
	return tw.Flush()
}
