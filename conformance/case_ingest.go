package conformance

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shaledb/shale/driver"
)

// The case of the bulk load (issue 27, item 5): DB.Ingest. Table files are
// written by a driver's own writer (shale's engine.TableWriter), which the
// façade does not have; so the suite writes them through
// Config.WriteTable when the harness supplies one, and otherwise checks
// only what every driver must do: no files is ErrInvalidArgument, a missing
// file an error naming it that changes nothing, or ErrNotSupported.

// KV is a key and its value, for Config.WriteTable.
type KV struct {
	Key, Value []byte
}

func testIngest(t testing.TB, s *suite) {
	db := s.open(t)
	mustPut(t, db, []byte("k1"), []byte("old"))
	if err := db.Ingest(bg, nil); !errors.Is(err, driver.ErrInvalidArgument) {
		t.Errorf("Ingest of no files = %v; want an error matching driver.ErrInvalidArgument", err)
	}
	missing := filepath.Join(t.TempDir(), "missing.sst")
	err := db.Ingest(bg, []string{missing})
	if errors.Is(err, driver.ErrNotSupported) {
		t.Skipf("Ingest: %v", err)
	}
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Ingest of a missing file = %v; want an error naming %s", err, missing)
	}
	expectValue(t, db, []byte("k1"), "old")
	if s.writeTable == nil {
		t.Logf("Ingest: Config.WriteTable is nil: no table is ingested")
		return
	}

	// Two tables: the ingest replaces k1, adds k2 and k3, all at once; a
	// snapshot taken before sees none of it.
	dir := t.TempDir()
	tables := [][]KV{
		{{[]byte("k1"), []byte("new1")}, {[]byte("k2"), []byte("new2")}},
		{{[]byte("k3"), []byte("new3")}},
	}
	var paths []string
	for i, kvs := range tables {
		p := filepath.Join(dir, string(rune('a'+i))+".sst")
		if err := s.writeTable(p, kvs); err != nil {
			t.Fatalf("Config.WriteTable(%s): %v", p, err)
		}
		paths = append(paths, p)
	}
	var snap *driver.Snapshot
	if sn, err := db.NewSnapshot(bg); err == nil {
		snap = sn
		defer snap.Close()
	} else if !errors.Is(err, driver.ErrNotSupported) {
		t.Fatalf("NewSnapshot: %v", err)
	}
	// Overlapping tables are refused, and nothing changes.
	if err := db.Ingest(bg, []string{paths[0], paths[0]}); err == nil {
		t.Errorf("Ingest of a table twice (overlapping itself) succeeded")
	}
	expectValue(t, db, []byte("k1"), "old")
	if err := db.Ingest(bg, paths); err != nil {
		t.Fatalf("Ingest(%q): %v", paths, err)
	}
	for k, v := range map[string]string{"k1": "new1", "k2": "new2", "k3": "new3"} {
		expectValue(t, db, []byte(k), v)
	}
	if snap != nil {
		if v, err := snap.Get(bg, []byte("k1")); err != nil || string(v) != "old" {
			t.Errorf("Snapshot.Get(k1) after Ingest = %q, %v; want the value before it, \"old\"", v, err)
		}
		if _, err := snap.Get(bg, []byte("k2")); !errors.Is(err, driver.ErrNotFound) {
			t.Errorf("Snapshot.Get(k2) after Ingest = %v; want ErrNotFound: the snapshot predates the ingest", err)
		}
	}
	// Writes after the ingest are newer than it.
	mustPut(t, db, []byte("k2"), []byte("later"))
	expectValue(t, db, []byte("k2"), "later")
}

// expectValue checks that Get(k) is want.
func expectValue(t testing.TB, db *dbh, k []byte, want string) {
	t.Helper()
	if v, err := db.Get(bg, k); err != nil || string(v) != want {
		t.Errorf("Get(%s) = %q, %v; want %q", q(k), v, err, want)
	}
}
