package conformance

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/shaledb/shale/driver"
)

// model is the suite's oracle: what the database should hold, as a map.
// It is used by one goroutine at a time.
type model struct {
	m map[string]string
}

func newModel() *model { return &model{m: make(map[string]string)} }

func (m *model) put(k, v []byte) { m.m[string(k)] = string(v) }
func (m *model) del(k []byte)    { delete(m.m, string(k)) }

// apply records the writes of a batch, in order.
func (m *model) apply(ops []op) {
	for _, o := range ops {
		switch {
		case o.rangeEnd != nil || o.openRange:
			for k := range m.m {
				if k >= string(o.key) && (o.openRange || k < string(o.rangeEnd)) {
					delete(m.m, k)
				}
			}
		case o.del:
			m.del(o.key)
		default:
			m.put(o.key, o.value)
		}
	}
}

// scan returns the model's pairs with lower <= key < upper (nil bounds are
// open), sorted by key.
func (m *model) scan(lower, upper []byte) []kv {
	kvs := make([]kv, 0, len(m.m))
	for k, v := range m.m {
		if lower != nil && k < string(lower) || upper != nil && k >= string(upper) {
			continue
		}
		kvs = append(kvs, kv{k, v})
	}
	slices.SortFunc(kvs, func(a, b kv) int { return strings.Compare(a.k, b.k) })
	return kvs
}

// op is one write of a generated workload: a put, a delete (del), a
// deletion of [key, rangeEnd) (rangeEnd not nil), or of every key from key
// on (openRange).
type op struct {
	del        bool
	key, value []byte
	rangeEnd   []byte
	openRange  bool
}

// batch returns ops as a driver.Batch.
func batch(ops []op) *driver.Batch {
	b := new(driver.Batch)
	for _, o := range ops {
		switch {
		case o.openRange:
			b.DeleteRange(o.key, nil)
		case o.rangeEnd != nil:
			b.DeleteRange(o.key, o.rangeEnd)
		case o.del:
			b.Delete(o.key)
		default:
			b.Put(o.key, o.value)
		}
	}
	return b
}

type kv struct{ k, v string }

func (p kv) String() string { return fmt.Sprintf("%s=%s", q([]byte(p.k)), q([]byte(p.v))) }

// refIter is the reference iterator over sorted pairs, with the façade's
// rules: Next and Prev on an iterator that is not at a key return false and
// leave it there.
type refIter struct {
	kvs   []kv
	pos   int
	valid bool
}

func (r *refIter) at(i int) bool {
	r.pos, r.valid = i, i >= 0 && i < len(r.kvs)
	return r.valid
}

func (r *refIter) first() bool { return r.at(0) }
func (r *refIter) last() bool  { return r.at(len(r.kvs) - 1) }

func (r *refIter) seekGE(k []byte) bool {
	i, _ := slices.BinarySearchFunc(r.kvs, string(k), func(p kv, t string) int { return strings.Compare(p.k, t) })
	return r.at(i)
}

func (r *refIter) seekLT(k []byte) bool {
	i, _ := slices.BinarySearchFunc(r.kvs, string(k), func(p kv, t string) int { return strings.Compare(p.k, t) })
	return r.at(i - 1)
}

func (r *refIter) next() bool {
	if !r.valid {
		return false
	}
	return r.at(r.pos + 1)
}

func (r *refIter) prev() bool {
	if !r.valid {
		return false
	}
	return r.at(r.pos - 1)
}

func (r *refIter) cur() kv { return r.kvs[r.pos] }

// collect scans it fully in one direction (forward unless reverse) and
// returns the pairs, copied, and the iterator's error.
func collect(it *driver.Iterator, reverse bool) ([]kv, error) {
	var kvs []kv
	ok := it.First()
	if reverse {
		ok = it.Last()
	}
	for ; ok; ok = next(it, reverse) {
		kvs = append(kvs, kv{string(it.Key()), string(it.Value())})
	}
	return kvs, it.Error()
}

func next(it *driver.Iterator, reverse bool) bool {
	if reverse {
		return it.Prev()
	}
	return it.Next()
}

// diffKVs describes the first difference between got and want, or returns
// "" when they are equal.
func diffKVs(got, want []kv) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("entry %d is %v; want %v", i, got[i], want[i])
		}
	}
	switch {
	case len(got) > len(want):
		return fmt.Sprintf("got %d entries, want %d: first extra entry %v", len(got), len(want), got[len(want)])
	case len(got) < len(want):
		return fmt.Sprintf("got %d entries, want %d: first missing entry %v", len(got), len(want), want[len(got)])
	}
	return ""
}

// reversed returns a reversed copy of kvs.
func reversed(kvs []kv) []kv {
	r := slices.Clone(kvs)
	slices.Reverse(r)
	return r
}

// checkScans compares full forward and backward scans of r (within opts'
// bounds) with want, and stops the case on a difference.
func checkScans(t testing.TB, r reader, opts *driver.IterOptions, want []kv, when string) {
	t.Helper()
	for _, reverse := range []bool{false, true} {
		it, err := r.NewIterator(bg, opts)
		if err != nil {
			t.Fatalf("%s: NewIterator(%s): %v", when, boundsString(opts), err)
		}
		got, err := collect(it, reverse)
		dir, w := "forward", want
		if reverse {
			dir, w = "backward", reversed(want)
		}
		if err != nil {
			t.Fatalf("%s: %s scan with %s stopped with error %v", when, dir, boundsString(opts), err)
		}
		if d := diffKVs(got, w); d != "" {
			t.Fatalf("%s: %s scan with %s: %s", when, dir, boundsString(opts), d)
		}
		if err := it.Close(); err != nil {
			t.Fatalf("%s: Iterator.Close after a %s scan: %v; want nil", when, dir, err)
		}
	}
}

// checkModel compares r with m: a Get of every key, Gets of the absent
// keys, and full scans in both directions.
func checkModel(t testing.TB, r reader, m *model, absent [][]byte, when string) {
	t.Helper()
	want := m.scan(nil, nil)
	for _, p := range want {
		if !checkGet(t, r, []byte(p.k), []byte(p.v), when) {
			t.FailNow()
		}
	}
	for _, k := range absent {
		if _, ok := m.m[string(k)]; !ok && !checkGet(t, r, k, nil, when) {
			t.FailNow()
		}
	}
	checkScans(t, r, nil, want, when)
}

func boundsString(o *driver.IterOptions) string {
	if o == nil || o.LowerBound == nil && o.UpperBound == nil {
		return "no bounds"
	}
	return fmt.Sprintf("bounds [%s, %s)", q(o.LowerBound), q(o.UpperBound))
}

// equalBytes is bytes.Equal that also tells a nil slice from an empty one.
func equalBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }
