package engine

import (
	"context"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/require"
)

// TestTxDeleteRangeReadYourWrites: a Tx's range deletion hides the range
// from its own Get, MultiGet and iterators both ways, except keys it writes
// again afterwards; the database is unchanged until Commit.
func TestTxDeleteRangeReadYourWrites(t *testing.T) {
	db := openRangeDelDB(t)
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		require.NoError(t, db.Put(ctx, []byte(k), []byte("db-"+k)))
	}
	require.NoError(t, db.Flush(ctx))
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, tx.Put(ctx, []byte("bb"), []byte("tx-bb"))) // covered: written before
	require.NoError(t, tx.DeleteRange(ctx, []byte("b"), []byte("d")))
	require.NoError(t, tx.Put(ctx, []byte("c"), []byte("tx-c"))) // written after: visible

	_, err = tx.Get(ctx, []byte("b"))
	require.True(t, errors.Is(err, ErrNotFound), "%v", err)
	_, err = tx.Get(ctx, []byte("bb"))
	require.True(t, errors.Is(err, ErrNotFound), "%v", err)
	v, err := tx.Get(ctx, []byte("c"))
	require.NoError(t, err)
	require.Equal(t, "tx-c", string(v))
	vals, err := tx.MultiGet(ctx, [][]byte{[]byte("a"), []byte("b"), []byte("c"), []byte("d")})
	require.NoError(t, err)
	require.Equal(t, [][]byte{[]byte("db-a"), nil, []byte("tx-c"), []byte("db-d")}, vals)

	it, err := tx.NewIterator(ctx, nil)
	require.NoError(t, err)
	var fwd, bwd []string
	for ok := it.First(); ok; ok = it.Next() {
		fwd = append(fwd, string(it.Key())+"="+string(it.Value()))
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		bwd = append([]string{string(it.Key()) + "=" + string(it.Value())}, bwd...)
	}
	require.NoError(t, it.Close())
	want := []string{"a=db-a", "c=tx-c", "d=db-d", "e=db-e"}
	require.Equal(t, want, fwd)
	require.Equal(t, want, bwd)

	// The database does not see the Tx's writes before Commit.
	v, err = db.Get(ctx, []byte("b"))
	require.NoError(t, err)
	require.Equal(t, "db-b", string(v))
	require.NoError(t, tx.Commit())
	_, err = db.Get(ctx, []byte("b"))
	require.True(t, errors.Is(err, ErrNotFound), "%v", err)
	v, err = db.Get(ctx, []byte("c"))
	require.NoError(t, err)
	require.Equal(t, "tx-c", string(v))
}

// TestTxDeleteRangeConflicts: a Tx's range deletion conflicts with a write
// committed in its range after it began (in the memtable or already flushed),
// not with one outside the range or before it began; and a concurrent range
// deletion over a key a Tx writes conflicts with that write.
func TestTxDeleteRangeConflicts(t *testing.T) {
	ctx := context.Background()
	runTxConflictCases(t, []string{"c"}, []txConflictCase{
		{"put-inside", rdTx("b", "d"), put("c"), false, true},
		{"put-inside-flushed", rdTx("b", "d"), put("c"), true, true},
		{"put-at-end", rdTx("b", "d"), put("d"), false, false},
		{"put-outside", rdTx("b", "d"), put("a"), false, false},
		{"delete-inside", rdTx("b", "d"), func(db *database) error { return db.Delete(ctx, []byte("bz")) }, false, true},
		{"range-overlapping", rdTx("b", "d"), func(db *database) error { return db.DeleteRange(ctx, []byte("c"), []byte("z")) }, false, true},
		{"range-disjoint", rdTx("b", "d"), func(db *database) error { return db.DeleteRange(ctx, []byte("d"), []byte("z")) }, true, false},
		{"tx-put-under-range", func(tx *txn) error { return tx.Put(ctx, []byte("m"), []byte("1")) },
			func(db *database) error { return db.DeleteRange(ctx, []byte("a"), []byte("z")) }, false, true},
		{"tx-put-beside-range", func(tx *txn) error { return tx.Put(ctx, []byte("z"), []byte("1")) },
			func(db *database) error { return db.DeleteRange(ctx, []byte("a"), []byte("z")) }, true, false},
	})
}

// txConflictCase is a Tx that runs txOp, while other commits a write
// outside it (then a flush, with flush), and then commits: with a conflict
// or not.
type txConflictCase struct {
	name     string
	txOp     func(tx *txn) error
	other    func(db *database) error
	flush    bool
	conflict bool
}

// runTxConflictCases runs each case on a new database holding "old" at
// each of keys, written before the Tx begins.
func runTxConflictCases(t *testing.T, keys []string, cases []txConflictCase) {
	t.Helper()
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := openRangeDelDB(t)
			for _, k := range keys {
				require.NoError(t, db.Put(ctx, []byte(k), []byte("old")))
			}
			tx, err := db.BeginTx(ctx, nil)
			require.NoError(t, err)
			require.NoError(t, tc.txOp(tx))
			require.NoError(t, tc.other(db))
			if tc.flush {
				require.NoError(t, db.Flush(ctx))
			}
			err = tx.Commit()
			if tc.conflict {
				require.True(t, errors.Is(err, ErrConflict), "want a conflict, got %v", err)
			} else {
				require.NoError(t, err)
			}
		})
	}
}

func rdTx(start, end string) func(tx *txn) error {
	return func(tx *txn) error { return tx.DeleteRange(context.Background(), []byte(start), []byte(end)) }
}

func put(k string) func(db *database) error {
	return func(db *database) error { return db.Put(context.Background(), []byte(k), []byte("new")) }
}
