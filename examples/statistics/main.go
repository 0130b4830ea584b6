// Command statistics shows the per-activity read statistics: every file
// read is timed into the aggregate histogram shale.sst.read.micros and into
// the histogram of the API it serves — Get, MultiGet, the iterator and the two
// verifications each have their own (RocksDB PRs #11288 and #11444).
//
//	go run ./examples/statistics
//
// It calls each API once and prints which histograms grew, then shows that
// at the default statistics level the user-read breakdowns are not recorded
// (they cost Get 4-5% in RocksDB's measurements). It exits 0 when each API
// landed in its own histogram, 1 otherwise.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/shaledb/shale/driver"
	_ "github.com/shaledb/shale/engine" // registers the "shale" driver
	"github.com/shaledb/shale/statistics"
)

// readHistograms are the aggregate and its eight breakdowns.
var readHistograms = []statistics.Histogram{
	statistics.SSTReadMicros,
	statistics.FileReadFlushMicros,
	statistics.FileReadCompactionMicros,
	statistics.FileReadDBOpenMicros,
	statistics.FileReadGetMicros,
	statistics.FileReadMultiGetMicros,
	statistics.FileReadDBIteratorMicros,
	statistics.FileReadVerifyDBChecksumMicros,
	statistics.FileReadVerifyFileChecksumsMicros,
}

func main() {
	log.SetFlags(0)
	if err := run(); err != nil {
		log.Fatal("statistics: ", err)
	}
}

func run() error {
	// A directory rather than ":memory:", so the latencies are those of
	// real file reads.
	dir, err := os.MkdirTemp("", "shale-statistics-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// stats_level=all records the user-read breakdowns; without a block
	// cache every read goes to a file, so every call below shows up.
	db, err := driver.Open("shale", dir+"?stats_level=all&block_cache_size=0")
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	if err := db.Ping(ctx); err != nil { // Open is lazy: connect now, so a bad DSN fails here
		return err
	}
	for i := range 1000 {
		key := fmt.Appendf(nil, "key%04d", i)
		if err := db.Put(ctx, key, []byte(strings.Repeat("v", 100))); err != nil {
			return err
		}
	}
	// The flush writes a table, and reads it back to check it: its reads
	// are tagged Flush.
	if err := db.Flush(ctx); err != nil {
		return err
	}
	st := db.Statistics()
	fmt.Printf("statistics level: %s\n\n", st.Level())

	calls := []struct {
		name string
		want statistics.Histogram
		call func() error
	}{
		{"Get", statistics.FileReadGetMicros, func() error {
			_, err := db.Get(ctx, []byte("key0500"))
			return err
		}},
		{"MultiGet", statistics.FileReadMultiGetMicros, func() error {
			_, err := db.MultiGet(ctx, [][]byte{[]byte("key0001"), []byte("key0999")})
			return err
		}},
		{"Iterator", statistics.FileReadDBIteratorMicros, func() error {
			it, err := db.NewIterator(ctx, nil)
			if err != nil {
				return err
			}
			for ok := it.First(); ok; ok = it.Next() {
			}
			return it.Close()
		}},
		{"VerifyChecksum", statistics.FileReadVerifyDBChecksumMicros, func() error { return db.VerifyChecksum(ctx) }},
		{"VerifyFileChecksums", statistics.FileReadVerifyFileChecksumsMicros, func() error { return db.VerifyFileChecksums(ctx) }},
	}
	for _, c := range calls {
		before := counts(st)
		if err := c.call(); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		grew := grown(before, counts(st))
		fmt.Printf("%-20s -> %s\n", c.name, strings.Join(grew, ", "))
		// Each API's reads land in the aggregate and in its own breakdown,
		// and in no other.
		if len(grew) != 2 || !strings.HasPrefix(grew[0], statistics.SSTReadMicros.String()) ||
			!strings.HasPrefix(grew[1], c.want.String()) {
			return fmt.Errorf("%s grew %v, want %s and %s", c.name, grew, statistics.SSTReadMicros, c.want)
		}
	}

	fmt.Println()
	fmt.Printf("%-46s %6s %8s %8s\n", "histogram (latencies in µs)", "count", "p50", "p99")
	for _, h := range readHistograms {
		d := st.HistogramData(h)
		fmt.Printf("%-46s %6d %8.1f %8.1f\n", h, d.Count, d.Median, d.P99)
	}

	// At the default level (except_detailed_timers) the aggregate is still
	// recorded, but the Get breakdown is not: RocksDB gates it because
	// timing every user read into a second histogram slowed Get by 4-5%.
	st.SetLevel(statistics.DefaultLevel)
	before := counts(st)
	if _, err := db.Get(ctx, []byte("key0042")); err != nil {
		return err
	}
	grew := grown(before, counts(st))
	fmt.Printf("\nat stats_level %s, Get -> %s\n", st.Level(), strings.Join(grew, ", "))
	if len(grew) != 1 {
		return fmt.Errorf("at the default level Get grew %v, want only %s", grew, statistics.SSTReadMicros)
	}
	return nil
}

// counts returns the sample count of each read histogram.
func counts(st *statistics.Statistics) []uint64 {
	c := make([]uint64, len(readHistograms))
	for i, h := range readHistograms {
		c[i] = st.HistogramData(h).Count
	}
	return c
}

// grown names the histograms whose counts grew, with how much.
func grown(before, after []uint64) []string {
	var names []string
	for i, h := range readHistograms {
		if d := after[i] - before[i]; d > 0 {
			names = append(names, fmt.Sprintf("%s +%d", h, d))
		}
	}
	return names
}
