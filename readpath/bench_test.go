package readpath

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/sstable"
)

// benchLSM is 20,000 writes of 10,000 keys over two L0 tables and two
// levels (about 60 tables), with the engine's default table options and no
// memtable data, so every read goes to the tables.
func benchLSM(b *testing.B, cacheSize int64) *lsm {
	rng := rand.New(rand.NewPCG(1, 2))
	cfg := lsmConfig{keySpace: 10000, opsPerPart: 5000, mems: 0, l0: 2, levels: 2, cacheSize: cacheSize,
		writerOpts: sstable.WriterOptions{BloomBitsPerKey: 10, Compression: compress.Snappy, Checksum: checksum.XXHash64}}
	return buildLSM(b, rng, cfg)
}

func benchKeys(db *lsm, n int) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte(db.keys[rng.IntN(len(db.keys))])
	}
	return keys
}

func BenchmarkGet(b *testing.B) {
	for _, bc := range []struct {
		name  string
		cache int64
	}{{"cache=hit", 64 << 20}, {"cache=off", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			db := benchLSM(b, bc.cache)
			keys := benchKeys(db, 4096)
			ctx := context.Background()
			env := readEnv()
			for _, k := range db.keys { // open every table, fill the cache
				if v, err := Get(ctx, db.view, env, []byte(k), db.maxSeq); err == nil {
					v.Release()
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				v, err := Get(ctx, db.view, env, keys[i&4095], db.maxSeq)
				if err == nil {
					v.Release()
				}
				i++
			}
		})
	}
}

func BenchmarkMultiGet(b *testing.B) {
	for _, async := range []bool{false, true} {
		for _, batch := range []int{1, 16, 128} {
			name := fmt.Sprintf("batch=%d", batch)
			if async {
				name += "/async=true"
			}
			b.Run(name, func(b *testing.B) {
				db := benchLSM(b, 64<<20)
				keys := benchKeys(db, 4096)
				ctx := context.Background()
				env := readEnv()
				env.AsyncIO = async
				out := make([]Result, batch)
				for i := 0; i+batch <= len(keys); i += batch { // warm up
					if err := MultiGet(ctx, db.view, env, keys[i:i+batch], db.maxSeq, out); err != nil {
						b.Fatal(err)
					}
					releaseAll(out)
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					start := (i * batch) % (len(keys) - batch)
					if err := MultiGet(ctx, db.view, env, keys[start:start+batch], db.maxSeq, out); err != nil {
						b.Fatal(err)
					}
					releaseAll(out)
					i++
				}
			})
		}
	}
}

func BenchmarkIteratorNext(b *testing.B) {
	db := benchLSM(b, 64<<20)
	it := NewIterator(context.Background(), db.view, readEnv(), db.maxSeq, IterOptions{})
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() { // fill the cache
	}
	it.First()
	b.ReportAllocs()
	for b.Loop() {
		if !it.Next() {
			it.First()
		}
	}
}

func BenchmarkIteratorPrev(b *testing.B) {
	db := benchLSM(b, 64<<20)
	it := NewIterator(context.Background(), db.view, readEnv(), db.maxSeq, IterOptions{})
	defer it.Close()
	for ok := it.Last(); ok; ok = it.Prev() {
	}
	it.Last()
	b.ReportAllocs()
	for b.Loop() {
		if !it.Prev() {
			it.Last()
		}
	}
}

func BenchmarkIteratorSeekGE(b *testing.B) {
	db := benchLSM(b, 64<<20)
	keys := benchKeys(db, 4096)
	it := NewIterator(context.Background(), db.view, readEnv(), db.maxSeq, IterOptions{})
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		it.SeekGE(keys[i&4095])
		i++
	}
}
