// Command zerocopy shows the façade's reads that do not copy the value: Has
// (does the key exist?), ValueSize (how big is its value?) and GetPinned
// (the value itself, valid until the caller releases it). A program that
// stores large values — blocks of a content-addressed store, say — and
// mostly asks whether it has one, or how big it is, pays for neither a copy
// nor an allocation of the value, where the driver can answer without one
// (see driver.ValueSizer and driver.PinnedGetter); with any other driver the
// same calls work, through a copying Get.
//
//	go run ./examples/zerocopy
//
// It exits 0 when every step behaved as shown, 1 otherwise.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/shaledb/shale/driver"
	_ "github.com/shaledb/shale/engine" // registers the "shale" driver
)

func main() {
	log.SetFlags(0)
	if err := run(); err != nil {
		log.Fatal("zerocopy: ", err)
	}
}

func run() error {
	dir, err := os.MkdirTemp("", "shale-zerocopy-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	db, err := driver.Open("shale", dir)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	if err := db.Ping(ctx); err != nil { // Open is lazy: connect now, so a bad DSN fails here
		return err
	}

	// A few 256 KiB blocks, flushed to a table file.
	block := bytes.Repeat([]byte("shale "), 256<<10/6)
	for i := range 4 {
		if err := db.Put(ctx, fmt.Appendf(nil, "block:%d", i), block); err != nil {
			return err
		}
	}
	if err := db.Flush(ctx); err != nil {
		return err
	}

	// Has: existence, without the value. A missing key is false, not an
	// error.
	for _, k := range []string{"block:1", "block:9"} {
		ok, err := db.Has(ctx, []byte(k))
		if err != nil {
			return err
		}
		fmt.Printf("Has %s = %v\n", k, ok)
	}

	// ValueSize: the size, without the value. A missing key is
	// ErrNotFound, as for Get.
	n, err := db.ValueSize(ctx, []byte("block:2"))
	if err != nil {
		return err
	}
	fmt.Printf("ValueSize block:2 = %d bytes\n", n)
	if _, err := db.ValueSize(ctx, []byte("block:9")); errors.Is(err, driver.ErrNotFound) {
		fmt.Println("ValueSize block:9: not found")
	} else {
		return fmt.Errorf("ValueSize of a missing key: %v", err)
	}

	// GetPinned: the value, valid until closer.Close, which the caller
	// must call once. Until then the value must not be modified, and it
	// may hold memory the database would otherwise release.
	v, closer, err := db.GetPinned(ctx, []byte("block:3"))
	if err != nil {
		return err
	}
	same := bytes.Equal(v, block)
	if err := closer.Close(); err != nil {
		return err
	}
	fmt.Printf("GetPinned block:3: %d bytes, as written: %v; released\n", len(v), same)
	// v must not be used after Close.

	// Snapshots and transactions have Has and ValueSize too.
	snap, err := db.NewSnapshot(ctx)
	if err != nil {
		return err
	}
	defer snap.Close()
	if err := db.Delete(ctx, []byte("block:0")); err != nil {
		return err
	}
	inSnap, err := snap.Has(ctx, []byte("block:0"))
	if err != nil {
		return err
	}
	now, err := db.Has(ctx, []byte("block:0"))
	if err != nil {
		return err
	}
	fmt.Printf("after Delete block:0: Has = %v, in the earlier snapshot = %v\n", now, inSnap)
	return nil
}
