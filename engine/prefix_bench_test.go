package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
)

// BenchmarkPrefixScan scans one 8-byte prefix (a tenant: "t%07d") of a
// database loaded in random key order, with and without
// prefix_extractor=fixed:8. Half the scanned prefixes exist (64 keys each),
// half do not (an existence check). 32 MiB of data (8 MiB with -short) on
// an in-memory filesystem, a 4 MiB block cache, 2 MiB memtables, automatic
// compactions off so that the shape is the same on every run:
//
//   - shape=l0: every flush an L0 table spanning every tenant (20 of them),
//     the case where bounds rule nothing out and filters the most;
//
//   - shape=l6+l0: everything compacted into L6 (each tenant in one or two
//     of its tables), then a quarter of the keys overwritten in random
//     order (4 L0 tables over every tenant).
//
//     go test ./engine -run '^$' -bench PrefixScan -benchtime 20000x
func BenchmarkPrefixScan(b *testing.B) {
	size := 32 << 20
	if testing.Short() {
		size = 8 << 20
	}
	const valueSize, keysPerTenant = 100, 64
	tenants := size / (valueSize + 16) / keysPerTenant
	for _, shape := range []string{"l0", "l6+l0"} {
		for _, pe := range []PrefixExtractor{{}, {PrefixFixed, 8}} {
			b.Run("shape="+shape+"/extractor="+pe.String(), func(b *testing.B) {
				ctx := context.Background()
				st := statistics.New(statistics.LevelExceptHistogramOrTimers)
				opts := &Options{FS: vfs.NewMem(), Statistics: st, PrefixExtractor: pe,
					WriteBufferSize: 2 << 20, TargetFileSizeBase: 1 << 20, BlockCacheSize: 4 << 20,
					DisableAutoCompactions: true, Level0FileNumCompactionTrigger: 1000,
					Level0SlowdownWritesTrigger: 1000, Level0StopWritesTrigger: 1000}
				db := driver.OpenDB(NewConnector("/db", opts))
				defer db.Close()
				rng := rand.New(rand.NewPCG(1, 2))
				value := make([]byte, valueSize)
				load := func(order []int) {
					batch := new(driver.Batch)
					for i, k := range order {
						// Even tenants only: odd ones are the absent prefixes.
						batch.Put(fmt.Appendf(nil, "t%07d/%04d", 2*(k/keysPerTenant), k%keysPerTenant), value)
						if i%1000 == 999 || i == len(order)-1 {
							if err := db.Write(ctx, batch); err != nil {
								b.Fatal(err)
							}
							batch.Reset()
						}
					}
					if err := db.Flush(ctx); err != nil {
						b.Fatal(err)
					}
				}
				order := rng.Perm(tenants * keysPerTenant)
				load(order)
				if shape == "l6+l0" {
					if err := db.Compact(ctx, nil, nil); err != nil {
						b.Fatal(err)
					}
					load(order[:len(order)/4])
				}
				st.Reset()
				b.ResetTimer()
				for i := range b.N {
					t := rng.IntN(2 * tenants)
					it, err := db.NewIterator(ctx, &driver.IterOptions{Prefix: fmt.Appendf(nil, "t%07d", t)})
					if err != nil {
						b.Fatal(err)
					}
					n := 0
					for ok := it.First(); ok; ok = it.Next() {
						n++
					}
					if err := it.Close(); err != nil {
						b.Fatal(err)
					}
					if want := keysPerTenant * (1 - t%2); n != want {
						b.Fatalf("scan %d of prefix t%07d found %d keys; want %d", i, t, n, want)
					}
				}
				b.StopTimer()
				nf := float64(b.N)
				b.ReportMetric(float64(st.TickerCount(statistics.BloomFilterPrefixChecked))/nf, "checked/op")
				b.ReportMetric(float64(st.TickerCount(statistics.BloomFilterPrefixUseful))/nf, "useful/op")
				b.ReportMetric(float64(st.TickerCount(statistics.BlockCacheDataMiss)+
					st.TickerCount(statistics.BlockCacheDataHit))/nf, "datablocks/op")
			})
		}
	}
}
