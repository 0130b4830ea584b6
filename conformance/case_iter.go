package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shaledb/shale/driver"
)

// iterKey is the i-th key of the iterator cases. Only even i are written,
// so odd i are absent keys between present ones.
func iterKey(i int) []byte { return fmt.Appendf(nil, "it%04d", i) }

// moveTrail records the moves made on an iterator, for messages.
type moveTrail []string

func (m *moveTrail) add(s string) {
	*m = append(*m, s)
	if len(*m) > 8 {
		*m = (*m)[len(*m)-8:]
	}
}

func (m moveTrail) String() string { return strings.Join(m, ", ") }

// compareMove checks the result of one move of it against ref's.
func compareMove(t testing.TB, it *driver.Iterator, ref *refIter, got, want bool, trail moveTrail, what string) {
	t.Helper()
	if got != want {
		if want {
			t.Fatalf("%s: after %s the iterator is exhausted (move returned false, Error %v); want it at %v",
				what, trail, it.Error(), ref.cur())
		}
		t.Fatalf("%s: after %s the iterator is at %s=%s; want it exhausted (move returning false)",
			what, trail, q(it.Key()), q(it.Value()))
	}
	if got != it.Valid() {
		t.Fatalf("%s: after %s the move returned %v but Valid() = %v", what, trail, got, it.Valid())
	}
	if !got {
		if err := it.Error(); err != nil {
			t.Fatalf("%s: after %s the iterator is exhausted with Error() = %v; want nil", what, trail, err)
		}
		return
	}
	if string(it.Key()) != ref.cur().k || string(it.Value()) != ref.cur().v {
		t.Fatalf("%s: after %s the iterator is at %s=%s; want %v", what, trail, q(it.Key()), q(it.Value()), ref.cur())
	}
}

// randomWalk makes n random moves on it and ref (which must hold the same
// pairs) and compares them after each. targets are the seek keys to use.
func randomWalk(t testing.TB, rng *rand.Rand, it *driver.Iterator, ref *refIter, targets [][]byte, n int, what string) {
	t.Helper()
	var trail moveTrail
	for range n {
		var got, want bool
		switch r := rng.IntN(20); {
		case r == 0:
			trail.add("First")
			got, want = it.First(), ref.first()
		case r == 1:
			trail.add("Last")
			got, want = it.Last(), ref.last()
		case r < 4:
			k := targets[rng.IntN(len(targets))]
			trail.add(fmt.Sprintf("SeekGE(%s)", q(k)))
			got, want = it.SeekGE(k), ref.seekGE(k)
		case r < 6:
			k := targets[rng.IntN(len(targets))]
			trail.add(fmt.Sprintf("SeekLT(%s)", q(k)))
			got, want = it.SeekLT(k), ref.seekLT(k)
		case r < 13:
			trail.add("Next")
			got, want = it.Next(), ref.next()
		default:
			trail.add("Prev")
			got, want = it.Prev(), ref.prev()
		}
		compareMove(t, it, ref, got, want, trail, what)
	}
}

// seekTargets returns seek keys for the iterator cases: every present and
// absent key of the key space, one before all of them and one after.
func seekTargets(n int) [][]byte {
	targets := [][]byte{[]byte(""), []byte("\x00"), []byte("it"), []byte("it\xff"), []byte("\xff\xff\xff")}
	for i := range n {
		targets = append(targets, iterKey(i))
	}
	return targets
}

func testIteratorModel(t testing.TB, s *suite) {
	db := s.open(t, opt("write_buffer_size", "64KiB"))

	// An empty database.
	it, err := db.NewIterator(bg, nil)
	if err != nil {
		t.Fatalf("NewIterator on an empty database: %v", err)
	}
	for name, move := range map[string]func() bool{"First": it.First, "Last": it.Last,
		"SeekGE(\"a\")": func() bool { return it.SeekGE([]byte("a")) },
		"SeekLT(\"z\")": func() bool { return it.SeekLT([]byte("z")) }} {
		if move() {
			t.Errorf("on an empty database, %s moved to %s=%s; want false", name, q(it.Key()), q(it.Value()))
		} else if err := it.Error(); err != nil {
			t.Errorf("on an empty database, %s returned false with Error() = %v; want nil", name, err)
		}
	}
	if err := it.Close(); err != nil {
		t.Errorf("Iterator.Close on an empty database: %v", err)
	}

	const space = 400 // iterKey(0..space); even ones get written
	rng := rand.New(rand.NewPCG(1, 2))
	m := newModel()
	flushes := true
	randomValue := func() []byte {
		v := make([]byte, rng.IntN(48))
		for i := range v {
			v[i] = byte(rng.Uint32())
		}
		return v
	}
	for i := range 2000 {
		k := iterKey(2 * rng.IntN(space/2))
		switch r := rng.IntN(100); {
		case r < 60:
			v := randomValue()
			mustPut(t, db, k, v)
			m.put(k, v)
		case r < 85:
			mustDelete(t, db, k)
			m.del(k)
		default:
			var ops []op
			for range 1 + rng.IntN(10) {
				o := op{key: iterKey(2 * rng.IntN(space/2)), value: randomValue()}
				o.del = rng.IntN(3) == 0
				ops = append(ops, o)
			}
			mustWrite(t, db, batch(ops))
			m.apply(ops)
		}
		if flushes && i%400 == 399 {
			if err := db.Flush(bg); errors.Is(err, driver.ErrNotSupported) {
				flushes = false
			} else if err != nil {
				t.Fatalf("Flush after %d random writes: %v", i+1, err)
			}
		}
	}
	want := m.scan(nil, nil)
	checkScans(t, db, nil, want, "after 2000 random writes")

	it, err = db.NewIterator(bg, nil)
	if err != nil {
		t.Fatalf("NewIterator: %v", err)
	}
	defer it.Close()
	ref := &refIter{kvs: want}
	targets := seekTargets(space)

	// Every seek target, each followed by a step in both directions.
	for _, k := range targets {
		for _, lt := range []bool{false, true} {
			name := "SeekGE"
			got, exp := false, false
			if lt {
				name = "SeekLT"
				got, exp = it.SeekLT(k), ref.seekLT(k)
			} else {
				got, exp = it.SeekGE(k), ref.seekGE(k)
			}
			trail := moveTrail{fmt.Sprintf("%s(%s)", name, q(k))}
			compareMove(t, it, ref, got, exp, trail, "seeking")
			if exp {
				trail.add("Next")
				compareMove(t, it, ref, it.Next(), ref.next(), trail, "seeking then stepping")
				trail.add("Prev")
				compareMove(t, it, ref, it.Prev(), ref.prev(), trail, "seeking then changing direction")
				trail.add("Prev")
				compareMove(t, it, ref, it.Prev(), ref.prev(), trail, "seeking then changing direction")
			}
		}
	}

	// Random walks: direction changes at every point, including the ends.
	randomWalk(t, rng, it, ref, targets, 3000, "random moves")

	if err := it.Error(); err != nil {
		t.Errorf("Error() after the random moves = %v; want nil", err)
	}
}

func testIteratorBounds(t testing.TB, s *suite) {
	db := s.open(t)
	m := newModel()
	for i := 0; i < 100; i += 2 {
		v := fmt.Appendf(nil, "v%d", i)
		mustPut(t, db, iterKey(i), v)
		m.put(iterKey(i), v)
		if i == 50 {
			if err := db.Flush(bg); err != nil && !errors.Is(err, driver.ErrNotSupported) {
				t.Fatalf("Flush: %v", err)
			}
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	targets := seekTargets(100)
	for _, tc := range []struct {
		name         string
		lower, upper []byte
	}{
		{"lower only", iterKey(20), nil},
		{"upper only", nil, iterKey(40)},
		{"both", iterKey(20), iterKey(40)},
		{"both between keys", iterKey(21), iterKey(41)},
		{"empty lower bound", []byte{}, iterKey(10)},
		{"one key", iterKey(30), iterKey(31)},
		{"empty range (lower = upper)", iterKey(30), iterKey(30)},
		{"range holding no key", iterKey(31), iterKey(32)},
		{"range before every key", []byte("a"), []byte("b")},
		{"range after every key", []byte("z"), []byte("zz")},
		{"range covering every key", []byte("a"), []byte("z")},
	} {
		what := fmt.Sprintf("bounds %s [%s, %s)", tc.name, q(tc.lower), q(tc.upper))
		want := m.scan(tc.lower, tc.upper)
		opts := &driver.IterOptions{LowerBound: bytes.Clone(tc.lower), UpperBound: bytes.Clone(tc.upper)}
		checkScans(t, db, opts, want, what)

		it, err := db.NewIterator(bg, opts)
		if err != nil {
			t.Fatalf("NewIterator with %s: %v", what, err)
		}
		// NewIterator copies the bounds: the caller may reuse them.
		for _, b := range [][]byte{opts.LowerBound, opts.UpperBound} {
			for i := range b {
				b[i] = 0xff
			}
		}
		ref := &refIter{kvs: want}
		if len(want) > 0 {
			// Seeks outside the bounds land inside them (or nowhere).
			trail := moveTrail{"SeekGE(\"\") (below the lower bound)"}
			compareMove(t, it, ref, it.SeekGE(nil), ref.first(), trail, what)
			trail = moveTrail{"SeekLT(\"\\xff\\xff\") (above the upper bound)"}
			compareMove(t, it, ref, it.SeekLT([]byte("\xff\xff")), ref.last(), trail, what)
			if tc.upper != nil {
				trail = moveTrail{fmt.Sprintf("SeekGE(%s) (the upper bound)", q(tc.upper))}
				compareMove(t, it, ref, it.SeekGE(tc.upper), ref.seekGE(tc.upper), trail, what)
			}
			if tc.lower != nil {
				trail = moveTrail{fmt.Sprintf("SeekLT(%s) (the lower bound)", q(tc.lower))}
				compareMove(t, it, ref, it.SeekLT(tc.lower), ref.seekLT(tc.lower), trail, what)
			}
		}
		randomWalk(t, rng, it, ref, targets, 300, what)
		if err := it.Close(); err != nil {
			t.Errorf("Iterator.Close with %s: %v", what, err)
		}
	}
}

func testIteratorSnapshot(t testing.TB, s *suite) {
	db := s.open(t)
	m := newModel()
	for i := 0; i < 40; i += 2 {
		v := fmt.Appendf(nil, "v%d", i)
		mustPut(t, db, iterKey(i), v)
		m.put(iterKey(i), v)
	}
	before := m.scan(nil, nil)

	whole, err := db.NewIterator(bg, nil)
	if err != nil {
		t.Fatalf("NewIterator: %v", err)
	}
	defer whole.Close()
	stepping, err := db.NewIterator(bg, nil)
	if err != nil {
		t.Fatalf("NewIterator: %v", err)
	}
	defer stepping.Close()
	if !stepping.SeekGE(iterKey(10)) {
		t.Fatalf("SeekGE(%s) = false, Error %v; want it at %s", q(iterKey(10)), stepping.Error(), q(iterKey(10)))
	}
	heldKey, heldValue := stepping.Key(), stepping.Value()
	wantKey, wantValue := bytes.Clone(heldKey), bytes.Clone(heldValue)

	// Writes after NewIterator: an overwrite, a delete, a new key, a
	// batch, and a flush that moves everything to table files.
	mustPut(t, db, iterKey(10), []byte("overwritten"))
	mustPut(t, db, iterKey(12), []byte("overwritten"))
	mustDelete(t, db, iterKey(14))
	mustPut(t, db, iterKey(11), []byte("new"))
	var b driver.Batch
	b.Put(iterKey(41), []byte("new in batch"))
	b.Delete(iterKey(0))
	mustWrite(t, db, &b)
	if err := db.Flush(bg); err != nil && !errors.Is(err, driver.ErrNotSupported) {
		t.Fatalf("Flush: %v", err)
	}
	m.put(iterKey(10), []byte("overwritten"))
	m.put(iterKey(12), []byte("overwritten"))
	m.del(iterKey(14))
	m.put(iterKey(11), []byte("new"))
	m.put(iterKey(41), []byte("new in batch"))
	m.del(iterKey(0))

	if !bytes.Equal(heldKey, wantKey) || !bytes.Equal(heldValue, wantValue) {
		t.Errorf("the Key and Value of an iterator that did not move changed from %s=%s to %s=%s when the "+
			"database was written; they must stay valid until the iterator's next move",
			q(wantKey), q(wantValue), q(heldKey), q(heldValue))
	}
	got, err := collect(whole, false)
	if err != nil {
		t.Fatalf("scan of an iterator created before the writes: %v", err)
	}
	if d := diffKVs(got, before); d != "" {
		t.Errorf("an iterator created before later writes saw them: %s (an iterator reads the database as it "+
			"was when NewIterator returned)", d)
	}
	// The positioned iterator continues in its snapshot.
	ref := &refIter{kvs: before}
	ref.seekGE(iterKey(10))
	var trail moveTrail
	for range 5 {
		trail.add("Next")
		compareMove(t, stepping, ref, stepping.Next(), ref.next(), trail,
			"an iterator positioned before later writes, stepping on (it must not see them)")
	}
	checkScans(t, db, nil, m.scan(nil, nil), "an iterator created after the writes")
}

func testIteratorClose(t testing.TB, s *suite) {
	db := s.open(t)
	for i := 0; i < 10; i += 2 {
		mustPut(t, db, iterKey(i), []byte("v"))
	}
	it, err := db.NewIterator(bg, nil)
	if err != nil {
		t.Fatalf("NewIterator: %v", err)
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := it.Error(); err != nil || n != 5 {
		t.Errorf("a full scan of 5 keys visited %d, Error() = %v; want 5 and nil", n, err)
	}
	if it.Next() {
		t.Errorf("Next on an exhausted iterator returned true (at %s)", q(it.Key()))
	}
	if err := it.Error(); err != nil {
		t.Errorf("Error() after Next on an exhausted iterator = %v; want nil", err)
	}
	if err := it.Close(); err != nil {
		t.Fatalf("Iterator.Close: %v; want nil", err)
	}
	for name, move := range map[string]func() bool{"First": it.First, "Last": it.Last, "Next": it.Next,
		"Prev": it.Prev, "SeekGE": func() bool { return it.SeekGE(iterKey(0)) },
		"SeekLT": func() bool { return it.SeekLT(iterKey(9)) }} {
		if move() {
			t.Errorf("%s on a closed iterator returned true (at %s); want false", name, q(it.Key()))
		}
		if it.Valid() {
			t.Errorf("Valid() after %s on a closed iterator = true", name)
		}
	}
	if err := it.Error(); !errors.Is(err, driver.ErrClosed) {
		t.Errorf("Error() after moves on a closed iterator = %v; want an error matching driver.ErrClosed", err)
	}
	if err := it.Close(); !errors.Is(err, driver.ErrClosed) {
		t.Errorf("a second Iterator.Close = %v; want an error matching driver.ErrClosed", err)
	}
	// Closing the iterator leaves the database usable.
	checkGet(t, db, iterKey(0), []byte("v"), "after closing an iterator")
}

func testIteratorPrefix(t testing.TB, s *suite) {
	db := s.open(t)
	m := newModel()
	var keys [][]byte
	for _, p := range []string{"", "a", "ab", "abc", "ab\xff", "ac", "b", "\xff", "\xff\xff"} {
		for _, sfx := range []string{"", "\x00", "1", "2", "\xff", "\xff\xff"} {
			keys = append(keys, []byte(p+sfx))
		}
	}
	for i, k := range keys {
		v := fmt.Appendf(nil, "v%d", i)
		mustPut(t, db, k, v)
		m.put(k, v)
		if i == len(keys)/2 {
			if err := db.Flush(bg); err != nil && !errors.Is(err, driver.ErrNotSupported) {
				t.Fatalf("Flush: %v", err)
			}
		}
	}
	inPrefix := func(kvs []kv, prefix []byte) []kv {
		var out []kv
		for _, e := range kvs {
			if bytes.HasPrefix([]byte(e.k), prefix) {
				out = append(out, e)
			}
		}
		return out
	}
	rng := rand.New(rand.NewPCG(5, 6))
	targets := [][]byte{{}, []byte("\x00"), []byte("a"), []byte("ab"), []byte("ab1"), []byte("ab\xff\xff\xff"),
		[]byte("ac"), []byte("b"), []byte("\xff"), []byte("\xff\xff\xff\xff")}
	for _, tc := range []struct {
		name                 string
		prefix, lower, upper []byte
	}{
		{"prefix", []byte("ab"), nil, nil},
		{"prefix holding no key", []byte("zz"), nil, nil},
		{"one-byte prefix", []byte("a"), nil, nil},
		{"empty prefix (every key)", []byte{}, nil, nil},
		{"all-0xff prefix (no successor)", []byte("\xff\xff"), nil, nil},
		{"one 0xff byte", []byte("\xff"), nil, nil},
		{"prefix ending in 0xff", []byte("ab\xff"), nil, nil},
		{"prefix and lower bound inside it", []byte("ab"), []byte("ab2"), nil},
		{"prefix and upper bound inside it", []byte("ab"), nil, []byte("ab2")},
		{"prefix and both bounds outside it", []byte("ab"), []byte("a"), []byte("b")},
		{"prefix and bounds disjoint from it", []byte("ab"), []byte("b"), []byte("c")},
		{"all-0xff prefix and an upper bound", []byte("\xff"), nil, []byte("\xff\xff\x00")},
	} {
		what := fmt.Sprintf("%s: prefix %s, bounds [%s, %s)", tc.name, q(tc.prefix), q(tc.lower), q(tc.upper))
		want := inPrefix(m.scan(tc.lower, tc.upper), tc.prefix)
		opts := &driver.IterOptions{Prefix: bytes.Clone(tc.prefix), LowerBound: bytes.Clone(tc.lower),
			UpperBound: bytes.Clone(tc.upper)}
		checkScans(t, db, opts, want, what)
		it, err := db.NewIterator(bg, opts)
		if err != nil {
			t.Fatalf("NewIterator with %s: %v", what, err)
		}
		for i := range opts.Prefix { // NewIterator copies the prefix
			opts.Prefix[i] = 'x'
		}
		ref := &refIter{kvs: want}
		for _, k := range targets {
			compareMove(t, it, ref, it.SeekGE(k), ref.seekGE(k), moveTrail{fmt.Sprintf("SeekGE(%s)", q(k))}, what)
			compareMove(t, it, ref, it.SeekLT(k), ref.seekLT(k), moveTrail{fmt.Sprintf("SeekLT(%s)", q(k))}, what)
		}
		randomWalk(t, rng, it, ref, targets, 300, what)
		if err := it.Close(); err != nil {
			t.Errorf("Iterator.Close with %s: %v", what, err)
		}
	}
}
