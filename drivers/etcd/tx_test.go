package etcd

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/ioctx"
)

// TestTxConflicts checks what Commit compares: every key the transaction
// read or wrote, present or absent at begin, against its revision at
// begin.
func TestTxConflicts(t *testing.T) {
	db := openDB(t, "")
	put := func(k, v string) {
		t.Helper()
		if err := db.Put(bg, []byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	del := func(k string) {
		t.Helper()
		if err := db.Delete(bg, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name     string
		setup    func()
		tx       func(tx *driver.Tx) error
		other    func()
		conflict string // the key the error must name; "" for none
	}{
		{"read key changed", func() { put("r", "0") },
			func(tx *driver.Tx) error { _, err := tx.Get(bg, []byte("r")); return err },
			func() { put("r", "1") }, "r"},
		{"read key deleted", func() { put("r", "0") },
			func(tx *driver.Tx) error { _, err := tx.Get(bg, []byte("r")); return err },
			func() { del("r") }, "r"},
		{"absent read key created", func() { del("r") },
			func(tx *driver.Tx) error {
				_, err := tx.Get(bg, []byte("r"))
				if errors.Is(err, driver.ErrNotFound) {
					return nil
				}
				return err
			},
			func() { put("r", "1") }, "r"},
		{"MultiGet key changed", func() { put("r", "0") },
			func(tx *driver.Tx) error { _, err := tx.MultiGet(bg, [][]byte{[]byte("x"), []byte("r")}); return err },
			func() { put("r", "1") }, "r"},
		{"absent written key created", func() { del("w") }, nil, func() { put("w", "1") }, "w"},
		{"written key deleted and re-created", func() { put("w", "0") }, nil,
			func() { del("w"); put("w", "0") }, "w"},
		{"absent written key created and deleted again", func() { del("w") }, nil,
			func() { put("w", "1"); del("w") }, ""},
		{"read key unchanged, others written", func() { put("r", "0") },
			func(tx *driver.Tx) error { _, err := tx.Get(bg, []byte("r")); return err },
			func() { put("other", "1") }, ""},
	} {
		if tc.setup != nil {
			tc.setup()
		}
		tx, err := db.BeginTx(bg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.tx != nil {
			if err := tc.tx(tx); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
		}
		if err := tx.Put(bg, []byte("w"), []byte("tx")); err != nil {
			t.Fatal(err)
		}
		tc.other()
		err = tx.Commit()
		switch {
		case tc.conflict == "" && err != nil:
			t.Errorf("%s: Commit = %v; want nil", tc.name, err)
		case tc.conflict != "" && !errors.Is(err, driver.ErrConflict):
			t.Errorf("%s: Commit = %v; want ErrConflict", tc.name, err)
		case tc.conflict != "" && !strings.Contains(err.Error(), `"`+tc.conflict+`"`):
			t.Errorf("%s: Commit = %v; want it to name key %q", tc.name, err, tc.conflict)
		case tc.conflict != "":
			if v, _ := db.Get(bg, []byte("w")); string(v) == "tx" {
				t.Errorf("%s: the conflicting Commit wrote w", tc.name)
			}
		}
	}
}

// TestTxTooManyKeys checks that a transaction touching more keys than
// max_txn_ops fails at Commit with ErrInvalidArgument naming the limit, and
// writes nothing.
func TestTxTooManyKeys(t *testing.T) {
	db := openDB(t, "max_txn_ops=3")
	tx, err := db.BeginTx(bg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if _, err := tx.Get(bg, []byte(k)); !errors.Is(err, driver.ErrNotFound) {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"b", "c"} {
		if err := tx.Put(bg, []byte(k), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Errorf("Commit of a transaction that read and wrote 3 keys with max_txn_ops=3 = %v; want nil", err)
	}
	tx, err = db.BeginTx(bg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b", "c", "d"} {
		if err := tx.Put(bg, []byte(k), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); !errors.Is(err, driver.ErrInvalidArgument) || !strings.Contains(err.Error(), "max_txn_ops") {
		t.Errorf("Commit of a transaction writing 4 keys with max_txn_ops=3 = %v; want ErrInvalidArgument naming "+
			"max_txn_ops", err)
	}
	if _, err := db.Get(bg, []byte("a")); !errors.Is(err, driver.ErrNotFound) {
		t.Errorf("after the refused Commit, Get(a) = %v; want ErrNotFound", err)
	}
}

// TestCommitTimeout checks that a Commit that times out is reported as a
// timeout, never as a success or a conflict: of unknown outcome when it may
// have reached a member, not applied when it cannot have (here, a deadline
// of a microsecond passes before the request gets a connection), and then
// the key is indeed not written. TestQuorumLoss times out Commits that
// reached a member.
func TestCommitTimeout(t *testing.T) {
	cn := openConn(t, shared.dsn(t, ""))
	dtx, err := cn.BeginTx(bg, driver.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Read the key first, so that Commit's only RPC is the Txn.
	if _, err := dtx.Get(bg, ioctxGet, []byte("k")); !errors.Is(err, driver.ErrNotFound) {
		t.Fatal(err)
	}
	if err := dtx.Put(bg, []byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	// The cluster cannot answer within a microsecond.
	cn.cfg.RequestTimeout = time.Microsecond
	err = dtx.Commit()
	cn.cfg.RequestTimeout = DefaultRequestTimeout
	t.Logf("Commit with request_timeout=1µs: %v", err)
	unknown, notApplied := errors.Is(err, ErrOutcomeUnknown), strings.Contains(err.Error(), "not applied")
	switch {
	case !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, driver.ErrConflict):
		t.Errorf("a Commit that timed out = %v; want a timeout, not a conflict", err)
	case unknown == notApplied:
		t.Errorf("a Commit that timed out = %v; want it either of unknown outcome or not applied", err)
	case unknown != strings.Contains(err.Error(), "outcome unknown"):
		t.Errorf("a Commit that timed out = %v; its message and ErrOutcomeUnknown disagree", err)
	case notApplied:
		if _, err := cn.Get(bg, ioctxGet, []byte("k")); !errors.Is(err, driver.ErrNotFound) {
			t.Errorf("after a Commit reported as not applied, Get(k) = %v; want ErrNotFound", err)
		}
	}
}

// ioctxGet is the request the façade hands a Get.
var ioctxGet = ioctx.ReadRequest{IO: ioctx.IOOptions{Activity: ioctx.ActivityGet}}

// TestTxIteratorModel walks a transaction's iterator, whose writes and
// deletes overlay a snapshot read in pages of 2 keys, with random moves
// and compares each with a model of the merged view.
func TestTxIteratorModel(t *testing.T) {
	db := openDB(t, "page_size=2")
	rng := rand.New(rand.NewPCG(5, 6))
	key := func(i int) string { return fmt.Sprintf("k%02d", i) }
	view := map[string]string{}
	for i := range 40 {
		if rng.IntN(2) == 0 {
			v := "db" + key(i)
			if err := db.Put(bg, []byte(key(i)), []byte(v)); err != nil {
				t.Fatal(err)
			}
			view[key(i)] = v
		}
	}
	tx, err := db.BeginTx(bg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for range 25 {
		k := key(rng.IntN(40))
		if rng.IntN(3) == 0 {
			if err := tx.Delete(bg, []byte(k)); err != nil {
				t.Fatal(err)
			}
			delete(view, k)
		} else {
			v := "tx" + k
			if err := tx.Put(bg, []byte(k), []byte(v)); err != nil {
				t.Fatal(err)
			}
			view[k] = v
		}
	}
	// Writes by others after BeginTx are invisible.
	if err := db.Put(bg, []byte(key(41)), []byte("late")); err != nil {
		t.Fatal(err)
	}
	for _, bounds := range [][2]string{{"", ""}, {"k10", "k30"}, {"k05", "k06"}} {
		ref := &refIter{}
		for k := range view {
			if (bounds[0] == "" || k >= bounds[0]) && (bounds[1] == "" || k < bounds[1]) {
				ref.keys = append(ref.keys, k)
			}
		}
		slices.Sort(ref.keys)
		var opts driver.IterOptions
		if bounds[0] != "" {
			opts = driver.IterOptions{LowerBound: []byte(bounds[0]), UpperBound: []byte(bounds[1])}
		}
		it, err := tx.NewIterator(bg, &opts)
		if err != nil {
			t.Fatal(err)
		}
		var trail []string
		check := func(move string, got, want bool) {
			t.Helper()
			trail = append(trail, move)
			if got != want || got && (string(it.Key()) != ref.keys[ref.pos] ||
				string(it.Value()) != view[ref.keys[ref.pos]]) {
				t.Fatalf("bounds %q, after %v: got %v at %q=%q; want %v at %v (error %v)", bounds,
					trail[max(0, len(trail)-6):], got, it.Key(), it.Value(), want, ref, it.Error())
			}
		}
		for range 600 {
			k := key(rng.IntN(44))
			switch r := rng.IntN(10); {
			case r == 0:
				check("First", it.First(), ref.seekGE(""))
			case r == 1:
				check("Last", it.Last(), ref.seekLT("\xff"))
			case r < 4:
				check("SeekGE("+k+")", it.SeekGE([]byte(k)), ref.seekGE(k))
			case r < 5:
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
