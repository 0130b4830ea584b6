package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/shaledb/shale/engine"
	"github.com/stretchr/testify/require"
)

var updateStatsJSON = flag.Bool("update-stats-json", false, "rewrite testdata/stats-json-shape.golden")

// TestStatsJSONShape: the keys and value types of "shale stats -json" are
// the golden file's (one line per key path; array elements and the
// statistics maps' entries collapsed to one), every key is snake_case, and
// the help describes every key of the schema. A change of the output
// contract shows as a diff of the golden file (-update-stats-json).
func TestStatsJSONShape(t *testing.T) {
	dir := t.TempDir()
	makeDB(t, dir, dbSpec{tables: [][2]int{{0, 500}, {500, 1000}}, logged: [2]int{1000, 1100}})
	r := runTool(t, "stats", "-json", "-scan", dir+"?rate_limit=100MiB")
	require.Equal(t, exitOK, r.code, "%s", r)
	var v any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &v))
	var lines []string
	jsonShape(v, "", &lines)
	sort.Strings(lines)
	got := strings.Join(lines, "\n") + "\n"

	golden := filepath.Join("testdata", "stats-json-shape.golden")
	if *updateStatsJSON {
		require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	require.Equal(t, string(want), got, "run with -update-stats-json if the change is meant")

	snake := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	help := runTool(t, "help", "stats")
	require.Equal(t, exitOK, help.code, "%s", help)
	for _, l := range lines {
		path := strings.Fields(l)[0]
		for _, k := range strings.Split(path, ".") {
			k = strings.TrimSuffix(k, "[]")
			if k == "" || k == "<statistic>" {
				continue
			}
			require.Regexp(t, snake, k, "key %q of %s", k, path)
			require.Regexp(t, `\b`+regexp.QuoteMeta(k)+`\b`, help.stdout, "the help describes %q (%s)", k, path)
		}
	}
}

// jsonShape appends "path type" for v and everything under it. The
// entries of "tickers" and "histograms", named after statistics, collapse
// to "<statistic>", the elements of an array to its first.
func jsonShape(v any, path string, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		*out = append(*out, fmt.Sprintf("%s object", orRoot(path)))
		if path == ".tickers" || path == ".histograms" {
			for _, e := range x {
				jsonShape(e, path+".<statistic>", out)
				return
			}
			return
		}
		for k, e := range x {
			jsonShape(e, path+"."+k, out)
		}
	case []any:
		*out = append(*out, fmt.Sprintf("%s array", path))
		if len(x) > 0 {
			jsonShape(x[0], path+"[]", out)
		}
	case string:
		*out = append(*out, path+" string")
	case float64:
		*out = append(*out, path+" number")
	case bool:
		*out = append(*out, path+" bool")
	case nil:
		*out = append(*out, path+" null")
	}
}

func orRoot(path string) string {
	if path == "" {
		return "."
	}
	return path
}

// TestLastLevelReadsCountAsLastLevel: with every table in the last level,
// every read stats -scan makes (opening, the scan, VerifyChecksum) counts in
// shale.last.level.read.bytes and none in shale.non.last.level.read.bytes;
// verification opened its files without the level and counted them all as
// non-last.
func TestLastLevelReadsCountAsLastLevel(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	db := openEngine(t, dir, &engine.Options{DisableAutoCompactions: true})
	for i := range 2000 {
		require.NoError(t, db.Put(ctx, testKey(i), testValue(i)))
	}
	require.NoError(t, db.Flush(ctx))
	require.NoError(t, db.Compact(ctx, nil, nil))
	require.NoError(t, db.Close())

	r := runTool(t, "stats", "-json", "-scan", dir)
	require.Equal(t, exitOK, r.code, "%s", r)
	var js struct {
		LSM     *lsmJSON          `json:"lsm"`
		Tickers map[string]uint64 `json:"tickers"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &js))
	last := js.LSM.Levels[len(js.LSM.Levels)-1]
	require.Positive(t, last.Tables, "the tables are in the last level")
	require.Positive(t, js.Tickers["shale.verify_checksum.read.bytes"])
	require.GreaterOrEqual(t, js.Tickers["shale.last.level.read.bytes"], js.Tickers["shale.verify_checksum.read.bytes"])
	require.Zero(t, js.Tickers["shale.non.last.level.read.bytes"])
}
