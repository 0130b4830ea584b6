package sstable

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
)

// BenchmarkGetIndexFilter measures a Get whose data block is cached, of a
// key present and of one the filter rules out, with the index and filter
// in the Reader (meta=off) and in the block cache (meta=on), where a Get
// makes one (absent) or two (present) more cache lookups.
func BenchmarkGetIndexFilter(b *testing.B) {
	es := genEntries(rand.New(rand.NewPCG(1, 2)), 20000, 100)
	data := buildTable(b, WriterOptions{BloomBitsPerKey: 10, Compression: compress.Snappy,
		Checksum: checksum.XXHash64}, es)
	for _, meta := range []bool{false, true} {
		for _, present := range []bool{true, false} {
			b.Run(fmt.Sprintf("meta=%t/present=%t", meta, present), func(b *testing.B) {
				r := openTable(b, data, openConfig{cache: cache.New(64 << 20), cacheMeta: meta})
				rng := rand.New(rand.NewPCG(1, 2))
				keys := make([][]byte, 4096)
				for i := range keys {
					keys[i] = es[rng.IntN(len(es))].key.UserKey
					if !present {
						keys[i] = fmt.Appendf(nil, "%sx", keys[i])
					}
				}
				ctx := context.Background()
				for _, k := range keys { // warm the cache
					_, _, _, pin, _ := r.Get(ctx, verifyEnv, k, base.MaxSeqNum)
					pin.Release()
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					_, _, found, pin, err := r.Get(ctx, verifyEnv, keys[i%len(keys)], base.MaxSeqNum)
					if err != nil || found != present {
						b.Fatal(err)
					}
					pin.Release()
					i++
				}
			})
		}
	}
}
