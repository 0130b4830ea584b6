package engine

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/cpubench"
	"github.com/shaledb/shale/vfs"
)

// rdBenchKeys is the number of live keys in the range-deletion benchmarks.
const rdBenchKeys = 20000

// rdBenchDB opens a MemFS database with rdBenchKeys keys compacted into
// tables. With tombstones it also holds range tombstones in every kind of
// source (a table of the last level, an L0 table, the memtable), all over
// keys above the live ones, so reads pay for checking them but find the
// same data.
func rdBenchDB(b *testing.B, tombstones bool) *database {
	b.Helper()
	ctx := context.Background()
	fs := vfs.NewMem()
	db, err := openDatabase("/db", &Options{FS: fs, DisableAutoCompactions: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range rdBenchKeys {
		if err := db.Put(ctx, key(i), value(rng, 100)); err != nil {
			b.Fatal(err)
		}
	}
	if tombstones {
		must(b, db.DeleteRange(ctx, key(rdBenchKeys), key(rdBenchKeys+100)))
	}
	must(b, db.Flush(ctx))
	must(b, db.Compact(ctx, nil, nil))
	if tombstones {
		must(b, db.DeleteRange(ctx, key(rdBenchKeys+200), key(rdBenchKeys+300)))
		must(b, db.Flush(ctx))
		must(b, db.DeleteRange(ctx, key(rdBenchKeys+400), key(rdBenchKeys+500)))
	}
	return db
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRangeDelGet times a Get of a random live key in a database
// without range tombstones and in one with tombstones that cover none of
// the keys read: the cost of checking them.
func BenchmarkRangeDelGet(b *testing.B) {
	for _, tc := range []struct {
		name       string
		tombstones bool
	}{{"none", false}, {"tombstones", true}} {
		b.Run(tc.name, func(b *testing.B) {
			db := rdBenchDB(b, tc.tombstones)
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(2, 2))
			b.ReportAllocs()
			stop := cpubench.Start(b)
			for b.Loop() {
				if _, err := db.Get(ctx, key(rng.IntN(rdBenchKeys))); err != nil {
					b.Fatal(err)
				}
			}
			stop()
		})
	}
}

// BenchmarkRangeDelNext times Next over the live keys (wrapping to First),
// without and with range tombstones that cover none of them.
func BenchmarkRangeDelNext(b *testing.B) {
	for _, tc := range []struct {
		name       string
		tombstones bool
	}{{"none", false}, {"tombstones", true}} {
		b.Run(tc.name, func(b *testing.B) {
			db := rdBenchDB(b, tc.tombstones)
			it, err := db.NewIterator(context.Background(), nil)
			must(b, err)
			defer func() { _ = it.Close() }()
			it.First()
			b.ReportAllocs()
			stop := cpubench.Start(b)
			for b.Loop() {
				if !it.Next() && !it.First() {
					b.Fatal(it.Error())
				}
			}
			stop()
		})
	}
}

// BenchmarkDelete10k compares deleting 10,000 consecutive keys with one
// DeleteRange and with 10,000 point Deletes; one op is the whole deletion.
func BenchmarkDelete10k(b *testing.B) {
	ctx := context.Background()
	b.Run("DeleteRange", func(b *testing.B) {
		db := rdBenchDB(b, false)
		stop := cpubench.Start(b)
		for b.Loop() {
			must(b, db.DeleteRange(ctx, key(5000), key(15000)))
		}
		stop()
	})
	b.Run("Delete", func(b *testing.B) {
		db := rdBenchDB(b, false)
		stop := cpubench.Start(b)
		for b.Loop() {
			for i := 5000; i < 15000; i++ {
				must(b, db.Delete(ctx, key(i)))
			}
		}
		stop()
	})
}

// BenchmarkScanDeleted10k times a full scan (First to the end) of a
// database whose middle 10,000 of 20,000 keys were just deleted, by one
// DeleteRange or by 10,000 point Deletes: the scan seeks past the range
// tombstone, but steps over every point tombstone.
func BenchmarkScanDeleted10k(b *testing.B) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		delete func(db *database)
	}{
		{"DeleteRange", func(db *database) { must(b, db.DeleteRange(ctx, key(5000), key(15000))) }},
		{"Delete", func(db *database) {
			for i := 5000; i < 15000; i++ {
				must(b, db.Delete(ctx, key(i)))
			}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			db := rdBenchDB(b, false)
			tc.delete(db)
			b.ReportAllocs()
			stop := cpubench.Start(b)
			defer stop()
			for b.Loop() {
				it, err := db.NewIterator(ctx, nil)
				must(b, err)
				n := 0
				for ok := it.First(); ok; ok = it.Next() {
					n++
				}
				must(b, it.Close())
				if n != rdBenchKeys-10000 {
					b.Fatalf("scanned %d keys", n)
				}
			}
		})
	}
}
