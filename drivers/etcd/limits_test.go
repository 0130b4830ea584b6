package etcd

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/statistics"
)

// TestWriteLimits checks that a batch beyond max_txn_ops or
// max_request_bytes fails with ErrInvalidArgument naming the limit, and is
// refused before it is sent: the DSN's limits are below the test cluster's
// (1024 ops, 4 MiB), so the server would have accepted it.
func TestWriteLimits(t *testing.T) {
	db := openDB(t, "max_txn_ops=4&max_request_bytes=2KiB")
	key := func(i int) []byte { return fmt.Appendf(nil, "k%d", i) }
	for _, tc := range []struct {
		name  string
		write func() error
		limit string
		keys  int // keys 0..keys-1 the write would have written
	}{
		{"a batch of 5 distinct keys", func() error {
			var b driver.Batch
			for i := range 5 {
				b.Put(key(i), []byte("v"))
			}
			return db.Write(bg, &b)
		}, "max_txn_ops", 5},
		{"a batch of 3 KiB", func() error {
			var b driver.Batch
			for i := range 3 {
				b.Put(key(i), bytes.Repeat([]byte("v"), 1000))
			}
			return db.Write(bg, &b)
		}, "max_request_bytes", 3},
		{"a Put of 3 KiB", func() error { return db.Put(bg, key(0), bytes.Repeat([]byte("v"), 3000)) },
			"max_request_bytes", 1},
	} {
		err := tc.write()
		switch {
		case !errors.Is(err, driver.ErrInvalidArgument):
			t.Errorf("%s = %v; want an error matching ErrInvalidArgument", tc.name, err)
		case !strings.Contains(err.Error(), tc.limit) || strings.Contains(err.Error(), "etcdserver"):
			t.Errorf("%s = %v; want the driver's own error naming %s", tc.name, err, tc.limit)
		}
		for i := range tc.keys {
			if _, err := db.Get(bg, key(i)); !errors.Is(err, driver.ErrNotFound) {
				t.Errorf("after the refused %s, Get(%q) = %v; want ErrNotFound", tc.name, key(i), err)
			}
		}
	}

	// Repeated keys count once: 6 writes of 4 keys fit in max_txn_ops=4,
	// and the last write of each key wins.
	var b driver.Batch
	for i := range 6 {
		b.Put(key(i%4), fmt.Appendf(nil, "v%d", i))
	}
	if err := db.Write(bg, &b); err != nil {
		t.Fatalf("a batch of 6 writes of 4 keys with max_txn_ops=4: %v", err)
	}
	for i, want := range []string{"v4", "v5", "v2", "v3"} {
		if v, err := db.Get(bg, key(i)); err != nil || string(v) != want {
			t.Errorf("Get(%q) = %q, %v; want %q", key(i), v, err, want)
		}
	}
}

// TestServerLimits checks the other side: a DSN whose limits exceed the
// server's gets the server's refusal as ErrInvalidArgument naming the DSN
// key to lower, and nothing is written.
func TestServerLimits(t *testing.T) {
	db := openDSN(t, fmt.Sprintf("%s/%s?max_txn_ops=4096&max_request_bytes=64MiB", shared.endpoints(),
		newNamespace(t)))
	var b driver.Batch
	for i := range shared.maxTxnOps + 1 {
		b.Put(fmt.Appendf(nil, "k%05d", i), []byte("v"))
	}
	err := db.Write(bg, &b)
	if !errors.Is(err, driver.ErrInvalidArgument) || !strings.Contains(err.Error(), "max_txn_ops") ||
		errors.Is(err, ErrOutcomeUnknown) {
		t.Errorf("a batch of %d keys to a server allowing %d = %v; want ErrInvalidArgument naming max_txn_ops",
			shared.maxTxnOps+1, shared.maxTxnOps, err)
	}
	err = db.Put(bg, []byte("big"), make([]byte, shared.maxRequestBytes+1))
	if !errors.Is(err, driver.ErrInvalidArgument) || !strings.Contains(err.Error(), "max_request_bytes") ||
		errors.Is(err, ErrOutcomeUnknown) {
		t.Errorf("a Put of %d bytes to a server allowing %d = %v; want ErrInvalidArgument naming max_request_bytes",
			shared.maxRequestBytes+1, shared.maxRequestBytes, err)
	}
	if _, err := db.Get(bg, []byte("k00000")); !errors.Is(err, driver.ErrNotFound) {
		t.Errorf("after the refused batch, Get = %v; want ErrNotFound", err)
	}
}

// TestMultiGetChunks checks that a MultiGet of more keys than max_txn_ops
// is split into Txns that read one snapshot, in the caller's order.
func TestMultiGetChunks(t *testing.T) {
	db := openDB(t, "max_txn_ops=3&stats_level=all")
	for i := range 10 {
		if err := db.Put(bg, fmt.Appendf(nil, "k%d", i), fmt.Appendf(nil, "v%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	keys := [][]byte{[]byte("k9"), []byte("k0"), []byte("absent"), []byte("k5"), []byte("k9"), []byte("k3"), []byte("k1")}
	before := db.Statistics().Snapshot()
	vals, err := db.MultiGet(bg, keys)
	if err != nil {
		t.Fatal(err)
	}
	after := db.Statistics().Snapshot()
	for i, k := range keys {
		want := "v" + string(k[1:])
		if string(k) == "absent" {
			if vals[i] != nil {
				t.Errorf("entry %d (absent) = %q; want nil", i, vals[i])
			}
			continue
		}
		if string(vals[i]) != want {
			t.Errorf("entry %d (%s) = %q; want %q", i, k, vals[i], want)
		}
	}
	vals[0][0] = 'X'
	if string(vals[4]) != "v9" {
		t.Errorf("modifying the value of a duplicate key changed the other entry: %q", vals[4])
	}
	if n := after.CountDelta(before, statistics.FileReadMultiGetMicros); n != 3 {
		t.Errorf("a MultiGet of 7 keys with max_txn_ops=3 made %d RPCs; want 3", n)
	}
}

// TestMultiGetChunksOneSnapshot checks that the Txns of a split MultiGet
// read one revision: a writer rewrites 12 keys per batch, each batch with
// one generation, while MultiGets of 3 keys per Txn read them; no read may
// mix generations.
func TestMultiGetChunksOneSnapshot(t *testing.T) {
	dsn := shared.dsn(t, "")
	writer := openDSN(t, dsn)
	d, _ := driver.ParseDSN(dsn)
	d.Params = slices.DeleteFunc(d.Params, func(p driver.Param) bool { return p.Key == "max_txn_ops" })
	d.Params = append(d.Params, driver.Param{Key: "max_txn_ops", Value: "3"})
	reader := openDSN(t, d.String())
	keys := make([][]byte, 12)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "k%02d", i)
	}
	done := make(chan error)
	go func() {
		for g := 1; g <= 100; g++ {
			var b driver.Batch
			for _, k := range keys {
				b.Put(k, fmt.Appendf(nil, "%d", g))
			}
			if err := writer.Write(bg, &b); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for reads := 0; ; reads++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d MultiGets of 4 Txns each", reads)
			return
		default:
		}
		vals, err := reader.MultiGet(bg, keys)
		if err != nil {
			t.Fatal(err)
		}
		for i := range vals {
			if !bytes.Equal(vals[i], vals[0]) {
				t.Fatalf("a MultiGet split into Txns of 3 keys saw %q for %s and %q for %s: the Txns did not read "+
					"one revision", vals[0], keys[0], vals[i], keys[i])
			}
		}
	}
}
