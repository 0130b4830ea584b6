package engine

import (
	"context"
	"math/rand/v2"
	"runtime"
	"testing"
)

// BenchmarkReadCPU times what issue 29's read targets compare with RocksDB
// in the thread's CPU time (cpu-ns/key), which moves far less than the wall
// time on a shared machine: a copying Get hit and a MultiGet of 16 random
// keys on the base configuration (32 MiB cache over 128 MiB of tables, so
// most blocks are read), and the DBGet shape (mmap=true: no cache, no
// compression), without verifying checksums as db_basic_bench and with
// (op=get-verify), as bench/'s DBGet shape and RocksDB's db_bench there. An
// A/B comparison runs two binaries alternately, each with
// -count=1, since every configuration change reloads the database.
func BenchmarkReadCPU(b *testing.B) {
	b.Cleanup(benchCloseCached)
	const batch = 16
	for _, c := range benchVariants(b, "m") {
		for _, op := range []string{"get", "multiget", "get-verify"} {
			if c.mmap && op == "multiget" || !c.mmap && op == "get-verify" {
				continue
			}
			b.Run(benchReadName(c, false)+"/op="+op, func(b *testing.B) {
				bdb := benchOpen(b, c)
				ctx := benchReadContext(c)
				if op == "get-verify" {
					ctx = context.Background()
				}
				rng := rand.New(rand.NewPCG(1, 2))
				keys := make([][]byte, batch)
				for i := range keys {
					keys[i] = make([]byte, benchKeySize)
				}
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				b.ReportAllocs()
				total := 0
				c0, _ := threadCPU()
				for b.Loop() {
					if op != "multiget" {
						if _, err := bdb.db.Get(ctx, benchKey(keys[0], rng.IntN(bdb.keys), 0)); err != nil {
							b.Fatal(err)
						}
						total++
						continue
					}
					for i := range keys {
						benchKey(keys[i], rng.IntN(bdb.keys), 0)
					}
					vals, err := bdb.db.MultiGet(ctx, keys)
					if err != nil {
						b.Fatal(err)
					}
					for _, v := range vals {
						if v == nil {
							b.Fatal("MultiGet: a key was not found")
						}
					}
					total += batch
				}
				c1, _ := threadCPU()
				b.ReportMetric(float64(c1-c0)/float64(total), "cpu-ns/key")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(total), "ns/key")
			})
		}
	}
}
