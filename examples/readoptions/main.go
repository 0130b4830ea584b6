// Command readoptions shows how a read's options travel in its context: the
// rate-limiter priority and a deadline set with ioctx.WithReadOptions, a
// session (driver.Conn) whose default options every read inherits, the
// RocksDB error for a read tagged with another API's IO activity, and a
// cancelled context.
//
//	go run ./examples/readoptions
//
// Reads are charged to the rate limiter only at a priority other than
// PriorityTotal, the default; the example counts the limiter's requests to
// show which reads were charged. It exits 0 when everything behaved as
// shown, 1 otherwise.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/shaledb/shale/driver"
	_ "github.com/shaledb/shale/engine" // registers the "shale" driver
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
)

func main() {
	log.SetFlags(0)
	if err := run(); err != nil {
		log.Fatal("readoptions: ", err)
	}
}

func run() error {
	// An in-memory database with a rate limiter for reads, and no block
	// cache, so that every Get below reads its table file (one read per
	// Get) and the limiter sees it.
	db, err := driver.Open("shale", ":memory:?rate_limit=64MiB&rate_limit_mode=reads&block_cache_size=0")
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	if err := db.Ping(ctx); err != nil { // Open is lazy: connect now, so a bad DSN fails here
		return err
	}
	key := []byte("k")
	if err := db.Put(ctx, key, []byte("v")); err != nil {
		return err
	}
	// Reads from the memtable touch no file; flush so they do.
	if err := db.Flush(ctx); err != nil {
		return err
	}
	st := db.Statistics()
	charged := func() uint64 { return st.TickerCount(statistics.RateLimiterRequestsRead) }

	// 1. No ReadOptions in the context: RocksDB's defaults, priority Total,
	// which the limiter does not charge.
	before := charged()
	if _, err := db.Get(ctx, key); err != nil {
		return err
	}
	fmt.Printf("Get with the default options: %d rate-limiter requests\n", charged()-before)

	// 2. Options in the context: this Get is charged at priority User
	// (served first) and must finish within a second. The façade reads the
	// options once, at the call, so code below the call never looks them
	// up again.
	userCtx := ioctx.WithReadOptions(ctx, ioctx.ReadOptions{
		RateLimiterPriority: ioctx.PriorityUser,
		Deadline:            time.Now().Add(time.Second),
	})
	before = charged()
	if _, err := db.Get(userCtx, key); err != nil {
		return err
	}
	fmt.Printf("Get at priority %s: %d rate-limiter request(s)\n", ioctx.PriorityUser, charged()-before)

	// 3. A session: a Conn's reads inherit the options of the context it
	// was made with, so a background job sets its priority once.
	conn, err := db.Conn(ioctx.WithReadOptions(ctx, ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityLow}))
	if err != nil {
		return err
	}
	defer conn.Close()
	fmt.Printf("session default priority: %s\n", conn.ReadOptions().RateLimiterPriority)
	before = charged()
	if _, err := conn.Get(ctx, key); err != nil {
		return err
	}
	if _, err := conn.MultiGet(ctx, [][]byte{key}); err != nil {
		return err
	}
	fmt.Printf("session Get and MultiGet: %d rate-limiter requests\n", charged()-before)
	// Options in a call's context merge over the session's: this read
	// overrides the priority and adds a deadline.
	if _, err := conn.Get(ioctx.WithReadOptions(ctx, ioctx.ReadOptions{
		RateLimiterPriority: ioctx.PriorityHigh, Deadline: time.Now().Add(time.Second),
	}), key); err != nil {
		return err
	}
	fmt.Println("session Get with a per-call priority High and a deadline: ok")

	// 4. The activity tag is each API's own business: leave it Unknown and
	// Get tags its reads ActivityGet. Asking a Get to pass as a flush is
	// rejected, with RocksDB's message, before any file is read.
	_, err = db.Get(ioctx.WithReadOptions(ctx, ioctx.ReadOptions{Activity: ioctx.ActivityFlush}), key)
	if !errors.Is(err, driver.ErrInvalidArgument) {
		return fmt.Errorf("Get tagged Flush: got %v, want ErrInvalidArgument", err)
	}
	fmt.Printf("Get tagged %s: %v\n", ioctx.ActivityFlush, err)
	// The API's own activity is accepted.
	if _, err := db.Get(ioctx.WithReadOptions(ctx, ioctx.ReadOptions{Activity: ioctx.ActivityGet}), key); err != nil {
		return err
	}
	fmt.Printf("Get tagged %s: ok\n", ioctx.ActivityGet)

	// 5. A cancelled context, or a deadline already past, stops a read;
	// errors.Is tells which.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := db.Get(cancelled, key); !errors.Is(err, context.Canceled) {
		return fmt.Errorf("Get with a cancelled context: got %v, want context.Canceled", err)
	}
	fmt.Println("Get with a cancelled context: context.Canceled")
	past := ioctx.WithReadOptions(ctx, ioctx.ReadOptions{Deadline: time.Now().Add(-time.Second)})
	if _, err := db.Get(past, key); !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("Get past its deadline: got %v, want context.DeadlineExceeded", err)
	}
	fmt.Println("Get past its ReadOptions deadline: context.DeadlineExceeded")
	return nil
}
