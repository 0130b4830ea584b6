package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/memtable"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// TestDeleteRangeUnbounded is the case: DeleteRange(start, nil)
// deletes every key >= start (it deleted nothing before: start >= nil read
// as an empty range). Each case checks every read API against a model, and
// a snapshot taken before the deletion against the old one, where the
// tombstone is: in the memtable, flushed, compacted (with a snapshot held
// or not), replayed from the WAL, recovered into a table.
func TestDeleteRangeUnbounded(t *testing.T) {
	const nkeys = 300
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		after func(t *testing.T, db *database, fs *vfs.MemFS) *database // moves the tombstone
	}{
		{"memtable", nil},
		{"flushed", func(t *testing.T, db *database, _ *vfs.MemFS) *database {
			require.NoError(t, db.Flush(ctx))
			return db
		}},
		{"compacted", func(t *testing.T, db *database, _ *vfs.MemFS) *database {
			require.NoError(t, db.Compact(ctx, nil, nil))
			return db
		}},
		{"compacted from the start", func(t *testing.T, db *database, _ *vfs.MemFS) *database {
			require.NoError(t, db.Compact(ctx, key(150), nil))
			return db
		}},
		{"reopened (WAL replay)", func(t *testing.T, db *database, fs *vfs.MemFS) *database {
			require.NoError(t, db.Close())
			db, err := openDatabase("/db", smallOptions(fs))
			require.NoError(t, err)
			return db
		}},
		{"flushed, reopened, compacted", func(t *testing.T, db *database, fs *vfs.MemFS) *database {
			require.NoError(t, db.Flush(ctx))
			require.NoError(t, db.Close())
			db, err := openDatabase("/db", smallOptions(fs))
			require.NoError(t, err)
			require.NoError(t, db.Compact(ctx, nil, nil))
			return db
		}},
	} {
		for _, withSnap := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/snapshot=%v", tc.name, withSnap), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(7, 7))
				fs := vfs.NewMem()
				db, err := openDatabase("/db", smallOptions(fs))
				require.NoError(t, err)
				h := checkDB(t, db)
				m := model{}
				for i := range nkeys {
					v := fmt.Sprintf("v%d-%s", i, value(rng, 100))
					require.NoError(t, db.Put(ctx, key(i), []byte(v)))
					m[string(key(i))] = v
				}
				// Some of the keys in tables, deeper ones at the end of the
				// key space, so a flush's clamp must look past the memtable.
				require.NoError(t, db.Flush(ctx))
				require.NoError(t, db.Put(ctx, []byte("zzz-last"), []byte("old")))
				m["zzz-last"] = "old"
				require.NoError(t, db.Compact(ctx, nil, nil))
				for i := range 50 {
					require.NoError(t, db.Put(ctx, key(i*3), []byte("new")))
					m[string(key(i*3))] = "new"
				}
				var snaps []modelSnap
				if withSnap {
					s, err := db.NewSnapshot()
					require.NoError(t, err)
					snaps = append(snaps, modelSnap{s, m.clone()})
				}

				require.NoError(t, db.DeleteRange(ctx, key(150), nil))
				m.deleteRange(key(150), nil)
				require.NotContains(t, m, "zzz-last")
				_, err = db.Get(ctx, []byte("zzz-last"))
				require.True(t, errors.Is(err, ErrNotFound), "the last key is deleted at once: %v", err)
				// Written after the deletion: visible. (None past
				// "zzz-last", so that a flush's clamp must find it in a
				// table; "zzzz-after" comes after the move.)
				for _, k := range []string{string(key(200)), string(key(150))} {
					require.NoError(t, db.Put(ctx, []byte(k), []byte("after")))
					m[k] = "after"
				}
				checkAgainst(t, rng, db, m, nkeys+10, "before "+tc.name)
				checkSnapsAgainst(t, rng, snaps, nkeys+10, "before "+tc.name)

				if tc.after != nil {
					reopened := tc.name == "reopened (WAL replay)" || tc.name == "flushed, reopened, compacted"
					if reopened {
						closeSnaps(snaps)
						snaps = nil
					}
					db = tc.after(t, db, fs)
					h.db = db
				}
				checkAgainst(t, rng, db, m, nkeys+10, tc.name)
				checkSnapsAgainst(t, rng, snaps, nkeys+10, tc.name)
				require.NoError(t, db.Put(ctx, []byte("zzzz-after"), []byte("after")))
				m["zzzz-after"] = "after"
				for _, k := range []string{"zzz-last", "zzzz"} {
					_, err = db.Get(ctx, []byte(k))
					require.True(t, errors.Is(err, ErrNotFound), "%s: Get(%s): %v", tc.name, k, err)
				}
				v, err := db.Get(ctx, []byte("zzzz-after"))
				require.NoError(t, err)
				require.Equal(t, "after", string(v))

				// And all of it survives flushing and compacting what
				// remains, and later writes past the old end are visible.
				require.NoError(t, db.Put(ctx, []byte("zzzzzz-later"), []byte("later")))
				m["zzzzzz-later"] = "later"
				require.NoError(t, db.Flush(ctx))
				require.NoError(t, db.Compact(ctx, nil, nil))
				checkAgainst(t, rng, db, m, nkeys+10, tc.name+", then compacted")
				checkSnapsAgainst(t, rng, snaps, nkeys+10, tc.name+", then compacted")
				checkTablesBounded(t, db)
				closeSnaps(snaps)
			})
		}
	}
}

// checkTablesBounded checks that no table of the current version holds an
// unbounded tombstone: a flush clamps them.
func checkTablesBounded(t *testing.T, db *database) {
	t.Helper()
	ctx := context.Background()
	rs := mustReadState(t, db)
	defer rs.unref()
	for level, files := range rs.current.Levels {
		for _, f := range files {
			require.NotEmpty(t, f.Largest.UserKey, "L%d table %s", level, f.FileNum)
			ref, err := db.tables.Acquire(ctx, checkReadEnv, f, level)
			require.NoError(t, err)
			require.False(t, ref.Reader.RangeDeletions().Unbounded(), "L%d table %s", level, f.FileNum)
			ref.Release()
		}
	}
}

// TestClampRangeDels checks the flush's clamp of an unbounded tombstone
// directly: it ends just after the largest user key of the memtable, of the
// current version's tables and of the tables recovery wrote but has not
// recorded yet (pending), and is left out when no key is at or after its
// start; a bounded Set is returned as it is.
func TestClampRangeDels(t *testing.T) {
	db, _ := openTestDB(t, nil)
	ctx := context.Background()
	require.NoError(t, db.Put(ctx, []byte("k"), []byte("v")))
	require.NoError(t, db.Flush(ctx)) // "k" in an L0 table
	pending := []*manifest.FileMetadata{{Largest: base.MakeInternalKey([]byte("q"), 1, base.KindSet)}}
	for _, tc := range []struct {
		name    string
		mem     []string // point keys
		start   string
		end     string // "" for unbounded
		pending bool
		want    []string
	}{
		{"past the table", []string{"a"}, "b", "", false, []string{"[b, k\x00)"}},
		{"past the memtable", []string{"a", "x"}, "b", "", false, []string{"[b, x\x00)"}},
		{"past pending", []string{"a"}, "b", "", true, []string{"[b, q\x00)"}},
		{"nothing at or after the start", []string{"a"}, "m", "", false, nil},
		{"the start is the largest key", []string{"a"}, "k", "", false, []string{"[k, k\x00)"}},
		{"bounded: as it is", []string{"a"}, "b", "zz", false, []string{"[b, zz)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memtable.New(1 << 16)
			for i, k := range tc.mem {
				require.NoError(t, mem.Add(base.SeqNum(100+i), base.KindSet, []byte(k), []byte("v")))
			}
			var end []byte
			if tc.end != "" {
				end = []byte(tc.end)
			}
			require.NoError(t, mem.AddRangeDelete(200, []byte(tc.start), end))
			var p []*manifest.FileMetadata
			if tc.pending {
				p = pending
			}
			var got []string
			for _, f := range db.clampRangeDels(mem, p).Fragments() {
				got = append(got, fmt.Sprintf("[%s, %s)", f.Start, f.End))
			}
			require.Equal(t, tc.want, got)
		})
	}
}

// TestTxDeleteRangeUnbounded: a Tx's DeleteRange(start, nil) hides every
// key >= start from its own reads (but those it writes again after), and
// applies at Commit; snapshots see what they saw.
func TestTxDeleteRangeUnbounded(t *testing.T) {
	db := openRangeDelDB(t)
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c", "d", "zz"} {
		require.NoError(t, db.Put(ctx, []byte(k), []byte("db-"+k)))
	}
	require.NoError(t, db.Flush(ctx))
	require.NoError(t, db.Put(ctx, []byte("e"), []byte("db-e"))) // in the memtable
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, tx.Put(ctx, []byte("x"), []byte("tx-x"))) // covered: written before
	require.NoError(t, tx.DeleteRange(ctx, []byte("b"), nil))
	require.NoError(t, tx.Put(ctx, []byte("c"), []byte("tx-c"))) // written after: visible

	for k, want := range map[string]string{"a": "db-a", "b": "", "c": "tx-c", "d": "", "e": "", "x": "", "zz": "", "zzz": ""} {
		v, err := tx.Get(ctx, []byte(k))
		if want == "" {
			require.True(t, errors.Is(err, ErrNotFound), "Get(%s) = %q, %v", k, v, err)
		} else {
			require.NoError(t, err)
			require.Equal(t, want, string(v))
		}
	}
	vals, err := tx.MultiGet(ctx, [][]byte{[]byte("a"), []byte("b"), []byte("c"), []byte("e"), []byte("zz")})
	require.NoError(t, err)
	require.Equal(t, [][]byte{[]byte("db-a"), nil, []byte("tx-c"), nil, nil}, vals)

	for _, tc := range []struct {
		lower, upper string
		want         []string
	}{
		{"", "", []string{"a=db-a", "c=tx-c"}},
		{"b", "", []string{"c=tx-c"}},
		{"c0", "", nil},
		{"", "c", []string{"a=db-a"}},
		{"d", "zzz", nil},
	} {
		var opts *iterOptions
		if tc.lower != "" || tc.upper != "" {
			opts = &iterOptions{}
			if tc.lower != "" {
				opts.LowerBound = []byte(tc.lower)
			}
			if tc.upper != "" {
				opts.UpperBound = []byte(tc.upper)
			}
		}
		it, err := tx.NewIterator(ctx, opts)
		require.NoError(t, err)
		var fwd, bwd []string
		for ok := it.First(); ok; ok = it.Next() {
			fwd = append(fwd, string(it.Key())+"="+string(it.Value()))
		}
		for ok := it.Last(); ok; ok = it.Prev() {
			bwd = append([]string{string(it.Key()) + "=" + string(it.Value())}, bwd...)
		}
		// Turning around at the end of the deleted tail.
		if it.SeekGE([]byte("d")) {
			t.Fatalf("[%q, %q): SeekGE(d) found %q", tc.lower, tc.upper, it.Key())
		}
		if len(tc.want) > 0 {
			require.True(t, it.SeekLT([]byte("zzzz")))
			require.Equal(t, tc.want[len(tc.want)-1], string(it.Key())+"="+string(it.Value()))
			require.True(t, it.Prev() || len(tc.want) == 1)
		}
		require.NoError(t, it.Error())
		require.NoError(t, it.Close())
		require.Equal(t, tc.want, fwd, "[%q, %q) forward", tc.lower, tc.upper)
		require.Equal(t, tc.want, bwd, "[%q, %q) backward", tc.lower, tc.upper)
	}

	snap, err := db.NewSnapshot()
	require.NoError(t, err)
	defer snap.Close()
	require.NoError(t, tx.Commit())
	for k, want := range map[string]string{"a": "db-a", "b": "", "c": "tx-c", "e": "", "x": "", "zz": ""} {
		v, err := db.Get(ctx, []byte(k))
		if want == "" {
			require.True(t, errors.Is(err, ErrNotFound), "after Commit: Get(%s) = %q, %v", k, v, err)
		} else {
			require.NoError(t, err)
			require.Equal(t, want, string(v))
		}
	}
	v, err := snap.Get(ctx, []byte("zz"))
	require.NoError(t, err)
	require.Equal(t, "db-zz", string(v), "a snapshot from before the commit")
}

// TestTxDeleteRangeUnboundedConflicts: a Tx's DeleteRange(start, nil)
// conflicts with a write committed at or after start, however far after,
// since it began (in the memtable or flushed), and not with one before
// start or one before the Tx began.
func TestTxDeleteRangeUnboundedConflicts(t *testing.T) {
	ctx := context.Background()
	rdOpen := func(start string) func(tx *txn) error {
		return func(tx *txn) error { return tx.DeleteRange(ctx, []byte(start), nil) }
	}
	runTxConflictCases(t, []string{"c", "zzzzzz"}, []txConflictCase{
		{"put-at-start", rdOpen("b"), put("b"), false, true},
		{"put-far-after", rdOpen("b"), put("zzzzzz"), false, true},
		{"put-far-after-flushed", rdOpen("b"), put("zzzzzz"), true, true},
		{"put-before-start", rdOpen("b"), put("a"), false, false},
		{"put-before-start-flushed", rdOpen("b"), put("a"), true, false},
		{"empty-start", rdOpen(""), put("a"), false, true},
		{"delete-after", rdOpen("b"), func(db *database) error { return db.Delete(ctx, []byte("q")) }, false, true},
		{"range-after", rdOpen("b"), func(db *database) error { return db.DeleteRange(ctx, []byte("x"), []byte("y")) }, true, true},
		{"range-before", rdOpen("b"), func(db *database) error { return db.DeleteRange(ctx, []byte("a"), []byte("b")) }, false, false},
		{"unbounded-range-before", rdOpen("m"), func(db *database) error { return db.DeleteRange(ctx, []byte("a"), nil) }, false, true},
		{"tx-put-under-unbounded", func(tx *txn) error { return tx.Put(ctx, []byte("zz"), []byte("1")) },
			func(db *database) error { return db.DeleteRange(ctx, []byte("m"), nil) }, false, true},
		{"tx-put-under-unbounded-flushed", func(tx *txn) error { return tx.Put(ctx, []byte("zz"), []byte("1")) },
			func(db *database) error { return db.DeleteRange(ctx, []byte("m"), nil) }, true, true},
		{"tx-put-before-unbounded", func(tx *txn) error { return tx.Put(ctx, []byte("a"), []byte("1")) },
			func(db *database) error { return db.DeleteRange(ctx, []byte("m"), nil) }, true, false},
	})
}

// TestFacadeDeleteRangeUnbounded drives the façade: DB.DeleteRange with a
// nil end (and a nil start), a Batch's and a Tx's, over the engine's
// connector, then reopens the database and reads the same.
func TestFacadeDeleteRangeUnbounded(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func() *driver.DB {
		db := driver.OpenDB(NewConnector(dir, &Options{WriteBufferSize: 64 << 10}))
		require.NoError(t, db.Ping(ctx))
		return db
	}
	db := open()
	put := func(keys ...string) {
		for _, k := range keys {
			require.NoError(t, db.Put(ctx, []byte(k), []byte("v-"+k)))
		}
	}
	scan := func(db *driver.DB) (keys []string) {
		it, err := db.NewIterator(ctx, nil)
		require.NoError(t, err)
		for ok := it.First(); ok; ok = it.Next() {
			keys = append(keys, string(it.Key()))
		}
		require.NoError(t, it.Close())
		return keys
	}
	put("a", "b", "c", "d", "e", "f")
	require.NoError(t, db.DeleteRange(ctx, []byte("e"), nil))
	require.Equal(t, []string{"a", "b", "c", "d"}, scan(db))

	b := &driver.Batch{}
	b.Put([]byte("x"), []byte("covered"))
	b.DeleteRange([]byte("d"), nil)
	b.Put([]byte("y"), []byte("after"))
	require.NoError(t, db.Write(ctx, b))
	require.Equal(t, []string{"a", "b", "c", "y"}, scan(db))

	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, tx.DeleteRange(ctx, []byte("c"), nil))
	_, err = tx.Get(ctx, []byte("y"))
	require.ErrorIs(t, err, driver.ErrNotFound)
	require.NoError(t, tx.Commit())
	require.Equal(t, []string{"a", "b"}, scan(db))

	require.NoError(t, db.Close())
	db = open()
	require.Equal(t, []string{"a", "b"}, scan(db), "after a reopen (WAL replay)")
	put("zz")
	require.NoError(t, db.DeleteRange(ctx, nil, nil)) // every key
	require.Empty(t, scan(db))
	put("after")
	require.NoError(t, db.Close())
	db = open()
	require.Equal(t, []string{"after"}, scan(db), "after a reopen")
	require.NoError(t, db.Close())
	// The engine's consistency check (the façade's Check needs a
	// driver.Checker the engine's conn does not implement yet).
	d, err := openDatabase(dir, nil)
	require.NoError(t, err)
	require.NoError(t, d.Compact(ctx, nil, nil))
	require.NoError(t, d.Check(ctx))
	require.NoError(t, d.Close())
}
