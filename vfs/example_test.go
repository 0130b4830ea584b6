package vfs_test

import (
	"context"
	"fmt"
	"syscall"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/engine"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

// ExampleNewMem opens a database on an in-memory filesystem: a program's
// tests run without a disk, and, unlike the ":memory:" DSN, the filesystem
// outlives Close, so the test can reopen the database.
func ExampleNewMem() {
	ctx := context.Background()
	fs := vfs.NewMem()

	db := driver.OpenDB(engine.NewConnector("/db", &engine.Options{FS: fs}))
	if err := db.Put(ctx, []byte("greeting"), []byte("hello")); err != nil {
		fmt.Println(err)
		return
	}
	if err := db.Close(); err != nil {
		fmt.Println(err)
		return
	}

	db = driver.OpenDB(engine.NewConnector("/db", &engine.Options{FS: fs}))
	defer db.Close()
	v, err := db.Get(ctx, []byte("greeting"))
	fmt.Printf("%s %v\n", v, err)
	// Output:
	// hello <nil>
}

// ExampleMemFS_CrashClone simulates a crash: CrashClone keeps only what was
// made durable. A write followed by SyncWAL survives; a later write that
// was acknowledged but never synced is lost, as it may be after a power
// failure.
func ExampleMemFS_CrashClone() {
	ctx := context.Background()
	fs := vfs.NewMem()

	db := driver.OpenDB(engine.NewConnector("/db", &engine.Options{FS: fs}))
	defer db.Close()
	_ = db.Put(ctx, []byte("synced"), []byte("1"))
	if err := db.SyncWAL(ctx); err != nil {
		fmt.Println(err)
		return
	}
	_ = db.Put(ctx, []byte("unsynced"), []byte("2"))

	// The machine crashes here: recover from what was durable.
	crashed := fs.CrashClone()
	db2 := driver.OpenDB(engine.NewConnector("/db", &engine.Options{FS: crashed}))
	defer db2.Close()
	for _, k := range []string{"synced", "unsynced"} {
		v, err := db2.Get(ctx, []byte(k))
		fmt.Printf("%s: %q found=%t\n", k, v, !errors.Is(err, driver.ErrNotFound))
	}
	// Output:
	// synced: "1" found=true
	// unsynced: "" found=false
}

// Example_diskFull runs a database on a filesystem that fills up: once the
// budget is spent, a write fails with an error the program can recognize
// (ENOSPC), and after space is freed the database resumes writing. The
// writes are synced (Options.Sync), so each reaches the WAL file before it
// is acknowledged; an unsynced write may sit in the WAL's buffer, and the
// failure would surface at a later write or SyncWAL.
func Example_diskFull() {
	ctx := context.Background()
	full := errorfs.NewDiskFull(1 << 30)
	fs := errorfs.Wrap(vfs.NewMem(), full)

	db := driver.OpenDB(engine.NewConnector("/db", &engine.Options{FS: fs, Sync: true}))
	defer db.Close()
	if err := db.Put(ctx, []byte("a"), []byte("1")); err != nil {
		fmt.Println(err)
		return
	}

	full.SetBudget(full.Used()) // the disk is now full
	err := db.Put(ctx, []byte("b"), []byte("2"))
	fmt.Println("no space:", errors.Is(err, syscall.ENOSPC))
	fmt.Println("injected:", errors.Is(err, errorfs.ErrInjected))
	fmt.Println(err)

	full.SetBudget(1 << 30) // space was freed
	if err := db.Resume(ctx); err != nil {
		fmt.Println("resume:", err)
		return
	}
	fmt.Println("after resume:", db.Put(ctx, []byte("c"), []byte("3")))
	// Output:
	// no space: true
	// injected: true
	// engine: background WAL write failed (no space left on device): writes are stopped until space is freed; the database flushes the memtables and switches to a new WAL by itself, retrying with backoff, and resumes writes once that succeeds, or call DB.Resume to retry now; a write that returns this error was not applied: engine: syncing WAL 000001: wal: writing 24 bytes at offset 24: engine: writing the WAL: write /db/000001.log: no space left on device
	// after resume: <nil>
}
