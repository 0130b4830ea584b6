package engine_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/shaledb/shale/driver"
	_ "github.com/shaledb/shale/engine"
	"github.com/stretchr/testify/require"
)

var writeDBGolden = flag.Bool("write-db-golden", false,
	"write testdata/db-v0.2.0 when it does not exist (never overwrites it)")

// dbGoldenDir is a whole database as v0.2.0 leaves it on disk: a
// partitioned table (table format 3), a table with a range tombstone
// (format 2), a MANIFEST that records a table with range tombstones, and a
// WAL whose unflushed batches hold Set, Delete and DeleteRange records.
// FORMAT.md promises that every later release opens it; it is never
// rewritten.
const dbGoldenDir = "testdata/db-v0.2.0"

// dbGoldenDSN are the options it was written with: partitions small enough
// that the first table's index has several, and no compaction, so that
// the tables stay as flushed.
const dbGoldenDSN = "?partition_index_and_filters=true&metadata_block_size=256&disable_auto_compactions=true"

// dbGoldenOps are the writes, in order; "flush" flushes the memtable. What
// follows the last flush stays in the WAL.
func dbGoldenOps() []dbGoldenOp {
	var ops []dbGoldenOp
	for i := range 1000 {
		ops = append(ops, dbGoldenOp{op: "put", key: goldenKey(i), value: goldenValue(i, 1)})
	}
	ops = append(ops, dbGoldenOp{op: "flush"},
		dbGoldenOp{op: "deleterange", key: goldenKey(100), value: goldenKey(200)},
		dbGoldenOp{op: "put", key: goldenKey(150), value: goldenValue(150, 2)},
		dbGoldenOp{op: "delete", key: goldenKey(7)},
		dbGoldenOp{op: "flush"},
		dbGoldenOp{op: "put", key: goldenKey(1000), value: goldenValue(1000, 3)},
		dbGoldenOp{op: "put", key: goldenKey(5), value: goldenValue(5, 3)},
		dbGoldenOp{op: "delete", key: goldenKey(6)},
		dbGoldenOp{op: "deleterange", key: goldenKey(300), value: goldenKey(310)},
		dbGoldenOp{op: "put", key: goldenKey(305), value: goldenValue(305, 3)},
	)
	return ops
}

type dbGoldenOp struct {
	op         string
	key, value []byte // deleterange: value is the end
}

func goldenKey(i int) []byte { return fmt.Appendf(nil, "key%05d", i) }

func goldenValue(i, gen int) []byte {
	return fmt.Appendf(nil, "value-%05d-gen%d-%s", i, gen, strings.Repeat(string(rune('a'+i%26)), 40))
}

// dbGoldenModel is the database's contents after dbGoldenOps.
func dbGoldenModel() map[string]string {
	m := make(map[string]string)
	for _, o := range dbGoldenOps() {
		switch o.op {
		case "put":
			m[string(o.key)] = string(o.value)
		case "delete":
			delete(m, string(o.key))
		case "deleterange":
			for k := range m {
				if k >= string(o.key) && k < string(o.value) {
					delete(m, k)
				}
			}
		}
	}
	return m
}

func writeDBGoldenDir(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, os.MkdirAll(dbGoldenDir, 0o755))
	db, err := driver.Open("shale", dbGoldenDir+dbGoldenDSN)
	require.NoError(t, err)
	for _, o := range dbGoldenOps() {
		switch o.op {
		case "put":
			err = db.Put(ctx, o.key, o.value)
		case "delete":
			err = db.Delete(ctx, o.key)
		case "deleterange":
			err = db.DeleteRange(ctx, o.key, o.value)
		case "flush":
			err = db.Flush(ctx)
		}
		require.NoError(t, err, "%s %q", o.op, o.key)
	}
	require.NoError(t, db.Close())
	require.NoError(t, os.Remove(filepath.Join(dbGoldenDir, "LOCK")))
}

// TestOpenDBGoldenV020 opens a copy of the database v0.2.0 wrote and reads
// it back: the promise of FORMAT.md for the WAL, the MANIFEST and CURRENT,
// which carry no version number, and for the table formats together.
func TestOpenDBGoldenV020(t *testing.T) {
	if _, err := os.Stat(dbGoldenDir); os.IsNotExist(err) && *writeDBGolden {
		writeDBGoldenDir(t)
	}
	// The golden holds what it is meant to: tables of formats 3 and 2, and
	// a WAL with unflushed writes.
	versions := map[uint32]bool{}
	tables, err := filepath.Glob(filepath.Join(dbGoldenDir, "*.sst"))
	require.NoError(t, err)
	for _, p := range tables {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		versions[binary.LittleEndian.Uint32(b[len(b)-12:])] = true
	}
	require.Equal(t, map[uint32]bool{2: true, 3: true}, versions, "table format versions in %s", dbGoldenDir)
	logs, err := filepath.Glob(filepath.Join(dbGoldenDir, "*.log"))
	require.NoError(t, err)
	require.NotEmpty(t, logs)

	dir := t.TempDir()
	entries, err := os.ReadDir(dbGoldenDir)
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dbGoldenDir, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644))
	}

	ctx := context.Background()
	for _, params := range []string{"?create_if_missing=false&read_only=true", "?create_if_missing=false"} {
		t.Run(params, func(t *testing.T) {
			db, err := driver.Open("shale", dir+params)
			require.NoError(t, err)
			defer func() { require.NoError(t, db.Close()) }()
			require.NoError(t, db.Ping(ctx))

			model := dbGoldenModel()
			want := make([]string, 0, len(model))
			for k := range model {
				want = append(want, k)
			}
			sort.Strings(want)
			it, err := db.NewIterator(ctx, nil)
			require.NoError(t, err)
			var got []string
			for ok := it.First(); ok; ok = it.Next() {
				k := string(it.Key())
				got = append(got, k)
				require.Equal(t, model[k], string(it.Value()), "value of %s", k)
			}
			require.NoError(t, it.Close())
			require.Equal(t, want, got)

			for _, k := range []int{5, 6, 7, 150, 199, 305, 1000} {
				v, err := db.Get(ctx, goldenKey(k))
				if w, ok := model[string(goldenKey(k))]; ok {
					require.NoError(t, err, "Get %d", k)
					require.True(t, bytes.Equal([]byte(w), v), "Get %d", k)
				} else {
					require.ErrorIs(t, err, driver.ErrNotFound, "Get %d", k)
				}
			}
			require.NoError(t, db.VerifyChecksum(ctx))
			require.NoError(t, db.VerifyFileChecksums(ctx))
		})
	}
}
