package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// smallOptions makes flushes and compactions happen after little data, so
// tests exercise every part of the tree.
func smallOptions(fs vfs.FS) *Options {
	return &Options{
		FS:                             fs,
		WriteBufferSize:                64 << 10,
		TargetFileSizeBase:             32 << 10,
		MaxBytesForLevelBase:           128 << 10,
		Level0FileNumCompactionTrigger: 2,
		BlockSize:                      512,
		BlockCacheSize:                 256 << 10,
		// Read back every new table: the tests want flush and compaction
		// bugs caught where they happen.
		ParanoidFileChecks: true,
	}
}

// openTestDB opens a database on a fresh MemFS and registers a cleanup that
// checks its consistency (every table's blocks, key order, level overlap)
// and closes it, as bbolt's test harness does after every test.
func openTestDB(t testing.TB, opts *Options) (*database, *vfs.MemFS) {
	t.Helper()
	fs := vfs.NewMem()
	if opts == nil {
		opts = smallOptions(fs)
	}
	opts.FS = fs
	db, err := openDatabase("/db", opts)
	require.NoError(t, err)
	holder := &dbHolder{db: db}
	t.Cleanup(func() { holder.checkAndClose(t) })
	return db, fs
}

// dbHolder lets a test swap the database (reopen) while keeping the final
// check-and-close cleanup pointed at the current one.
type dbHolder struct{ db *database }

func (h *dbHolder) checkAndClose(t testing.TB) {
	t.Helper()
	if h.db == nil || h.db.closedFlag.Load() {
		return
	}
	require.NoError(t, h.db.Check(context.Background()), "consistency check after the test")
	require.NoError(t, h.db.Close())
}

// checkDB registers the consistency check and close for a database the test
// opened itself.
func checkDB(t testing.TB, db *database) *dbHolder {
	h := &dbHolder{db: db}
	t.Cleanup(func() { h.checkAndClose(t) })
	return h
}

func key(i int) []byte { return []byte(fmt.Sprintf("key%06d", i)) }

func value(rng *rand.Rand, n int) []byte {
	v := make([]byte, n)
	for i := range v {
		v[i] = byte('a' + rng.IntN(26))
	}
	return v
}

// model is a map-backed reference database.
type model map[string]string

func (m model) clone() model {
	c := make(model, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func (m model) sortedKeys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// scan returns the model's keys in [lower, upper), nil bounds open.
func (m model) scan(lower, upper []byte) []string {
	var out []string
	for _, k := range m.sortedKeys() {
		if lower != nil && k < string(lower) {
			continue
		}
		if upper != nil && k >= string(upper) {
			continue
		}
		out = append(out, k)
	}
	return out
}

// mustReadState returns db's current read state, referenced.
func mustReadState(tb testing.TB, db *database) *readState {
	tb.Helper()
	rs, err := db.loadReadState()
	require.NoError(tb, err)
	return rs
}
