package etcd

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/statistics"
)

// refIter is a sorted list of keys with a position, the model of an
// iterator.
type refIter struct {
	keys []string
	pos  int // -1 or len(keys): not at a key
}

func (r *refIter) seekGE(k string) bool {
	r.pos, _ = slices.BinarySearch(r.keys, k)
	return r.pos < len(r.keys)
}

func (r *refIter) seekLT(k string) bool {
	i, _ := slices.BinarySearch(r.keys, k)
	r.pos = i - 1
	return r.pos >= 0
}

func (r *refIter) next() bool {
	if r.pos < 0 || r.pos >= len(r.keys) {
		return false
	}
	r.pos++
	return r.pos < len(r.keys)
}

func (r *refIter) prev() bool {
	if r.pos < 0 || r.pos >= len(r.keys) {
		return false
	}
	r.pos--
	return r.pos >= 0
}

// TestIteratorPaging walks iterators with pages of a few keys over a
// namespace of 40, with bounds and without, comparing every move with a
// model: moves that cross pages in both directions, and seeks inside,
// before and after the page held.
func TestIteratorPaging(t *testing.T) {
	db := openDB(t, "page_size=3")
	var all []string
	var b driver.Batch
	for i := 0; i < 80; i += 2 {
		k := fmt.Sprintf("k%03d", i)
		all = append(all, k)
		b.Put([]byte(k), []byte("v"+k))
	}
	if err := db.Write(bg, &b); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	targets := []string{"", "a", "k", "k000", "k001", "k039", "k040", "k078", "k079", "z"}
	for range 30 {
		targets = append(targets, fmt.Sprintf("k%03d", rng.IntN(82)))
	}
	for _, bounds := range [][2]string{{"", ""}, {"k010", ""}, {"", "k051"}, {"k011", "k050"}, {"k020", "k022"},
		{"k021", "k022"}} {
		var opts driver.IterOptions
		ref := &refIter{}
		for _, k := range all {
			if (bounds[0] == "" || k >= bounds[0]) && (bounds[1] == "" || k < bounds[1]) {
				ref.keys = append(ref.keys, k)
			}
		}
		if bounds[0] != "" {
			opts.LowerBound = []byte(bounds[0])
		}
		if bounds[1] != "" {
			opts.UpperBound = []byte(bounds[1])
		}
		it, err := db.NewIterator(bg, &opts)
		if err != nil {
			t.Fatal(err)
		}
		check := func(move string, got, want bool) {
			t.Helper()
			if got != want || got && (string(it.Key()) != ref.keys[ref.pos] ||
				string(it.Value()) != "v"+ref.keys[ref.pos]) {
				t.Fatalf("bounds %q, %s: got %v at %q; want %v at %v (error %v)", bounds, move, got, it.Key(), want,
					ref, it.Error())
			}
		}
		// Full scans both ways.
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		if n != len(ref.keys) || it.Error() != nil {
			t.Fatalf("bounds %q: forward scan saw %d keys, error %v; want %d", bounds, n, it.Error(), len(ref.keys))
		}
		n = 0
		for ok := it.Last(); ok; ok = it.Prev() {
			n++
		}
		if n != len(ref.keys) || it.Error() != nil {
			t.Fatalf("bounds %q: backward scan saw %d keys, error %v; want %d", bounds, n, it.Error(), len(ref.keys))
		}
		moves := 1500
		if testing.Short() {
			moves = 300
		}
		for range moves {
			k := targets[rng.IntN(len(targets))]
			switch r := rng.IntN(10); {
			case r == 0:
				check("First", it.First(), ref.seekGE(""))
			case r == 1:
				check("Last", it.Last(), ref.seekLT("\xff"))
			case r < 4:
				check("SeekGE("+k+")", it.SeekGE([]byte(k)), ref.seekGE(k))
			case r < 6:
				check("SeekLT("+k+")", it.SeekLT([]byte(k)), ref.seekLT(k))
			case r < 8:
				if it.Valid() {
					check("Next", it.Next(), ref.next())
				}
			default:
				if it.Valid() {
					check("Prev", it.Prev(), ref.prev())
				}
			}
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestIteratorRPCs counts the RPCs of scans: a forward scan of n keys is
// ceil(n/page_size) Ranges (the first made by NewIterator), a backward one
// two per page, and moves within a page make none.
func TestIteratorRPCs(t *testing.T) {
	db := openDB(t, "page_size=4&stats_level=all")
	var b driver.Batch
	for i := range 10 {
		b.Put(fmt.Appendf(nil, "k%02d", i), []byte("v"))
	}
	if err := db.Write(bg, &b); err != nil {
		t.Fatal(err)
	}
	st := db.Statistics()
	rpcs := func(f func()) uint64 {
		before := st.Snapshot()
		f()
		return st.Snapshot().CountDelta(before, statistics.FileReadDBIteratorMicros)
	}
	var it *driver.Iterator
	if n := rpcs(func() {
		var err error
		if it, err = db.NewIterator(bg, nil); err != nil {
			t.Fatal(err)
		}
	}); n != 1 {
		t.Errorf("NewIterator made %d RPCs; want 1 (the first page)", n)
	}
	defer it.Close()
	if n := rpcs(func() {
		for ok := it.First(); ok; ok = it.Next() {
		}
	}); n != 2 {
		t.Errorf("a forward scan of 10 keys in pages of 4 made %d more RPCs after NewIterator's; want 2", n)
	}
	back, err := db.NewIterator(bg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	if n := rpcs(func() {
		for ok := back.Last(); ok; ok = back.Prev() {
		}
	}); n != 6 {
		t.Errorf("a backward scan of 10 keys in pages of 4 made %d RPCs; want 6 (2 per page)", n)
	}
	// A new iterator holds its first page, k00 to k03.
	within, err := db.NewIterator(bg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer within.Close()
	if n := rpcs(func() {
		within.SeekGE([]byte("k01"))
		within.Next()
		within.Prev()
		within.SeekLT([]byte("k03"))
		within.First()
		within.Next()
	}); n != 0 {
		t.Errorf("moves within the page held made %d RPCs; want 0", n)
	}
}

// TestIteratorBoundsCopied checks that a seek key the caller reuses does
// not change what the iterator knows.
func TestIteratorSeekKeyReused(t *testing.T) {
	db := openDB(t, "page_size=2")
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		if err := db.Put(bg, []byte(k), []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	it, err := db.NewIterator(bg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	k := []byte("c")
	if !it.SeekGE(k) || string(it.Key()) != "c" {
		t.Fatalf("SeekGE(c) at %q", it.Key())
	}
	copy(k, "a")
	var got []byte
	for ok := it.Valid(); ok; ok = it.Prev() {
		got = append(got, it.Key()...)
	}
	if !bytes.Equal(got, []byte("cba")) {
		t.Errorf("Prev from c after the caller reused its seek key saw %q; want \"cba\"", got)
	}
}
