package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/engine"
	"github.com/stretchr/testify/require"
)

// result is one in-process run of the tool.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", r.code, r.stdout, r.stderr)
}

// runTool runs the command line in-process.
func runTool(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// testKey and testValue are the contents of the databases makeDB builds.
func testKey(i int) []byte   { return []byte(fmt.Sprintf("key%06d", i)) }
func testValue(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, 100) }

// dbSpec describes a database for makeDB: tables flushed batches of keys,
// then keys written after the last flush (left in the WAL) and deletions.
type dbSpec struct {
	tables        [][2]int // each [lo, hi): keys written then flushed
	logged        [2]int   // keys written and left in the WAL
	deleted       []int    // keys deleted after the writes, left in the WAL
	noCompression bool
	// partitioned writes the tables with partitioned indexes and filters
	// of 256-byte partitions, so that a few thousand keys make several.
	partitioned bool
	// reverse orders the keys with rocksdb.ReverseBytewiseComparator.
	reverse bool
}

// requireTestKeys checks that db holds testValue(i) at testKey(i) for
// every i in [0, n) but deleted, which it must not find: what makeDB wrote
// with that key deleted, as a copy of the database must read it.
func requireTestKeys(t *testing.T, db *driver.DB, n, deleted int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		v, err := db.Get(ctx, testKey(i))
		if i == deleted {
			require.ErrorIs(t, err, driver.ErrNotFound)
			continue
		}
		require.NoError(t, err, "key %d", i)
		require.Equal(t, testValue(i), v)
	}
}

// openEngine opens the database in dir through the façade with typed
// options (nil: defaults), connected at once.
func openEngine(t *testing.T, dir string, opts *engine.Options) *driver.DB {
	t.Helper()
	db := driver.OpenDB(engine.NewConnector(dir, opts))
	if err := db.Ping(context.Background()); err != nil {
		_ = db.Close()
		t.Fatalf("opening %s: %v", dir, err)
	}
	return db
}

// makeDB builds a database in dir through the façade and closes it.
func makeDB(t *testing.T, dir string, spec dbSpec) {
	t.Helper()
	ctx := context.Background()
	opts := &engine.Options{DisableAutoCompactions: true}
	if spec.noCompression {
		opts.Compression = engine.CompressionNone
	}
	if spec.partitioned {
		opts.PartitionIndexAndFilters, opts.MetadataBlockSize = true, 256
	}
	if spec.reverse {
		opts.Comparer = engine.ReverseBytewiseComparer
	}
	db := openEngine(t, dir, opts)
	for _, r := range spec.tables {
		// One batch a table: memtables start small and grow, so puts one
		// by one could fill several memtables and flush several tables.
		var b driver.Batch
		for i := r[0]; i < r[1]; i++ {
			b.Put(testKey(i), testValue(i))
		}
		require.NoError(t, db.Write(ctx, &b))
		require.NoError(t, db.Flush(ctx))
	}
	for i := spec.logged[0]; i < spec.logged[1]; i++ {
		require.NoError(t, db.Put(ctx, testKey(i), testValue(i)))
	}
	for _, i := range spec.deleted {
		require.NoError(t, db.Delete(ctx, testKey(i)))
	}
	require.NoError(t, db.Close())
}

// filesWithSuffix returns dir's files ending in suffix, sorted, skipping
// empty ones.
func filesWithSuffix(t *testing.T, dir, suffix string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		info, err := e.Info()
		require.NoError(t, err)
		if strings.HasSuffix(e.Name(), suffix) && info.Size() > 0 {
			names = append(names, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(names)
	return names
}

// onlyTable returns the path of dir's one table file.
func onlyTable(t *testing.T, dir string) string {
	t.Helper()
	tables := filesWithSuffix(t, dir, ".sst")
	require.Len(t, tables, 1)
	return tables[0]
}

// flipByte inverts the byte at off (from the end when negative).
func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	if off < 0 {
		off += int64(len(data))
	}
	data[off] ^= 0xff
	require.NoError(t, os.WriteFile(path, data, 0o644))
}

// lineWith returns the first line of s that starts with prefix, or fails.
func lineWith(t *testing.T, s, prefix string) string {
	t.Helper()
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	t.Fatalf("no line starting with %q in:\n%s", prefix, s)
	return ""
}

// fieldsOf returns the whitespace-separated fields of the line starting
// with prefix.
func fieldsOf(t *testing.T, s, prefix string) []string {
	t.Helper()
	return strings.Fields(lineWith(t, s, prefix))
}
