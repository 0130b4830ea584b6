package engine

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// BenchmarkLargeBatch builds and writes issue 12's batch (keys random
// 32-byte keys with 32-byte values, in random or sorted order) into a new
// database on disk with 64 MiB memtables, as bench/'s "one batch" row does:
// the batch becomes a memtable of its own.
func BenchmarkLargeBatch(b *testing.B) {
	const keys = 1_000_000
	for _, sorted := range []bool{false, true} {
		b.Run(fmt.Sprintf("keys=%d/sorted=%v", keys, sorted), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(12, 12))
			kbuf := make([]byte, keys*32)
			for i := range kbuf {
				kbuf[i] = byte(rng.Uint32())
			}
			ks := make([][]byte, keys)
			for i := range ks {
				ks[i] = kbuf[i*32 : (i+1)*32]
			}
			if sorted {
				slices.SortFunc(ks, bytes.Compare)
			}
			val := bytes.Repeat([]byte("v"), 32)
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				db, err := openDatabase(b.TempDir(), &Options{WriteBufferSize: 64 << 20})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				batch := newWriteBatch()
				for _, k := range ks {
					batch.Put(k, val)
				}
				if err := db.Write(context.Background(), batch, nil); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := db.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
