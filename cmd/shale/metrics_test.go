package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStatsPrintsMetrics: shale stats prints the LSM shape, and -json
// carries it as "lsm".
func TestStatsPrintsMetrics(t *testing.T) {
	dir := t.TempDir()
	makeDB(t, dir, dbSpec{tables: [][2]int{{0, 500}, {500, 1000}}, logged: [2]int{1000, 1100}})

	r := runTool(t, "stats", "-dsn", dir)
	require.Equal(t, exitOK, r.code, "%s", r)
	require.Contains(t, r.stdout, "\nLSM shape\nlevel | tables")
	require.Regexp(t, `(?m)^total \|      2 `, r.stdout, "the two tables")
	require.Regexp(t, `(?m)^read amp \d+, write amp `, r.stdout)
	require.Regexp(t, `(?m)^disk usage: \d`, r.stdout)

	r = runTool(t, "stats", "-dsn", dir, "-json")
	require.Equal(t, exitOK, r.code, "%s", r)
	var js struct {
		LSM       *lsmJSON `json:"lsm"`
		DiskUsage uint64   `json:"disk_usage_bytes"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &js), r.stdout)
	require.NotNil(t, js.LSM)
	tables, bytes := 0, uint64(0)
	for _, l := range js.LSM.Levels {
		tables += l.Tables
		bytes += l.Bytes
	}
	require.Equal(t, 2, tables)
	require.Greater(t, js.DiskUsage, bytes, "the tables and more")
}

func TestBenchPrintsMetrics(t *testing.T) {
	r := runTool(t, "bench", "-dir", t.TempDir(), "-max-data", "64KiB", "-duration-per-phase", "5ms")
	require.Equal(t, exitOK, r.code, "%s", r)
	require.Contains(t, r.stdout, "\nLSM shape\nlevel | tables")
}
