// Command example serves a shale database's statistics to Prometheus.
//
//	go run ./example -addr 127.0.0.1:9464
//	curl -s http://127.0.0.1:9464/metrics | grep shale_file_read_seconds_count
//
// It opens a database in a new temporary directory at stats_level=all (so
// every per-activity file-read histogram is recorded), writes and flushes
// some keys, reads them through each read API, and then serves /metrics,
// reading a few keys every half second so the counters move. It prints the
// URL it serves once it listens, and on SIGINT or SIGTERM it shuts the
// server down, closes the database, removes the directory and exits 0.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/shaledb/shale/contrib/shaleprom"
	"github.com/shaledb/shale/driver"
	_ "github.com/shaledb/shale/engine" // registers the "shale" driver
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9464", "address to serve /metrics on (port 0 picks a free one)")
	level := flag.String("stats_level", "all", "the database's stats_level")
	flag.Parse()
	log.SetFlags(0)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *level); err != nil {
		log.Fatal("example: ", err)
	}
}

func run(ctx context.Context, addr, level string) error {
	dir, err := os.MkdirTemp("", "shaleprom-example-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	db, err := driver.Open("shale", dir+"?stats_level="+level)
	if err != nil {
		return err
	}
	defer db.Close() // on the error paths; a clean exit closes below, reporting the error
	// Open is lazy, as sql.Open is: connect now, so a bad DSN fails here.
	if err := db.Ping(ctx); err != nil {
		return err
	}
	keys, err := fill(ctx, db)
	if err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(shaleprom.NewCollector(db, prometheus.Labels{"db": "example"}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Printf("serving http://%s/metrics\n", ln.Addr())

	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case err := <-served:
			return err
		case <-ctx.Done():
			shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := srv.Shutdown(shutdown); err != nil {
				return err
			}
			if err := <-served; !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return db.Close()
		case <-tick.C:
			if _, err := db.Get(ctx, keys[i%len(keys)]); err != nil && ctx.Err() == nil {
				return err
			}
		}
	}
}

// fill writes keys, flushes them to a table and reads them once through each
// read API, so each activity of shale_file_read_seconds has samples.
func fill(ctx context.Context, db *driver.DB) ([][]byte, error) {
	var keys [][]byte
	for i := range 1000 {
		k := fmt.Appendf(nil, "key%05d", i)
		keys = append(keys, k)
		if err := db.Put(ctx, k, fmt.Appendf(nil, "value %d", i)); err != nil {
			return nil, err
		}
	}
	if err := db.Flush(ctx); err != nil {
		return nil, err
	}
	for _, k := range keys[:100] {
		if _, err := db.Get(ctx, k); err != nil {
			return nil, err
		}
	}
	if _, err := db.MultiGet(ctx, keys[100:200]); err != nil {
		return nil, err
	}
	it, err := db.NewIterator(ctx, nil)
	if err != nil {
		return nil, err
	}
	for ok := it.First(); ok; ok = it.Next() {
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	if err := db.VerifyChecksum(ctx); err != nil {
		return nil, err
	}
	return keys, db.VerifyFileChecksums(ctx)
}
