package engine

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

func TestBasic(t *testing.T) {
	ctx := context.Background()
	db, _ := openTestDB(t, nil)
	_, err := db.Get(ctx, []byte("a"))
	require.ErrorIs(t, err, ErrNotFound)

	require.NoError(t, db.Put(ctx, []byte("a"), []byte("1")))
	require.NoError(t, db.Put(ctx, []byte("b"), []byte("")))
	got, err := db.Get(ctx, []byte("a"))
	require.NoError(t, err)
	require.Equal(t, []byte("1"), got)
	got, err = db.Get(ctx, []byte("b"))
	require.NoError(t, err)
	require.NotNil(t, got, "an empty value is a non-nil empty slice")
	require.Empty(t, got)

	require.NoError(t, db.Flush(ctx))
	require.NoError(t, db.Put(ctx, []byte("a"), []byte("2")))
	got, err = db.Get(ctx, []byte("a"))
	require.NoError(t, err)
	require.Equal(t, []byte("2"), got, "the memtable shadows the table")
	require.NoError(t, db.Delete(ctx, []byte("a")))
	_, err = db.Get(ctx, []byte("a"))
	require.ErrorIs(t, err, ErrNotFound)
	require.NoError(t, db.Flush(ctx))
	require.NoError(t, db.Compact(ctx, nil, nil))
	_, err = db.Get(ctx, []byte("a"))
	require.ErrorIs(t, err, ErrNotFound)
	got, err = db.Get(ctx, []byte("b"))
	require.NoError(t, err)
	require.Empty(t, got)

	vals, err := db.MultiGet(ctx, [][]byte{[]byte("b"), []byte("a"), []byte("b")})
	require.NoError(t, err)
	require.Equal(t, [][]byte{{}, nil, {}}, vals)
}

func TestReopen(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	db, err := openDatabase("/db", smallOptions(fs))
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 1))
	m := model{}
	for i := range 3000 {
		k, v := key(rng.IntN(1000)), value(rng, rng.IntN(100))
		require.NoError(t, db.Put(ctx, k, v))
		m[string(k)] = string(v)
		if i%700 == 0 {
			require.NoError(t, db.Flush(ctx))
		}
	}
	require.NoError(t, db.Close())
	_, err = db.Get(ctx, key(1))
	require.ErrorIs(t, err, ErrClosed)

	for round := range 3 {
		db, err = openDatabase("/db", smallOptions(fs))
		require.NoError(t, err, "round %d", round)
		for k, v := range m {
			got, err := db.Get(ctx, []byte(k))
			require.NoError(t, err, k)
			require.Equal(t, v, string(got))
		}
		require.NoError(t, db.Check(ctx))
		require.NoError(t, db.Close())
	}
}

func TestLockFile(t *testing.T) {
	fs := vfs.NewMem()
	db, err := openDatabase("/db", smallOptions(fs))
	require.NoError(t, err)
	_, err = openDatabase("/db", smallOptions(fs))
	require.Error(t, err, "a second open of one directory fails")
	require.Contains(t, err.Error(), "in use")
	require.NoError(t, db.Close())
	db, err = openDatabase("/db", smallOptions(fs))
	require.NoError(t, err)
	require.NoError(t, db.Close())
}

func TestOpenOptions(t *testing.T) {
	fs := vfs.NewMem()
	_, err := openDatabase("/db", &Options{FS: fs, ErrorIfMissing: true})
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.Contains(t, err.Error(), "does not exist")
	db, err := openDatabase("/db", &Options{FS: fs})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	_, err = openDatabase("/db", &Options{FS: fs, ErrorIfExists: true})
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.Contains(t, err.Error(), "already exists")

	_, err = openDatabase("/db2", &Options{FS: fs, WriteBufferSize: 10, BlockSize: 3})
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.Contains(t, err.Error(), "write_buffer_size 10")
	require.Contains(t, err.Error(), "block_size 3", "every problem is reported")
}

func TestReadOnly(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	db, err := openDatabase("/db", smallOptions(fs))
	require.NoError(t, err)
	require.NoError(t, db.Put(ctx, []byte("flushed"), []byte("1")))
	require.NoError(t, db.Flush(ctx))
	require.NoError(t, db.Put(ctx, []byte("in-wal"), []byte("2")))
	require.NoError(t, db.Close())
	before, err := fs.List("/db")
	require.NoError(t, err)

	o := smallOptions(fs)
	o.ReadOnly = true
	ro, err := openDatabase("/db", o)
	require.NoError(t, err)
	for k, v := range map[string]string{"flushed": "1", "in-wal": "2"} {
		got, err := ro.Get(ctx, []byte(k))
		require.NoError(t, err)
		require.Equal(t, v, string(got))
	}
	require.ErrorIs(t, ro.Put(ctx, []byte("x"), nil), ErrInvalidArgument)
	require.NoError(t, ro.Close())
	after, err := fs.List("/db")
	require.NoError(t, err)
	require.Equal(t, before, after, "a read-only open writes nothing")
}

func TestActivityChecks(t *testing.T) {
	ctx := context.Background()
	db, _ := openTestDB(t, nil)
	require.NoError(t, db.Put(ctx, []byte("k"), []byte("v")))
	for a := ioctx.ActivityUnknown; a < ioctx.NumActivities; a++ {
		actx := ioctx.WithReadOptions(ctx, ioctx.ReadOptions{Activity: a})
		check := func(api string, own ioctx.Activity, err error) {
			if a == ioctx.ActivityUnknown || a == own {
				require.NoError(t, err, "%s with %s", api, a)
				return
			}
			require.ErrorIs(t, err, ErrInvalidArgument, "%s with %s", api, a)
			require.Contains(t, err.Error(), "Can only call "+api+" with `ReadOptions::io_activity` is "+
				"`Env::IOActivity::kUnknown` or `Env::IOActivity::k"+own.String()+"`")
		}
		_, err := db.Get(actx, []byte("k"))
		check("Get", ioctx.ActivityGet, err)
		_, err = db.MultiGet(actx, [][]byte{[]byte("k")})
		check("MultiGet", ioctx.ActivityMultiGet, err)
		it, err := db.NewIterator(actx, nil)
		check("NewIterator", ioctx.ActivityDBIterator, err)
		if it != nil {
			require.NoError(t, it.Close())
		}
		check("VerifyChecksum", ioctx.ActivityVerifyDBChecksum, db.VerifyChecksum(actx))
		check("VerifyFileChecksums", ioctx.ActivityVerifyFileChecksums, db.VerifyFileChecksums(actx))

		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		_, err = tx.Get(actx, []byte("k"))
		check("Get", ioctx.ActivityGet, err)
		_, err = tx.MultiGet(actx, [][]byte{[]byte("k")})
		check("MultiGet", ioctx.ActivityMultiGet, err)
		tit, err := tx.NewIterator(actx, nil)
		check("NewIterator", ioctx.ActivityDBIterator, err)
		if tit != nil {
			require.NoError(t, tit.Close())
		}
		require.NoError(t, tx.Rollback())
	}
}

func TestSnapshots(t *testing.T) {
	ctx := context.Background()
	db, _ := openTestDB(t, nil)
	require.NoError(t, db.Put(ctx, []byte("k"), []byte("v1")))
	s1, err := db.NewSnapshot()
	require.NoError(t, err)
	require.NoError(t, db.Put(ctx, []byte("k"), []byte("v2")))
	require.NoError(t, db.Delete(ctx, []byte("gone")))
	s2, err := db.NewSnapshot()
	require.NoError(t, err)
	require.NoError(t, db.Delete(ctx, []byte("k")))

	// Flushing and compacting everything to the bottom must keep each
	// snapshot's view.
	require.NoError(t, db.Flush(ctx))
	require.NoError(t, db.Compact(ctx, nil, nil))
	for _, tc := range []struct {
		s    *snapshot
		want string
	}{{s1, "v1"}, {s2, "v2"}} {
		got, err := tc.s.Get(ctx, []byte("k"))
		require.NoError(t, err)
		require.Equal(t, tc.want, string(got))
	}
	_, err = db.Get(ctx, []byte("k"))
	require.ErrorIs(t, err, ErrNotFound)
	require.NoError(t, s1.Close())
	require.NoError(t, s2.Close())
	require.ErrorIs(t, s2.Close(), ErrClosed)
	// A closed snapshot no longer holds back compaction: its reads fail
	// rather than answer from a sequence number nothing protects.
	_, err = s1.Get(ctx, []byte("k"))
	require.ErrorIs(t, err, ErrClosed)
	_, err = s1.MultiGet(ctx, [][]byte{[]byte("k")})
	require.ErrorIs(t, err, ErrClosed)
	_, err = s1.NewIterator(ctx, nil)
	require.ErrorIs(t, err, ErrClosed)

	// A snapshot of an empty database sees nothing written later.
	db2, _ := openTestDB(t, nil)
	s0, err := db2.NewSnapshot()
	require.NoError(t, err)
	require.NoError(t, db2.Put(ctx, []byte("k"), []byte("v")))
	_, err = s0.Get(ctx, []byte("k"))
	require.ErrorIs(t, err, ErrNotFound)
	require.NoError(t, s0.Close())
}

func TestTransactions(t *testing.T) {
	ctx := context.Background()
	db, _ := openTestDB(t, nil)
	require.NoError(t, db.Put(ctx, []byte("a"), []byte("1")))
	require.NoError(t, db.Put(ctx, []byte("b"), []byte("1")))

	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, tx.Put(ctx, []byte("c"), []byte("tx")))
	require.NoError(t, tx.Delete(ctx, []byte("a")))
	require.NoError(t, db.Put(ctx, []byte("b"), []byte("2")), "a write the tx does not see")

	got, err := tx.Get(ctx, []byte("c"))
	require.NoError(t, err)
	require.Equal(t, "tx", string(got), "read-your-writes")
	_, err = tx.Get(ctx, []byte("a"))
	require.ErrorIs(t, err, ErrNotFound, "the tx's delete hides the key")
	got, err = tx.Get(ctx, []byte("b"))
	require.NoError(t, err)
	require.Equal(t, "1", string(got), "snapshot read")
	vals, err := tx.MultiGet(ctx, [][]byte{[]byte("a"), []byte("b"), []byte("c")})
	require.NoError(t, err)
	require.Equal(t, [][]byte{nil, []byte("1"), []byte("tx")}, vals)

	it, err := tx.NewIterator(ctx, nil)
	require.NoError(t, err)
	var keys []string
	for ok := it.First(); ok; ok = it.Next() {
		keys = append(keys, string(it.Key())+"="+string(it.Value()))
	}
	require.NoError(t, it.Error())
	require.Equal(t, []string{"b=1", "c=tx"}, keys)
	keys = keys[:0]
	for ok := it.Last(); ok; ok = it.Prev() {
		keys = append(keys, string(it.Key()))
	}
	require.Equal(t, []string{"c", "b"}, keys)
	require.NoError(t, it.Close())

	require.NoError(t, tx.Commit())
	require.ErrorIs(t, tx.Commit(), ErrClosed)
	_, err = db.Get(ctx, []byte("a"))
	require.ErrorIs(t, err, ErrNotFound)
	got, err = db.Get(ctx, []byte("c"))
	require.NoError(t, err)
	require.Equal(t, "tx", string(got))

	// Conflicts: another committed write to a key the tx wrote.
	t1, _ := db.BeginTx(ctx, nil)
	t2, _ := db.BeginTx(ctx, nil)
	require.NoError(t, t1.Put(ctx, []byte("x"), []byte("t1")))
	require.NoError(t, t2.Put(ctx, []byte("x"), []byte("t2")))
	require.NoError(t, t1.Commit())
	err = t2.Commit()
	require.ErrorIs(t, err, ErrConflict)
	got, _ = db.Get(ctx, []byte("x"))
	require.Equal(t, "t1", string(got), "the conflicting tx applied nothing")

	// A non-transactional write, even flushed to a table, conflicts too.
	t3, _ := db.BeginTx(ctx, nil)
	require.NoError(t, t3.Put(ctx, []byte("y"), []byte("t3")))
	require.NoError(t, db.Put(ctx, []byte("y"), []byte("plain")))
	require.NoError(t, db.Flush(ctx))
	require.ErrorIs(t, t3.Commit(), ErrConflict)

	// Rollback discards; read-only rejects writes.
	t4, _ := db.BeginTx(ctx, nil)
	require.NoError(t, t4.Put(ctx, []byte("z"), []byte("1")))
	require.NoError(t, t4.Rollback())
	_, err = db.Get(ctx, []byte("z"))
	require.ErrorIs(t, err, ErrNotFound)
	t5, _ := db.BeginTx(ctx, &txnOptions{ReadOnly: true})
	require.ErrorIs(t, t5.Put(ctx, []byte("z"), []byte("1")), ErrInvalidArgument)
	require.NoError(t, t5.Rollback())
}

// TestRandomizedModel compares the engine with a map over tens of thousands
// of operations, with flushes, compactions, snapshots and reopens
// interleaved, and forward and backward iteration with random bounds. The
// seeds run in parallel: each has its own filesystem and database.
func TestRandomizedModel(t *testing.T) {
	seeds := []uint64{1, 2, 3}
	ops := 20000
	if testing.Short() {
		seeds, ops = seeds[:1], 8000
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			runModel(t, seed, ops)
		})
	}
}

func runModel(t *testing.T, seed uint64, ops int) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 7))
	fs := vfs.NewMem()
	opts := smallOptions(fs)
	db, err := openDatabase("/db", opts)
	require.NoError(t, err)
	holder := checkDB(t, db)
	m := model{}
	type snap struct {
		s *snapshot
		m model
	}
	var snaps []snap
	const keySpace = 3000
	randKey := func() []byte { return key(rng.IntN(keySpace)) }

	verifyIter := func(it interface {
		First() bool
		Last() bool
		SeekGE([]byte) bool
		SeekLT([]byte) bool
		Next() bool
		Prev() bool
		Key() []byte
		Value() []byte
		Error() error
	}, m model, lower, upper []byte) {
		want := m.scan(lower, upper)
		var got []string
		for ok := it.First(); ok; ok = it.Next() {
			got = append(got, string(it.Key()))
			require.Equal(t, m[string(it.Key())], string(it.Value()), "value of %q", it.Key())
		}
		require.NoError(t, it.Error())
		require.Equal(t, want, got, "forward scan [%q, %q)", lower, upper)
		got = got[:0]
		for ok := it.Last(); ok; ok = it.Prev() {
			got = append(got, string(it.Key()))
		}
		slices.Reverse(got)
		require.Equal(t, want, got, "backward scan [%q, %q)", lower, upper)
		// Seeks with direction changes.
		for range 5 {
			k := randKey()
			i, _ := slices.BinarySearch(want, string(k))
			ok := it.SeekGE(k)
			require.Equal(t, i < len(want), ok, "SeekGE %q", k)
			if ok {
				require.Equal(t, want[i], string(it.Key()))
				if it.Prev() {
					require.Equal(t, want[i-1], string(it.Key()), "Prev after SeekGE %q", k)
				} else {
					require.Zero(t, i)
				}
			}
			ok = it.SeekLT(k)
			require.Equal(t, i > 0, ok, "SeekLT %q", k)
			if ok {
				require.Equal(t, want[i-1], string(it.Key()))
				if it.Next() {
					require.Equal(t, want[i], string(it.Key()), "Next after SeekLT %q", k)
				} else {
					require.Equal(t, len(want), i)
				}
			}
		}
	}

	for i := range ops {
		switch p := rng.IntN(1000); {
		case p < 400:
			k, v := randKey(), value(rng, rng.IntN(200))
			require.NoError(t, db.Put(ctx, k, v))
			m[string(k)] = string(v)
		case p < 550:
			k := randKey()
			require.NoError(t, db.Delete(ctx, k))
			delete(m, string(k))
		case p < 650:
			b := newWriteBatch()
			for range 1 + rng.IntN(20) {
				k := randKey()
				if rng.IntN(3) == 0 {
					b.Delete(k)
					delete(m, string(k))
				} else {
					v := value(rng, rng.IntN(100))
					b.Put(k, v)
					m[string(k)] = string(v)
				}
			}
			require.NoError(t, db.Write(ctx, b, nil))
		case p < 800:
			k := randKey()
			got, err := db.Get(ctx, k)
			if want, ok := m[string(k)]; ok {
				require.NoError(t, err, "op %d Get %q", i, k)
				require.Equal(t, want, string(got), "op %d Get %q", i, k)
			} else {
				require.ErrorIs(t, err, ErrNotFound, "op %d Get %q", i, k)
			}
		case p < 850:
			keys := make([][]byte, 1+rng.IntN(30))
			for j := range keys {
				keys[j] = randKey()
			}
			got, err := db.MultiGet(ctx, keys)
			require.NoError(t, err)
			for j, k := range keys {
				if want, ok := m[string(k)]; ok {
					require.Equal(t, want, string(got[j]))
				} else {
					require.Nil(t, got[j])
				}
			}
		case p < 870:
			var lower, upper []byte
			if rng.IntN(2) == 0 {
				lower = randKey()
			}
			if rng.IntN(2) == 0 {
				upper = randKey()
			}
			it, err := db.NewIterator(ctx, &iterOptions{LowerBound: lower, UpperBound: upper})
			require.NoError(t, err)
			verifyIter(it, m, lower, upper)
			require.NoError(t, it.Close())
		case p < 900:
			if len(snaps) < 4 {
				s, err := db.NewSnapshot()
				require.NoError(t, err)
				snaps = append(snaps, snap{s, m.clone()})
			} else {
				j := rng.IntN(len(snaps))
				sn := snaps[j]
				k := randKey()
				got, err := sn.s.Get(ctx, k)
				if want, ok := sn.m[string(k)]; ok {
					require.NoError(t, err)
					require.Equal(t, want, string(got))
				} else {
					require.ErrorIs(t, err, ErrNotFound)
				}
				if rng.IntN(3) == 0 {
					it, err := sn.s.NewIterator(ctx, nil)
					require.NoError(t, err)
					verifyIter(it, sn.m, nil, nil)
					require.NoError(t, it.Close())
				}
				require.NoError(t, sn.s.Close())
				snaps = slices.Delete(snaps, j, j+1)
			}
		case p < 930:
			tx, err := db.BeginTx(ctx, nil)
			require.NoError(t, err)
			txm := m.clone()
			for range 1 + rng.IntN(5) {
				k, v := randKey(), value(rng, 10)
				require.NoError(t, tx.Put(ctx, k, v))
				txm[string(k)] = string(v)
			}
			if rng.IntN(4) == 0 {
				it, err := tx.NewIterator(ctx, nil)
				require.NoError(t, err)
				verifyIter(it, txm, nil, nil)
				require.NoError(t, it.Close())
			}
			require.NoError(t, tx.Commit(), "no concurrent writer: no conflict")
			m = txm
		case p < 960:
			require.NoError(t, db.Flush(ctx))
		case p < 975:
			var start, end []byte
			if rng.IntN(2) == 0 {
				start, end = key(rng.IntN(keySpace/2)), key(keySpace/2+rng.IntN(keySpace/2))
			}
			require.NoError(t, db.Compact(ctx, start, end))
		case p < 980:
			for _, sn := range snaps {
				require.NoError(t, sn.s.Close())
			}
			snaps = nil
			require.NoError(t, db.Check(ctx))
			require.NoError(t, db.Close())
			db, err = openDatabase("/db", opts)
			require.NoError(t, err)
			holder.db = db
		default:
			require.NoError(t, db.VerifyChecksum(ctx))
		}
	}
	for _, sn := range snaps {
		require.NoError(t, sn.s.Close())
	}
	it, err := db.NewIterator(ctx, nil)
	require.NoError(t, err)
	verifyIter(it, m, nil, nil)
	require.NoError(t, it.Close())
	require.NoError(t, db.VerifyFileChecksums(ctx))
}

func TestObsoleteFilesDeleted(t *testing.T) {
	ctx := context.Background()
	opts := smallOptions(nil)
	// No background compaction may be writing a table when the directory
	// is listed.
	opts.DisableAutoCompactions = true
	// Nor may L0, which then only grows, delay each write by a millisecond
	// (most of this test's 7 s): this test is not about write stalls.
	opts.Level0SlowdownWritesTrigger = 1000
	opts.Level0StopWritesTrigger = 1000
	db, fs := openTestDB(t, opts)
	rng := rand.New(rand.NewPCG(5, 5))
	for range 20000 {
		require.NoError(t, db.Put(ctx, key(rng.IntN(2000)), value(rng, 50)))
	}
	require.NoError(t, db.Compact(ctx, nil, nil))
	names, err := fs.List("/db")
	require.NoError(t, err)
	rs := mustReadState(t, db)
	defer rs.unref()
	live := map[manifest.FileNum]bool{}
	for _, files := range rs.current.Levels {
		for _, f := range files {
			live[f.FileNum] = true
		}
	}
	logs, manifests := 0, 0
	for _, name := range names {
		kind, num, ok := manifest.ParseFileName(name)
		require.True(t, ok || name == "LOCK", name)
		switch kind {
		case manifest.FileKindTable:
			require.True(t, live[num], "table %s is not in the current version but was not deleted", name)
		case manifest.FileKindLog:
			logs++
		case manifest.FileKindManifest:
			manifests++
		}
	}
	require.LessOrEqual(t, logs, 2, "old WALs are deleted: %v", names)
	require.Equal(t, 1, manifests, "old MANIFESTs are deleted: %v", names)
}

func TestLargeBatchAndValues(t *testing.T) {
	ctx := context.Background()
	db, _ := openTestDB(t, nil)
	big := bytes.Repeat([]byte("v"), 1<<20)
	require.NoError(t, db.Put(ctx, []byte("big"), big), "a value larger than the write buffer")
	b := newWriteBatch()
	for i := range 20000 {
		b.Delete(key(i))
	}
	require.NoError(t, db.Write(ctx, b, nil), "a batch of many tiny records")
	got, err := db.Get(ctx, []byte("big"))
	require.NoError(t, err)
	require.Equal(t, big, got)
	require.NoError(t, db.Flush(ctx))
	got, err = db.Get(ctx, []byte("big"))
	require.NoError(t, err)
	require.Equal(t, big, got)
}

func TestClosedDB(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	db, err := openDatabase("/db", smallOptions(fs))
	require.NoError(t, err)
	require.NoError(t, db.Close())
	require.ErrorIs(t, db.Close(), ErrClosed)
	_, err = db.Get(ctx, []byte("k"))
	require.ErrorIs(t, err, ErrClosed)
	_, err = db.NewIterator(ctx, nil)
	require.ErrorIs(t, err, ErrClosed)
	err = db.Put(ctx, []byte("k"), nil)
	require.True(t, errors.Is(err, ErrClosed), "%v", err)
}

// TestReadsRacingClose runs Gets, MultiGets and iterators while the
// database closes: each must succeed or fail with ErrClosed, never fault,
// and the race detector must see no unsynchronised access to the read
// state (Close used to clear it outside the lock readers took).
func TestReadsRacingClose(t *testing.T) {
	ctx := context.Background()
	for round := range 20 {
		fs := vfs.NewMem()
		db, err := openDatabase("/db", smallOptions(fs))
		require.NoError(t, err)
		require.NoError(t, db.Put(ctx, []byte("k"), []byte("v")))
		var wg sync.WaitGroup
		errs := make(chan error, 3)
		for r := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					var err error
					switch (r + i) % 3 {
					case 0:
						_, err = db.Get(ctx, []byte("k"))
					case 1:
						_, err = db.MultiGet(ctx, [][]byte{[]byte("k"), []byte("x")})
					case 2:
						var it *iterator
						if it, err = db.NewIterator(ctx, nil); err == nil {
							it.First()
							err = it.Close()
						}
					}
					if err != nil {
						if !errors.Is(err, ErrClosed) {
							errs <- errors.Wrapf(err, "round %d", round)
						}
						return
					}
				}
			}()
		}
		time.Sleep(time.Millisecond)
		require.NoError(t, db.Close())
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
}

// TestIteratorOverManyVersions covers the reseek past a key's hidden
// versions: a key overwritten many times, with snapshots in between, in the
// memtable and in tables.
func TestIteratorOverManyVersions(t *testing.T) {
	ctx := context.Background()
	db, _ := openTestDB(t, nil)
	var snaps []*snapshot
	for i := range 100 {
		require.NoError(t, db.Put(ctx, []byte("a"), []byte(fmt.Sprint(i))))
		require.NoError(t, db.Put(ctx, []byte("c"), []byte(fmt.Sprint(i))))
		if i%30 == 0 {
			if i <= 30 {
				require.NoError(t, db.Delete(ctx, []byte("b")))
			} else if i == 60 {
				require.NoError(t, db.Put(ctx, []byte("b"), []byte("b")))
				require.NoError(t, db.Flush(ctx))
			}
			s, err := db.NewSnapshot()
			require.NoError(t, err)
			snaps = append(snaps, s)
		}
	}
	scan := func(it *iterator) (fwd, bwd []string) {
		for ok := it.First(); ok; ok = it.Next() {
			fwd = append(fwd, string(it.Key())+"="+string(it.Value()))
		}
		for ok := it.Last(); ok; ok = it.Prev() {
			bwd = append([]string{string(it.Key()) + "=" + string(it.Value())}, bwd...)
		}
		require.NoError(t, it.Error())
		require.NoError(t, it.Close())
		return fwd, bwd
	}
	it, err := db.NewIterator(ctx, nil)
	require.NoError(t, err)
	fwd, bwd := scan(it)
	require.Equal(t, []string{"a=99", "b=b", "c=99"}, fwd)
	require.Equal(t, fwd, bwd)
	for j, s := range snaps {
		it, err := s.NewIterator(ctx, nil)
		require.NoError(t, err)
		fwd, bwd := scan(it)
		v := fmt.Sprint(j * 30)
		want := []string{"a=" + v, "c=" + v}
		if j*30 >= 60 {
			want = []string{"a=" + v, "b=b", "c=" + v}
		}
		require.Equal(t, want, fwd, "snapshot %d", j)
		require.Equal(t, fwd, bwd, "snapshot %d", j)
		require.NoError(t, s.Close())
	}
}

// TestCompactWaitsForBackgroundCompaction checks that a manual compaction
// does not skip a level whose files a background compaction is using: it
// waits for them. The background compaction is simulated by marking the L0
// tables as being compacted.
func TestCompactWaitsForBackgroundCompaction(t *testing.T) {
	ctx := context.Background()
	opts := smallOptions(nil)
	opts.DisableAutoCompactions = true
	db, _ := openTestDB(t, opts)
	for i := range 3 {
		require.NoError(t, db.Put(ctx, key(i), []byte("v")))
		require.NoError(t, db.Flush(ctx))
	}
	db.mu.Lock()
	busy := db.readState.Load().current.Levels[0]
	require.Len(t, busy, 3)
	for _, f := range busy {
		f.CompactionInProgress = true
	}
	db.mu.Unlock()

	done := make(chan error, 1)
	go func() { done <- db.Compact(ctx, nil, nil) }()
	select {
	case err := <-done:
		t.Fatalf("Compact returned (%v) while L0's tables were being compacted", err)
	case <-time.After(100 * time.Millisecond):
	}
	db.mu.Lock()
	for _, f := range busy {
		f.CompactionInProgress = false
	}
	db.notifyLocked()
	db.mu.Unlock()
	require.NoError(t, <-done)
	rs := mustReadState(t, db)
	defer rs.unref()
	require.Zero(t, rs.current.NumFiles(0), "L0 compacted once its tables were free")
}

// TestMemtableArenaReuse checks that a memtable's arena is reused only once
// nothing can read it: a value pinned from the memtable and an open
// iterator over it stay intact while later memtables fill, flush and
// recycle arenas.
func TestMemtableArenaReuse(t *testing.T) {
	ctx := context.Background()
	db, _ := openTestDB(t, nil)
	require.NoError(t, db.Put(ctx, []byte("pinned"), []byte("original-value")))
	pin, err := db.GetPinned(ctx, []byte("pinned"))
	require.NoError(t, err)
	it, err := db.NewIterator(ctx, nil)
	require.NoError(t, err)
	require.True(t, it.First())
	rng := rand.New(rand.NewPCG(6, 6))
	for round := range 8 {
		for range 1500 {
			require.NoError(t, db.Put(ctx, key(rng.IntN(100000)), value(rng, 100)))
		}
		require.NoError(t, db.Flush(ctx), "round %d", round)
		require.Equal(t, "original-value", string(pin.Data), "round %d: a pinned memtable value changed", round)
	}
	require.Equal(t, "pinned", string(it.Key()))
	require.Equal(t, "original-value", string(it.Value()))
	require.False(t, it.Next(), "the iterator's view predates the later writes")
	require.NoError(t, it.Close())
	pin.Release()
	db.arenas.mu.Lock()
	defer db.arenas.mu.Unlock()
	require.NotEmpty(t, db.arenas.free, "released arenas are kept for reuse")
}
