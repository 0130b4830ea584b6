// Command transactions shows shale's transactions through the façade, which
// behave as database/sql's do: a transaction reads a snapshot taken when it
// began plus its own writes, commits atomically, and fails to commit with
// ErrConflict when another transaction committed a write to a key it wrote
// after it began.
//
//	go run ./examples/transactions
//
// It exits 0 when every step behaved as shown, 1 otherwise.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/shaledb/shale/driver"
	_ "github.com/shaledb/shale/engine" // registers the "shale" driver
)

func main() {
	log.SetFlags(0)
	if err := run(); err != nil {
		log.Fatal("transactions: ", err)
	}
}

var (
	alice = []byte("account:alice")
	bob   = []byte("account:bob")
	carol = []byte("account:carol")
)

func run() error {
	db, err := driver.Open("shale", ":memory:")
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	if err := db.Ping(ctx); err != nil { // Open is lazy: connect now, so a bad DSN fails here
		return err
	}
	if err := db.Put(ctx, alice, []byte("100")); err != nil {
		return err
	}
	if err := db.Put(ctx, bob, []byte("50")); err != nil {
		return err
	}

	// 1. Read-your-writes, invisible to others until Commit.
	tx, err := db.BeginTx(ctx, nil) // nil options: a read-write transaction
	if err != nil {
		return err
	}
	if err := tx.Put(ctx, alice, []byte("70")); err != nil {
		return err
	}
	if err := tx.Put(ctx, bob, []byte("80")); err != nil {
		return err
	}
	inTx, err := tx.MultiGet(ctx, [][]byte{alice, bob})
	if err != nil {
		return err
	}
	outside, err := db.Get(ctx, alice)
	if err != nil {
		return err
	}
	fmt.Printf("transfer 30: inside the transaction alice=%s bob=%s; outside alice=%s\n", inTx[0], inTx[1], outside)
	if err := expect(string(inTx[0]), "70"); err != nil {
		return err
	}
	if err := expect(string(outside), "100"); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	after, err := db.Get(ctx, alice)
	if err != nil {
		return err
	}
	fmt.Printf("after Commit: alice=%s\n", after)
	if err := expect(string(after), "70"); err != nil {
		return err
	}
	// A finished transaction refuses further use.
	if _, err := tx.Get(ctx, alice); !errors.Is(err, driver.ErrTxDone) {
		return fmt.Errorf("Get after Commit: got %v, want ErrTxDone", err)
	}

	// 2. A conflict: two transactions write bob; the first to commit wins,
	// and the second's Commit fails with ErrConflict (and rolls it back).
	txA, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	txB, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := txA.Put(ctx, bob, []byte("81")); err != nil {
		return err
	}
	if err := txB.Put(ctx, bob, []byte("82")); err != nil {
		return err
	}
	if err := txA.Commit(); err != nil {
		return err
	}
	err = txB.Commit()
	if !errors.Is(err, driver.ErrConflict) {
		return fmt.Errorf("second Commit: got %v, want ErrConflict", err)
	}
	fmt.Printf("two transactions wrote bob: the first committed, the second failed: %v\n", err)
	v, err := db.Get(ctx, bob)
	if err != nil {
		return err
	}
	fmt.Printf("bob=%s\n", v)
	if err := expect(string(v), "81"); err != nil {
		return err
	}

	// 3. Snapshot reads: a write committed after a transaction began is not
	// visible to it.
	snap, err := db.BeginTx(ctx, &driver.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	if err := db.Put(ctx, alice, []byte("0")); err != nil {
		return err
	}
	seen, err := snap.Get(ctx, alice)
	if err != nil {
		return err
	}
	fmt.Printf("a read-only transaction begun before alice was set to 0 still sees alice=%s\n", seen)
	if err := expect(string(seen), "70"); err != nil {
		return err
	}
	// Read-only transactions refuse writes.
	if err := snap.Put(ctx, alice, []byte("1")); !errors.Is(err, driver.ErrInvalidArgument) {
		return fmt.Errorf("Put in a read-only transaction: got %v, want ErrInvalidArgument", err)
	}
	if err := snap.Rollback(); err != nil {
		return err
	}

	// 4. Rollback discards the writes.
	txC, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := txC.Put(ctx, carol, []byte("10")); err != nil {
		return err
	}
	if err := txC.Rollback(); err != nil {
		return err
	}
	if _, err := db.Get(ctx, carol); !errors.Is(err, driver.ErrNotFound) {
		return fmt.Errorf("Get after Rollback: got %v, want ErrNotFound", err)
	}
	fmt.Println("after Rollback: carol not found")
	return nil
}

func expect(got, want string) error {
	if got != want {
		return fmt.Errorf("got %q, want %q", got, want)
	}
	return nil
}
