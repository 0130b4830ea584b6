package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVerifyDamageThatStopsOpening checks that verify reports a database
// that cannot be opened because of damage as a problem found (exit 1), not
// as a failure to run (exit 3): a directory of tables whose CURRENT is gone,
// and a MANIFEST that names a table that is gone.
func TestVerifyDamageThatStopsOpening(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dir string)
		want   string
	}{
		{"missing CURRENT", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, "CURRENT")))
		}, `has no CURRENT but holds .*\.sst`},
		{"missing table", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filesWithSuffix(t, dir, ".sst")[0]))
		}, `\.sst is missing`},
		{"table of the wrong size", func(t *testing.T, dir string) {
			table := filesWithSuffix(t, dir, ".sst")[1]
			require.NoError(t, os.Truncate(table, 100))
		}, `\.sst has 100 bytes, expected \d+`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			makeDB(t, dir, dbSpec{tables: [][2]int{{0, 500}, {500, 1000}}, logged: [2]int{1000, 1010}})
			tc.damage(t, dir)
			r := runTool(t, "verify", "-dsn", dir)
			require.Equal(t, exitProblem, r.code, "%s", r)
			require.Regexp(t, `^shale verify: `, r.stderr)
			require.Regexp(t, tc.want, r.stderr)
			require.NotRegexp(t, `(?m)^OK$`, r.stdout)
		})
	}
}
