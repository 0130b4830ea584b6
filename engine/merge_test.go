package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// mergeModel is a map of the values a stringappend database must show.
type mergeModel map[string]string

func (m mergeModel) merge(k, op string) {
	if v, ok := m[k]; ok {
		m[k] = v + "," + op
	} else {
		m[k] = op
	}
}

func openMergeDB(t testing.TB, fs vfs.FS, op string, extra func(*Options)) (*driver.DB, error) {
	t.Helper()
	o := smallOptions(fs)
	mop, err := ParseMergeOperator(op)
	require.NoError(t, err)
	o.MergeOperator = mop
	if extra != nil {
		extra(o)
	}
	db := driver.OpenDB(NewConnector("/db", o))
	if err := db.Ping(context.Background()); err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}

// checkMergeModel compares every read of db (or of snap when not nil) with
// m over the keys 0..n: Get, MultiGet, Has, ValueSize, GetPinned, and full
// forward and reverse scans, plus a few seeks.
func checkMergeModel(t *testing.T, ctx context.Context, db *driver.DB, snap *driver.Snapshot, m mergeModel, n int, what string) {
	t.Helper()
	keys := make([][]byte, n)
	for i := range n {
		keys[i] = fmt.Appendf(nil, "k%03d", i)
	}
	get := db.Get
	multiGet := db.MultiGet
	newIter := db.NewIterator
	has := db.Has
	if snap != nil {
		get, multiGet, newIter, has = snap.Get, snap.MultiGet, snap.NewIterator, snap.Has
	}
	vals, err := multiGet(ctx, keys)
	require.NoError(t, err, what)
	for i, k := range keys {
		want, ok := m[string(k)]
		v, err := get(ctx, k)
		if !ok {
			require.ErrorIs(t, err, driver.ErrNotFound, "%s: Get %s = %q", what, k, v)
			require.Nil(t, vals[i], "%s: MultiGet %s", what, k)
		} else {
			require.NoError(t, err, "%s: Get %s", what, k)
			require.Equal(t, want, string(v), "%s: Get %s", what, k)
			require.Equal(t, want, string(vals[i]), "%s: MultiGet %s", what, k)
		}
		h, err := has(ctx, k)
		require.NoError(t, err)
		require.Equal(t, ok, h, "%s: Has %s", what, k)
		if snap == nil {
			sz, err := db.ValueSize(ctx, k)
			if ok {
				require.NoError(t, err)
				require.Equal(t, len(want), sz, "%s: ValueSize %s", what, k)
			} else {
				require.ErrorIs(t, err, driver.ErrNotFound)
			}
			pv, c, err := db.GetPinned(ctx, k)
			if ok {
				require.NoError(t, err)
				require.Equal(t, want, string(pv), "%s: GetPinned %s", what, k)
				require.NoError(t, c.Close())
			} else {
				require.ErrorIs(t, err, driver.ErrNotFound)
			}
		}
	}
	sorted := slices.Sorted(maps.Keys(m))
	it, err := newIter(ctx, nil)
	require.NoError(t, err)
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		require.Equal(t, m[string(it.Key())], string(it.Value()), "%s: forward at %s", what, it.Key())
		got = append(got, string(it.Key()))
	}
	require.Equal(t, sorted, nonNilStrings(got), "%s: forward keys", what)
	got = got[:0]
	for ok := it.Last(); ok; ok = it.Prev() {
		require.Equal(t, m[string(it.Key())], string(it.Value()), "%s: reverse at %s", what, it.Key())
		got = append(got, string(it.Key()))
	}
	slices.Reverse(got)
	require.Equal(t, sorted, nonNilStrings(got), "%s: reverse keys", what)
	// Direction changes around merged keys.
	for _, k := range keys[:min(len(keys), 12)] {
		if it.SeekGE(k) {
			cur := string(it.Key())
			if it.Prev() {
				require.Equal(t, m[string(it.Key())], string(it.Value()), "%s: Prev after SeekGE %s", what, k)
				require.Less(t, string(it.Key()), cur)
				require.True(t, it.Next())
				require.Equal(t, cur, string(it.Key()), "%s: Next after Prev after SeekGE %s", what, k)
				require.Equal(t, m[cur], string(it.Value()))
			}
		}
		if it.SeekLT(k) {
			cur := string(it.Key())
			if it.Next() {
				require.Greater(t, string(it.Key()), cur)
				require.Equal(t, m[string(it.Key())], string(it.Value()), "%s: Next after SeekLT %s", what, k)
			}
		}
	}
	require.NoError(t, it.Close())
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// TestMergeModel runs random Puts, Deletes, Merges and DeleteRanges with
// flushes, compactions, snapshots and reopens against a model, checking
// every read API forward and backward, at the snapshots too.
func TestMergeModel(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(seed, 7))
			fs := vfs.NewMem()
			db, err := openMergeDB(t, fs, "stringappend", nil)
			require.NoError(t, err)
			defer func() { _ = db.Close() }()
			const n = 40
			m := mergeModel{}
			type snapModel struct {
				s *driver.Snapshot
				m mergeModel
			}
			var snaps []snapModel
			steps := 1500
			if testing.Short() {
				steps = 600
			}
			for step := range steps {
				k := fmt.Sprintf("k%03d", rng.IntN(n))
				switch r := rng.IntN(100); {
				case r < 50:
					op := fmt.Sprintf("%d", step)
					require.NoError(t, db.Merge(ctx, []byte(k), []byte(op)))
					m.merge(k, op)
				case r < 62:
					v := fmt.Sprintf("p%d", step)
					require.NoError(t, db.Put(ctx, []byte(k), []byte(v)))
					m[k] = v
				case r < 68:
					require.NoError(t, db.Delete(ctx, []byte(k)))
					delete(m, k)
				case r < 71:
					end := fmt.Sprintf("k%03d", rng.IntN(n))
					require.NoError(t, db.DeleteRange(ctx, []byte(k), []byte(end)))
					for mk := range m {
						if mk >= k && mk < end {
							delete(m, mk)
						}
					}
				case r < 80:
					var b driver.Batch
					k2 := fmt.Sprintf("k%03d", rng.IntN(n))
					b.Merge([]byte(k), []byte("b1"))
					b.Put([]byte(k2), []byte("bp"))
					b.Merge([]byte(k2), []byte("b2"))
					require.NoError(t, db.Write(ctx, &b))
					m.merge(k, "b1")
					m[k2] = "bp"
					m.merge(k2, "b2")
				case r < 84:
					require.NoError(t, db.Flush(ctx))
				case r < 86:
					require.NoError(t, db.Compact(ctx, nil, nil))
				case r < 90:
					if len(snaps) < 4 {
						s, err := db.NewSnapshot(ctx)
						require.NoError(t, err)
						snaps = append(snaps, snapModel{s, maps.Clone(m)})
					} else {
						i := rng.IntN(len(snaps))
						checkMergeModel(t, ctx, db, snaps[i].s, snaps[i].m, n, fmt.Sprintf("step %d snapshot %d", step, i))
						require.NoError(t, snaps[i].s.Close())
						snaps = slices.Delete(snaps, i, i+1)
					}
				case r < 91:
					for _, s := range snaps {
						require.NoError(t, s.s.Close())
					}
					snaps = nil
					require.NoError(t, db.Close())
					db, err = openMergeDB(t, fs, "stringappend", nil)
					require.NoError(t, err)
				}
				if step%100 == 99 {
					checkMergeModel(t, ctx, db, nil, m, n, fmt.Sprintf("step %d", step))
				}
			}
			checkMergeModel(t, ctx, db, nil, m, n, "end")
			for i, s := range snaps {
				checkMergeModel(t, ctx, db, s.s, s.m, n, fmt.Sprintf("end snapshot %d", i))
				require.NoError(t, s.s.Close())
			}
			require.NoError(t, db.Compact(ctx, nil, nil))
			checkMergeModel(t, ctx, db, nil, m, n, "after a full compaction")
			require.NoError(t, db.Close())
			// A crash: the WAL is replayed, merges included.
			db, err = openMergeDB(t, fs, "stringappend", nil)
			require.NoError(t, err)
			checkMergeModel(t, ctx, db, nil, m, n, "reopened")
		})
	}
}

// TestMergeOperatorRecorded: the first merge records the operator, and an
// open with another operator, or none, fails naming both; a database
// without merges opens with any.
func TestMergeOperatorRecorded(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	db, err := openMergeDB(t, fs, "stringappend", nil)
	require.NoError(t, err)
	require.NoError(t, db.Put(ctx, []byte("a"), []byte("1")))
	require.NoError(t, db.Close())
	// No merge yet: any operator, or none, opens it.
	for _, op := range []string{"none", "max", "stringappend"} {
		db, err = openMergeDB(t, fs, op, nil)
		require.NoError(t, err, op)
		require.NoError(t, db.Close())
	}
	db, err = openMergeDB(t, fs, "stringappend", nil)
	require.NoError(t, err)
	require.NoError(t, db.Merge(ctx, []byte("a"), []byte("2")))
	require.NoError(t, db.Close()) // the operand is only in the WAL
	for _, op := range []string{"none", "max", "stringappend:;"} {
		_, err = openMergeDB(t, fs, op, nil)
		require.ErrorIs(t, err, driver.ErrInvalidArgument, op)
		require.ErrorContains(t, err, `"stringappend"`)
		require.ErrorContains(t, err, fmt.Sprintf("%q", op))
	}
	db, err = openMergeDB(t, fs, "stringappend", nil)
	require.NoError(t, err)
	v, err := db.Get(ctx, []byte("a"))
	require.NoError(t, err)
	require.Equal(t, "1,2", string(v))

	// A checkpoint carries the record.
	require.NoError(t, db.Checkpoint(ctx, "/cp"))
	require.NoError(t, db.Close())
	o := smallOptions(fs)
	_, err = driver.OpenDB(NewConnector("/cp", o)).Get(ctx, []byte("a"))
	require.ErrorIs(t, err, driver.ErrInvalidArgument)
	o.MergeOperator = StringAppendForTest()
	cp := driver.OpenDB(NewConnector("/cp", o))
	v, err = cp.Get(ctx, []byte("a"))
	require.NoError(t, err)
	require.Equal(t, "1,2", string(v))
	require.NoError(t, cp.Close())
}

// StringAppendForTest is the default stringappend operator.
func StringAppendForTest() MergeOperator {
	op, _ := ParseMergeOperator("stringappend")
	return op
}

// TestMergeWithoutOperator: a merge to a database without an operator fails
// with ErrInvalidArgument and writes nothing, alone or in a batch.
func TestMergeWithoutOperator(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	db, err := openMergeDB(t, fs, "none", nil)
	require.NoError(t, err)
	defer func() { _ = db.Close() }()
	err = db.Merge(ctx, []byte("a"), []byte("1"))
	require.ErrorIs(t, err, driver.ErrInvalidArgument)
	require.ErrorContains(t, err, "no merge operator configured")
	var b driver.Batch
	b.Put([]byte("b"), []byte("1"))
	b.Merge([]byte("a"), []byte("1"))
	require.ErrorIs(t, db.Write(ctx, &b), driver.ErrInvalidArgument)
	_, err = db.Get(ctx, []byte("b"))
	require.ErrorIs(t, err, driver.ErrNotFound, "the batch's Put was not written")
	_, err = fs.Stat("/db/" + mergeOperatorFile)
	require.Error(t, err, "nothing was recorded")
}

// TestMergeBuiltins: each built-in operator over a base value, a
// tombstone, flushes and compactions; uint64add refuses a malformed operand
// at the write and a malformed base at the read, naming the key.
func TestMergeBuiltins(t *testing.T) {
	ctx := context.Background()
	u := func(n uint64) []byte { return binary.LittleEndian.AppendUint64(nil, n) }
	for _, tc := range []struct {
		op       string
		base     []byte
		operands [][]byte
		want     []byte
		noBase   []byte
	}{
		{"stringappend", []byte("a"), [][]byte{[]byte("b"), []byte("c")}, []byte("a,b,c"), []byte("b,c")},
		{"stringappend:", []byte("a"), [][]byte{[]byte("b"), []byte("c")}, []byte("abc"), []byte("bc")},
		{"stringappend:--", []byte("a"), [][]byte{[]byte("b"), []byte("")}, []byte("a--b--"), []byte("b--")},
		{"uint64add", u(5), [][]byte{u(7), u(1<<64 - 1)}, u(11), u(6)},
		{"max", []byte("m"), [][]byte{[]byte("b"), []byte("z"), []byte("c")}, []byte("z"), []byte("z")},
		{"max", []byte("zz"), [][]byte{[]byte("b")}, []byte("zz"), []byte("b")},
	} {
		t.Run(tc.op, func(t *testing.T) {
			for _, flushAt := range []int{-1, 0, 1} {
				db, err := openMergeDB(t, vfs.NewMem(), tc.op, nil)
				require.NoError(t, err)
				require.NoError(t, db.Put(ctx, []byte("k"), tc.base))
				require.NoError(t, db.Put(ctx, []byte("d"), tc.base))
				require.NoError(t, db.Delete(ctx, []byte("d")))
				for i, o := range tc.operands {
					if i == flushAt {
						require.NoError(t, db.Flush(ctx))
					}
					require.NoError(t, db.Merge(ctx, []byte("k"), o))
					require.NoError(t, db.Merge(ctx, []byte("d"), o))
				}
				for range 2 {
					v, err := db.Get(ctx, []byte("k"))
					require.NoError(t, err)
					require.Equal(t, tc.want, v)
					v, err = db.Get(ctx, []byte("d"))
					require.NoError(t, err)
					require.Equal(t, tc.noBase, v)
					require.NoError(t, db.Compact(ctx, nil, nil))
				}
				require.NoError(t, db.Close())
			}
		})
	}

	db, err := openMergeDB(t, vfs.NewMem(), "uint64add", nil)
	require.NoError(t, err)
	defer func() { _ = db.Close() }()
	err = db.Merge(ctx, []byte("k"), []byte("short"))
	require.ErrorIs(t, err, driver.ErrInvalidArgument)
	require.ErrorContains(t, err, `"k"`)
	var b driver.Batch
	b.Merge([]byte("k"), u(1))
	b.Merge([]byte("k"), []byte("x"))
	require.ErrorIs(t, db.Write(ctx, &b), driver.ErrInvalidArgument)
	_, err = db.Get(ctx, []byte("k"))
	require.ErrorIs(t, err, driver.ErrNotFound, "nothing of the batch was written")

	require.NoError(t, db.Put(ctx, []byte("bad"), []byte("not a number")))
	require.NoError(t, db.Merge(ctx, []byte("bad"), u(1)))
	for range 2 {
		_, err = db.Get(ctx, []byte("bad"))
		require.ErrorIs(t, err, driver.ErrInvalidArgument)
		require.ErrorContains(t, err, `"bad"`)
		it, err := db.NewIterator(ctx, nil)
		require.NoError(t, err)
		require.False(t, it.First())
		require.ErrorContains(t, it.Close(), `"bad"`)
		// A compaction cannot merge them either: it keeps them apart and
		// reads keep failing, rather than the compaction.
		require.NoError(t, db.Compact(ctx, nil, nil))
	}
	st := db.Statistics()
	require.Positive(t, st.TickerCount(statistics.NumberMergeFailures))
}

// TestMergeReadWithoutOperator: a database opened with a Options whose
// operator check is bypassed cannot happen through Open; the read path still
// refuses operands without an operator rather than return one as a value.
func TestMergeReadWithoutOperator(t *testing.T) {
	ctx := context.Background()
	d, _ := openTestDB(t, nil)
	b := newWriteBatch()
	b.b.Merge([]byte("k"), []byte("1"))
	require.NoError(t, d.writeOpts(ctx, &b.b, writeOptions{}, nil))
	_, err := d.Get(ctx, []byte("k"))
	require.ErrorIs(t, err, driver.ErrInvalidArgument)
	require.ErrorContains(t, err, "without a merge operator")
	require.NoError(t, d.Flush(ctx))
	_, err = d.Get(ctx, []byte("k"))
	require.ErrorIs(t, err, driver.ErrInvalidArgument)
}

// TestMergeStatistics: merges are timed and counted under shale's names of
// RocksDB's merge tickers.
func TestMergeStatistics(t *testing.T) {
	ctx := context.Background()
	st := statistics.New(statistics.LevelAll)
	db, err := openMergeDB(t, vfs.NewMem(), "stringappend", func(o *Options) { o.Statistics = st })
	require.NoError(t, err)
	defer func() { _ = db.Close() }()
	for i := range 100 {
		require.NoError(t, db.Merge(ctx, []byte("k"), fmt.Appendf(nil, "%d", i)))
	}
	for range 10 {
		_, err := db.Get(ctx, []byte("k"))
		require.NoError(t, err)
	}
	require.Positive(t, st.TickerCount(statistics.MergeOperationTimeNanos))
	require.Zero(t, st.TickerCount(statistics.NumberMergeFailures))
}

var _ = errors.Is
var _ = bytes.Equal
var _ io.Closer

// tableEntries lists every entry of every table of d's current version, as
// "key#seq,KIND=value", level by level.
func tableEntries(t *testing.T, d *database) []string {
	t.Helper()
	ctx := context.Background()
	v := d.vs.Current()
	defer v.Unref()
	var out []string
	for level, files := range v.Levels {
		for _, f := range files {
			ref, err := d.tables.Acquire(ctx, compactionReadEnv, f, level)
			require.NoError(t, err)
			it, err := ref.Reader.NewIter(ctx, compactionReadEnv, nil, nil)
			require.NoError(t, err)
			for kv := it.First(); kv != nil; kv = it.Next() {
				out = append(out, fmt.Sprintf("L%d %s=%s", level, kv.K, kv.V))
			}
			require.NoError(t, it.Close())
			ref.Release()
		}
	}
	return out
}

// TestMergeCombined: a flush combines a key's operands into one (partial
// merge: older tables may hold its base), and a compaction to the bottom
// into a Set; a snapshot keeps the operands on either side of it apart, and
// a range tombstone among them is left to the reads.
func TestMergeCombined(t *testing.T) {
	ctx := context.Background()
	o := smallOptions(nil)
	o.MergeOperator = StringAppendForTest()
	o.DisableAutoCompactions = true
	d, _ := openTestDB(t, o)
	for i := range 5 {
		require.NoError(t, d.mergeImpl(ctx, writeOptions{}, []byte("k"), fmt.Appendf(nil, "%d", i)))
	}
	require.NoError(t, d.Flush(ctx))
	require.Equal(t, []string{`L0 "k"#5,MERGE=0,1,2,3,4`}, tableEntries(t, d))

	require.NoError(t, d.Put(ctx, []byte("b"), []byte("base")))
	require.NoError(t, d.mergeImpl(ctx, writeOptions{}, []byte("b"), []byte("x")))
	s, err := d.NewSnapshot()
	require.NoError(t, err)
	require.NoError(t, d.mergeImpl(ctx, writeOptions{}, []byte("b"), []byte("y")))
	require.NoError(t, d.mergeImpl(ctx, writeOptions{}, []byte("b"), []byte("z")))
	require.NoError(t, d.Flush(ctx))
	require.NoError(t, d.Compact(ctx, nil, nil))
	got := tableEntries(t, d)
	require.Equal(t, []string{`L6 "b"#9,MERGE=y,z`, `L6 "b"#7,SET=base,x`, `L6 "k"#5,SET=0,1,2,3,4`}, got)
	v, err := d.Get(ctx, []byte("b"))
	require.NoError(t, err)
	require.Equal(t, "base,x,y,z", string(v))
	require.NoError(t, s.Close())
	// Without the snapshot, the next compaction of b merges all of it.
	require.NoError(t, d.mergeImpl(ctx, writeOptions{}, []byte("b"), []byte("w")))
	require.NoError(t, d.Flush(ctx))
	require.NoError(t, d.Compact(ctx, nil, nil))
	require.Equal(t, []string{`L6 "b"#10,SET=base,x,y,z,w`, `L6 "k"#5,SET=0,1,2,3,4`}, tableEntries(t, d))

	// A range deletion between operands of one stripe: left as it is in
	// the flush, the reads stop at it.
	require.NoError(t, d.Put(ctx, []byte("r"), []byte("gone")))
	require.NoError(t, d.mergeImpl(ctx, writeOptions{}, []byte("r"), []byte("gone too")))
	require.NoError(t, d.deleteRangeImpl(ctx, writeOptions{}, []byte("q"), []byte("s")))
	require.NoError(t, d.mergeImpl(ctx, writeOptions{}, []byte("r"), []byte("1")))
	require.NoError(t, d.mergeImpl(ctx, writeOptions{}, []byte("r"), []byte("2")))
	require.NoError(t, d.Flush(ctx))
	v, err = d.Get(ctx, []byte("r"))
	require.NoError(t, err)
	require.Equal(t, "1,2", string(v))
	require.NoError(t, d.Compact(ctx, nil, nil))
	v, err = d.Get(ctx, []byte("r"))
	require.NoError(t, err)
	require.Equal(t, "1,2", string(v))
	require.Contains(t, tableEntries(t, d), `L6 "r"#15,SET=1,2`)
}
