package readpath_test

import (
	"context"
	"fmt"
	"log"

	"github.com/shaledb/shale/driver"
	_ "github.com/shaledb/shale/engine" // registers the driver "shale"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
)

// A read's options travel in its context, from the façade to the file
// reader: this Get is tagged with its own activity by the façade, and its
// one table read is timed in the aggregate histogram and in the Get
// activity's own, which the level "all" records. A read that claims another
// API's activity is refused before it reaches the engine.
func Example() {
	ctx := context.Background()
	db, err := driver.Open("shale", ":memory:?stats_level=all&block_cache_size=0")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(ctx); err != nil {
		log.Fatal(err)
	}
	if err := db.Put(ctx, []byte("k"), []byte("v")); err != nil {
		log.Fatal(err)
	}
	if err := db.Flush(ctx); err != nil { // the value is now in a table file
		log.Fatal(err)
	}
	st := db.Statistics()
	st.Reset()

	low := ioctx.WithReadOptions(ctx, ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityLow})
	if _, err := db.Get(low, []byte("k")); err != nil {
		log.Fatal(err)
	}
	fmt.Println("sst reads:", st.HistogramData(statistics.SSTReadMicros).Count > 0)
	fmt.Println("get reads:", st.HistogramData(statistics.FileReadGetMicros).Count > 0)
	fmt.Println("multiget reads:", st.HistogramData(statistics.FileReadMultiGetMicros).Count)

	wrong := ioctx.WithReadOptions(ctx, ioctx.ReadOptions{Activity: ioctx.ActivityMultiGet})
	_, err = db.Get(wrong, []byte("k"))
	fmt.Println(err)
	// Output:
	// sst reads: true
	// get reads: true
	// multiget reads: 0
	// Can only call Get with `ReadOptions::io_activity` is `Env::IOActivity::kUnknown` or `Env::IOActivity::kGet`, not `Env::IOActivity::kMultiGet`
}
