// Command verify runs a rate-limited background verification next to a
// foreground workload: a goroutine checks every block checksum
// (VerifyChecksum) and every whole-file checksum (VerifyFileChecksums) at
// rate-limiter priority Low, while the foreground keeps doing Gets at the
// default priority, which the limiter does not charge.
//
//	go run ./examples/verify
//
// The rate limit makes the verification take about two seconds, spreading
// its reads out instead of competing for the disk with the foreground; the
// rate limiter's tickers show what it charged. It exits 0 when the database
// verified clean and the foreground never waited for the limiter, 1
// otherwise.
package main

import (
	"context"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"time"

	"github.com/shaledb/shale/driver"
	_ "github.com/shaledb/shale/engine" // registers the "shale" driver
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
)

const (
	numKeys   = 4000
	valueSize = 500 // about 2 MiB of data
	// rateLimit is the limiter's bytes per second: the verification reads
	// the data twice (blocks, then whole files), about 4 MiB, so it takes
	// about two seconds.
	rateLimit = "2MiB"
)

func main() {
	log.SetFlags(0)
	if err := run(); err != nil {
		log.Fatal("verify: ", err)
	}
}

func run() error {
	dir, err := os.MkdirTemp("", "shale-verify-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// The limiter charges reads only (rate_limit_mode=reads), so the fill's
	// flush is not slowed.
	db, err := driver.Open("shale", dir+"?rate_limit="+rateLimit+"&rate_limit_mode=reads")
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	if err := db.Ping(ctx); err != nil { // Open is lazy: connect now, so a bad DSN fails here
		return err
	}

	// Random values, so that compression does not shrink the tables the
	// verification reads.
	rng := rand.New(rand.NewPCG(1, 2))
	value := make([]byte, valueSize)
	var b driver.Batch
	for i := range numKeys {
		for j := range value {
			value[j] = 'a' + byte(rng.IntN(26))
		}
		b.Put(key(i), value) // Put copies value
		if b.Len() == 100 {
			if err := db.Write(ctx, &b); err != nil {
				return err
			}
			b.Reset()
		}
	}
	if err := db.Flush(ctx); err != nil {
		return err
	}
	fmt.Printf("wrote %d keys of %d bytes; rate limit %s/s for reads\n", numKeys, valueSize, rateLimit)

	// The background job: its context carries priority Low, so each of its
	// file reads waits for the limiter's tokens.
	bgCtx := ioctx.WithReadOptions(ctx, ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityLow})
	type result struct {
		name string
		took time.Duration
		err  error
	}
	done := make(chan result)
	go func() {
		for _, v := range []struct {
			name string
			fn   func(context.Context) error
		}{{"VerifyChecksum", db.VerifyChecksum}, {"VerifyFileChecksums", db.VerifyFileChecksums}} {
			start := time.Now()
			err := v.fn(bgCtx)
			done <- result{v.name, time.Since(start), err}
		}
		close(done)
	}()

	// The foreground: Gets at the default priority (PriorityTotal, not
	// charged) until the background job is over.
	var hist statistics.HistogramStat
	var results []result
	for finished := false; !finished; {
		select {
		case r, ok := <-done:
			if !ok {
				finished = true
				continue
			}
			results = append(results, r)
		default:
		}
		start := time.Now()
		if _, err := db.Get(ctx, key(rng.IntN(numKeys))); err != nil {
			return err
		}
		hist.Add(uint64(time.Since(start).Microseconds()))
	}

	for _, r := range results {
		if r.err != nil {
			return fmt.Errorf("%s: %w", r.name, r.err)
		}
		fmt.Printf("background %-20s ok in %.1fs at priority %s\n", r.name, r.took.Seconds(), ioctx.PriorityLow)
	}
	fmt.Printf("foreground Gets: %d, p50 %.0f µs, p99 %.0f µs, never charged (priority %s)\n",
		hist.Count(), hist.Percentile(50), hist.Percentile(99), ioctx.PriorityTotal)

	st := db.Statistics()
	for _, t := range []statistics.Ticker{
		statistics.RateLimiterRequestsRead,
		statistics.RateLimiterBytesRead,
		statistics.RateLimiterDelayedRequestsRead,
		statistics.VerifyChecksumReadBytes,
	} {
		fmt.Printf("  %-42s %d\n", t, st.TickerCount(t))
	}
	// Every byte the limiter let through was the verification's: the
	// foreground was not charged.
	charged, verified := st.TickerCount(statistics.RateLimiterBytesRead), st.TickerCount(statistics.VerifyChecksumReadBytes)
	if charged == 0 || charged > verified {
		return fmt.Errorf("the limiter charged %d bytes; the verification read %d", charged, verified)
	}
	return nil
}

func key(i int) []byte { return fmt.Appendf(nil, "key%06d", i) }
