package sstable

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"slices"
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
		seps = append(seps, base.MakeInternalKey(largeKey(make([]byte, 16), 1_000_000+15*i, 0), base.MaxSeqNum, separatorKind).Append(nil))
	}
	return seps
}

// BenchmarkIndexForm measures decoding an index partition into each flat
// form (what a cache miss of the partition pays, besides the read) and a
// search of it (what every Get pays), and reports the form's bytes.
func BenchmarkIndexForm(b *testing.B) {
	data := indexBlock(partFormSeps())
	for _, form := range allIndexForms() {
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

// BenchmarkIndexFormTable reports what an entry of each flat form of an
// index partition costs (flat bytes over entries) on the 4 KiB partitions
// of tables the Writer wrote: the bench's keys (4 big-endian bytes and 12
// zeros, 256-byte values, about 14 entries a data block) and random 16-byte
// keys. The figures are the same on every run; the timed loop decodes the
// table's partitions in each form.
func BenchmarkIndexFormTable(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, shape := range []string{"bench-keys", "random-keys"} {
		var es []entry
		value := make([]byte, largeValueSize)
		switch shape {
		case "bench-keys":
			for k := range 40_000 {
				es = append(es, entry{base.MakeInternalKey(bytes.Clone(largeKey(make([]byte, 16), k, 0)), base.SeqNum(k+1), base.KindSet), value})
			}
		case "random-keys":
			keys := make([][]byte, 40_000)
			for i := range keys {
				keys[i] = binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, rng.Uint64()), rng.Uint64())
			}
			slices.SortFunc(keys, bytes.Compare)
			for i, k := range keys {
				es = append(es, entry{base.MakeInternalKey(k, base.SeqNum(i+1), base.KindSet), value})
			}
		}
		opts := largeWriterOptions
		opts.IndexPartitionSize = 4096
		r := requirePartitioned(b, buildTable(b, opts, es), 4)
		var parts [][]byte
		entries := 0
		for p := range r.top.len() {
			raw, err := r.readMetaBlock(context.Background(), verifyEnv, "index partition", r.top.x.handle(p), r.metaLimit)
			require.NoError(b, err)
			parts = append(parts, bytes.Clone(raw))
			entries += r.parts[p].len()
		}
		for _, form := range allIndexForms() {
			if form.abbr {
				continue
			}
			b.Run(shape+"/"+form.name, func(b *testing.B) {
				flat, stored := 0, 0
				for _, raw := range parts {
					buf, err := form.encode(raw, nil)
					require.NoError(b, err)
					flat += len(buf)
					stored += len(raw)
				}
				dst := make([]byte, 64<<10)
				alloc := func(n int) []byte { return dst[:n] }
				for b.Loop() {
					for _, raw := range parts {
						if _, err := form.encode(raw, alloc); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(flat)/float64(entries), "flat-bytes/entry")
				b.ReportMetric(float64(stored)/float64(entries), "block-bytes/entry")
				b.ReportMetric(float64(entries)/float64(len(parts)), "entries/partition")
			})
		}
	}
}
