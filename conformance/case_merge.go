package conformance

import (
	"errors"
	"testing"

	"github.com/shaledb/shale/driver"
)

// The case of merge operands (issue 27, item 3): DB.Merge and Batch.Merge
// with RocksDB's stringappend operator, skipped (after checking that a
// batch holding a merge writes nothing) on ErrNotSupported.

func testMerge(t testing.TB, s *suite) {
	// Without asking for an operator: a driver without merges says so, and
	// writes nothing of a batch that holds one.
	plain := s.open(t)
	err := plain.Merge(bg, []byte("m"), []byte("x"))
	if errors.Is(err, driver.ErrNotSupported) {
		var b driver.Batch
		b.Put([]byte("before"), []byte("1"))
		b.Merge([]byte("m"), []byte("x"))
		b.Put([]byte("after"), []byte("2"))
		if err := plain.Write(bg, &b); !errors.Is(err, driver.ErrNotSupported) {
			t.Fatalf("Write of a batch holding a merge to a driver whose Merge is ErrNotSupported = %v; want an "+
				"error matching driver.ErrNotSupported", err)
		}
		checkGet(t, plain, []byte("before"), nil, "after a refused batch holding a merge")
		checkGet(t, plain, []byte("after"), nil, "after a refused batch holding a merge")
		checkGet(t, plain, []byte("m"), nil, "after a refused Merge")
		t.Skipf("Merge (driver.Merger): the driver lacks the capability (%v)", err)
	}
	if err != nil && !errors.Is(err, driver.ErrInvalidArgument) {
		t.Fatalf("Merge without a merge operator configured = %v; want nil, or an error matching "+
			"driver.ErrInvalidArgument (no operator)", err)
	}

	db := s.open(t, s.need(t, Capability{Kind: MergeOperator, MergeOperator: "stringappend"})...)
	merge := func(k, v string) {
		t.Helper()
		if err := db.Merge(bg, []byte(k), []byte(v)); err != nil {
			t.Fatalf("Merge(%q, %q): %v", k, v, err)
		}
	}
	mustPut(t, db, []byte("a"), []byte("base"))
	merge("a", "1")
	merge("a", "2")
	merge("n", "only") // no existing value
	mustPut(t, db, []byte("d"), []byte("old"))
	if err := db.Delete(bg, []byte("d")); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	merge("d", "new") // the Delete leaves no existing value
	merge("e", "")    // an empty operand is an operand
	merge("e", "")

	var b driver.Batch
	b.Put([]byte("b"), []byte("x"))
	b.Merge([]byte("b"), []byte("y"))
	b.Merge([]byte("a"), []byte("3"))
	if err := db.Write(bg, &b); err != nil {
		t.Fatalf("Write of a batch with merges: %v", err)
	}
	want := []kv{{"a", "base,1,2,3"}, {"b", "x,y"}, {"d", "new"}, {"e", ","}, {"n", "only"}}
	check := func(r reader, want []kv, when string) {
		t.Helper()
		for _, p := range want {
			checkGet(t, r, []byte(p.k), []byte(p.v), when)
		}
		keys := [][]byte{[]byte("a"), []byte("zz"), []byte("n"), []byte("a")}
		vals, err := r.MultiGet(bg, keys)
		if err != nil {
			t.Fatalf("%s: MultiGet: %v", when, err)
		}
		wantOf := map[string]string{}
		for _, p := range want {
			wantOf[p.k] = p.v
		}
		for i, k := range keys {
			w, ok := wantOf[string(k)]
			if ok != (vals[i] != nil) || string(vals[i]) != w {
				t.Fatalf("%s: MultiGet(%s)[%d] = %s; want %q (present %v)", when, q(k), i, q(vals[i]), w, ok)
			}
		}
		checkScans(t, r, nil, want, when)
		checkScans(t, r, &driver.IterOptions{LowerBound: []byte("b"), UpperBound: []byte("e")}, want[1:3], when)
	}
	check(db, want, "after merges")

	snap, err := db.NewSnapshot(bg)
	if err != nil && !errors.Is(err, driver.ErrNotSupported) {
		t.Fatalf("NewSnapshot: %v", err)
	}
	merge("a", "4")
	merge("z", "last")
	after := []kv{{"a", "base,1,2,3,4"}, {"b", "x,y"}, {"d", "new"}, {"e", ","}, {"n", "only"}, {"z", "last"}}
	check(db, after, "after more merges")
	if snap != nil {
		check(snap, want, "at a snapshot taken before the last merges")
	}
	if err := db.Flush(bg); err != nil && !errors.Is(err, driver.ErrNotSupported) {
		t.Fatalf("Flush: %v", err)
	}
	merge("a", "5")
	after[0].v += ",5"
	check(db, after, "after Flush and a merge")
	if err := db.Compact(bg, nil, nil); err != nil && !errors.Is(err, driver.ErrNotSupported) {
		t.Fatalf("Compact: %v", err)
	}
	check(db, after, "after Compact")
	if snap != nil {
		check(snap, want, "at the snapshot, after Flush and Compact")
		if err := snap.Close(); err != nil {
			t.Fatalf("Snapshot.Close: %v", err)
		}
	}

	// Transactions read merged values.
	if tx, err := db.BeginTx(bg, nil); err == nil {
		check(tx, after, "in a transaction")
		if err := tx.Rollback(); err != nil {
			t.Fatalf("Rollback: %v", err)
		}
	} else if !errors.Is(err, driver.ErrNotSupported) {
		t.Fatalf("BeginTx: %v", err)
	}

	if db.path == memoryPath {
		return
	}
	db.close(t)
	db = s.reopen(t, db)
	check(db, after, "after a reopen")
}
