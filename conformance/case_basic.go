package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shaledb/shale/driver"
)

func testCRUD(t testing.TB, s *suite) {
	db := s.open(t)

	checkGet(t, db, []byte("never-written"), nil, "in an empty database")

	mustPut(t, db, []byte("a"), []byte("1"))
	checkGet(t, db, []byte("a"), []byte("1"), "after Put(\"a\", \"1\")")
	mustPut(t, db, []byte("a"), []byte("2"))
	checkGet(t, db, []byte("a"), []byte("2"), "after overwriting \"a\" with \"2\"")
	mustDelete(t, db, []byte("a"))
	checkGet(t, db, []byte("a"), nil, "after Delete(\"a\")")
	if err := db.Delete(bg, []byte("never-written")); err != nil {
		t.Errorf("Delete of an absent key: %v; want nil (deleting an absent key is not an error)", err)
	}
	mustPut(t, db, []byte("a"), []byte("3"))
	checkGet(t, db, []byte("a"), []byte("3"), "after a Put following a Delete")

	// Empty values: found, and distinguishable from absent.
	mustPut(t, db, []byte("empty"), []byte{})
	checkGet(t, db, []byte("empty"), []byte{}, "after Put(\"empty\", []byte{})")
	mustPut(t, db, []byte("nil-value"), nil)
	checkGet(t, db, []byte("nil-value"), []byte{}, "after Put(\"nil-value\", nil) (a nil value is an empty value)")

	// Binary keys and values: zero bytes, 0xff, prefixes of one another.
	binary := []struct{ k, v string }{
		{"\x00", "zero key"},
		{"\x00\x00", "two zeros"},
		{"b\x00", "b then zero"},
		{"b", "b alone"},
		{"b\x00c", "\x00\x01\x02\xff\x00"},
		{"\xff", "\xff\xff\x00"},
		{"\xff\xff", ""},
	}
	for _, p := range binary {
		mustPut(t, db, []byte(p.k), []byte(p.v))
	}
	for _, p := range binary {
		checkGet(t, db, []byte(p.k), []byte(p.v), "with binary keys that are prefixes of one another")
	}

	// A 1 MiB value of random bytes.
	big := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	mustPut(t, db, []byte("big"), big)
	checkGet(t, db, []byte("big"), big, "after a Put of a 1 MiB value")

	// Many keys.
	const n = 1000
	for i := range n {
		mustPut(t, db, key(i), fmt.Appendf(nil, "value %d", i))
	}
	for i := range n {
		if !checkGet(t, db, key(i), fmt.Appendf(nil, "value %d", i), fmt.Sprintf("after putting %d keys", n)) {
			break
		}
	}

	// Returned values are the caller's copies.
	v, err := db.Get(bg, []byte("a"))
	if err != nil {
		t.Fatalf("Get(\"a\"): %v", err)
	}
	v[0] = 'X'
	checkGet(t, db, []byte("a"), []byte("3"), "after the caller modified the slice a previous Get returned "+
		"(Get must return a copy the caller owns)")

	// Inputs are copied: the caller may reuse its buffers after Put.
	kbuf, vbuf := []byte("reused-key"), []byte("original")
	mustPut(t, db, kbuf, vbuf)
	copy(kbuf, "XXXXXXXXXX")
	copy(vbuf, "modified")
	checkGet(t, db, []byte("reused-key"), []byte("original"),
		"after the caller modified the key and value buffers it had passed to Put (Put must copy them)")
	checkGet(t, db, []byte("XXXXXXXXXX"), nil, "after the caller modified the key buffer it had passed to Put")
}

func testBatch(t testing.TB, s *suite) {
	db := s.open(t)
	mustPut(t, db, []byte("pre-existing"), []byte("v0"))

	var b driver.Batch
	b.Put([]byte("put-then-delete"), []byte("x"))
	b.Delete([]byte("put-then-delete"))
	b.Delete([]byte("delete-then-put"))
	b.Put([]byte("delete-then-put"), []byte("y"))
	b.Put([]byte("put-twice"), []byte("first"))
	b.Put([]byte("put-twice"), []byte("second"))
	b.Delete([]byte("pre-existing"))
	b.Put([]byte("empty"), []byte{})
	mustWrite(t, db, &b)
	checkGet(t, db, []byte("put-then-delete"), nil, "after a batch that put then deleted the key (the last write wins)")
	checkGet(t, db, []byte("delete-then-put"), []byte("y"), "after a batch that deleted then put the key")
	checkGet(t, db, []byte("put-twice"), []byte("second"), "after a batch that put the key twice")
	checkGet(t, db, []byte("pre-existing"), nil, "after a batch that deleted a key written before it")
	checkGet(t, db, []byte("empty"), []byte{}, "after a batch that put an empty value")

	// An empty batch (zero value and reset) changes nothing.
	if err := db.Write(bg, new(driver.Batch)); err != nil {
		t.Errorf("Write of an empty batch: %v; want nil", err)
	}
	b.Reset()
	if err := db.Write(bg, &b); err != nil {
		t.Errorf("Write of a reset batch: %v; want nil", err)
	}
	checkGet(t, db, []byte("delete-then-put"), []byte("y"), "after writing an empty batch")

	// A large batch, written, then written again after more writes: a
	// batch is not consumed by Write.
	m := newModel()
	var ops []op
	for i := range 500 {
		o := op{key: key(i), value: fmt.Appendf(nil, "batch value %d", i)}
		if i%7 == 3 {
			o = op{del: true, key: key(i - 1)}
		}
		ops = append(ops, o)
	}
	big := batch(ops)
	mustWrite(t, db, big)
	m.apply(ops)
	for i := range 500 {
		want, ok := m.m[string(key(i))]
		if ok && !checkGet(t, db, key(i), []byte(want), "after a batch of 500 writes") ||
			!ok && !checkGet(t, db, key(i), nil, "after a batch of 500 writes that deleted the key") {
			break
		}
	}
	mustPut(t, db, key(0), []byte("overwritten"))
	mustWrite(t, db, big)
	checkGet(t, db, key(0), []byte("batch value 0"), "after writing the same batch a second time")
}

// generation parses a value written by the atomicity cases,
// "gen<g>/<i>" for generation g of the i-th key, and returns g, or -1 if v
// is not the i-th key's.
func generation(v []byte, i int) int {
	var g, j int
	if n, err := fmt.Sscanf(string(v), "gen%d/%d", &g, &j); err != nil || n != 2 || j != i ||
		string(v) != fmt.Sprintf("gen%d/%d", g, j) {
		return -1
	}
	return g
}

// tornRead describes a read of the atomicity keys that saw more than one
// generation (or a value never written to its key), or returns "".
func tornRead(keys, vals [][]byte) string {
	first := -2
	for i, v := range vals {
		g := 0 // absent: before the first batch
		if v != nil {
			g = generation(v, i)
		}
		if g < 0 {
			return fmt.Sprintf("key %s has value %s, which was never written to it", q(keys[i]), q(v))
		}
		if first == -2 {
			first = g
		} else if g != first {
			var b bytes.Buffer
			for j, v := range vals {
				fmt.Fprintf(&b, " %s=%s", keys[j], q(v))
			}
			return fmt.Sprintf("generations %d and %d mixed:%s", first, g, b.String())
		}
	}
	return ""
}

// atomicityKeys are the keys the atomicity cases write together.
func atomicityKeys(prefix string) [][]byte {
	keys := make([][]byte, 16)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "%s%02d", prefix, i)
	}
	return keys
}

func testBatchAtomicity(t testing.TB, s *suite) {
	db := s.open(t)
	keys := atomicityKeys("atomic")
	write := func(g int) error {
		var b driver.Batch
		for i, k := range keys {
			b.Put(k, fmt.Appendf(nil, "gen%d/%d", g, i))
		}
		if err := db.Write(bg, &b); err != nil {
			return fmt.Errorf("Write of generation %d: %w", g, err)
		}
		if g%100 == 50 {
			// Flushing moves the batch into table files, while the
			// readers read: a snapshot must survive that too.
			if err := db.Flush(bg); err != nil && !errors.Is(err, driver.ErrNotSupported) {
				return fmt.Errorf("Flush after generation %d: %w", g, err)
			}
		}
		return nil
	}
	runAtomicity(t, db, keys, 300, write, "batch")
}

// runAtomicity runs write(1), write(2), ... while two readers (one with
// MultiGet, one with iterators) check that they never see a mix of
// generations. It writes at least minGenerations, and goes on until each
// reader has read a few hundred times (up to ten times minGenerations, for
// at most a few seconds), so that reads and writes really interleave
// however fast the driver is.
func runAtomicity(t testing.TB, db *dbh, keys [][]byte, minGenerations int, write func(g int) error, unit string) {
	t.Helper()
	// Enough reads to interleave with many writes; the cap on writes keeps
	// the scans short in a driver whose scans step over old versions.
	const minReads = 200
	maxGenerations := 10 * minGenerations
	var (
		done         = make(chan struct{})
		errc         = make(chan error, 2)
		reads        [2]atomic.Int64
		readerFailed atomic.Bool
	)
	reader := func(i int, useIter bool) {
		for {
			select {
			case <-done:
				errc <- nil
				return
			default:
			}
			vals, how, err := readAtomicityKeys(db, keys, useIter)
			if err == nil {
				if torn := tornRead(keys, vals); torn != "" {
					err = fmt.Errorf("%s saw part of a %s: %s; each %s wrote all %d keys with one generation, "+
						"so a reader must see every write of a %s or none", how, unit, torn, unit, len(keys), unit)
				}
			} else {
				err = fmt.Errorf("%s during concurrent writes: %w", how, err)
			}
			if err != nil {
				readerFailed.Store(true)
				errc <- err
				return
			}
			reads[i].Add(1)
		}
	}
	go reader(0, false)
	go reader(1, true)
	var werr error
	g := 0
	deadline := time.Now().Add(3 * time.Second)
	for werr == nil && !readerFailed.Load() {
		if g >= minGenerations && (reads[0].Load() >= minReads && reads[1].Load() >= minReads ||
			g >= maxGenerations || time.Now().After(deadline)) {
			break
		}
		g++
		werr = write(g)
	}
	close(done)
	t.Logf("%d generations written (one %s each) while the readers made %d MultiGets and %d scans",
		g, unit, reads[0].Load(), reads[1].Load())
	if werr != nil {
		t.Errorf("%v", werr)
	}
	for range 2 {
		if err := <-errc; err != nil {
			t.Errorf("%v", err)
		}
	}
	if t.Failed() {
		return
	}
	vals, how, err := readAtomicityKeys(db, keys, false)
	if err != nil {
		t.Fatalf("%s after the writes: %v", how, err)
	}
	for i, v := range vals {
		if generation(v, i) != g {
			t.Errorf("after %d generations (one %s each), key %s = %s; want generation %d", g, unit, q(keys[i]), q(v), g)
		}
	}
}

func readAtomicityKeys(r reader, keys [][]byte, useIter bool) ([][]byte, string, error) {
	if !useIter {
		vals, err := r.MultiGet(bg, keys)
		if err == nil && len(vals) != len(keys) {
			err = fmt.Errorf("returned %d values for %d keys", len(vals), len(keys))
		}
		return vals, "MultiGet", err
	}
	lower := keys[0]
	upper := append(bytes.Clone(keys[len(keys)-1]), 0)
	it, err := r.NewIterator(bg, &driver.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, "NewIterator", err
	}
	vals := make([][]byte, len(keys))
	for ok := it.First(); ok; ok = it.Next() {
		for i, k := range keys {
			if bytes.Equal(k, it.Key()) {
				vals[i] = bytes.Clone(it.Value())
			}
		}
	}
	err = it.Error()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return vals, "an iterator scan", err
}

func testMultiGet(t testing.TB, s *suite) {
	db := s.open(t)
	for _, k := range []string{"a", "b", "c"} {
		mustPut(t, db, []byte(k), []byte("v"+k))
	}
	mustPut(t, db, []byte("empty"), []byte{})

	keys := [][]byte{[]byte("c"), []byte("a"), []byte("missing"), []byte("b"), []byte("a"), []byte("empty")}
	want := [][]byte{[]byte("vc"), []byte("va"), nil, []byte("vb"), []byte("va"), {}}
	vals, err := db.MultiGet(bg, keys)
	if err != nil {
		t.Fatalf("MultiGet(%q): %v", keys, err)
	}
	if len(vals) != len(keys) {
		t.Fatalf("MultiGet of %d keys returned %d values; want one per key", len(keys), len(vals))
	}
	for i := range keys {
		switch {
		case want[i] == nil && vals[i] != nil:
			t.Errorf("MultiGet entry %d (key %s, never written) = %s; want nil (absent)", i, q(keys[i]), q(vals[i]))
		case want[i] != nil && vals[i] == nil && len(want[i]) == 0:
			t.Errorf("MultiGet entry %d (key %s, an empty value) = nil; want a non-nil empty slice: nil means "+
				"\"not found\", so a found empty value must be []byte{}", i, q(keys[i]))
		case !equalBytes(vals[i], want[i]):
			hint := ""
			for j := range keys {
				if j != i && equalBytes(vals[i], want[j]) && want[j] != nil {
					hint = fmt.Sprintf(" (the value of key %s, entry %d): results must be in the caller's key order, "+
						"not sorted or otherwise reordered", q(keys[j]), j)
					break
				}
			}
			t.Errorf("MultiGet entry %d (key %s) = %s; want %s%s", i, q(keys[i]), q(vals[i]), q(want[i]), hint)
		}
	}

	// The returned slices are copies.
	if len(vals) == len(keys) && len(vals[0]) > 0 {
		vals[0][0] = 'X'
		checkGet(t, db, []byte("c"), []byte("vc"), "after the caller modified a slice MultiGet returned "+
			"(MultiGet must return copies the caller owns)")
	}

	// No keys.
	for _, none := range [][][]byte{nil, {}} {
		vals, err := db.MultiGet(bg, none)
		if err != nil || len(vals) != 0 {
			t.Errorf("MultiGet of no keys (%#v) = %d values, %v; want 0 values and no error", none, len(vals), err)
		}
	}

	// Many keys, half absent, through the same call.
	var many [][]byte
	for i := range 400 {
		many = append(many, key(i))
		if i%2 == 0 {
			mustPut(t, db, key(i), fmt.Appendf(nil, "many %d", i))
		}
	}
	vals, err = db.MultiGet(bg, many)
	if err != nil || len(vals) != len(many) {
		t.Fatalf("MultiGet of %d keys = %d values, %v; want %d values", len(many), len(vals), err, len(many))
	}
	for i, v := range vals {
		want := []byte(nil)
		if i%2 == 0 {
			want = fmt.Appendf(nil, "many %d", i)
		}
		if !equalBytes(v, want) {
			t.Errorf("MultiGet of 400 keys, entry %d (key %s) = %s; want %s", i, q(many[i]), q(v), q(want))
			break
		}
	}
}
