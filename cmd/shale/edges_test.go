package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/shaledb/shale/engine"
	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

// TestWALDumpOfOtherFiles: wal dump says a file is not a WAL when it is a
// table (by its footer) or its first record does not decode, instead of
// reporting a torn tail at offset 0; a log of zeros (created, never
// written) and an empty one are still logs.
func TestWALDumpOfOtherFiles(t *testing.T) {
	dir := t.TempDir()
	makeDB(t, dir, dbSpec{tables: [][2]int{{0, 100}}})
	junk := filepath.Join(t.TempDir(), "junk.log")
	require.NoError(t, os.WriteFile(junk, bytes.Repeat([]byte("not a log at all "), 100), 0o644))
	zeros := filepath.Join(t.TempDir(), "zeros.log")
	require.NoError(t, os.WriteFile(zeros, make([]byte, 100), 0o644))
	empty := filepath.Join(t.TempDir(), "empty.log")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	for _, tc := range []struct {
		name, file string
		code       int
		stderr     string
	}{
		{"table", onlyTable(t, dir), exitProblem, `^shale wal dump: .*\.sst is a table file, not a WAL file \("shale sst dump" prints tables\)\n$`},
		{"junk", junk, exitProblem, `^shale wal dump: .*junk\.log is not a WAL file \(or is damaged from its first byte\): its first record does not decode: `},
		{"zeros", zeros, exitProblem, `^shale wal dump: .*zeros\.log: torn tail: the valid log ends at offset 0 of 100`},
		{"empty", empty, exitOK, `^$`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runTool(t, "wal", "dump", tc.file)
			require.Equal(t, tc.code, r.code, "%s", r)
			require.Regexp(t, tc.stderr, r.stderr)
			require.NotContains(t, r.stderr, "torn tail at offset 0")
		})
	}
}

// TestNotADatabase: stats, verify and checkpoint of a directory of other
// files, an empty directory or a file say it is not a shale database; a
// missing directory still does not exist. Nothing is written into them.
func TestNotADatabase(t *testing.T) {
	unrelated := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(unrelated, "notes.txt"), []byte("hi"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(unrelated, "photo.jpg"), []byte("hi"), 0o644))
	empty := t.TempDir()
	file := filepath.Join(unrelated, "notes.txt")
	missing := filepath.Join(t.TempDir(), "nope")
	for _, tc := range []struct {
		name, path, want string
	}{
		{"unrelated files", unrelated, `is not a shale database: no CURRENT file among its 2 entries \(notes\.txt, photo\.jpg\)\n$`},
		{"empty directory", empty, `is not a shale database: the directory is empty \(no CURRENT file\)\n$`},
		{"a file", file, `notes\.txt is not a shale database: it is a file, not a directory\n$`},
		{"missing", missing, `nope" does not exist`},
	} {
		for _, cmd := range []string{"stats", "verify", "checkpoint"} {
			t.Run(tc.name+"/"+cmd, func(t *testing.T) {
				args := []string{cmd, tc.path}
				if cmd == "checkpoint" {
					args = append(args, filepath.Join(t.TempDir(), "cp"))
				}
				r := runTool(t, args...)
				require.Equal(t, exitFailure, r.code, "%s", r)
				require.Regexp(t, `^shale `+cmd+`: .*`+tc.want, r.stderr)
			})
		}
	}
	ents, err := os.ReadDir(unrelated)
	require.NoError(t, err)
	require.Len(t, ents, 2, "no LOCK or other file left behind")
	ents, err = os.ReadDir(empty)
	require.NoError(t, err)
	require.Empty(t, ents)
}

// TestVerifyProgressTotal: the total verify -progress counts towards is
// what VerifyChecksum reads, to the byte (every block once, and each
// table's footer and meta blocks once more for its open), so the last
// progress line shows as much done as in all; it showed more (17.0 MiB of
// 16.5 MiB) when the total was the tables' sizes.
func TestVerifyProgressTotal(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec dbSpec
	}{
		{"plain", dbSpec{tables: [][2]int{{0, 3000}, {3000, 5000}}}},
		{"uncompressed", dbSpec{tables: [][2]int{{0, 3000}}, noCompression: true}},
		{"partitioned", dbSpec{tables: [][2]int{{0, 3000}, {2000, 4000}}, partitioned: true}},
		// The total opens each table in the order it records (it failed
		// to, and counted the whole file instead, under another order).
		{"reverse", dbSpec{tables: [][2]int{{0, 3000}}, reverse: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			makeDB(t, dir, tc.spec)
			total := verifyChecksumBytes(context.Background(), dir)

			opts := &engine.Options{ReadOnly: true, Statistics: statistics.New(statistics.LevelAll)}
			target := dir
			if tc.spec.reverse {
				opts.Comparer = engine.ReverseBytewiseComparer
				target = dir + "?comparator=" + engine.ReverseBytewiseComparer.Name
			}
			db := openEngine(t, dir, opts)
			st := db.Statistics()
			require.NoError(t, db.VerifyChecksum(context.Background()))
			read := st.TickerCount(statistics.VerifyChecksumReadBytes)
			require.NoError(t, db.Close())
			require.Equal(t, uint64(total), read)
			_, size := tableFiles(dir)
			require.Greater(t, total, size, "the opens read meta blocks once more")

			r := runTool(t, "verify", "-progress", target)
			require.Equal(t, exitOK, r.code, "%s", r)
			m := regexp.MustCompile(`(?m)^VerifyChecksum +100% \S+ (.+) of (.+) \(done\)$`).FindStringSubmatch(r.stderr)
			require.NotNil(t, m, "%s", r)
			require.Equal(t, m[2], m[1])
			require.Equal(t, formatBytes(total), m[2])
		})
	}
}
