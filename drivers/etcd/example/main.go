// Command example uses shale's driver façade over an etcd cluster: it writes,
// reads, scans, runs a transaction and verifies the members' data in one
// namespace of a cluster that is already running, then prints the reads'
// statistics per IO activity.
//
//	go run ./example -dsn '127.0.0.1:2379/example'
//	SHALE_ETCD_DSN='10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379/app?request_timeout=2s' go run ./example
//
// The DSN names the members' client addresses and a namespace; see the
// package documentation of github.com/shaledb/shale/drivers/etcd for its
// parameters. The program starts no etcd itself. It deletes the keys it
// wrote before it exits, and exits with status 0 when every step behaved as
// shown, 1 otherwise.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/shaledb/shale/driver"
	// Importing the etcd driver registers it as "etcd".
	"github.com/shaledb/shale/drivers/etcd"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
)

func main() {
	log.SetFlags(0)
	dsn := flag.String("dsn", os.Getenv("SHALE_ETCD_DSN"),
		"the cluster and namespace, host:port[,host:port...]/namespace[?params] (default $SHALE_ETCD_DSN)")
	flag.Parse()
	if *dsn == "" {
		log.Fatal("example: no DSN: give -dsn or set SHALE_ETCD_DSN")
	}
	if err := run(*dsn); err != nil {
		log.Fatal("example: ", err)
	}
}

func run(dsn string) error {
	// Statistics at the level that records the per-activity histograms.
	d, err := driver.ParseDSN(dsn)
	if err != nil {
		return err
	}
	d.Params = append(d.Params, driver.Param{Key: "stats_level", Value: "all"})
	db, err := driver.Open(etcd.DriverName, d.String())
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Open is lazy, as sql.Open is: connect now, so an unreachable cluster
	// fails here.
	if err := db.Ping(ctx); err != nil {
		return err
	}

	// Writes: a Put is one RPC, a Batch one etcd Txn.
	if err := db.Put(ctx, []byte("greeting"), []byte("hello, etcd")); err != nil {
		return err
	}
	var b driver.Batch
	for _, kv := range [][2]string{{"fruit:apple", "red"}, {"fruit:banana", "yellow"}, {"fruit:cherry", "dark red"}} {
		b.Put([]byte(kv[0]), []byte(kv[1]))
	}
	if err := db.Write(ctx, &b); err != nil {
		return err
	}
	defer cleanUp(db)

	v, err := db.Get(ctx, []byte("greeting"))
	if err != nil {
		return err
	}
	fmt.Printf("Get greeting = %q\n", v)

	// A MultiGet reads one snapshot; nil means absent.
	vals, err := db.MultiGet(ctx, [][]byte{[]byte("fruit:cherry"), []byte("fruit:durian"), []byte("greeting")})
	if err != nil {
		return err
	}
	fmt.Printf("MultiGet = %q, %v, %q\n", vals[0], vals[1] == nil, vals[2])

	// An iterator reads the revision of NewIterator, a page of keys per RPC.
	// Its reads carry ReadOptions from the context: here a rate-limiter
	// priority (charged only with the DSN's rate_limit).
	scanCtx := ioctx.WithReadOptions(ctx, ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityLow})
	it, err := db.NewIterator(scanCtx, &driver.IterOptions{LowerBound: []byte("fruit:"), UpperBound: []byte("fruit;")})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Printf("  %s = %s\n", it.Key(), it.Value())
	}
	if err := it.Close(); err != nil {
		return err
	}

	// A transaction reads a snapshot and commits with a comparison of every
	// key it read or wrote; a concurrent change is ErrConflict.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if _, err := tx.Get(ctx, []byte("fruit:apple")); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Put(ctx, []byte("fruit:apple"), []byte("green")); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := db.Put(ctx, []byte("fruit:apple"), []byte("yellow")); err != nil { // someone else
		_ = tx.Rollback()
		return err
	}
	err = tx.Commit()
	if !errors.Is(err, driver.ErrConflict) {
		return fmt.Errorf("commit after a concurrent write: %v, want ErrConflict", err)
	}
	fmt.Println("Commit after a concurrent write: conflict")

	// VerifyChecksum compares every member's HashKV at one revision;
	// VerifyFileChecksums checks the cluster's CORRUPT alarms.
	if err := db.VerifyChecksum(ctx); err != nil {
		return err
	}
	if err := db.VerifyFileChecksums(ctx); err != nil {
		return err
	}
	fmt.Println("VerifyChecksum, VerifyFileChecksums: ok")

	// Each read RPC was timed into its activity's histogram.
	st := db.Statistics()
	for _, h := range []statistics.Histogram{statistics.FileReadGetMicros, statistics.FileReadMultiGetMicros,
		statistics.FileReadDBIteratorMicros, statistics.FileReadVerifyDBChecksumMicros,
		statistics.FileReadVerifyFileChecksumsMicros} {
		d := st.HistogramData(h)
		fmt.Printf("%s: %d RPCs, mean %.0f µs\n", h, d.Count, d.Average)
	}
	return nil
}

// cleanUp deletes the keys the example wrote.
func cleanUp(db *driver.DB) {
	var b driver.Batch
	for _, k := range []string{"greeting", "fruit:apple", "fruit:banana", "fruit:cherry"} {
		b.Delete([]byte(k))
	}
	if err := db.Write(context.Background(), &b); err != nil {
		log.Print("example: deleting the keys written: ", err)
	}
}
