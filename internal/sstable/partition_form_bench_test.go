package sstable

import (
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/stretchr/testify/require"
)

// partFormSeps returns the separators of an index partition of the
// benchmark table's shape: 150 data blocks of 16-byte keys (a 4 KiB
// partition), first keys 15 entries apart, written whole (the writer's
// shortened separators only make the full comparison cheaper).
func partFormSeps() [][]byte {
	var seps [][]byte
	for i := range 150 {
		seps = append(seps, base.MakeInternalKey(largeKey(make([]byte, 16), 1_000_000+15*i, 0), base.MaxSeqNum, base.KindMax).Append(nil))
	}
	return seps
}

// BenchmarkIndexForm measures decoding an index partition into each flat
// form (what a cache miss of the partition pays, besides the read) and a
// search of it (what every Get pays), and reports the form's bytes.
func BenchmarkIndexForm(b *testing.B) {
	data := indexBlock(partFormSeps())
	for _, form := range indexForms {
		b.Run("decode/"+form.name, func(b *testing.B) {
			buf := make([]byte, 64<<10)
			alloc := func(n int) []byte { return buf[:n] }
			b.ReportAllocs()
			var n int
			for b.Loop() {
				out, err := form.encode(data, alloc)
				if err != nil {
					b.Fatal(err)
				}
				n = len(out)
			}
			b.ReportMetric(float64(n), "flat-bytes")
			b.ReportMetric(float64(len(data)), "block-bytes")
		})
		b.Run("seek/"+form.name, func(b *testing.B) {
			buf, err := form.encode(data, nil)
			require.NoError(b, err)
			x := viewIndexTable(buf)
			rng := rand.New(rand.NewPCG(1, 2))
			keys := make([][]byte, 1024)
			for i := range keys {
				keys[i] = appendSearchKey(nil, largeKey(make([]byte, 16), 1_000_000+rng.IntN(150*15), 0), base.MaxSeqNum)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				x.seekGE(keys[i%len(keys)])
				i++
			}
		})
	}
}
