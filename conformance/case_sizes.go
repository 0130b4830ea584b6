package conformance

import (
	"errors"
	"fmt"
	"testing"

	"github.com/shaledb/shale/driver"
)

// The case of the size and property queries (issue 27, item 6):
// ApproximateSize, DiskUsage and Property, each skipped on ErrNotSupported.

func testSizes(t testing.TB, s *suite) {
	db := s.open(t)
	key := func(i int) []byte { return fmt.Appendf(nil, "m%05d", i) }
	value := func(i int) []byte {
		v := make([]byte, 1000)
		for j := range v {
			v[j] = byte(i*131 + j*j*7 + j>>3) // varied, so blocks do not compress to nothing
		}
		return v
	}
	const n = 500
	var checked int

	// Property: an unknown name is an error matching ErrNotFound.
	if _, err := db.Property(bg, "shale.no-such-property"); errors.Is(err, driver.ErrNotSupported) {
		t.Logf("Property: not supported")
	} else {
		checked++
		if !errors.Is(err, driver.ErrNotFound) {
			t.Errorf("Property of an unknown name = %v; want an error matching driver.ErrNotFound", err)
		}
	}

	du0, err := db.DiskUsage(bg)
	duOK := !errors.Is(err, driver.ErrNotSupported)
	if duOK && err != nil {
		t.Fatalf("DiskUsage: %v", err)
	}

	for i := range n {
		mustPut(t, db, key(i), value(i))
	}
	before, err := db.ApproximateSize(bg, []byte("m"), []byte("n"))
	sizeOK := !errors.Is(err, driver.ErrNotSupported)
	if sizeOK && err != nil {
		t.Fatalf("ApproximateSize: %v", err)
	}
	flushed := true
	if err := db.Flush(bg); errors.Is(err, driver.ErrNotSupported) {
		flushed = false
	} else if err != nil {
		t.Fatalf("Flush: %v", err)
	}
	raw := uint64(n * (len(key(0)) + len(value(0))))

	if sizeOK {
		checked++
		after, err := db.ApproximateSize(bg, []byte("m"), []byte("n"))
		if err != nil {
			t.Fatalf("ApproximateSize after Flush: %v", err)
		}
		total := func(s driver.RangeSize) uint64 { return s.OnDisk + s.InMemory }
		// The range holds 500 KiB of incompressible-ish data: on disk or in
		// memory, it must show, within a factor of two either way.
		for _, c := range []struct {
			s    driver.RangeSize
			when string
		}{{before, "before Flush"}, {after, "after Flush"}} {
			if got := total(c.s); got < raw/2 || got > 2*raw {
				t.Errorf("ApproximateSize([m, n)) %s = %+v (%d bytes); want about %d, the bytes written", c.when, c.s, got, raw)
			}
		}
		for _, r := range [][2][]byte{{nil, []byte("m")}, {[]byte("n"), nil}, {[]byte("a"), []byte("b")}} {
			out, err := db.ApproximateSize(bg, r[0], r[1])
			if err != nil {
				t.Fatalf("ApproximateSize(%s, %s): %v", q(r[0]), q(r[1]), err)
			}
			// Outside the keys: a table's index locates a bound to a block.
			if flushed && total(out) > raw/10 {
				t.Errorf("ApproximateSize(%s, %s) after Flush = %+v; want about 0, the range holds no key", q(r[0]), q(r[1]), out)
			}
		}
		all, err := db.ApproximateSize(bg, nil, nil)
		if err != nil {
			t.Fatalf("ApproximateSize(nil, nil): %v", err)
		}
		if total(all) < total(after)*9/10 {
			t.Errorf("ApproximateSize(nil, nil) = %+v; want at least [m, n)'s %+v", all, after)
		}
		inverted, err := db.ApproximateSize(bg, []byte("n"), []byte("m"))
		if err != nil || inverted != (driver.RangeSize{}) {
			t.Errorf("ApproximateSize of an inverted range = %+v, %v; want zero, nil", inverted, err)
		}
	}

	if duOK {
		checked++
		du1, err := db.DiskUsage(bg)
		if err != nil {
			t.Fatalf("DiskUsage after writes: %v", err)
		}
		if du1 == 0 {
			t.Errorf("DiskUsage after writes = 0; want the bytes of the database's files")
		}
		if flushed && du1 < du0+raw/2 {
			t.Errorf("DiskUsage = %d before and %d after writing %d bytes and Flush; want it to grow by about that", du0, du1, raw)
		}
	}
	if checked == 0 {
		t.Skip("the driver supports none of ApproximateSize, DiskUsage and Property (each is ErrNotSupported)")
	}
}
