package main

import (
	"fmt"
	"regexp"
	"runtime"
	"testing"

	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/internal/version"
	"github.com/stretchr/testify/require"
)

// TestVersionCommand pins what "shale version" prints: the release (a test
// binary is built from the checkout, so a development build of Version), the
// Go release, the platform and the format versions the binary reads and
// writes, one row each.
func TestVersionCommand(t *testing.T) {
	r := runTool(t, "version")
	require.Equal(t, exitOK, r.code, "%s", r)
	require.Empty(t, r.stderr)
	want := []string{
		`shale +` + regexp.QuoteMeta(version.Version) + `-devel(\+[0-9a-f]{12}(\.dirty)?)?`,
		`go +` + regexp.QuoteMeta(runtime.Version()),
		`platform +` + runtime.GOOS + `/` + runtime.GOARCH,
		fmt.Sprintf(`table format +reads versions %d to %d; writes %d, %d \(with range deletions\), %d \(partitioned index\)`,
			sstable.FormatVersion, sstable.FormatVersionPartitioned,
			sstable.FormatVersion, sstable.FormatVersionRangeDel, sstable.FormatVersionPartitioned),
		`WAL format +LevelDB's log framing of write batches; no version number in its files`,
		`MANIFEST format +LevelDB's log framing of version edits; no version number in its files`,
	}
	re := "^"
	for _, w := range want {
		re += w + `\n`
	}
	require.Regexp(t, re+"$", r.stdout)

	r = runTool(t, "version", "extra")
	require.Equal(t, exitUsage, r.code, "%s", r)
	require.Regexp(t, `shale version: unexpected argument "extra"`, r.stderr)

	r = runTool(t, "help", "version")
	require.Equal(t, exitOK, r.code, "%s", r)
	require.Regexp(t, `(?s)^Usage: shale version\n.*FORMAT.md`, r.stdout)
}
