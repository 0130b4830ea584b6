package conformance

import (
	"bytes"
	"context"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/ioctx"
)

// The cases of the reads that do not hand out a copy (Has, ValueSize,
// GetPinned) and of range deletions with open ends (issue 25).

// sizer is what DB, Conn, Tx and Snapshot have for reads without a copy;
// pinner is GetPinned, which DB, Conn and Snapshot have.
type sizer interface {
	Has(ctx context.Context, key []byte) (bool, error)
	ValueSize(ctx context.Context, key []byte) (int, error)
}

type pinner interface {
	GetPinned(ctx context.Context, key []byte) ([]byte, io.Closer, error)
}

// checkLookups checks Has, ValueSize and (when r has it) GetPinned of every
// key in keys against want (a missing entry: the key is absent), on r, named
// what in the messages.
func checkLookups(t testing.TB, r sizer, what string, keys [][]byte, want map[string][]byte, when string) {
	t.Helper()
	for _, k := range keys {
		w, present := want[string(k)]
		ok, err := r.Has(bg, k)
		switch {
		case err != nil:
			t.Errorf("%s: %s.Has(%s) failed: %v; want %v, nil (an absent key is false, not an error)", when, what, q(k), err, present)
		case ok != present:
			t.Errorf("%s: %s.Has(%s) = %v; want %v", when, what, q(k), ok, present)
		}
		n, err := r.ValueSize(bg, k)
		switch {
		case !present && !errors.Is(err, driver.ErrNotFound):
			t.Errorf("%s: %s.ValueSize(%s) = %d, %v; want an error matching driver.ErrNotFound", when, what, q(k), n, err)
		case present && err != nil:
			t.Errorf("%s: %s.ValueSize(%s) failed: %v; want %d", when, what, q(k), err, len(w))
		case present && n != len(w):
			t.Errorf("%s: %s.ValueSize(%s) = %d; want %d, the length of the value", when, what, q(k), n, len(w))
		}
		p, ok := r.(pinner)
		if !ok {
			continue
		}
		v, closer, err := p.GetPinned(bg, k)
		switch {
		case !present && !errors.Is(err, driver.ErrNotFound):
			t.Errorf("%s: %s.GetPinned(%s) = %s, %v; want an error matching driver.ErrNotFound", when, what, q(k), q(v), err)
		case present && err != nil:
			t.Errorf("%s: %s.GetPinned(%s) failed: %v; want %s", when, what, q(k), err, q(w))
		case present && closer == nil:
			t.Errorf("%s: %s.GetPinned(%s) returned a nil Closer; the caller must be able to call Close", when, what, q(k))
		case present:
			if !bytes.Equal(v, w) {
				t.Errorf("%s: %s.GetPinned(%s) = %s; want %s", when, what, q(k), q(v), q(w))
			}
			checkPinClose(t, closer, what+".GetPinned("+q(k)+")")
		}
	}
}

// checkPinClose closes a pinned value's closer twice: the first Close must
// return nil; the second may return nil (a closer that does nothing, as the
// façade's copying fallback gives) or an error matching driver.ErrClosed
// (a driver's closer that has released its pin), and nothing else.
func checkPinClose(t testing.TB, closer io.Closer, what string) {
	t.Helper()
	if err := closer.Close(); err != nil {
		t.Errorf("the first Close of the closer of %s = %v; want nil", what, err)
	}
	if err := closer.Close(); err != nil && !errors.Is(err, driver.ErrClosed) {
		t.Errorf("a second Close of the closer of %s = %v; want nil or an error matching driver.ErrClosed", what, err)
	}
}

func testLookup(t testing.TB, s *suite) {
	db := s.open(t, opt("write_buffer_size", "64KiB"))
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	want := map[string][]byte{"a": []byte("value"), "empty": {}, "big": big, "\x00\xff": []byte("binary")}
	for k, v := range want {
		mustPut(t, db, []byte(k), v)
	}
	keys := [][]byte{[]byte("a"), []byte("empty"), []byte("big"), []byte("\x00\xff"), []byte("missing"), []byte("a\x00")}
	checkLookups(t, db, "DB", keys, want, "after puts")
	conn, err := db.Conn(bg)
	if err != nil {
		t.Fatalf("DB.Conn: %v", err)
	}
	defer conn.Close()
	checkLookups(t, conn, "Conn", keys, want, "after puts")
	mustDelete(t, db, []byte("\x00\xff"))
	delete(want, "\x00\xff")
	checkLookups(t, db, "DB", keys, want, "after a Delete")
	flushIfAble(t, db)
	checkLookups(t, db, "DB", keys, want, "after Flush")

	// A pinned value stays as it was until its Close, whatever happens
	// meanwhile: other pinned reads, overwrites, Flush and Compact.
	pinned := func(k string) ([]byte, io.Closer) {
		t.Helper()
		v, c, err := db.GetPinned(bg, []byte(k))
		if err != nil {
			t.Fatalf("DB.GetPinned(%q): %v", k, err)
		}
		return v, c
	}
	v1, c1 := pinned("big")
	v2, c2 := pinned("a")
	mustPut(t, db, []byte("big"), bytes.Repeat([]byte{0xEE}, len(big)))
	mustPut(t, db, []byte("a"), []byte("VALUE"))
	flushIfAble(t, db)
	compactIfAble(t, db)
	v3, c3 := pinned("big")
	runtime.GC()
	if !bytes.Equal(v1, big) || string(v2) != "value" {
		t.Errorf("values pinned by GetPinned changed before their Close, after another GetPinned, overwrites, Flush and "+
			"Compact: %s and %s; want %s and \"value\": a pinned value must stay valid and unchanged until its closer's Close",
			q(v1), q(v2), q(big))
	}
	if !bytes.Equal(v3, bytes.Repeat([]byte{0xEE}, len(big))) {
		t.Errorf("DB.GetPinned(\"big\") after an overwrite = %s; want the new value", q(v3))
	}
	for _, c := range []io.Closer{c1, c2, c3} {
		checkPinClose(t, c, "DB.GetPinned")
	}
	want["big"], want["a"] = bytes.Repeat([]byte{0xEE}, len(big)), []byte("VALUE")

	// A transaction sees its own writes; a snapshot what was there at
	// NewSnapshot.
	if tx, err := db.BeginTx(bg, nil); errors.Is(err, driver.ErrNotSupported) {
		t.Logf("Tx.Has and Tx.ValueSize not checked: %v", err)
	} else if err != nil {
		t.Fatalf("BeginTx: %v", err)
	} else {
		mustPut(t, tx, []byte("tx"), []byte("mine"))
		mustDelete(t, tx, []byte("a"))
		txWant := map[string][]byte{"tx": []byte("mine"), "empty": {}, "big": want["big"]}
		checkLookups(t, tx, "Tx", append(keys, []byte("tx")), txWant, "in a transaction that put tx and deleted a")
		checkLookups(t, db, "DB", [][]byte{[]byte("tx"), []byte("a")}, want, "before the transaction commits")
		if err := tx.Rollback(); err != nil {
			t.Fatalf("Rollback: %v", err)
		}
		if _, err := tx.Has(bg, []byte("a")); !errors.Is(err, driver.ErrTxDone) {
			t.Errorf("Tx.Has after Rollback = %v; want an error matching driver.ErrTxDone", err)
		}
	}
	if snap, err := db.NewSnapshot(bg); errors.Is(err, driver.ErrNotSupported) {
		t.Logf("Snapshot.Has, ValueSize and GetPinned not checked: %v", err)
	} else if err != nil {
		t.Fatalf("NewSnapshot: %v", err)
	} else {
		mustPut(t, db, []byte("later"), []byte("v"))
		mustDelete(t, db, []byte("a"))
		checkLookups(t, snap, "Snapshot", append(keys, []byte("later")), want, "in a snapshot taken before a put and a delete")
		if err := snap.Close(); err != nil {
			t.Fatalf("Snapshot.Close: %v", err)
		}
		if _, err := snap.Has(bg, []byte("a")); !errors.Is(err, driver.ErrClosed) {
			t.Errorf("Snapshot.Has after Close = %v; want an error matching driver.ErrClosed", err)
		}
	}

	// These reads are Gets: the Get activity and Unknown are accepted, any
	// other is refused.
	for _, a := range []ioctx.Activity{ioctx.ActivityGet, ioctx.ActivityMultiGet} {
		ctx := withRO(ioctx.ReadOptions{Activity: a})
		_, errHas := db.Has(ctx, []byte("big"))
		_, errSize := db.ValueSize(ctx, []byte("big"))
		_, c, errPin := db.GetPinned(ctx, []byte("big"))
		if c != nil {
			_ = c.Close()
		}
		for name, err := range map[string]error{"Has": errHas, "ValueSize": errSize, "GetPinned": errPin} {
			switch {
			case a == ioctx.ActivityGet && err != nil:
				t.Errorf("DB.%s with ReadOptions{Activity: Get} failed: %v; these reads are Gets", name, err)
			case a != ioctx.ActivityGet && !errors.Is(err, driver.ErrInvalidArgument):
				t.Errorf("DB.%s with ReadOptions{Activity: %s} = %v; want an error matching driver.ErrInvalidArgument "+
					"(the read is a Get)", name, a, err)
			}
		}
	}

	// A pinned value outlives DB.Close, until its own Close.
	v, c, err := db.GetPinned(bg, []byte("big"))
	if err != nil {
		t.Fatalf("DB.GetPinned: %v", err)
	}
	db.close(t)
	other := s.open(t)
	for i := range 100 {
		mustPut(t, other, key(i), bytes.Repeat([]byte{0x11}, 4096))
	}
	runtime.GC()
	if !bytes.Equal(v, want["big"]) {
		t.Errorf("a value pinned before DB.Close read %s after it; want %s: the value stays valid until its closer's "+
			"Close, also after DB.Close", q(v), q(want["big"]))
	}
	checkPinClose(t, c, "DB.GetPinned after DB.Close")
	if _, err := db.Has(bg, []byte("a")); !errors.Is(err, driver.ErrClosed) {
		t.Errorf("DB.Has after Close = %v; want an error matching driver.ErrClosed", err)
	}
}

// openRangeOp is a range deletion of every key from start on.
func openRangeOp(start []byte) op { return op{key: start, del: true, openRange: true} }

func testDeleteRangeOpen(t testing.TB, s *suite) {
	db := s.open(t, opt("write_buffer_size", "64KiB"))
	skipWithoutRangeDeletion(t, db)
	m := newModel()
	keys := [][]byte{[]byte(""), []byte("a"), []byte("b"), []byte("b\x00"), []byte("ba"), []byte("c"), []byte("\xff"),
		[]byte("\xff\xff\xff")}
	fill := func() {
		t.Helper()
		for _, k := range keys {
			mustPut(t, db, k, []byte("v"+string(k)))
			m.put(k, []byte("v"+string(k)))
		}
	}
	check := func(when string) {
		t.Helper()
		checkModel(t, db, m, keys, when)
		for _, b := range [][2][]byte{{nil, nil}, {[]byte("a"), nil}, {nil, []byte("b\x00")}} {
			checkScans(t, db, &driver.IterOptions{LowerBound: b[0], UpperBound: b[1]}, m.scan(b[0], b[1]), when)
		}
	}
	del := func(start, end []byte, o op) {
		t.Helper()
		if err := db.DeleteRange(bg, start, end); err != nil {
			t.Fatalf("DeleteRange(%s, %s): %v", q(start), q(end), err)
		}
		m.apply([]op{o})
	}
	fill()
	del([]byte("b"), nil, openRangeOp([]byte("b")))
	check(`after DeleteRange("b", nil) (a nil end: every key from "b" on)`)
	fill()
	del(nil, []byte("b\x00"), delRangeOp([]byte{}, []byte("b\x00")))
	check(`after DeleteRange(nil, "b\x00") (a nil start: every key before "b\x00")`)
	fill()
	for _, r := range [][2][]byte{{[]byte("b"), {}}, {nil, {}}, {[]byte("c"), []byte("b")}} {
		if err := db.DeleteRange(bg, r[0], r[1]); err != nil {
			t.Fatalf("DeleteRange(%s, %s), an empty or inverted range: %v; want nil (a no-op)", q(r[0]), q(r[1]), err)
		}
	}
	check(`after DeleteRange("b", "") and DeleteRange(nil, "") (a non-nil empty end: empty ranges, no-ops)`)
	del(nil, nil, openRangeOp([]byte{}))
	check("after DeleteRange(nil, nil) (every key)")

	// In batches, in order with the batch's other writes.
	fill()
	ops := []op{
		{key: []byte("b1"), value: []byte("erased")},
		openRangeOp([]byte("b")),
		{key: []byte("c"), value: []byte("after the open range")},
		delRangeOp([]byte{}, []byte("a\x00")),
	}
	b := batch(ops)
	b.DeleteRange(nil, []byte("a\x00")) // the same as from "", again
	mustWrite(t, db, b)
	m.apply(ops)
	keys = append(keys, []byte("b1"))
	check(`after a batch of a put of b1, DeleteRange("b", nil), a put of c and DeleteRange(nil, "a\x00")`)
	flushIfAble(t, db)
	check("after Flush")
	fill()
	b = new(driver.Batch)
	b.DeleteRange(nil, nil)
	b.Put([]byte("z"), []byte("stands"))
	mustWrite(t, db, b)
	m.apply([]op{openRangeOp([]byte{}), {key: []byte("z"), value: []byte("stands")}})
	keys = append(keys, []byte("z"))
	check(`after a batch of DeleteRange(nil, nil) then a put of z`)
	fill()
	del([]byte("ba"), nil, openRangeOp([]byte("ba")))
	flushIfAble(t, db)
	compactIfAble(t, db)
	check(`after DeleteRange("ba", nil), Flush and Compact`)
	if db.path != memoryPath {
		db.close(t)
		db = s.reopen(t, db)
		check("after the open range deletions, Close and a reopen")
	}

	// A transaction's, where supported.
	fill()
	tx, err := db.BeginTx(bg, nil)
	if errors.Is(err, driver.ErrNotSupported) {
		t.Logf("Tx.DeleteRange with open ends not checked: %v", err)
		return
	}
	if err != nil {
		t.Fatalf("BeginTx: %v", err)
	}
	defer tx.Rollback()
	err = tx.DeleteRange(bg, []byte("b"), nil)
	if errors.Is(err, driver.ErrNotSupported) {
		t.Logf("Tx.DeleteRange with open ends not checked: %v", err)
		return
	}
	if err != nil {
		t.Fatalf(`Tx.DeleteRange("b", nil): %v`, err)
	}
	if err := tx.DeleteRange(bg, nil, []byte("a")); err != nil {
		t.Fatalf(`Tx.DeleteRange(nil, "a"): %v`, err)
	}
	mustPut(t, tx, []byte("c"), []byte("tx"))
	txm := newModel()
	for k, v := range m.m {
		txm.m[k] = v
	}
	txm.apply([]op{openRangeOp([]byte("b")), delRangeOp([]byte{}, []byte("a")), {key: []byte("c"), value: []byte("tx")}})
	checkModel(t, tx, txm, keys, `in a transaction that deleted ["b", nil) and [nil, "a"), then put c`)
	checkScans(t, tx, nil, txm.scan(nil, nil), `in a transaction that deleted ["b", nil) and [nil, "a"), then put c`)
	checkModel(t, db, m, keys, "before the transaction with open range deletions commits")
	if err := tx.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	check2 := func(when string) {
		t.Helper()
		checkModel(t, db, txm, keys, when)
		checkScans(t, db, nil, txm.scan(nil, nil), when)
	}
	check2("after the transaction with open range deletions committed")
}
