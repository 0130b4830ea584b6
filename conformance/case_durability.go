package conformance

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/driver"
)

// writeRound writes a round of the durability workload to db and m: n keys
// starting at first, with the round number in the values, deleting every
// fifth key of the previous round.
func writeRound(t testing.TB, db *dbh, m *model, round, first, n int) {
	t.Helper()
	var ops []op
	for i := first; i < first+n; i++ {
		ops = append(ops, op{key: key(i), value: fmt.Appendf(nil, "round %d key %d", round, i)})
		if i%5 == 0 {
			ops = append(ops, op{del: true, key: key(i - 37)})
		}
		if len(ops) >= 64 {
			mustWrite(t, db, batch(ops))
			m.apply(ops)
			ops = ops[:0]
		}
	}
	mustWrite(t, db, batch(ops))
	m.apply(ops)
}

// durabilityAbsent are keys the durability workload never writes, or
// deletes.
func durabilityAbsent() [][]byte {
	return [][]byte{[]byte("absent"), key(-1), key(1 << 20), key(3), key(8)}
}

func testFlushCompact(t testing.TB, s *suite) {
	db := s.open(t, opt("disable_auto_compactions", "true"), opt("write_buffer_size", "256KiB"))
	flush := db.Flush(bg)
	canFlush := !errors.Is(flush, driver.ErrNotSupported)
	compact := db.Compact(bg, nil, nil)
	canCompact := !errors.Is(compact, driver.ErrNotSupported)
	switch {
	case !canFlush && !canCompact:
		t.Skipf("the driver implements neither driver.Flusher (%v) nor driver.Compacter (%v)", flush, compact)
	case flush != nil && canFlush:
		t.Fatalf("Flush of an empty database: %v", flush)
	case compact != nil && canCompact:
		t.Fatalf("Compact(nil, nil) of an empty database: %v", compact)
	case !canFlush:
		t.Logf("the driver cannot Flush (%v); checking Compact only", flush)
	case !canCompact:
		t.Logf("the driver cannot Compact (%v); checking Flush only", compact)
	}
	doFlush := func(when string) {
		t.Helper()
		if !canFlush {
			return
		}
		if err := db.Flush(bg); err != nil {
			t.Fatalf("Flush %s: %v", when, err)
		}
	}
	m := newModel()
	big := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	mustPut(t, db, []byte("big"), big)
	m.put([]byte("big"), big)

	// Three rounds, each overlapping the last, each flushed to its own
	// table: keys are shadowed and deleted across tables.
	for round := range 3 {
		writeRound(t, db, m, round, round*150, 300)
		doFlush(fmt.Sprintf("after round %d", round))
		checkModel(t, db, m, durabilityAbsent(), fmt.Sprintf("after round %d and its Flush", round))
	}
	// Unflushed writes over the flushed ones.
	writeRound(t, db, m, 3, 100, 100)
	checkModel(t, db, m, durabilityAbsent(), "with unflushed writes over flushed tables")
	doFlush("after round 3")

	if canCompact {
		if err := db.Compact(bg, key(100), key(250)); err != nil {
			t.Fatalf("Compact(%s, %s): %v", q(key(100)), q(key(250)), err)
		}
		checkModel(t, db, m, durabilityAbsent(), "after Compact of a sub-range")
		if err := db.Compact(bg, nil, nil); err != nil {
			t.Fatalf("Compact(nil, nil): %v", err)
		}
		checkModel(t, db, m, durabilityAbsent(), "after Compact(nil, nil)")
	}
	writeRound(t, db, m, 4, 0, 50)
	doFlush("after round 4")
	if canCompact {
		if err := db.Compact(bg, nil, nil); err != nil {
			t.Fatalf("a second Compact(nil, nil): %v", err)
		}
		checkModel(t, db, m, durabilityAbsent(), "after a second round of writes, Flush and Compact")
		for _, b := range [][2][]byte{{nil, key(100)}, {key(600), nil}, {[]byte("z"), nil}} {
			if err := db.Compact(bg, b[0], b[1]); err != nil {
				t.Fatalf("Compact(%s, %s): %v", q(b[0]), q(b[1]), err)
			}
		}
		checkModel(t, db, m, durabilityAbsent(), "after Compacts of half-open ranges and of an empty range")
	}

	// What Flush and Compact wrote is what a reopened database reads.
	if db.path == memoryPath {
		t.Logf("the flushed and compacted data is not reopened: the database does not outlive Close (%q)", memoryPath)
		return
	}
	db.close(t)
	db = s.reopen(t, db)
	checkModel(t, db, m, durabilityAbsent(), "after Flush, Compact, Close and a reopen of the same DSN")
}

func testReopen(t testing.TB, s *suite) {
	db := s.open(t, opt("write_buffer_size", "256KiB"))
	dirOnly(t, db, "reopening")
	m := newModel()
	writeRound(t, db, m, 0, 0, 300)
	flushed := true
	if err := db.Flush(bg); errors.Is(err, driver.ErrNotSupported) {
		flushed = false
	} else if err != nil {
		t.Fatalf("Flush: %v", err)
	}
	writeRound(t, db, m, 1, 200, 200) // left unflushed
	mustPut(t, db, []byte("empty"), []byte{})
	m.put([]byte("empty"), []byte{})
	db.close(t)

	what := "after Close and a reopen of the same DSN"
	if flushed {
		what = "after Flush, more writes, Close and a reopen of the same DSN"
	}
	db = s.reopen(t, db)
	checkModel(t, db, m, durabilityAbsent(), what)

	writeRound(t, db, m, 2, 350, 100)
	db.close(t)
	db = s.reopen(t, db)
	checkModel(t, db, m, durabilityAbsent(), "after writing to a reopened database and reopening it again")
}
