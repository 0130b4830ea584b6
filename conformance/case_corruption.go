package conformance

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shaledb/shale/driver"
)

// corruptTables flips the byte in the middle of every *.sst file in dir
// and returns the files' base names.
func corruptTables(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Skipf("the DSN's path %q is not a readable directory (%v); the case corrupts the table files in it", dir, err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sst") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
		if len(data) == 0 {
			continue
		}
		data[len(data)/2] ^= 0xff
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatalf("corrupting %s: %v", path, err)
		}
		names = append(names, e.Name())
	}
	if len(names) == 0 {
		t.Skipf("no *.sst table files in %s after Flush; the case corrupts those", dir)
	}
	return names
}

// checkCorruptionError reports err unless it matches ErrCorruption and
// names one of the corrupted files.
func checkCorruptionError(t testing.TB, err error, call string, files []string) {
	t.Helper()
	switch {
	case errors.Is(err, driver.ErrNotSupported):
		t.Logf("%s: not supported (%v)", call, err)
	case err == nil:
		t.Errorf("%s succeeded after a byte in the middle of every table file (%s) was flipped; want an error "+
			"matching driver.ErrCorruption", call, strings.Join(files, ", "))
	case !errors.Is(err, driver.ErrCorruption):
		t.Errorf("%s failed with %q, which does not match driver.ErrCorruption", call, err)
	default:
		for _, f := range files {
			if strings.Contains(err.Error(), f) {
				return
			}
		}
		t.Errorf("%s failed with %q, which names none of the corrupt files (%s); a corruption error must say "+
			"which file is bad", call, err, strings.Join(files, ", "))
	}
}

func testCorruption(t testing.TB, s *suite) {
	db := s.open(t, opt("disable_auto_compactions", "true"))
	dirOnly(t, db, "corrupting table files")
	m := newModel()
	var b driver.Batch
	for i := range 400 {
		v := make([]byte, 200)
		for j := range v {
			v[j] = byte(i + j*13)
		}
		b.Put(key(i), v)
		m.put(key(i), v)
	}
	mustWrite(t, db, &b)
	err := db.Flush(bg)
	skipIfNotSupported(t, err, "writing table files needs Flush (driver.Flusher)")
	if err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if err := db.Compact(bg, nil, nil); err != nil && !errors.Is(err, driver.ErrNotSupported) {
		t.Fatalf("Compact(nil, nil): %v", err)
	}
	db.close(t)
	files := corruptTables(t, db.path)

	db, unsupported, err := s.tryOpenDSN(t, db.dsn, []param{opt("block_cache_size", "0")})
	if unsupported != "" {
		t.Skip(unsupported)
	}
	if err != nil {
		if !errors.Is(err, driver.ErrCorruption) {
			t.Errorf("reopening after corrupting every table file failed with %q; a failed open must match "+
				"driver.ErrCorruption", err)
		}
		return
	}
	checkCorruptionError(t, db.VerifyChecksum(bg), "VerifyChecksum", files)
	checkCorruptionError(t, db.VerifyFileChecksums(bg), "VerifyFileChecksums", files)

	// Reads must be right or fail with ErrCorruption: never a wrong value.
	wrong := func(what string, got []byte, err error, want string) string {
		switch {
		case err == nil && string(got) == want:
			return ""
		case err == nil:
			return fmt.Sprintf("%s returned %s; want %s", what, q(got), q([]byte(want)))
		case errors.Is(err, driver.ErrCorruption):
			return ""
		}
		return fmt.Sprintf("%s failed with %q, which does not match driver.ErrCorruption", what, err)
	}
	corruptGets := 0
	want := m.scan(nil, nil)
	for _, p := range want {
		v, err := db.Get(bg, []byte(p.k))
		if err != nil && errors.Is(err, driver.ErrCorruption) {
			corruptGets++
		}
		if msg := wrong(fmt.Sprintf("Get(%s) of a corrupt database", q([]byte(p.k))), v, err, p.v); msg != "" {
			t.Errorf("%s: a read of a corrupt table must return the right value or an error matching "+
				"driver.ErrCorruption, never a wrong answer", msg)
			break
		}
	}
	t.Logf("%d of %d Gets failed with ErrCorruption", corruptGets, len(want))

	keys := make([][]byte, len(want))
	for i, p := range want {
		keys[i] = []byte(p.k)
	}
	vals, err := db.MultiGet(bg, keys)
	if err == nil {
		for i, v := range vals {
			if msg := wrong(fmt.Sprintf("MultiGet entry %d (key %s)", i, q(keys[i])), v, nil, want[i].v); msg != "" {
				t.Errorf("%s of a corrupt database: never a wrong answer", msg)
				break
			}
		}
	} else if !errors.Is(err, driver.ErrCorruption) {
		t.Errorf("MultiGet of a corrupt database failed with %q, which does not match driver.ErrCorruption", err)
	}

	it, err := db.NewIterator(bg, nil)
	if err != nil {
		if !errors.Is(err, driver.ErrCorruption) {
			t.Errorf("NewIterator on a corrupt database failed with %q, which does not match driver.ErrCorruption", err)
		}
		return
	}
	got, err := collect(it, false)
	_ = it.Close()
	if d := diffKVs(got, want[:min(len(got), len(want))]); d != "" {
		t.Errorf("a scan of a corrupt database returned a wrong entry: %s", d)
	}
	switch {
	case err == nil && len(got) < len(want):
		t.Errorf("a scan of a corrupt database stopped after %d of %d entries with no error; want an error "+
			"matching driver.ErrCorruption", len(got), len(want))
	case err != nil && !errors.Is(err, driver.ErrCorruption):
		t.Errorf("a scan of a corrupt database stopped with %q, which does not match driver.ErrCorruption", err)
	}
}
