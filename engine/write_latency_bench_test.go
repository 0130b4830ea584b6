package engine

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"
)

// BenchmarkPutAfter times single unsynced puts (YCSB rows: 1,140-byte
// values under 24-byte keys) made after other work, as YCSB's workloads D
// and E interleave them: 19 Gets, 19 scans of 50 rows, or a millisecond of
// spinning. A put after scans (YCSB E) took 47 µs at its median while it
// woke the WAL's background goroutine, whose thread had gone to sleep,
// against 1.6 after Gets. put-p50-ns and put-p90-ns, the puts alone, are
// the figures to compare; ns/op is the whole round, the other work
// included.
func BenchmarkPutAfter(b *testing.B) {
	dir, err := os.MkdirTemp(benchBaseDir(), "shale-bench-putafter-")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	db, err := openDatabase(dir, &Options{BlockCacheSize: 64 << 20, WriteBufferSize: 64 << 20,
		BloomBitsPerKey: 10, Compression: CompressionSnappy})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	rng := rand.New(rand.NewPCG(1, 2))
	key := func() []byte { return fmt.Appendf(nil, "user%019d", rng.Uint64()>>1) }
	val := make([]byte, 1140)
	const rows = 100_000
	for range rows {
		if err := db.Put(bgCtx, key(), val); err != nil {
			b.Fatal(err)
		}
	}
	work := map[string]func(){
		"gets": func() {
			for range 19 {
				_, _ = db.Get(bgCtx, key())
			}
		},
		"scans": func() {
			for range 19 {
				it, err := db.NewIterator(bgCtx, nil)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for ok := it.SeekGE(key()); ok && n < 50; ok = it.Next() {
					n++
				}
				if err := it.Close(); err != nil {
					b.Fatal(err)
				}
			}
		},
		"spin": func() {
			for start := time.Now(); time.Since(start) < time.Millisecond; {
			}
		},
	}
	for _, name := range []string{"gets", "scans", "spin"} {
		b.Run("after="+name, func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				// Not StopTimer: it reads the memory statistics, which stops
				// the world and wakes the runtime's threads.
				work[name]()
				k := key()
				start := time.Now()
				if err := db.Put(bgCtx, k, val); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "put-p50-ns")
			b.ReportMetric(float64(lat[len(lat)*9/10].Nanoseconds()), "put-p90-ns")
		})
	}
}
