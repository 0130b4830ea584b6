package etcd

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/ioctx"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// freshConn opens a fresh namespace of the shared cluster as a driver
// connection, below the façade (openConn of compact_test.go opens a DSN).
func freshConn(t testing.TB, params string) *conn {
	t.Helper()
	return openConn(t, shared.dsn(t, params))
}

// scanIter returns every pair of it as "k=v", and closes it.
func scanIter(t testing.TB, it driver.Iter, reverse bool) []string {
	t.Helper()
	var out []string
	ok := it.First()
	if reverse {
		ok = it.Last()
	}
	for ; ok; ok = map[bool]func() bool{false: it.Next, true: it.Prev}[reverse]() {
		out = append(out, string(it.Key())+"="+string(it.Value()))
	}
	if err := it.Error(); err != nil {
		t.Fatalf("iterator: %v", err)
	}
	if err := it.Close(); err != nil {
		t.Fatalf("Iter.Close: %v", err)
	}
	if reverse {
		slices.Reverse(out)
	}
	return out
}

// contents returns the namespace's pairs, "k=v" each, in key order.
func contents(t testing.TB, c *conn) []string {
	t.Helper()
	it, err := c.NewIterator(bg, ioctx.ReadRequest{}, driver.IterOptions{})
	if err != nil {
		t.Fatalf("NewIterator: %v", err)
	}
	return scanIter(t, it, false)
}

// modelApply applies ops in order to m.
func modelApply(m map[string]string, ops []driver.Op) {
	for _, op := range ops {
		switch op.Kind {
		case driver.OpPut:
			m[string(op.Key)] = string(op.Value)
		case driver.OpDelete:
			delete(m, string(op.Key))
		case driver.OpDeleteRange:
			for k := range m {
				if inRange(k, op.Key, op.Value) {
					delete(m, k)
				}
			}
		}
	}
}

func modelPairs(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

func put(k, v string) driver.Op {
	return driver.Op{Kind: driver.OpPut, Key: []byte(k), Value: []byte(v)}
}
func del(k string) driver.Op { return driver.Op{Kind: driver.OpDelete, Key: []byte(k)} }
func delRange(s, e string) driver.Op {
	return driver.Op{Kind: driver.OpDeleteRange, Key: []byte(s), Value: []byte(e)}
}

// delRangeOpen is a deletion of every key from s on (a nil end).
func delRangeOpen(s string) driver.Op {
	return driver.Op{Kind: driver.OpDeleteRange, Key: []byte(s)}
}

// randomOps returns n random writes over keys a..h, a fifth of them range
// deletions (one in four of those with a nil end).
func randomOps(rng *rand.Rand, n int) []driver.Op {
	k := func() string { return string(rune('a' + rng.IntN(8))) }
	var ops []driver.Op
	for i := range n {
		switch r := rng.IntN(10); {
		case r < 5:
			ops = append(ops, put(k(), fmt.Sprint(i)))
		case r < 8:
			ops = append(ops, del(k()))
		case r < 9 && rng.IntN(2) == 0:
			ops = append(ops, delRangeOpen(k()))
		default:
			s, e := k(), k()+"\x00"
			if s >= e {
				s, e = e, s
			}
			ops = append(ops, delRange(s, e))
		}
	}
	return ops
}

// TestFoldOps checks foldOps against applying the writes in order, and
// that its output is what etcd accepts in one Txn: no key put twice, no
// put inside a deletion.
func TestFoldOps(t *testing.T) {
	check := func(t *testing.T, pre map[string]string, ops []driver.Op) {
		t.Helper()
		want := maps(pre)
		modelApply(want, ops)
		points, ranges := foldOps(ops)
		got := maps(pre)
		var folded []driver.Op
		for _, r := range ranges {
			folded = append(folded, driver.Op{Kind: driver.OpDeleteRange, Key: r.start, Value: r.end})
		}
		folded = append(folded, points...)
		modelApply(got, folded)
		if !slices.Equal(modelPairs(got), modelPairs(want)) {
			t.Fatalf("ops %v folded to %v and %v: applying them gives %v; in order, %v",
				ops, points, ranges, modelPairs(got), modelPairs(want))
		}
		seen := map[string]bool{}
		for _, p := range points {
			if seen[string(p.Key)] {
				t.Fatalf("ops %v: key %q written twice by %v", ops, p.Key, points)
			}
			seen[string(p.Key)] = true
			if p.Kind == driver.OpPut && covered(ranges, p.Key) {
				t.Fatalf("ops %v: put of %q inside a deletion of %v", ops, p.Key, ranges)
			}
		}
		for i := range ranges {
			if i > 0 && compareEnds(ranges[i-1].end, ranges[i].start) > 0 || !belowEnd(ranges[i].start, ranges[i].end) {
				t.Fatalf("ops %v: ranges %v are not sorted, disjoint and non-empty", ops, ranges)
			}
		}
	}
	pre := map[string]string{"a": "0", "b": "0", "c": "0", "d": "0", "e": "0"}
	for _, tc := range []struct {
		name string
		ops  []driver.Op
	}{
		{"put then covering range", []driver.Op{put("b", "1"), delRange("a", "c")}},
		{"range then put inside", []driver.Op{delRange("a", "e"), put("b", "1"), put("d", "2")}},
		{"put at the range's start and just before its end", []driver.Op{delRange("b", "d"), put("b", "1"), put("c\xff", "2")}},
		{"delete inside a range", []driver.Op{delRange("a", "c"), del("b")}},
		{"overlapping and touching ranges", []driver.Op{delRange("a", "c"), delRange("b", "d"), delRange("d", "e")}},
		{"put, range, put, range", []driver.Op{put("b", "1"), delRange("b", "c"), put("b", "2"), delRange("a", "b")}},
		{"last of a key wins", []driver.Op{put("x", "1"), del("x"), put("x", "2")}},
		{"open range then puts after it", []driver.Op{put("a", "1"), delRangeOpen("b"), put("c", "2"), put("z", "3")}},
		{"open range over bounded ones", []driver.Op{delRange("a", "b"), delRangeOpen("c"), delRange("d", "e"), del("x")}},
		{"open range from the first key", []driver.Op{put("b", "1"), delRangeOpen(""), put("a", "2")}},
		{"bounded range touching an open one", []driver.Op{delRangeOpen("c"), delRange("a", "c")}},
		{"inverted range, which the façade leaves to the driver", []driver.Op{put("b", "1"), delRange("d", "a"), put("c", "2")}},
	} {
		t.Run(tc.name, func(t *testing.T) { check(t, pre, tc.ops) })
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		check(t, pre, randomOps(rng, 1+rng.IntN(12)))
	}
}

func maps(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestDeleteRange: one RPC deletes exactly [start, end) of the namespace:
// not the keys around it, not another namespace's keys (even one whose
// name extends this one's); an empty or inverted range is a no-op.
func TestDeleteRange(t *testing.T) {
	ns := newNamespace(t)
	c := openConn(t, shared.endpoints()+"/"+ns)
	other := openConn(t, shared.endpoints()+"/"+ns+"x")
	for _, k := range []string{"", "a", "b", "b\x00", "c", "d"} {
		if err := c.Put(bg, ioctx.WriteOptions{}, []byte(k), []byte("v")); err != nil {
			t.Fatal(err)
		}
		if err := other.Put(bg, ioctx.WriteOptions{}, []byte(k), []byte("o")); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range [][2]string{{"c", "b"}, {"b", "b"}} {
		if err := c.DeleteRange(bg, ioctx.WriteOptions{}, []byte(r[0]), []byte(r[1])); err != nil {
			t.Fatalf("DeleteRange(%q, %q): %v", r[0], r[1], err)
		}
	}
	if got := contents(t, c); len(got) != 6 {
		t.Fatalf("after empty and inverted DeleteRanges the namespace holds %q; want all 6 keys", got)
	}
	if err := c.DeleteRange(bg, ioctx.WriteOptions{Sync: true}, []byte("b"), []byte("c")); err != nil {
		t.Fatal(err)
	}
	if got, want := contents(t, c), []string{"=v", "a=v", "c=v", "d=v"}; !slices.Equal(got, want) {
		t.Errorf("after DeleteRange(b, c): %q; want %q", got, want)
	}
	if err := c.DeleteRange(bg, ioctx.WriteOptions{}, []byte{}, []byte("b")); err != nil {
		t.Fatal(err)
	}
	if got, want := contents(t, c), []string{"c=v", "d=v"}; !slices.Equal(got, want) {
		t.Errorf("after DeleteRange(\"\", b): %q; want %q", got, want)
	}
	if got := contents(t, other); len(got) != 6 {
		t.Errorf("namespace %q holds %q after range deletions in namespace %q; want its 6 keys", ns+"x", got, ns)
	}
}

// TestDeleteRangeOpen: a nil end deletes every key of the namespace from
// start on, and a start of the empty key (the façade's nil start) every key
// of the namespace — never another namespace's, whatever its name.
func TestDeleteRangeOpen(t *testing.T) {
	ns := newNamespace(t)
	c := openConn(t, shared.endpoints()+"/"+ns)
	others := []*conn{openConn(t, shared.endpoints()+"/"+ns+"x"), openConn(t, shared.endpoints()+"/"+ns+"\x01")}
	keys := []string{"", "a", "b", "b\x00", "c", "\xff", "\xff\xff\xff"}
	for _, k := range keys {
		for _, cc := range append(others, c) {
			if err := cc.Put(bg, ioctx.WriteOptions{}, []byte(k), []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := c.DeleteRange(bg, ioctx.WriteOptions{}, []byte("b"), nil); err != nil {
		t.Fatal(err)
	}
	if got, want := contents(t, c), []string{"=v", "a=v"}; !slices.Equal(got, want) {
		t.Errorf("after DeleteRange(b, nil): %q; want %q", got, want)
	}
	if err := c.DeleteRange(bg, ioctx.WriteOptions{}, []byte{}, nil); err != nil {
		t.Fatal(err)
	}
	if got := contents(t, c); len(got) != 0 {
		t.Errorf("after DeleteRange(\"\", nil): %q; want nothing", got)
	}
	for _, o := range others {
		if got := contents(t, o); len(got) != len(keys) {
			t.Errorf("another namespace holds %q after open range deletions in namespace %q; want its %d keys",
				got, ns, len(keys))
		}
	}
	// In a batch, through the façade.
	cn, err := NewClientConnector(c.client, *c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := driver.OpenDB(cn)
	defer db.Close()
	var b driver.Batch
	b.Put([]byte("a"), []byte("1"))
	b.Put([]byte("b"), []byte("1"))
	b.DeleteRange([]byte("b"), nil)
	b.Put([]byte("c"), []byte("after"))
	b.DeleteRange(nil, []byte("a\x00"))
	if err := db.Write(bg, &b); err != nil {
		t.Fatal(err)
	}
	if got, want := contents(t, c), []string{"c=after"}; !slices.Equal(got, want) {
		t.Errorf("after a batch put a, b, DeleteRange(b, nil), put c, DeleteRange(nil, a\\x00): %q; want %q", got, want)
	}
}

// TestTxDeleteRangeOpen: a transaction's open range hides every key from
// its start on from the transaction's reads, both ways; Commit applies it
// within the namespace, and a put into it by another writer since begin is
// a conflict.
func TestTxDeleteRangeOpen(t *testing.T) {
	c := freshConn(t, "")
	for _, k := range []string{"a", "b", "c", "\xff"} {
		if err := c.Put(bg, ioctx.WriteOptions{}, []byte(k), []byte("0")); err != nil {
			t.Fatal(err)
		}
	}
	dt, err := c.BeginTx(bg, driver.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	etx := dt.(*tx)
	if err := etx.Put(bg, []byte("c"), []byte("erased")); err != nil {
		t.Fatal(err)
	}
	if err := etx.DeleteRange(bg, []byte("b"), nil); err != nil {
		t.Fatal(err)
	}
	if err := etx.Put(bg, []byte("d"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	for _, reverse := range []bool{false, true} {
		it, err := dt.NewIterator(bg, ioctx.ReadRequest{}, driver.IterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := scanIter(t, it, reverse), []string{"a=0", "d=1"}; !slices.Equal(got, want) {
			t.Errorf("scan (reverse %v) after put c, Tx.DeleteRange(b, nil), put d = %q; want %q", reverse, got, want)
		}
	}
	if _, err := dt.Get(bg, ioctx.ReadRequest{}, []byte("\xff")); !errors.Is(err, driver.ErrNotFound) {
		t.Errorf("Tx.Get(\\xff) after Tx.DeleteRange(b, nil) = %v; want ErrNotFound", err)
	}
	if err := dt.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, want := contents(t, c), []string{"a=0", "d=1"}; !slices.Equal(got, want) {
		t.Errorf("after Commit: %q; want %q", got, want)
	}

	dt, err = c.BeginTx(bg, driver.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := dt.(*tx).DeleteRange(bg, []byte("b"), nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(bg, ioctx.WriteOptions{}, []byte("zz"), []byte("other")); err != nil {
		t.Fatal(err)
	}
	err = dt.Commit()
	if !errors.Is(err, driver.ErrConflict) {
		t.Fatalf("Commit after another writer's put into [b, nil) = %v; want ErrConflict", err)
	}
	if !strings.Contains(err.Error(), `["b", nil)`) {
		t.Errorf("the conflict %q does not name the open range", err)
	}
	if got, want := contents(t, c), []string{"a=0", "d=1", "zz=other"}; !slices.Equal(got, want) {
		t.Errorf("after the conflicting Commit: %q; want %q (nothing applied)", got, want)
	}
}

// TestWriteWithRangeDeletions applies random batches of puts, deletes and
// range deletions, each as one Txn, and compares the namespace with the
// batches applied in order.
func TestWriteWithRangeDeletions(t *testing.T) {
	c := freshConn(t, "")
	m := map[string]string{}
	rng := rand.New(rand.NewPCG(3, 4))
	rounds := 60
	if testing.Short() {
		rounds = 15
	}
	for i := range rounds {
		ops := randomOps(rng, 1+rng.IntN(16))
		var b driver.Batch
		for _, op := range ops {
			switch op.Kind {
			case driver.OpPut:
				b.Put(op.Key, op.Value)
			case driver.OpDelete:
				b.Delete(op.Key)
			case driver.OpDeleteRange:
				b.DeleteRange(op.Key, op.Value)
			}
		}
		if err := c.Write(bg, ioctx.WriteOptions{}, &b); err != nil {
			t.Fatalf("batch %d %v: %v", i, ops, err)
		}
		modelApply(m, ops)
		if got, want := contents(t, c), modelPairs(m); !slices.Equal(got, want) {
			t.Fatalf("after batch %d %v: %q; want %q", i, ops, got, want)
		}
	}
}

// TestWriteOptions: Sync is accepted (every write is committed by a quorum
// anyway); DisableWAL, which etcd cannot honour, fails every kind of write
// with ErrNotSupported, and nothing is written.
func TestWriteOptions(t *testing.T) {
	c := freshConn(t, "")
	sync, noWAL := ioctx.WriteOptions{Sync: true}, ioctx.WriteOptions{DisableWAL: true, Sync: true}
	if err := c.Put(bg, sync, []byte("k"), []byte("v")); err != nil {
		t.Fatalf("Put with Sync: %v", err)
	}
	var b driver.Batch
	b.Put([]byte("b"), []byte("v"))
	b.DeleteRange([]byte("a"), []byte("z"))
	for name, write := range map[string]func() error{
		"Put":         func() error { return c.Put(bg, noWAL, []byte("n"), []byte("v")) },
		"Delete":      func() error { return c.Delete(bg, noWAL, []byte("k")) },
		"Write":       func() error { return c.Write(bg, noWAL, &b) },
		"DeleteRange": func() error { return c.DeleteRange(bg, noWAL, []byte("a"), []byte("z")) },
		"BeginTx": func() error {
			_, err := c.BeginTx(bg, driver.TxOptions{WriteOptions: noWAL})
			return err
		},
	} {
		err := write()
		if !errors.Is(err, driver.ErrNotSupported) || !strings.Contains(err.Error(), "DisableWAL") {
			t.Errorf("%s with DisableWAL = %v; want an error matching ErrNotSupported naming DisableWAL", name, err)
		}
	}
	if got := contents(t, c); !slices.Equal(got, []string{"k=v"}) {
		t.Errorf("after the refused writes the namespace holds %q; want only k=v", got)
	}
	tx, err := c.BeginTx(bg, driver.TxOptions{ReadOnly: true, WriteOptions: noWAL})
	if err != nil {
		t.Errorf("a read-only BeginTx with DisableWAL (it writes nothing): %v", err)
	} else {
		tx.Rollback()
	}
}

// TestSyncWAL: nil on a reachable cluster; the context's error otherwise.
func TestSyncWAL(t *testing.T) {
	c := freshConn(t, "")
	if err := c.SyncWAL(bg); err != nil {
		t.Fatalf("SyncWAL: %v", err)
	}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if err := c.SyncWAL(ctx); !errors.Is(err, ctx.Err()) {
		t.Errorf("SyncWAL with a cancelled context = %v; want an error matching %v", err, ctx.Err())
	}
}

// TestSnapshot: a snapshot reads the namespace as of NewSnapshot through
// Get, MultiGet and iterators, whatever is written later; its revision is
// pinned, so this DB's Compact stops below it until Close, after which
// Compact passes it.
func TestSnapshot(t *testing.T) {
	c := freshConn(t, "")
	w := ioctx.WriteOptions{}
	for _, k := range []string{"a", "b", "c"} {
		if err := c.Put(bg, w, []byte(k), []byte("old")); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := c.NewSnapshot(bg)
	if err != nil {
		t.Fatal(err)
	}
	s := ds.(*snapshot)
	if err := c.Put(bg, w, []byte("a"), []byte("new")); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteRange(bg, w, []byte("b"), []byte("c\x00")); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(bg, w, []byte("d"), []byte("new")); err != nil {
		t.Fatal(err)
	}
	if err := c.Compact(bg, nil, nil); err != nil {
		t.Fatalf("Compact with a snapshot open: %v", err)
	}
	want := []string{"a=old", "b=old", "c=old"}
	req := ioctx.ReadRequest{}
	for _, reverse := range []bool{false, true} {
		it, err := s.NewIterator(bg, req, driver.IterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := scanIter(t, it, reverse); !slices.Equal(got, want) {
			t.Errorf("snapshot scan (reverse %v) after later writes and a Compact = %q; want %q", reverse, got, want)
		}
	}
	it, _ := s.NewIterator(bg, req, driver.IterOptions{LowerBound: []byte("b"), UpperBound: []byte("b")})
	if got := scanIter(t, it, false); len(got) != 0 {
		t.Errorf("snapshot scan with empty bounds = %q", got)
	}
	if v, err := s.Get(bg, req, []byte("a")); err != nil || string(v) != "old" {
		t.Errorf("snapshot Get(a) = %q, %v; want old", v, err)
	}
	if _, err := s.Get(bg, req, []byte("d")); !errors.Is(err, driver.ErrNotFound) {
		t.Errorf("snapshot Get(d), written after it = %v; want ErrNotFound", err)
	}
	vals, err := s.MultiGet(bg, req, [][]byte{[]byte("c"), []byte("d"), []byte("a")})
	if err != nil || string(vals[0]) != "old" || vals[1] != nil || string(vals[2]) != "old" {
		t.Errorf("snapshot MultiGet(c, d, a) = %q, %v; want [old nil old]", vals, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Compact(bg, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.getAt(bg, req, "test", []byte("a"), s.rev); !errors.Is(err, ErrSnapshotCompacted) {
		t.Errorf("a read at the closed snapshot's revision after Compact = %v; want ErrSnapshotCompacted "+
			"(Compact must pass an unpinned revision)", err)
	}
}

// TestTxDeleteRange: a transaction's DeleteRange hides the range from its
// reads (Get, MultiGet, iterators both ways) and erases its earlier writes
// there, while its later writes stand; Commit applies it with them; a put
// by someone else into the range since begin is a conflict that applies
// nothing, a write outside it or a delete inside it is not.
func TestTxDeleteRange(t *testing.T) {
	c := freshConn(t, "")
	w, req := ioctx.WriteOptions{}, ioctx.ReadRequest{}
	reset := func() {
		t.Helper()
		if err := c.DeleteRange(bg, w, []byte{}, []byte("\xff")); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"a", "b", "c", "d", "e"} {
			if err := c.Put(bg, w, []byte(k), []byte("0")); err != nil {
				t.Fatal(err)
			}
		}
	}
	begin := func() *tx {
		t.Helper()
		dt, err := c.BeginTx(bg, driver.TxOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return dt.(*tx)
	}
	reset()
	x := begin()
	x.Put(bg, []byte("b"), []byte("erased"))
	x.DeleteRange(bg, []byte("b"), []byte("d"))
	x.Put(bg, []byte("c"), []byte("1"))
	x.DeleteRange(bg, []byte("z"), []byte("a")) // inverted: nothing
	want := []string{"a=0", "c=1", "d=0", "e=0"}
	for _, reverse := range []bool{false, true} {
		it, err := x.NewIterator(bg, req, driver.IterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := scanIter(t, it, reverse); !slices.Equal(got, want) {
			t.Errorf("the transaction's scan (reverse %v) = %q; want %q", reverse, got, want)
		}
	}
	if _, err := x.Get(bg, req, []byte("b")); !errors.Is(err, driver.ErrNotFound) {
		t.Errorf("Tx.Get(b) in its deleted range = %v; want ErrNotFound", err)
	}
	vals, err := x.MultiGet(bg, req, [][]byte{[]byte("b"), []byte("c"), []byte("d")})
	if err != nil || vals[0] != nil || string(vals[1]) != "1" || string(vals[2]) != "0" {
		t.Errorf("Tx.MultiGet(b, c, d) = %q, %v; want [nil 1 0]", vals, err)
	}
	if got := contents(t, c); len(got) != 5 {
		t.Errorf("before Commit others see %q; want the 5 keys unchanged", got)
	}
	if err := x.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if got := contents(t, c); !slices.Equal(got, want) {
		t.Errorf("after Commit: %q; want %q", got, want)
	}

	for _, tc := range []struct {
		name     string
		other    func() error
		conflict bool
	}{
		{"a put into the range", func() error { return c.Put(bg, w, []byte("c"), []byte("x")) }, true},
		{"a new key in the range", func() error { return c.Put(bg, w, []byte("b\x00"), []byte("x")) }, true},
		{"a put outside the range", func() error { return c.Put(bg, w, []byte("d"), []byte("x")) }, false},
		{"a delete inside the range", func() error { return c.Delete(bg, w, []byte("b")) }, false},
	} {
		reset()
		x := begin()
		x.DeleteRange(bg, []byte("b"), []byte("d"))
		x.Put(bg, []byte("e"), []byte("tx"))
		if err := tc.other(); err != nil {
			t.Fatal(err)
		}
		before := contents(t, c)
		err := x.Commit()
		switch {
		case tc.conflict && !errors.Is(err, driver.ErrConflict):
			t.Errorf("%s after begin: Commit = %v; want ErrConflict", tc.name, err)
		case tc.conflict && !strings.Contains(err.Error(), "in the deleted range"):
			t.Errorf("%s after begin: Commit = %v; want the key named as in the deleted range", tc.name, err)
		case tc.conflict:
			if got := contents(t, c); !slices.Equal(got, before) {
				t.Errorf("%s: the conflicting Commit changed %q to %q", tc.name, before, got)
			}
		case err != nil:
			t.Errorf("%s after begin: Commit = %v; want nil", tc.name, err)
		}
	}
}

// TestTxDeleteRangeFromStart: a transaction's range deletion from the
// empty key (given as nil) hides the keys below its end from scans in both
// directions.
func TestTxDeleteRangeFromStart(t *testing.T) {
	c := freshConn(t, "")
	for _, k := range []string{"a", "b", "c"} {
		if err := c.Put(bg, ioctx.WriteOptions{}, []byte(k), []byte("0")); err != nil {
			t.Fatal(err)
		}
	}
	dt, err := c.BeginTx(bg, driver.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dt.Rollback()
	if err := dt.(*tx).DeleteRange(bg, nil, []byte("b")); err != nil {
		t.Fatal(err)
	}
	for _, reverse := range []bool{false, true} {
		it, err := dt.NewIterator(bg, ioctx.ReadRequest{}, driver.IterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := scanIter(t, it, reverse), []string{"b=0", "c=0"}; !slices.Equal(got, want) {
			t.Errorf("scan (reverse %v) after Tx.DeleteRange(nil, b) = %q; want %q", reverse, got, want)
		}
	}
}

// TestSnapshotForeignCompaction: a compaction by someone else past an open
// snapshot's revision makes its reads fail with ErrSnapshotCompacted.
func TestSnapshotForeignCompaction(t *testing.T) {
	db := openDB(t, "")
	cli := rawClient(t, shared)
	fill(t, db, 10, "old")
	snap, err := db.NewSnapshot(bg)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	fill(t, db, 10, "new")
	if _, err := cli.Compact(bg, currentRev(t, cli), clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	if _, err := snap.Get(bg, []byte("k001")); !errors.Is(err, ErrSnapshotCompacted) {
		t.Errorf("Snapshot.Get after a foreign compaction past it = %v; want ErrSnapshotCompacted", err)
	}
	if _, err := snap.MultiGet(bg, [][]byte{[]byte("k001"), []byte("k002")}); !errors.Is(err, ErrSnapshotCompacted) {
		t.Errorf("Snapshot.MultiGet after a foreign compaction past it = %v; want ErrSnapshotCompacted", err)
	}
}

// TestWriteRangeLimits: a batch whose Txn, its range deletions cut around
// the puts inside them, would exceed max_txn_ops fails with
// ErrInvalidArgument naming the limit before anything is sent; so does a
// transaction's.
func TestWriteRangeLimits(t *testing.T) {
	db := openDB(t, "max_txn_ops=4")
	var b driver.Batch
	b.DeleteRange([]byte("a"), []byte("z"))
	for _, k := range []string{"b", "c", "d"} {
		b.Put([]byte(k), []byte("v"))
	}
	// 3 puts and the range cut into 4 pieces: 7 operations.
	if err := db.Write(bg, &b); !errors.Is(err, driver.ErrInvalidArgument) || !strings.Contains(err.Error(), "max_txn_ops") {
		t.Errorf("Write of 3 puts inside a range deletion with max_txn_ops=4 = %v; want ErrInvalidArgument naming "+
			"max_txn_ops", err)
	}
	if _, err := db.Get(bg, []byte("b")); !errors.Is(err, driver.ErrNotFound) {
		t.Errorf("after the refused batch, Get(b) = %v; want ErrNotFound", err)
	}
	tx, err := db.BeginTx(bg, nil)
	if err != nil {
		t.Fatal(err)
	}
	tx.DeleteRange(bg, []byte("a"), []byte("z"))
	for _, k := range []string{"b", "c", "d"} {
		tx.Put(bg, []byte(k), []byte("v"))
	}
	if err := tx.Commit(); !errors.Is(err, driver.ErrInvalidArgument) || !strings.Contains(err.Error(), "max_txn_ops") {
		t.Errorf("Commit of 3 puts inside a range deletion with max_txn_ops=4 = %v; want ErrInvalidArgument naming "+
			"max_txn_ops", err)
	}
}
