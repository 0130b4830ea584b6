package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// mvccComparer orders keys made of a user key and an 8-byte big-endian
// timestamp (mvccKey): user keys ascending, then timestamps descending, the
// newest version first, as CockroachDB's MVCC keys sort. A key shorter
// than a timestamp is a user key alone and sorts before its versions. Its
// Separator proposes the shortest user-key separator without a timestamp,
// which is often not between the keys: the writer must check and ignore it.
var mvccComparer = &Comparer{
	Name: "shale.test.MVCCComparator",
	Compare: func(a, b []byte) int {
		ua, ta, oka := splitMVCC(a)
		ub, tb, okb := splitMVCC(b)
		if c := bytes.Compare(ua, ub); c != 0 {
			return c
		}
		switch {
		case oka != okb:
			if !oka {
				return -1
			}
			return 1
		case ta > tb:
			return -1
		case ta < tb:
			return 1
		}
		return 0
	},
	Separator: func(dst, a, b []byte) []byte {
		ua, _, _ := splitMVCC(a)
		ub, _, _ := splitMVCC(b)
		n := 0
		for n < len(ua) && n < len(ub) && ua[n] == ub[n] {
			n++
		}
		return append(dst, ub[:min(n+1, len(ub))]...)
	},
}

func splitMVCC(k []byte) (user []byte, ts uint64, ok bool) {
	if len(k) < 8 {
		return k, 0, false
	}
	n := len(k) - 8
	return k[:n], binary.BigEndian.Uint64(k[n:]), true
}

func mvccKey(user string, ts uint64) []byte { return binary.BigEndian.AppendUint64([]byte(user), ts) }

// comparerCase is a comparer and the keys its test writes.
type comparerCase struct {
	name string
	cmp  *Comparer
	key  func(rng *rand.Rand) []byte
}

func comparerCases() []comparerCase {
	return []comparerCase{
		{"reverse", ReverseBytewiseComparer, func(rng *rand.Rand) []byte {
			return fmt.Appendf(nil, "k%04d", rng.IntN(600))
		}},
		{"mvcc", mvccComparer, func(rng *rand.Rand) []byte {
			return mvccKey(fmt.Sprintf("u%03d", rng.IntN(120)), uint64(rng.IntN(8)))
		}},
	}
}

// cmpModel is the expected contents, with the comparer that orders them.
type cmpModel struct {
	cmp *Comparer
	m   map[string]string
}

func (m cmpModel) sorted(lower, upper []byte) []string {
	var keys []string
	for k := range m.m {
		if lower != nil && m.cmp.Compare([]byte(k), lower) < 0 || upper != nil && m.cmp.Compare([]byte(k), upper) >= 0 {
			continue
		}
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return m.cmp.Compare([]byte(a), []byte(b)) })
	return keys
}

func (m cmpModel) deleteRange(start, end []byte) {
	for k := range m.m {
		if m.cmp.Compare([]byte(k), start) >= 0 && m.cmp.Compare([]byte(k), end) < 0 {
			delete(m.m, k)
		}
	}
}

func (m cmpModel) clone() cmpModel {
	c := cmpModel{cmp: m.cmp, m: make(map[string]string, len(m.m))}
	for k, v := range m.m {
		c.m[k] = v
	}
	return c
}

// reader is what DB, Snapshot and Tx share for reading.
type reader interface {
	Get(ctx context.Context, key []byte) ([]byte, error)
	MultiGet(ctx context.Context, keys [][]byte) ([][]byte, error)
	NewIterator(ctx context.Context, opts *driver.IterOptions) (*driver.Iterator, error)
}

// checkOrder checks r against the model: every key and value, scans both
// ways with and without bounds, seeks, Gets and a MultiGet, all in the
// comparer's order.
func checkOrder(t *testing.T, what string, r reader, m cmpModel, rng *rand.Rand, key func(*rand.Rand) []byte) {
	t.Helper()
	ctx := context.Background()
	scan := func(o *driver.IterOptions, reverse bool) []string {
		it, err := r.NewIterator(ctx, o)
		require.NoError(t, err)
		var got []string
		ok := it.First()
		if reverse {
			ok = it.Last()
		}
		for ; ok; ok = map[bool]func() bool{false: it.Next, true: it.Prev}[reverse]() {
			got = append(got, string(it.Key()))
			require.Equal(t, m.m[string(it.Key())], string(it.Value()), "%s: value of %q", what, it.Key())
		}
		require.NoError(t, it.Close())
		return got
	}
	want := m.sorted(nil, nil)
	require.Equal(t, want, scan(nil, false), "%s: forward scan", what)
	require.Equal(t, reversed(want), scan(nil, true), "%s: backward scan", what)
	for range 5 {
		lo, hi := key(rng), key(rng)
		if m.cmp.Compare(lo, hi) > 0 {
			lo, hi = hi, lo
		}
		o := &driver.IterOptions{LowerBound: lo, UpperBound: hi}
		w := m.sorted(lo, hi)
		require.Equal(t, w, scan(o, false), "%s: forward scan of [%q, %q)", what, lo, hi)
		require.Equal(t, reversed(w), scan(o, true), "%s: backward scan of [%q, %q)", what, lo, hi)
	}
	it, err := r.NewIterator(ctx, nil)
	require.NoError(t, err)
	for range 20 {
		k := key(rng)
		i, _ := slices.BinarySearchFunc(want, k, func(a string, k []byte) int { return m.cmp.Compare([]byte(a), k) })
		if i < len(want) {
			require.True(t, it.SeekGE(k), "%s: SeekGE(%q)", what, k)
			require.Equal(t, want[i], string(it.Key()), "%s: SeekGE(%q)", what, k)
		} else {
			require.False(t, it.SeekGE(k), "%s: SeekGE(%q)", what, k)
		}
		if i > 0 {
			require.True(t, it.SeekLT(k), "%s: SeekLT(%q)", what, k)
			require.Equal(t, want[i-1], string(it.Key()), "%s: SeekLT(%q)", what, k)
		} else {
			require.False(t, it.SeekLT(k), "%s: SeekLT(%q)", what, k)
		}
	}
	require.NoError(t, it.Close())
	var keys [][]byte
	for range 30 {
		k := key(rng)
		keys = append(keys, k)
		v, err := r.Get(ctx, k)
		if w, ok := m.m[string(k)]; ok {
			require.NoError(t, err, "%s: Get(%q)", what, k)
			require.Equal(t, w, string(v), "%s: Get(%q)", what, k)
		} else {
			require.ErrorIs(t, err, driver.ErrNotFound, "%s: Get(%q)", what, k)
		}
	}
	vals, err := r.MultiGet(ctx, keys)
	require.NoError(t, err)
	for i, k := range keys {
		if w, ok := m.m[string(k)]; ok {
			require.Equal(t, w, string(vals[i]), "%s: MultiGet(%q)", what, k)
		} else {
			require.Nil(t, vals[i], "%s: MultiGet(%q)", what, k)
		}
	}
}

func reversed(s []string) []string {
	s = slices.Clone(s)
	slices.Reverse(s)
	return s
}

// TestComparer runs the engine's operations under non-bytewise comparers
// and checks every read against a model sorted by the same comparer:
// memtables, flushed tables (several blocks, shortened separators where
// the comparer's Separator gives valid ones), compacted levels, a reopen,
// a snapshot, a transaction, range deletions and a batch.
func TestComparer(t *testing.T) {
	for _, tc := range comparerCases() {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(7, uint64(len(tc.name))))
			fs := vfs.NewMem()
			opts := smallOptions(fs)
			opts.Comparer = tc.cmp
			opts.DisableAutoCompactions = true
			open := func() *driver.DB { return driver.OpenDB(NewConnector("/db", opts)) }
			db := open()
			m := cmpModel{cmp: tc.cmp, m: map[string]string{}}
			write := func(n int) {
				var b driver.Batch
				var batched []string
				for i := range n {
					k := tc.key(rng)
					switch rng.IntN(10) {
					case 0:
						require.NoError(t, db.Delete(ctx, k))
						delete(m.m, string(k))
					case 1:
						// A batch, to reach the engine through Replay; it is
						// written after the loop's other writes.
						b.Put(k, []byte("b"+string(k)))
						batched = append(batched, string(k))
					default:
						v := fmt.Sprintf("v%d-%x", i, k)
						require.NoError(t, db.Put(ctx, k, []byte(v)))
						m.m[string(k)] = v
					}
				}
				require.NoError(t, db.Write(ctx, &b))
				for _, k := range batched {
					m.m[k] = "b" + k
				}
			}
			deleteRange := func() {
				lo, hi := tc.key(rng), tc.key(rng)
				if tc.cmp.Compare(lo, hi) > 0 {
					lo, hi = hi, lo
				}
				if rng.IntN(2) == 0 {
					require.NoError(t, db.DeleteRange(ctx, lo, hi))
				} else {
					var b driver.Batch
					b.DeleteRange(lo, hi)
					require.NoError(t, db.Write(ctx, &b))
				}
				m.deleteRange(lo, hi)
				// Inverted in the comparer's order (whatever bytewise says):
				// deletes nothing.
				if tc.cmp.Compare(lo, hi) < 0 {
					require.NoError(t, db.DeleteRange(ctx, hi, lo))
				}
			}

			write(400)
			deleteRange()
			checkOrder(t, "memtable", db, m, rng, tc.key)
			require.NoError(t, db.Flush(ctx))
			write(300)
			deleteRange()
			checkOrder(t, "memtable over a table", db, m, rng, tc.key)
			require.NoError(t, db.Flush(ctx))
			checkOrder(t, "tables", db, m, rng, tc.key)
			require.NoError(t, db.Compact(ctx, nil, nil))
			checkOrder(t, "compacted", db, m, rng, tc.key)

			snap, err := db.NewSnapshot(ctx)
			require.NoError(t, err)
			at := m.clone()
			write(200)
			deleteRange()
			checkOrder(t, "snapshot", snap, at, rng, tc.key)
			require.NoError(t, snap.Close())
			checkOrder(t, "after the snapshot", db, m, rng, tc.key)

			tx, err := db.BeginTx(ctx, nil)
			require.NoError(t, err)
			txm := m.clone()
			for range 50 {
				k := tc.key(rng)
				require.NoError(t, tx.Put(ctx, k, []byte("tx"+string(k))))
				txm.m[string(k)] = "tx" + string(k)
			}
			lo, hi := tc.key(rng), tc.key(rng)
			if tc.cmp.Compare(lo, hi) > 0 {
				lo, hi = hi, lo
			}
			require.NoError(t, tx.DeleteRange(ctx, lo, hi))
			txm.deleteRange(lo, hi)
			checkOrder(t, "transaction", tx, txm, rng, tc.key)
			require.NoError(t, tx.Commit())
			m = txm
			checkOrder(t, "committed", db, m, rng, tc.key)

			require.NoError(t, db.Close())
			db = open()
			checkOrder(t, "reopened", db, m, rng, tc.key)
			require.NoError(t, db.Compact(ctx, nil, nil))
			checkOrder(t, "reopened and compacted", db, m, rng, tc.key)

			// What needs bytewise successors is refused, writing nothing.
			_, err = db.NewIterator(ctx, &driver.IterOptions{Prefix: []byte("k")})
			require.ErrorIs(t, err, driver.ErrNotSupported)
			require.ErrorIs(t, db.DeleteRange(ctx, tc.key(rng), nil), driver.ErrNotSupported)
			var b driver.Batch
			b.Put(tc.key(rng), []byte("never"))
			b.DeleteRange(tc.key(rng), nil)
			require.ErrorIs(t, db.Write(ctx, &b), driver.ErrNotSupported)
			checkOrder(t, "after refused writes", db, m, rng, tc.key)

			// A checkpoint's MANIFEST records the comparer too.
			require.NoError(t, db.Checkpoint(ctx, "/cp"))
			require.NoError(t, db.Close())
			cpOpts := *opts
			cp := driver.OpenDB(NewConnector("/cp", &cpOpts))
			checkOrder(t, "checkpoint", cp, m, rng, tc.key)
			require.NoError(t, cp.Close())
			cpOpts.Comparer = nil
			cp = driver.OpenDB(NewConnector("/cp", &cpOpts))
			_, err = cp.Get(ctx, tc.key(rng))
			require.ErrorIs(t, err, driver.ErrInvalidArgument, "a checkpoint opened bytewise")
			_ = cp.Close()
		})
	}
}

// TestComparerMismatch: a database opens only with the comparer it was
// created with; a database without a recorded name (every bytewise one,
// as those made before comparers existed) is bytewise. A refused open
// changes no file.
func TestComparerMismatch(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name         string
		create, open *Comparer
		err          string
	}{
		{"bytewise", nil, DefaultComparer, ""},
		{"reverse", ReverseBytewiseComparer, ReverseBytewiseComparer, ""},
		{"reverse opened bytewise", ReverseBytewiseComparer, nil,
			`"rocksdb.ReverseBytewiseComparator", but it is opened with comparer "leveldb.BytewiseComparator"`},
		{"bytewise opened reverse", nil, ReverseBytewiseComparer,
			`"leveldb.BytewiseComparator", but it is opened with comparer "rocksdb.ReverseBytewiseComparator"`},
		{"reverse opened mvcc", ReverseBytewiseComparer, mvccComparer,
			`"rocksdb.ReverseBytewiseComparator", but it is opened with comparer "shale.test.MVCCComparator"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			opts := smallOptions(fs)
			opts.Comparer = tc.create
			db := driver.OpenDB(NewConnector("/db", opts))
			require.NoError(t, db.Put(ctx, []byte("a"), []byte("1")))
			require.NoError(t, db.Flush(ctx))
			require.NoError(t, db.Put(ctx, []byte("b"), []byte("2")))
			require.NoError(t, db.Close())
			before := fsDirSizes(t, fs, "/db")

			opts.Comparer = tc.open
			db = driver.OpenDB(NewConnector("/db", opts))
			_, err := db.Get(ctx, []byte("a"))
			if tc.err == "" {
				require.NoError(t, err)
				require.NoError(t, db.Close())
				return
			}
			require.ErrorIs(t, err, driver.ErrInvalidArgument)
			require.ErrorContains(t, err, tc.err)
			_ = db.Close()
			require.Equal(t, before, fsDirSizes(t, fs, "/db"), "a refused open changed the directory")
		})
	}
	// A DSN carries the built-in names only.
	_, o, err := ParseDSN("/db?comparator=rocksdb.ReverseBytewiseComparator")
	require.NoError(t, err)
	require.Same(t, ReverseBytewiseComparer, o.Comparer)
	_, _, err = ParseDSN("/db?comparator=shale.test.MVCCComparator")
	require.ErrorIs(t, err, driver.ErrInvalidArgument)
	require.ErrorContains(t, err, "Options.Comparer")
	require.Error(t, (&Options{Comparer: &Comparer{Name: "x"}}).Validate(), "no Compare")
	require.Error(t, (&Options{Comparer: &Comparer{Compare: bytes.Compare}}).Validate(), "no Name")
}

// fsDirSizes returns the names and sizes of dir's files.
func fsDirSizes(t *testing.T, fs vfs.FS, dir string) map[string]int64 {
	names, err := fs.List(dir)
	require.NoError(t, err)
	st := map[string]int64{}
	for _, n := range names {
		fi, err := fs.Stat(dir + "/" + n)
		require.NoError(t, err)
		st[n] = fi.Size()
	}
	return st
}

// TestComparerVerify checks that both verifications read a database of
// another order: they open every table anew, outside the table cache, and
// a table refuses a reader with another comparer than the one it records
// (VerifyChecksum failed so on every reverse-ordered database, from `shale
// bench` and `shale verify`, until the verification's Env carried it).
func TestComparerVerify(t *testing.T) {
	for _, tc := range comparerCases() {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(11, uint64(len(tc.name))))
			fs := vfs.NewMem()
			opts := smallOptions(fs)
			opts.Comparer = tc.cmp
			db := driver.OpenDB(NewConnector("/db", opts))
			defer func() { require.NoError(t, db.Close()) }()
			for range 200 {
				require.NoError(t, db.Put(ctx, tc.key(rng), []byte("value")))
			}
			require.NoError(t, db.Flush(ctx))
			require.NoError(t, db.Compact(ctx, nil, nil))
			require.NoError(t, db.VerifyChecksum(ctx))
			require.NoError(t, db.VerifyFileChecksums(ctx))
		})
	}
}
