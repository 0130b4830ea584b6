package etcd

import (
	"errors"
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

// TestCommitTimeoutIsUnknown checks that a Commit that times out is reported
// as of unknown outcome (and as a timeout), never as a success or a
// conflict.
func TestCommitTimeoutIsUnknown(t *testing.T) {
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
	if !errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, driver.ErrConflict) {
		t.Errorf("a Commit that timed out = %v; want an error matching ErrOutcomeUnknown", err)
	}
	if !strings.Contains(err.Error(), "outcome unknown") {
		t.Errorf("a Commit that timed out = %v; want the message to say the outcome is unknown", err)
	}
}

// ioctxGet is the request the façade hands a Get.
var ioctxGet = ioctx.ReadRequest{IO: ioctx.IOOptions{Activity: ioctx.ActivityGet}}
