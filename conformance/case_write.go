package conformance

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/ioctx"
)

// The cases of the write side (issue 12): range deletions, write options,
// SyncWAL, snapshots, checkpoints and batches read back. Each skips only
// when the driver lacks the optional interface behind what it checks.

// delRangeOp is a range deletion of the generated workloads.
func delRangeOp(start, end []byte) op { return op{rangeEnd: end, key: start, del: true} }

// skipWithoutRangeDeletion checks what a driver without range deletions
// must do (DB.DeleteRange, and a Write of a batch holding one, fail with
// ErrNotSupported and write nothing) and skips the case; it returns when
// the driver has them.
func skipWithoutRangeDeletion(t testing.TB, db *dbh) {
	t.Helper()
	err := db.DeleteRange(bg, key(0), key(1))
	if err == nil {
		return
	}
	if !errors.Is(err, driver.ErrNotSupported) {
		t.Fatalf("DeleteRange(%s, %s): %v", q(key(0)), q(key(1)), err)
	}
	var b driver.Batch
	b.Put(key(5), []byte("v"))
	b.DeleteRange(key(0), key(9))
	if err := db.Write(bg, &b); !errors.Is(err, driver.ErrNotSupported) {
		t.Errorf("Write of a batch holding a range deletion, to a driver without range deletions = %v; "+
			"want an error matching driver.ErrNotSupported", err)
	}
	checkGet(t, db, key(5), nil, "after a refused batch holding a range deletion (nothing may be written)")
	t.Skipf("range deletion (driver.RangeDeleter): the driver lacks the capability (%v)", err)
}

func testDeleteRange(t testing.TB, s *suite) {
	db := s.open(t, opt("write_buffer_size", "64KiB"))
	skipWithoutRangeDeletion(t, db)
	m := newModel()
	keys := [][]byte{[]byte(""), []byte("a"), []byte("b"), []byte("b\x00"), []byte("ba"), []byte("c"), []byte("c\x00"),
		[]byte("d"), []byte("\xff")}
	for _, k := range keys {
		mustPut(t, db, k, []byte("v"+string(k)))
		m.put(k, []byte("v"+string(k)))
	}
	check := func(when string) {
		t.Helper()
		checkModel(t, db, m, keys, when)
		vals, err := db.MultiGet(bg, keys)
		if err != nil {
			t.Fatalf("%s: MultiGet: %v", when, err)
		}
		for i, k := range keys {
			if w, ok := m.m[string(k)]; ok != (vals[i] != nil) || ok && string(vals[i]) != w {
				t.Fatalf("%s: MultiGet: key %s = %s; want %q (present: %v)", when, q(k), q(vals[i]), w, ok)
			}
		}
		for _, b := range [][2][]byte{{[]byte("b"), []byte("c")}, {[]byte("a\x00"), []byte("c\x00")}} {
			checkScans(t, db, &driver.IterOptions{LowerBound: b[0], UpperBound: b[1]},
				m.scan(b[0], b[1]), when)
		}
	}
	// Empty and inverted ranges delete nothing.
	// (A nil end is not empty: it means "after every key"; see
	// DeleteRangeOpen. An empty, non-nil end is.)
	for _, r := range [][2][]byte{{[]byte("c"), []byte("b")}, {[]byte("b"), []byte("b")}, {[]byte("b"), {}}} {
		if err := db.DeleteRange(bg, r[0], r[1]); err != nil {
			t.Fatalf("DeleteRange(%s, %s), an empty or inverted range: %v; want nil (a no-op)", q(r[0]), q(r[1]), err)
		}
	}
	check("after DeleteRanges of empty and inverted ranges (which delete nothing)")
	// [b, c): b, b\x00 and ba, not c.
	if err := db.DeleteRange(bg, []byte("b"), []byte("c")); err != nil {
		t.Fatalf("DeleteRange(\"b\", \"c\"): %v", err)
	}
	m.apply([]op{delRangeOp([]byte("b"), []byte("c"))})
	check("after DeleteRange(\"b\", \"c\") (the end is exclusive)")
	// From the smallest key.
	if err := db.DeleteRange(bg, []byte{}, []byte("a\x00")); err != nil {
		t.Fatalf("DeleteRange(\"\", \"a\\x00\"): %v", err)
	}
	m.apply([]op{delRangeOp([]byte{}, []byte("a\x00"))})
	check("after DeleteRange(\"\", \"a\\x00\")")
	// In batches, in order: a put before the deletion is deleted, a put
	// after it stands, a range deletion covers keys written earlier in the
	// same batch and none written after it.
	ops := []op{
		{key: []byte("b1"), value: []byte("erased")},
		delRangeOp([]byte("b"), []byte("c\x00")),
		{key: []byte("b2"), value: []byte("stands")},
		{key: []byte("c"), value: []byte("rewritten")},
		{del: true, key: []byte("b2x")},
		delRangeOp([]byte("d"), []byte("e")),
		delRangeOp([]byte("c\x00"), []byte("d\x00")),
	}
	mustWrite(t, db, batch(ops))
	m.apply(ops)
	keys = append(keys, []byte("b1"), []byte("b2"))
	check("after a batch of puts, deletes and overlapping range deletions")
	flushIfAble(t, db)
	check("after Flush")

	// Random batches against the model, with flushes and compactions.
	rng := rand.New(rand.NewPCG(11, 12))
	for round := range 30 {
		var ops []op
		for range 1 + rng.IntN(20) {
			k := key(rng.IntN(200))
			switch r := rng.IntN(10); {
			case r < 6:
				ops = append(ops, op{key: k, value: fmt.Appendf(nil, "r%d", round)})
			case r < 8:
				ops = append(ops, op{del: true, key: k})
			default:
				ops = append(ops, delRangeOp(k, key(rng.IntN(200))))
			}
		}
		mustWrite(t, db, batch(ops))
		m.apply(ops)
		if round%10 == 9 {
			flushIfAble(t, db)
			compactIfAble(t, db)
		}
	}
	var all [][]byte
	for i := range 200 {
		all = append(all, key(i))
	}
	checkModel(t, db, m, all, "after 30 random batches with range deletions, flushes and compactions")
	if db.path != memoryPath {
		db.close(t)
		db = s.reopen(t, db)
		checkModel(t, db, m, all, "after the range deletions, Close and a reopen")
	}
}

func testTxDeleteRange(t testing.TB, s *suite) {
	db := s.open(t)
	for _, k := range []string{"a", "b", "c", "d"} {
		mustPut(t, db, []byte(k), []byte("0"))
	}
	tx, err := db.BeginTx(bg, nil)
	skipIfNotSupported(t, err, "BeginTx (driver.TxBeginner)")
	if err != nil {
		t.Fatalf("BeginTx: %v", err)
	}
	defer tx.Rollback()
	mustPut(t, tx, []byte("b"), []byte("erased"))
	err = tx.DeleteRange(bg, []byte("b"), []byte("d"))
	skipIfNotSupported(t, err, "Tx.DeleteRange (driver.TxRangeDeleter)")
	if err != nil {
		t.Fatalf("Tx.DeleteRange(\"b\", \"d\"): %v", err)
	}
	mustPut(t, tx, []byte("c"), []byte("1"))
	want := []kv{{"a", "0"}, {"c", "1"}, {"d", "0"}}
	checkGet(t, tx, []byte("b"), nil, "in a transaction that deleted [b, d)")
	checkScans(t, tx, nil, want, "in a transaction that put b, deleted [b, d), then put c")
	vals, err := tx.MultiGet(bg, [][]byte{[]byte("b"), []byte("c"), []byte("d")})
	if err != nil || vals[0] != nil || string(vals[1]) != "1" || string(vals[2]) != "0" {
		t.Errorf("Tx.MultiGet(b, c, d) in a transaction that deleted [b, d) then put c = %q, %v; want [nil \"1\" \"0\"]",
			vals, err)
	}
	checkGet(t, db, []byte("b"), []byte("0"), "before the transaction deleting [b, d) commits")
	if err := tx.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	checkScans(t, db, nil, want, "after the transaction that deleted [b, d) committed")

	// A write by someone else into the range after BeginTx is a conflict;
	// one outside it is not.
	for _, tc := range []struct {
		what     string
		k        string
		conflict bool
	}{{"a put inside the range", "b1", true}, {"a put outside the range", "e", false}} {
		tx, err := db.BeginTx(bg, nil)
		if err != nil {
			t.Fatalf("BeginTx: %v", err)
		}
		if err := tx.DeleteRange(bg, []byte("b"), []byte("d")); err != nil {
			t.Fatalf("Tx.DeleteRange: %v", err)
		}
		mustPut(t, tx, []byte("z"), []byte("tx"))
		mustPut(t, db, []byte(tc.k), []byte("other"))
		err = tx.Commit()
		switch {
		case tc.conflict && !errors.Is(err, driver.ErrConflict):
			t.Errorf("Commit of a transaction that deleted [b, d), after %s by another writer = %v; want an error "+
				"matching driver.ErrConflict", tc.what, err)
		case tc.conflict:
			checkGet(t, db, []byte(tc.k), []byte("other"), "after the conflicting Commit (it must apply nothing)")
			checkGet(t, db, []byte("z"), nil, "after the conflicting Commit (it must apply nothing)")
		case err != nil:
			t.Errorf("Commit of a transaction that deleted [b, d), after %s by another writer = %v; want nil",
				tc.what, err)
		}
	}
}

func testWriteOptions(t testing.TB, s *suite) {
	db := s.open(t)
	syncCtx := ioctx.WithWriteOptions(bg, ioctx.WriteOptions{Sync: true})
	hasRange := !errors.Is(db.DeleteRange(bg, []byte("x"), []byte("y")), driver.ErrNotSupported)
	writes := func(ctx context.Context, w interface {
		Put(context.Context, []byte, []byte) error
		Delete(context.Context, []byte) error
		Write(context.Context, *driver.Batch) error
		DeleteRange(context.Context, []byte, []byte) error
	}, prefix string) error {
		if err := w.Put(ctx, []byte(prefix+"put"), []byte("v")); err != nil {
			return fmt.Errorf("Put: %w", err)
		}
		if err := w.Delete(ctx, []byte(prefix+"put")); err != nil {
			return fmt.Errorf("Delete: %w", err)
		}
		var b driver.Batch
		b.Put([]byte(prefix+"batch"), []byte("v"))
		b.Put([]byte(prefix+"gone"), []byte("v"))
		if err := w.Write(ctx, &b); err != nil {
			return fmt.Errorf("Write: %w", err)
		}
		if hasRange {
			if err := w.DeleteRange(ctx, []byte(prefix+"gone"), []byte(prefix+"gone\x00")); err != nil {
				return fmt.Errorf("DeleteRange: %w", err)
			}
		} else if err := w.Delete(ctx, []byte(prefix+"gone")); err != nil {
			return fmt.Errorf("Delete: %w", err)
		}
		return nil
	}
	check := func(prefix, how string) {
		t.Helper()
		checkGet(t, db, []byte(prefix+"put"), nil, how)
		checkGet(t, db, []byte(prefix+"batch"), []byte("v"), how)
		checkGet(t, db, []byte(prefix+"gone"), nil, how)
	}
	// Sync is honoured by every driver (some sync every write anyway).
	if err := writes(syncCtx, db, "sync/"); err != nil {
		t.Fatalf("a write with WriteOptions{Sync: true} in its context failed: %v; every driver accepts Sync", err)
	}
	check("sync/", "after writes with WriteOptions{Sync: true}")
	conn, err := db.Conn(syncCtx)
	if err != nil {
		t.Fatalf("DB.Conn: %v", err)
	}
	defer conn.Close()
	if got := conn.WriteOptions(); !got.Sync {
		t.Errorf("Conn.WriteOptions() of a Conn made with a context carrying Sync = %+v; want Sync", got)
	}
	if err := writes(bg, conn, "conn/"); err != nil {
		t.Fatalf("a write through a Conn whose default WriteOptions carry Sync failed: %v", err)
	}
	check("conn/", "after writes through a Conn with Sync by default")
	if tx, err := db.BeginTx(syncCtx, nil); err == nil {
		mustPut(t, tx, []byte("tx/put"), []byte("v"))
		if err := tx.Commit(); err != nil {
			t.Errorf("Commit of a transaction begun with Sync in its context: %v", err)
		}
		checkGet(t, db, []byte("tx/put"), []byte("v"), "after a Commit with Sync")
	} else if !errors.Is(err, driver.ErrNotSupported) {
		t.Fatalf("BeginTx: %v", err)
	}
	// DisableWAL: honoured, or refused with ErrNotSupported having written
	// nothing; never an other error.
	noWAL := ioctx.WithWriteOptions(bg, ioctx.WriteOptions{DisableWAL: true})
	err = db.Put(noWAL, []byte("nowal"), []byte("v"))
	switch {
	case errors.Is(err, driver.ErrNotSupported):
		t.Logf("the driver refuses DisableWAL: %v", err)
		checkGet(t, db, []byte("nowal"), nil, "after a Put with DisableWAL refused with ErrNotSupported")
	case err != nil:
		t.Errorf("Put with WriteOptions{DisableWAL: true} = %v; want nil, or an error matching "+
			"driver.ErrNotSupported from a driver that cannot skip its log", err)
	default:
		checkGet(t, db, []byte("nowal"), []byte("v"), "after a Put with DisableWAL")
	}
}

func testSyncWAL(t testing.TB, s *suite) {
	db := s.open(t)
	mustPut(t, db, []byte("k"), []byte("v"))
	err := db.SyncWAL(bg)
	skipIfNotSupported(t, err, "SyncWAL (driver.WALSyncer)")
	if err != nil {
		t.Fatalf("SyncWAL: %v", err)
	}
	mustPut(t, db, []byte("k2"), []byte("v2"))
	if err := db.SyncWAL(bg); err != nil {
		t.Fatalf("a second SyncWAL: %v", err)
	}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if err := db.SyncWAL(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("SyncWAL with a cancelled context = %v; want an error matching context.Canceled", err)
	}
	if db.path == memoryPath {
		return
	}
	db.close(t)
	db = s.reopen(t, db)
	checkGet(t, db, []byte("k"), []byte("v"), "after SyncWAL, Close and a reopen")
	checkGet(t, db, []byte("k2"), []byte("v2"), "after SyncWAL, Close and a reopen")
}

func testSnapshot(t testing.TB, s *suite) {
	db := s.open(t, opt("write_buffer_size", "64KiB"))
	m := newModel()
	for i := range 100 {
		mustPut(t, db, key(i), []byte("old"))
		m.put(key(i), []byte("old"))
	}
	snap, err := db.NewSnapshot(bg)
	skipIfNotSupported(t, err, "NewSnapshot (driver.Snapshotter)")
	if err != nil {
		t.Fatalf("NewSnapshot: %v", err)
	}
	// An iterator opened before the snapshot's Close keeps reading it.
	early, err := snap.NewIterator(bg, nil)
	if err != nil {
		t.Fatalf("Snapshot.NewIterator: %v", err)
	}
	defer early.Close()

	// Later writes of every kind, a flush and a compaction.
	now := newModel()
	for k, v := range m.m {
		now.m[k] = v
	}
	later := []op{{key: key(5), value: []byte("new")}, {del: true, key: key(6)}, {key: key(500), value: []byte("new")}}
	mustWrite(t, db, batch(later))
	now.apply(later)
	if err := db.DeleteRange(bg, key(10), key(20)); err == nil {
		now.apply([]op{delRangeOp(key(10), key(20))})
	} else if !errors.Is(err, driver.ErrNotSupported) {
		t.Fatalf("DeleteRange: %v", err)
	}
	flushIfAble(t, db)
	compactIfAble(t, db)
	absent := [][]byte{key(500), key(-1)}
	checkModel(t, snap, m, absent, "in a snapshot taken before later writes, a range deletion, Flush and Compact")
	checkScans(t, snap, &driver.IterOptions{LowerBound: key(4), UpperBound: key(21)}, m.scan(key(4), key(21)),
		"in a bounded scan of the snapshot")
	keys := [][]byte{key(5), key(6), key(15), key(500), key(5)}
	vals, err := snap.MultiGet(bg, keys)
	if err != nil {
		t.Fatalf("Snapshot.MultiGet: %v", err)
	}
	for i, k := range keys {
		if w, ok := m.m[string(k)]; ok != (vals[i] != nil) || ok && string(vals[i]) != w {
			t.Errorf("Snapshot.MultiGet: key %s = %s; want the snapshot's %q (present: %v)", q(k), q(vals[i]), w, ok)
		}
	}
	checkModel(t, db, now, absent, "in the DB after the snapshot (which must not hold it back)")

	if err := snap.Close(); err != nil {
		t.Fatalf("Snapshot.Close: %v", err)
	}
	got, err := collect(early, false)
	if err != nil {
		t.Fatalf("an iterator of the snapshot, after the snapshot's Close: %v", err)
	}
	if d := diffKVs(got, m.scan(nil, nil)); d != "" {
		t.Errorf("an iterator opened before Snapshot.Close, scanned after it: %s", d)
	}
	if _, err := snap.Get(bg, key(1)); !errors.Is(err, driver.ErrClosed) {
		t.Errorf("Snapshot.Get after Close = %v; want an error matching driver.ErrClosed", err)
	}
	if _, err := snap.NewIterator(bg, nil); !errors.Is(err, driver.ErrClosed) {
		t.Errorf("Snapshot.NewIterator after Close = %v; want an error matching driver.ErrClosed", err)
	}
	if err := snap.Close(); !errors.Is(err, driver.ErrClosed) {
		t.Errorf("a second Snapshot.Close = %v; want an error matching driver.ErrClosed", err)
	}
	// A snapshot left open is closed by DB.Close.
	if _, err := db.NewSnapshot(bg); err != nil {
		t.Fatalf("NewSnapshot: %v", err)
	}
}

func testCheckpoint(t testing.TB, s *suite) {
	db := s.open(t)
	m := newModel()
	writeRound(t, db, m, 0, 0, 200)
	flushIfAble(t, db)
	writeRound(t, db, m, 1, 150, 100) // some left unflushed
	if err := db.Checkpoint(bg, ""); err == nil || !errors.Is(err, driver.ErrInvalidArgument) &&
		!errors.Is(err, driver.ErrNotSupported) {
		t.Errorf("Checkpoint(\"\") = %v; want an error matching driver.ErrInvalidArgument", err)
	}
	dir := filepath.Join(tempDir(t), "checkpoint")
	err := db.Checkpoint(bg, dir)
	skipIfNotSupported(t, err, "Checkpoint (driver.Checkpointer)")
	if err != nil {
		t.Fatalf("Checkpoint(%q): %v", dir, err)
	}
	mustPut(t, db, key(0), []byte("after the checkpoint"))
	mustPut(t, db, []byte("later"), []byte("v"))
	if err := db.Checkpoint(bg, dir); err == nil {
		t.Errorf("a second Checkpoint into the same, now non-empty, directory succeeded; want an error")
	}
	if fi, err := os.Stat(db.path); err != nil || !fi.IsDir() {
		t.Logf("the checkpoint is not opened: the DSN's path %q is not a directory the suite can point a DSN at", db.path)
		return
	}
	d, err := driver.ParseDSN(db.dsn)
	if err != nil {
		t.Fatalf("driver.ParseDSN(%q): %v", db.dsn, err)
	}
	d.Path = dir
	cp := s.openDSN(t, d.String(), nil)
	checkModel(t, cp, m, append(durabilityAbsent(), []byte("later")),
		"in the checkpoint, opened with the DB's DSN pointing at its directory")
	mustPut(t, cp, []byte("cp-only"), []byte("v"))
	checkGet(t, db, []byte("cp-only"), nil, "in the DB after a write to its checkpoint (they share nothing)")
	checkGet(t, db, key(0), []byte("after the checkpoint"), "in the DB after its checkpoint was opened")
}

// tempDir is t.TempDir for the suite's testing.TB.
func tempDir(t testing.TB) string {
	if tt, ok := t.(interface{ TempDir() string }); ok {
		return tt.TempDir()
	}
	dir, err := os.MkdirTemp("", "conformance-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// batchWriter records what Batch.Replay calls.
type batchWriter struct{ ops []driver.Op }

func (w *batchWriter) Put(k, v []byte) {
	w.ops = append(w.ops, driver.Op{Kind: driver.OpPut, Key: slices.Clone(k), Value: slices.Clone(v)})
}
func (w *batchWriter) Delete(k []byte) {
	w.ops = append(w.ops, driver.Op{Kind: driver.OpDelete, Key: slices.Clone(k)})
}
func (w *batchWriter) Merge(k, v []byte) {
	w.ops = append(w.ops, driver.Op{Kind: driver.OpMerge, Key: slices.Clone(k), Value: slices.Clone(v)})
}
func (w *batchWriter) DeleteRange(s, e []byte) {
	w.ops = append(w.ops, driver.Op{Kind: driver.OpDeleteRange, Key: slices.Clone(s), Value: slices.Clone(e)})
}

func testBatchReadBack(t testing.TB, s *suite) {
	var b driver.Batch
	want := []driver.Op{
		{Kind: driver.OpPut, Key: []byte("a"), Value: []byte("1")},
		{Kind: driver.OpDelete, Key: []byte("b")},
		{Kind: driver.OpPut, Key: []byte("empty"), Value: []byte{}},
		{Kind: driver.OpDeleteRange, Key: []byte("c"), Value: []byte("d")},
		{Kind: driver.OpPut, Key: []byte("c1"), Value: []byte("after the range")},
	}
	for _, o := range want {
		switch o.Kind {
		case driver.OpPut:
			b.Put(o.Key, o.Value)
		case driver.OpDelete:
			b.Delete(o.Key)
		case driver.OpDeleteRange:
			b.DeleteRange(o.Key, o.Value)
		}
	}
	// Empty in every order: not recorded. (A range inverted bytewise is,
	// since whether it is inverted is the driver's order to say.)
	b.DeleteRange([]byte("z"), []byte("z"))
	b.DeleteRange([]byte("z"), []byte{})
	if b.Len() != len(want) {
		t.Errorf("Batch.Len() = %d after %d writes and empty DeleteRanges; want %d", b.Len(), len(want), len(want))
	}
	if b.Size() <= 0 {
		t.Errorf("Batch.Size() = %d; want the size of its encoding", b.Size())
	}
	var got []driver.Op
	r := b.Reader()
	for o, ok := r.Next(); ok; o, ok = r.Next() {
		got = append(got, o)
	}
	sameOps := func(got []driver.Op, how string) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s gave %d writes; want %d", how, len(got), len(want))
		}
		for i := range want {
			g, w := got[i], want[i]
			if g.Kind != w.Kind || string(g.Key) != string(w.Key) || !equalBytes(g.Value, w.Value) &&
				!(w.Kind == driver.OpDelete && len(g.Value) == 0) {
				t.Errorf("%s: write %d = {%s %s %s}; want {%s %s %s}", how, i, g.Kind, q(g.Key), q(g.Value),
					w.Kind, q(w.Key), q(w.Value))
			}
		}
	}
	sameOps(got, "Batch.Reader")
	var rec batchWriter
	b.Replay(&rec)
	sameOps(rec.ops, "Batch.Replay")

	// A batch replayed into another writes the same.
	var copyB driver.Batch
	b.Replay(&copyB)
	if copyB.Len() != b.Len() || copyB.Size() != b.Size() {
		t.Errorf("a batch replayed into an empty one has Len %d, Size %d; want %d, %d",
			copyB.Len(), copyB.Size(), b.Len(), b.Size())
	}
	db := s.open(t)
	mustPut(t, db, []byte("c0"), []byte("covered"))
	err := db.Write(bg, &copyB)
	if errors.Is(err, driver.ErrNotSupported) {
		t.Logf("the replayed batch holds a range deletion, which the driver cannot write (%v); writing it without", err)
		copyB.Reset()
		b.Replay(&noRanges{&copyB})
		err = db.Write(bg, &copyB)
	}
	if err != nil {
		t.Fatalf("Write of a replayed batch: %v", err)
	}
	checkGet(t, db, []byte("a"), []byte("1"), "after writing a replayed batch")
	checkGet(t, db, []byte("empty"), []byte{}, "after writing a replayed batch")
	checkGet(t, db, []byte("c1"), []byte("after the range"), "after writing a replayed batch")
	copyB.Reset()
	if copyB.Len() != 0 || copyB.Size() != 0 {
		t.Errorf("after Reset a batch has Len %d, Size %d; want 0, 0", copyB.Len(), copyB.Size())
	}
	if r := copyB.Reader(); func() bool { _, ok := r.Next(); return ok }() {
		t.Errorf("the Reader of a Reset batch returned a write")
	}
}

// noRanges drops the range deletions of a replay.
type noRanges struct{ *driver.Batch }

func (noRanges) DeleteRange(_, _ []byte) {}
