package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"
)

// BenchmarkFillConcurrent is BenchmarkFillRandom's fill (fillKeys 256-byte
// values, one Put each, a fresh database with a 64 MiB memtable per
// operation, statistics off) by several writers at once, so writes commit
// in groups: the path where the leader bounds its group by the memtable's
// room. One operation is a whole fill; ns/write is the figure to compare.
func BenchmarkFillConcurrent(b *testing.B) {
	for _, writers := range []int{4, 16} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) { benchFillConcurrent(b, writers, 1) })
	}
}

// BenchmarkFillConcurrentBatches is BenchmarkFillConcurrent with batches of
// 100 puts, the shape of a commit group whose followers bring many records
// each. ns/write is per key.
func BenchmarkFillConcurrentBatches(b *testing.B) {
	for _, writers := range []int{1, 4} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) { benchFillConcurrent(b, writers, 100) })
	}
}

// benchFillConcurrent fills a fresh database per operation from writers
// goroutines, each writing batches of batchKeys puts (1: a Put each).
func benchFillConcurrent(b *testing.B, writers, batchKeys int) {
	perm := rand.New(rand.NewPCG(1, 2)).Perm(fillKeys)
	ctx := context.Background()
	var elapsed time.Duration
	for b.Loop() {
		b.StopTimer()
		dir, err := os.MkdirTemp(benchBaseDir(), "shale-bench-fillc-")
		if err != nil {
			b.Fatal(err)
		}
		db, err := openDatabase(dir, &Options{BlockCacheSize: 32 << 20, BloomBitsPerKey: 10,
			Compression: CompressionSnappy, WriteBufferSize: 64 << 20, DisableStatistics: true})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		b.StartTimer()
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				var key [benchKeySize]byte
				wb := newWriteBatch()
				for i := w * batchKeys; i < fillKeys; i += writers * batchKeys {
					var err error
					if batchKeys == 1 {
						k := perm[i]
						err = db.Put(ctx, benchKey(key[:], k, 0), benchValue(k, 256))
					} else {
						wb.Reset()
						for _, k := range perm[i:min(i+batchKeys, fillKeys)] {
							wb.Put(benchKey(key[:], k, 0), benchValue(k, 256))
						}
						err = db.Write(ctx, wb, nil)
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		b.StopTimer()
		elapsed += time.Since(start)
		if err := db.Close(); err != nil {
			b.Error(err)
		}
		_ = os.RemoveAll(dir)
		b.StartTimer()
	}
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N*fillKeys), "ns/write")
}
