package conformance

import (
	"errors"
	"fmt"
	"testing"

	"github.com/shaledb/shale/driver"
)

// beginTx begins a transaction on db, skipping the case when the driver
// has none.
func beginTx(t testing.TB, db *dbh, opts *driver.TxOptions) *driver.Tx {
	t.Helper()
	tx, err := db.BeginTx(bg, opts)
	skipIfNotSupported(t, err, "transactions (driver.TxBeginner)")
	if err != nil {
		t.Fatalf("BeginTx: %v", err)
	}
	return tx
}

func testTxSnapshot(t testing.TB, s *suite) {
	db := s.open(t)
	for _, k := range []string{"a", "b", "c", "f"} {
		mustPut(t, db, []byte(k), []byte("db-"+k))
	}
	tx := beginTx(t, db, nil)
	defer tx.Rollback()

	// Writes by others after BeginTx are invisible to the transaction.
	mustPut(t, db, []byte("a"), []byte("db-a2"))
	mustDelete(t, db, []byte("b"))
	mustPut(t, db, []byte("d"), []byte("db-d"))
	if err := db.Flush(bg); err != nil && !errors.Is(err, driver.ErrNotSupported) {
		t.Fatalf("Flush: %v", err)
	}
	const others = "in a transaction, after other writers changed the keys it reads (the transaction must " +
		"read the snapshot taken at BeginTx)"
	checkGet(t, tx, []byte("a"), []byte("db-a"), others)
	checkGet(t, tx, []byte("b"), []byte("db-b"), others)
	checkGet(t, tx, []byte("d"), nil, others)

	// Its own writes are visible to it, merged over the snapshot.
	mustPut(t, tx, []byte("c"), []byte("tx-c"))
	mustDelete(t, tx, []byte("f"))
	mustPut(t, tx, []byte("e"), []byte("tx-e"))
	mustPut(t, tx, []byte("empty"), []byte{})
	mustDelete(t, tx, []byte("never-written"))
	const own = "in a transaction, after its own writes (it must read its own puts and deletes)"
	checkGet(t, tx, []byte("c"), []byte("tx-c"), own)
	checkGet(t, tx, []byte("f"), nil, own)
	checkGet(t, tx, []byte("e"), []byte("tx-e"), own)
	checkGet(t, tx, []byte("empty"), []byte{}, own)

	keys := [][]byte{[]byte("f"), []byte("a"), []byte("e"), []byte("b"), []byte("d"), []byte("c"), []byte("empty")}
	want := [][]byte{nil, []byte("db-a"), []byte("tx-e"), []byte("db-b"), nil, []byte("tx-c"), {}}
	vals, err := tx.MultiGet(bg, keys)
	if err != nil || len(vals) != len(keys) {
		t.Fatalf("Tx.MultiGet of %d keys = %d values, %v", len(keys), len(vals), err)
	}
	for i := range keys {
		if !equalBytes(vals[i], want[i]) {
			t.Errorf("%s: Tx.MultiGet entry %d (key %s) = %s; want %s", own, i, q(keys[i]), q(vals[i]), q(want[i]))
		}
	}
	view := newModel()
	for _, p := range [][2]string{{"a", "db-a"}, {"b", "db-b"}, {"c", "tx-c"}, {"e", "tx-e"}, {"empty", ""}} {
		view.put([]byte(p[0]), []byte(p[1]))
	}
	checkScans(t, tx, nil, view.scan(nil, nil), own+", scanning with a transaction iterator")
	checkScans(t, tx, &driver.IterOptions{LowerBound: []byte("b"), UpperBound: []byte("e")},
		view.scan([]byte("b"), []byte("e")), own+", scanning with a bounded transaction iterator")

	// Nobody else sees them before Commit.
	const uncommitted = "outside a transaction that has not committed (its writes must stay invisible)"
	checkGet(t, db, []byte("c"), []byte("db-c"), uncommitted)
	checkGet(t, db, []byte("e"), nil, uncommitted)
	checkGet(t, db, []byte("f"), []byte("db-f"), uncommitted)
}

func testTxCommitAtomicity(t testing.TB, s *suite) {
	db := s.open(t)
	tx := beginTx(t, db, nil)
	if err := tx.Rollback(); err != nil {
		t.Fatalf("Rollback of an empty transaction: %v", err)
	}
	keys := atomicityKeys("txatomic")
	write := func(g int) error {
		tx, err := db.BeginTx(bg, nil)
		if err != nil {
			return fmt.Errorf("BeginTx for generation %d: %w", g, err)
		}
		for i, k := range keys {
			if err := tx.Put(bg, k, fmt.Appendf(nil, "gen%d/%d", g, i)); err != nil {
				_ = tx.Rollback()
				return fmt.Errorf("Tx.Put in generation %d: %w", g, err)
			}
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("Commit of generation %d (no other writer touches its keys): %w", g, err)
		}
		return nil
	}
	runAtomicity(t, db, keys, 150, write, "committed transaction")
}

func testTxRollback(t testing.TB, s *suite) {
	db := s.open(t)
	mustPut(t, db, []byte("a"), []byte("db-a"))
	tx := beginTx(t, db, nil)
	mustPut(t, tx, []byte("a"), []byte("tx-a"))
	mustPut(t, tx, []byte("b"), []byte("tx-b"))
	if err := tx.Rollback(); err != nil {
		t.Fatalf("Rollback: %v; want nil", err)
	}
	const rolled = "after Rollback of a transaction that wrote the key"
	checkGet(t, db, []byte("a"), []byte("db-a"), rolled)
	checkGet(t, db, []byte("b"), nil, rolled)

	// A rolled-back transaction's writes do not make later ones conflict.
	tx2 := beginTx(t, db, nil)
	mustPut(t, tx2, []byte("a"), []byte("tx2-a"))
	if err := tx2.Commit(); err != nil {
		t.Fatalf("Commit of a transaction after another rolled back: %v", err)
	}
	checkGet(t, db, []byte("a"), []byte("tx2-a"), "after Commit")
}

func testTxConflict(t testing.TB, s *suite) {
	db := s.open(t)
	mustPut(t, db, []byte("k"), []byte("v0"))

	// Two transactions write k; the first to commit wins.
	a := beginTx(t, db, nil)
	b := beginTx(t, db, nil)
	mustPut(t, a, []byte("k"), []byte("from-a"))
	mustPut(t, b, []byte("k"), []byte("from-b"))
	mustPut(t, b, []byte("only-b"), []byte("from-b"))
	if err := a.Commit(); err != nil {
		t.Fatalf("Commit of the first of two transactions writing the same key: %v; want nil", err)
	}
	if err := b.Commit(); !errors.Is(err, driver.ErrConflict) {
		t.Errorf("Commit of a transaction that wrote key \"k\", which another transaction wrote and committed "+
			"after this one began, = %v; want an error matching driver.ErrConflict", err)
	}
	const lost = "after the Commit of a conflicting transaction (which must fail and apply none of its writes)"
	checkGet(t, db, []byte("k"), []byte("from-a"), lost)
	checkGet(t, db, []byte("only-b"), nil, lost)

	// A non-transactional write after the transaction began conflicts too.
	c := beginTx(t, db, nil)
	mustPut(t, c, []byte("k"), []byte("from-c"))
	mustPut(t, c, []byte("only-c"), []byte("from-c"))
	mustPut(t, db, []byte("k"), []byte("plain put"))
	if err := c.Commit(); !errors.Is(err, driver.ErrConflict) {
		t.Errorf("Commit of a transaction that wrote key \"k\", which a plain DB.Put wrote after the transaction "+
			"began, = %v; want an error matching driver.ErrConflict", err)
	}
	checkGet(t, db, []byte("k"), []byte("plain put"), lost)
	checkGet(t, db, []byte("only-c"), nil, lost)

	// A delete conflicts like a put.
	d := beginTx(t, db, nil)
	mustDelete(t, d, []byte("k"))
	mustDelete(t, db, []byte("k"))
	mustPut(t, db, []byte("k"), []byte("after delete"))
	if err := d.Commit(); !errors.Is(err, driver.ErrConflict) {
		t.Errorf("Commit of a transaction that deleted key \"k\", which was written after the transaction began, "+
			"= %v; want an error matching driver.ErrConflict", err)
	}
	checkGet(t, db, []byte("k"), []byte("after delete"), lost)

	// Disjoint writes, and writes before the transaction began, do not
	// conflict.
	mustPut(t, db, []byte("x"), []byte("before"))
	e := beginTx(t, db, nil)
	f := beginTx(t, db, nil)
	mustPut(t, e, []byte("x"), []byte("from-e"))
	mustPut(t, f, []byte("y"), []byte("from-f"))
	mustPut(t, db, []byte("z"), []byte("plain put"))
	if err := f.Commit(); err != nil {
		t.Errorf("Commit of a transaction whose keys nobody else wrote: %v; want nil", err)
	}
	if err := e.Commit(); err != nil {
		t.Errorf("Commit of a transaction whose key was last written before it began (others wrote other keys "+
			"since): %v; want nil", err)
	}
	checkGet(t, db, []byte("x"), []byte("from-e"), "after Commit")
	checkGet(t, db, []byte("y"), []byte("from-f"), "after Commit")
}

func testTxDone(t testing.TB, s *suite) {
	db := s.open(t)
	mustPut(t, db, []byte("a"), []byte("1"))
	for _, commit := range []bool{true, false} {
		tx := beginTx(t, db, nil)
		it, err := tx.NewIterator(bg, nil)
		if err != nil {
			t.Fatalf("Tx.NewIterator: %v", err)
		}
		if !it.First() {
			t.Fatalf("a transaction iterator's First = false, Error %v; want it at \"a\"", it.Error())
		}
		end, endName := tx.Rollback, "Rollback"
		if commit {
			end, endName = tx.Commit, "Commit"
		}
		if err := end(); err != nil {
			t.Fatalf("%s: %v", endName, err)
		}
		if it.Next() || it.First() {
			t.Errorf("after %s, a move of the transaction's iterator returned true; its iterators end with it", endName)
		}
		calls := map[string]error{}
		_, calls["Get"] = tx.Get(bg, []byte("a"))
		_, calls["MultiGet"] = tx.MultiGet(bg, [][]byte{[]byte("a")})
		_, calls["NewIterator"] = tx.NewIterator(bg, nil)
		calls["Put"] = tx.Put(bg, []byte("b"), []byte("2"))
		calls["Delete"] = tx.Delete(bg, []byte("a"))
		calls["Commit"] = tx.Commit()
		calls["Rollback"] = tx.Rollback()
		for name, err := range calls {
			if !errors.Is(err, driver.ErrTxDone) {
				t.Errorf("Tx.%s after %s = %v; want an error matching driver.ErrTxDone", name, endName, err)
			}
		}
		checkGet(t, db, []byte("a"), []byte("1"), "after calls on a finished transaction")
		checkGet(t, db, []byte("b"), nil, "after calls on a finished transaction")
	}

	ro := beginTx(t, db, &driver.TxOptions{ReadOnly: true})
	checkGet(t, ro, []byte("a"), []byte("1"), "in a read-only transaction")
	if err := ro.Put(bg, []byte("b"), []byte("2")); !errors.Is(err, driver.ErrInvalidArgument) {
		t.Errorf("Put in a read-only transaction = %v; want an error matching driver.ErrInvalidArgument", err)
	}
	if err := ro.Delete(bg, []byte("a")); !errors.Is(err, driver.ErrInvalidArgument) {
		t.Errorf("Delete in a read-only transaction = %v; want an error matching driver.ErrInvalidArgument", err)
	}
	if err := ro.Commit(); err != nil {
		t.Errorf("Commit of a read-only transaction: %v; want nil", err)
	}
	checkGet(t, db, []byte("a"), []byte("1"), "after a read-only transaction tried to write")
	checkGet(t, db, []byte("b"), nil, "after a read-only transaction tried to write")
}
