// Command quickstart is a first tour of shale through its driver façade:
// open a database, write, read and delete keys, apply a batch atomically,
// walk a key range with an iterator, look up several keys at once with
// MultiGet, and reopen the database to see that the writes lasted.
//
//	go run ./examples/quickstart
//
// It exits with status 0 when every step behaved as shown, 1 otherwise.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/shaledb/shale/driver"
	// Importing the engine registers the "shale" driver, as importing a
	// database/sql driver does. The program itself only talks to the
	// façade.
	_ "github.com/shaledb/shale/engine"
)

func main() {
	log.SetFlags(0)
	if err := run(); err != nil {
		log.Fatal("quickstart: ", err)
	}
}

func run() error {
	// A DSN is a directory plus optional parameters; ":memory:" would give
	// a database that vanishes on Close. A temporary directory lets us show
	// a reopen at the end.
	dir, err := os.MkdirTemp("", "shale-quickstart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	// Open parses the DSN at once but opens the files on first use, like
	// sql.Open; Ping opens them now, so a bad directory fails here.
	db, err := driver.Open("shale", dir)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	if err := db.Ping(ctx); err != nil {
		return err
	}

	// Put, Get, Delete. Every method takes a context first: it can cancel
	// the call, and it carries the read options (see examples/readoptions).
	if err := db.Put(ctx, []byte("greeting"), []byte("hello, shale")); err != nil {
		return err
	}
	v, err := db.Get(ctx, []byte("greeting"))
	if err != nil {
		return err
	}
	fmt.Printf("Get greeting = %q\n", v) // the slice is ours to keep
	if err := db.Delete(ctx, []byte("greeting")); err != nil {
		return err
	}
	// A missing key is an error matching driver.ErrNotFound.
	if _, err := db.Get(ctx, []byte("greeting")); !errors.Is(err, driver.ErrNotFound) {
		return fmt.Errorf("Get after Delete: got %v, want ErrNotFound", err)
	}
	fmt.Println("Get greeting after Delete: not found")

	// A Batch applies all its writes atomically and in order: readers see
	// none or all of them. Put copies its arguments, so buffers can be
	// reused at once.
	var b driver.Batch
	for _, kv := range [][2]string{
		{"fruit:apple", "red"}, {"fruit:banana", "yellow"}, {"fruit:cherry", "dark red"},
		{"veg:carrot", "orange"}, {"veg:kale", "green"},
	} {
		b.Put([]byte(kv[0]), []byte(kv[1]))
	}
	b.Delete([]byte("fruit:banana")) // later in the batch, so it wins
	if err := db.Write(ctx, &b); err != nil {
		return err
	}
	fmt.Printf("wrote a batch of %d operations\n", b.Len())

	// An iterator over [fruit:, fruit;) — ';' is the byte after ':', so the
	// upper bound ends the "fruit:" prefix. Key and Value belong to the
	// iterator and are valid until its next move: copy them to keep them.
	it, err := db.NewIterator(ctx, &driver.IterOptions{LowerBound: []byte("fruit:"), UpperBound: []byte("fruit;")})
	if err != nil {
		return err
	}
	var fruits []string
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Printf("  %s = %s\n", it.Key(), it.Value())
		fruits = append(fruits, string(it.Key()))
	}
	// Close reports any error that stopped the iteration early.
	if err := it.Close(); err != nil {
		return err
	}
	if len(fruits) != 2 {
		return fmt.Errorf("iterator saw %v, want fruit:apple and fruit:cherry", fruits)
	}

	// MultiGet looks up many keys in one call; a missing key is a nil
	// entry rather than an error.
	keys := [][]byte{[]byte("fruit:apple"), []byte("fruit:banana"), []byte("veg:kale")}
	vals, err := db.MultiGet(ctx, keys)
	if err != nil {
		return err
	}
	for i, v := range vals {
		if v == nil {
			fmt.Printf("MultiGet %s: not found\n", keys[i])
		} else {
			fmt.Printf("MultiGet %s = %s\n", keys[i], v)
		}
	}
	if vals[1] != nil || string(vals[2]) != "green" {
		return fmt.Errorf("MultiGet returned %q", vals)
	}

	// Close, reopen: the writes were logged, so they are still there.
	if err := db.Close(); err != nil {
		return err
	}
	db2, err := driver.Open("shale", dir)
	if err != nil {
		return err
	}
	defer db2.Close()
	if err := db2.Ping(ctx); err != nil { // Open is lazy: connect now
		return err
	}
	v, err = db2.Get(ctx, []byte("veg:carrot"))
	if err != nil {
		return err
	}
	fmt.Printf("after reopening: veg:carrot = %s\n", v)
	return db2.Close()
}
