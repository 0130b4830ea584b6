// Command backup shows the write side of shale's façade for a service that
// keeps a live database and takes consistent backups of it:
//
//   - a Snapshot reads the database as of one moment while writes go on;
//   - DeleteRange drops a whole key range (expired sessions) in one write;
//   - a write made with ioctx.WriteOptions{Sync: true} is durable when it
//     returns, and SyncWAL makes the writes before it durable after the fact;
//   - Checkpoint writes an openable copy of the database into a new
//     directory, hard-linking its table files;
//   - the copy opens as a database of its own, holding exactly the writes
//     made before the checkpoint.
//
// Run it with:
//
//	go run ./examples/backup
//
// It exits with status 0 when every step behaved as shown, 1 otherwise.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/shaledb/shale/driver"
	_ "github.com/shaledb/shale/engine" // registers the "shale" driver
	"github.com/shaledb/shale/ioctx"
)

func main() {
	log.SetFlags(0)
	if err := run(); err != nil {
		log.Fatal("backup: ", err)
	}
}

func run() error {
	root, err := os.MkdirTemp("", "shale-backup-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	live := filepath.Join(root, "live")
	db, err := driver.Open("shale", live)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	if err := db.Ping(ctx); err != nil { // Open is lazy: connect now, so a bad DSN fails here
		return err
	}

	// Sessions and one account record. A Batch applies its writes
	// atomically; it can be read back in order before it is written.
	var b driver.Batch
	for i := range 5 {
		b.Put(fmt.Appendf(nil, "session:%02d", i), []byte("active"))
	}
	b.Put([]byte("account:alice"), []byte("balance=100"))
	fmt.Printf("batch: %d writes, %d bytes\n", b.Len(), b.Size())
	if err := db.Write(ctx, &b); err != nil {
		return err
	}

	// A snapshot sees the database as it is now, whatever follows.
	snap, err := db.NewSnapshot(ctx)
	if err != nil {
		return err
	}
	defer snap.Close()

	// Expire sessions 00 to 02 with one range deletion ([start, end)).
	if err := db.DeleteRange(ctx, []byte("session:00"), []byte("session:03")); err != nil {
		return err
	}
	// A durable write: it returns once the WAL is fsynced.
	durable := ioctx.WithWriteOptions(ctx, ioctx.WriteOptions{Sync: true})
	if err := db.Put(durable, []byte("account:alice"), []byte("balance=70")); err != nil {
		return err
	}

	live0, err := countPrefix(ctx, db, "session:")
	if err != nil {
		return err
	}
	snap0, err := countPrefix(ctx, snap, "session:")
	if err != nil {
		return err
	}
	fmt.Printf("sessions: %d live, %d in the snapshot\n", live0, snap0)
	old, err := snap.Get(ctx, []byte("account:alice"))
	if err != nil {
		return err
	}
	cur, err := db.Get(ctx, []byte("account:alice"))
	if err != nil {
		return err
	}
	fmt.Printf("account:alice: %s now, %s in the snapshot\n", cur, old)

	// Make every write so far durable, then back up.
	if err := db.SyncWAL(ctx); err != nil {
		return err
	}
	backup := filepath.Join(root, "backup")
	if err := db.Checkpoint(ctx, backup); err != nil {
		return err
	}
	// Writes after the checkpoint are not in it.
	if err := db.Put(ctx, []byte("account:bob"), []byte("balance=5")); err != nil {
		return err
	}
	if err := db.Checkpoint(ctx, backup); errors.Is(err, driver.ErrInvalidArgument) {
		fmt.Println("a second Checkpoint into the same directory is refused")
	} else {
		return fmt.Errorf("a second Checkpoint into %s returned %v", backup, err)
	}

	// The backup is a database of its own.
	bdb, err := driver.Open("shale", backup)
	if err != nil {
		return err
	}
	defer bdb.Close()
	if err := bdb.Ping(ctx); err != nil { // Open is lazy: connect now
		return err
	}
	n, err := countPrefix(ctx, bdb, "session:")
	if err != nil {
		return err
	}
	v, err := bdb.Get(ctx, []byte("account:alice"))
	if err != nil {
		return err
	}
	_, err = bdb.Get(ctx, []byte("account:bob"))
	switch {
	case errors.Is(err, driver.ErrNotFound):
	case err == nil:
		return errors.New("the backup holds a write made after the checkpoint")
	default:
		return err
	}
	fmt.Printf("backup: %d sessions, account:alice %s, account:bob not found\n", n, v)
	return nil
}

// iterable is what a DB and a Snapshot have in common for scans.
type iterable interface {
	NewIterator(ctx context.Context, opts *driver.IterOptions) (*driver.Iterator, error)
}

// countPrefix counts the keys of r that start with prefix.
func countPrefix(ctx context.Context, r iterable, prefix string) (int, error) {
	it, err := r.NewIterator(ctx, &driver.IterOptions{LowerBound: []byte(prefix), UpperBound: []byte(prefix + "\xff")})
	if err != nil {
		return 0, err
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := it.Error(); err != nil {
		return 0, err
	}
	return n, it.Close()
}
