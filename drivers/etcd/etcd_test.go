package etcd

import (
	"context"
	"errors"
	"testing"

	"github.com/shaledb/shale/driver"
)

var bg = context.Background()

// openDB opens a fresh namespace of the shared cluster through the façade,
// closed when the test ends.
func openDB(t testing.TB, params string) *driver.DB {
	t.Helper()
	return openDSN(t, shared.dsn(t, params))
}

func openDSN(t testing.TB, dsn string) *driver.DB {
	t.Helper()
	db, err := driver.Open(DriverName, dsn)
	if err != nil {
		t.Fatalf("driver.Open(%q): %v", dsn, err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil && !errors.Is(err, driver.ErrClosed) {
			t.Errorf("DB.Close: %v", err)
		}
	})
	return db
}

func TestGetPutDelete(t *testing.T) {
	db := openDB(t, "")
	if _, err := db.Get(bg, []byte("k")); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("Get of an absent key = %v; want ErrNotFound", err)
	}
	for _, v := range [][]byte{[]byte("v1"), {}, []byte("v2")} {
		if err := db.Put(bg, []byte("k"), v); err != nil {
			t.Fatalf("Put: %v", err)
		}
		got, err := db.Get(bg, []byte("k"))
		if err != nil || got == nil || string(got) != string(v) {
			t.Fatalf("Get after Put(%q) = %q (nil: %v), %v", v, got, got == nil, err)
		}
	}
	if err := db.Delete(bg, []byte("k")); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := db.Get(bg, []byte("k")); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("Get after Delete = %v; want ErrNotFound", err)
	}
}

// TestNamespacesAreDisjoint checks that two DBs never see each other's keys,
// even when one namespace is a prefix of the other.
func TestNamespacesAreDisjoint(t *testing.T) {
	a := openDSN(t, shared.endpoints()+"/ns")
	b := openDSN(t, shared.endpoints()+"/ns/b")
	c := openDSN(t, shared.endpoints()+"/nsb")
	if err := a.Put(bg, []byte("b/k"), []byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(bg, []byte("k"), []byte("b")); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(bg, []byte("k"), []byte("c")); err != nil {
		t.Fatal(err)
	}
	for name, db := range map[string]*driver.DB{"ns": a, "ns/b": b, "nsb": c} {
		it, err := db.NewIterator(bg, nil)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("namespace %q holds %d keys; want the 1 it wrote", name, n)
		}
	}
}
