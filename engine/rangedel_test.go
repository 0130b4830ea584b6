package engine

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// deleteRange applies a range deletion to the model; a nil end is
// unbounded.
func (m model) deleteRange(start, end []byte) {
	for k := range m {
		if string(start) <= k && (end == nil || k < string(end)) {
			delete(m, k)
		}
	}
}

// reader is what DB and Snapshot share.
type rdReader interface {
	Get(ctx context.Context, key []byte) ([]byte, error)
	MultiGet(ctx context.Context, keys [][]byte) ([][]byte, error)
	NewIterator(ctx context.Context, opts *iterOptions) (*iterator, error)
}

// checkAgainst compares every read API of r with m: Get and MultiGet of
// every key of the key space, and iterators both ways within random bounds.
func checkAgainst(t *testing.T, rng *rand.Rand, r rdReader, m model, nkeys int, what string) {
	t.Helper()
	ctx := context.Background()
	var keys [][]byte
	for i := range nkeys {
		keys = append(keys, key(i))
	}
	got, err := r.MultiGet(ctx, keys)
	require.NoError(t, err)
	for i, k := range keys {
		want, ok := m[string(k)]
		v, err := r.Get(ctx, k)
		if !ok {
			require.True(t, errors.Is(err, ErrNotFound), "%s: Get(%s) = %q, %v; want not found", what, k, v, err)
			require.Nil(t, got[i], "%s: MultiGet(%s)", what, k)
			continue
		}
		require.NoError(t, err, "%s: Get(%s)", what, k)
		require.Equal(t, want, string(v), "%s: Get(%s)", what, k)
		require.Equal(t, want, string(got[i]), "%s: MultiGet(%s)", what, k)
	}
	for range 3 {
		var opts *iterOptions
		var lower, upper []byte
		if rng.IntN(2) == 0 {
			lower, upper = key(rng.IntN(nkeys)), key(rng.IntN(nkeys+1))
			opts = &iterOptions{LowerBound: lower, UpperBound: upper}
		}
		want := m.scan(lower, upper)
		it, err := r.NewIterator(ctx, opts)
		require.NoError(t, err)
		var fwd, bwd []string
		for ok := it.First(); ok; ok = it.Next() {
			require.Equal(t, m[string(it.Key())], string(it.Value()))
			fwd = append(fwd, string(it.Key()))
		}
		for ok := it.Last(); ok; ok = it.Prev() {
			bwd = append([]string{string(it.Key())}, bwd...)
		}
		// A seek into the middle, then both directions.
		probe := key(rng.IntN(nkeys))
		var seekWant string
		for _, k := range want {
			if k >= string(probe) {
				seekWant = k
				break
			}
		}
		if it.SeekGE(probe) {
			require.Equal(t, seekWant, string(it.Key()), "%s: SeekGE(%s)", what, probe)
		} else {
			require.Empty(t, seekWant, "%s: SeekGE(%s)", what, probe)
		}
		var ltWant string
		for _, k := range want {
			if k < string(probe) {
				ltWant = k
			}
		}
		if it.SeekLT(probe) {
			require.Equal(t, ltWant, string(it.Key()), "%s: SeekLT(%s)", what, probe)
		} else {
			require.Empty(t, ltWant, "%s: SeekLT(%s)", what, probe)
		}
		require.NoError(t, it.Error())
		require.NoError(t, it.Close())
		require.Equal(t, want, fwd, "%s: forward scan [%s, %s)", what, lower, upper)
		require.Equal(t, want, bwd, "%s: backward scan [%s, %s)", what, lower, upper)
	}
}

// modelSnap is a snapshot a model test took, with the model as it was then.
type modelSnap struct {
	s *snapshot
	m model
}

// checkSnapsAgainst checks each snapshot against its model with
// checkAgainst; what names the moment.
func checkSnapsAgainst(t *testing.T, rng *rand.Rand, snaps []modelSnap, nkeys int, what string) {
	t.Helper()
	for i, s := range snaps {
		checkAgainst(t, rng, s.s, s.m, nkeys, fmt.Sprintf("%s snapshot %d", what, i))
	}
}

// closeSnaps closes the snapshots, ignoring errors (the database may have
// closed them already).
func closeSnaps(snaps []modelSnap) {
	for _, s := range snaps {
		_ = s.s.Close()
	}
}

// TestRangeDeleteModel runs random puts, deletes and range deletions (alone
// and in batches with puts before and after them, bounded and unbounded,
// in transactions too) across flushes,
// compactions, reopens and snapshots, and checks every read API against a
// map after each step.
func TestRangeDeleteModel(t *testing.T) {
	steps := 400
	if testing.Short() {
		steps = 150
	}
	for _, seed := range []uint64{1, 2, 3, 4, 5, 6} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			runRangeDeleteModel(t, seed, steps)
		})
	}
}

func runRangeDeleteModel(t *testing.T, seed uint64, steps int) {
	const nkeys = 120
	rng := rand.New(rand.NewPCG(seed, 99))
	ctx := context.Background()
	fs := vfs.NewMem()
	opts := smallOptions(fs)
	db, err := openDatabase("/db", opts)
	require.NoError(t, err)
	defer func() { _ = db.Close() }()

	m := model{}
	var snaps []modelSnap
	defer func() { closeSnaps(snaps) }()
	// randRange returns a range to delete: sometimes inverted, sometimes
	// unbounded (a nil end, after every key).
	randRange := func() ([]byte, []byte) {
		a, b := rng.IntN(nkeys), rng.IntN(nkeys+1)
		if rng.IntN(8) != 0 && a > b {
			a, b = b, a
		}
		if rng.IntN(6) == 0 {
			return key(a), nil
		}
		return key(a), key(b)
	}
	for step := range steps {
		switch op := rng.IntN(100); {
		case op < 40:
			k, v := key(rng.IntN(nkeys)), fmt.Sprintf("v%d-%s", step, value(rng, rng.IntN(400)))
			require.NoError(t, db.Put(ctx, k, []byte(v)))
			m[string(k)] = v
		case op < 48:
			k := key(rng.IntN(nkeys))
			require.NoError(t, db.Delete(ctx, k))
			delete(m, string(k))
		case op < 58:
			s, e := randRange()
			require.NoError(t, db.DeleteRange(ctx, s, e))
			m.deleteRange(s, e)
		case op < 66:
			// A batch: puts before the deletion are covered, puts after it
			// are not.
			b := newWriteBatch()
			s, e := randRange()
			for range 3 {
				k := key(rng.IntN(nkeys))
				v := fmt.Sprintf("b%d", step)
				b.Put(k, []byte(v))
				m[string(k)] = v
			}
			b.DeleteRange(s, e)
			m.deleteRange(s, e)
			k := key(rng.IntN(nkeys))
			b.Put(k, []byte("after"))
			m[string(k)] = "after"
			require.NoError(t, db.Write(ctx, b, nil))
		case op < 69:
			// A transaction: its own reads see its range deletion at once.
			tx, err := db.BeginTx(ctx, nil)
			require.NoError(t, err)
			s, e := randRange()
			k := key(rng.IntN(nkeys))
			require.NoError(t, tx.Put(ctx, k, []byte("tx")))
			m[string(k)] = "tx"
			require.NoError(t, tx.DeleteRange(ctx, s, e))
			m.deleteRange(s, e)
			if _, err := tx.Get(ctx, s); e == nil || bytes.Compare(s, e) < 0 {
				require.True(t, errors.Is(err, ErrNotFound), "step %d: Tx Get inside its deleted range: %v", step, err)
			}
			require.NoError(t, tx.Commit())
		case op < 72:
			require.NoError(t, db.Flush(ctx))
		case op < 76:
			s, e := randRange()
			if e != nil && bytes.Compare(s, e) > 0 {
				s, e = e, s
			}
			if rng.IntN(3) == 0 {
				s, e = nil, nil
			}
			require.NoError(t, db.Compact(ctx, s, e))
			checkVersion(t, db)
		case op < 79:
			require.NoError(t, db.Close())
			db, err = openDatabase("/db", opts)
			require.NoError(t, err)
			snaps = nil // closed with the database
		case op < 83 && len(snaps) < 4:
			s, err := db.NewSnapshot()
			require.NoError(t, err)
			snaps = append(snaps, modelSnap{s, m.clone()})
		default:
			checkAgainst(t, rng, db, m, nkeys, fmt.Sprintf("step %d", step))
			checkSnapsAgainst(t, rng, snaps, nkeys, fmt.Sprintf("step %d", step))
		}
	}
	checkAgainst(t, rng, db, m, nkeys, "end")
	require.NoError(t, db.Compact(ctx, nil, nil))
	checkAgainst(t, rng, db, m, nkeys, "after a full compaction")
	checkSnapsAgainst(t, rng, snaps, nkeys, "end")
	checkVersion(t, db)
	require.NoError(t, db.VerifyChecksum(ctx))
}

// checkVersion runs DB.Check: the version's level invariants (L1 and below
// do not overlap, range-deletion sentinels included), every table's blocks,
// and its MANIFEST bounds, which tombstones may extend.
func checkVersion(t *testing.T, db *database) {
	t.Helper()
	require.NoError(t, db.Check(context.Background()))
}

// openRangeDelDB opens a database for a test that writes range tombstones:
// its cleanup runs checkVersion rather than DB.Check, which does not know
// their bounds yet.
func openRangeDelDB(t *testing.T) *database {
	t.Helper()
	fs := vfs.NewMem()
	db, err := openDatabase("/db", smallOptions(fs))
	require.NoError(t, err)
	t.Cleanup(func() {
		checkVersion(t, db)
		require.NoError(t, db.Close())
	})
	return db
}

// TestDeleteRangeEmpty: an empty or inverted range writes nothing.
func TestDeleteRangeEmpty(t *testing.T) {
	db := openRangeDelDB(t)
	ctx := context.Background()
	require.NoError(t, db.Put(ctx, []byte("b"), []byte("1")))
	before := db.mu.lastSeq
	require.NoError(t, db.DeleteRange(ctx, []byte("c"), []byte("a")))
	require.NoError(t, db.DeleteRange(ctx, []byte("b"), []byte("b")))
	require.Equal(t, before, db.mu.lastSeq, "no write")
	b := newWriteBatch()
	b.DeleteRange([]byte("z"), []byte("a"))
	require.Zero(t, b.Count())
	v, err := db.Get(ctx, []byte("b"))
	require.NoError(t, err)
	require.Equal(t, "1", string(v))
}

// tableStats sums, over the current version's tables, the point entries in
// [start, end) and the tables with range tombstones.
func tableStats(t *testing.T, db *database, start, end []byte) (points, withDels int) {
	t.Helper()
	ctx := context.Background()
	rs := mustReadState(t, db)
	defer rs.unref()
	for level, files := range rs.current.Levels {
		for _, f := range files {
			if f.HasRangeDels {
				withDels++
			}
			ref, err := db.tables.Acquire(ctx, checkReadEnv, f, level)
			require.NoError(t, err)
			it, err := ref.Reader.NewIter(ctx, checkReadEnv, start, end)
			require.NoError(t, err)
			for kv := it.First(); kv != nil; kv = it.Next() {
				points++
			}
			require.NoError(t, it.Close())
			ref.Release()
		}
	}
	return points, withDels
}

// TestCompactionDropsCoveredKeys: a full compaction drops the points a range
// tombstone covers and, at the bottom with no snapshot, the tombstone too;
// with a snapshot older than the tombstone, both stay (the snapshot still
// reads the points).
func TestCompactionDropsCoveredKeys(t *testing.T) {
	ctx := context.Background()
	for _, withSnapshot := range []bool{false, true} {
		t.Run(fmt.Sprint("snapshot=", withSnapshot), func(t *testing.T) {
			db := openRangeDelDB(t)
			for i := range 1000 {
				require.NoError(t, db.Put(ctx, key(i), []byte("v")))
			}
			require.NoError(t, db.Compact(ctx, nil, nil))
			var snap *snapshot
			if withSnapshot {
				var err error
				snap, err = db.NewSnapshot()
				require.NoError(t, err)
				defer snap.Close()
			}
			require.NoError(t, db.DeleteRange(ctx, key(100), key(900)))
			require.NoError(t, db.Flush(ctx))
			points, withDels := tableStats(t, db, key(100), key(900))
			require.Equal(t, 800, points, "before compaction")
			require.Equal(t, 1, withDels)

			require.NoError(t, db.Compact(ctx, nil, nil))
			points, withDels = tableStats(t, db, key(100), key(900))
			if withSnapshot {
				require.Equal(t, 800, points, "the snapshot still reads them")
				require.Equal(t, 1, withDels)
				v, err := snap.Get(ctx, key(500))
				require.NoError(t, err)
				require.Equal(t, "v", string(v))
			} else {
				require.Zero(t, points)
				require.Zero(t, withDels, "elided at the bottom")
			}
			_, err := db.Get(ctx, key(500))
			require.True(t, errors.Is(err, ErrNotFound), "%v", err)
			v, err := db.Get(ctx, key(900))
			require.NoError(t, err)
			require.Equal(t, "v", string(v))
		})
	}
}
