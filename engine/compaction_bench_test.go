package engine

import (
	"context"
	"os"
	"testing"
)

// BenchmarkCompactFull times Compact(nil, nil) over a database loaded as
// the bench's rss-equal workload loads it (16-byte keys, 256-byte random
// printable values in a random order, 4 MiB memtables, a 32 MiB block
// cache, partitioned index and filters kept in the cache), 128 MiB by
// default (SHALE_BENCH_MAX_DATA sets another size; -short 32 MiB). The
// database is loaded once, with background compactions, and kept in
// SHALE_COMPACT_BENCH_SEED when that names a directory (it is loaded there the
// first time), so that runs of two builds compact the same tables; each
// iteration compacts a fresh copy of it, opened without background
// compactions, so the timed work is the full compaction alone. Bytes/s
// is the data loaded per second of compaction.
func BenchmarkCompactFull(b *testing.B) {
	size := int64(128 << 20)
	if testing.Short() {
		size = 32 << 20
	}
	if s := os.Getenv("SHALE_BENCH_MAX_DATA"); s != "" {
		var err error
		if size, err = benchParseSize(s); err != nil {
			b.Fatal(err)
		}
	}
	const valueSize = 256
	n := int(size / (benchKeySize + valueSize))
	opts := func() *Options {
		return &Options{
			BlockCacheSize:            32 << 20,
			WriteBufferSize:           4 << 20,
			BloomBitsPerKey:           10,
			Compression:               CompressionSnappy,
			CacheIndexAndFilterBlocks: true,
			PartitionIndexAndFilters:  true,
			DisableStatistics:         true,
		}
	}
	seed := os.Getenv("SHALE_COMPACT_BENCH_SEED")
	if seed == "" {
		var err error
		if seed, err = os.MkdirTemp(benchBaseDir(), "shale-bench-compact-seed-"); err != nil {
			b.Fatal(err)
		}
		defer func() { _ = os.RemoveAll(seed) }()
		if err := os.Remove(seed); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := os.Stat(seed); os.IsNotExist(err) {
		d, err := openDatabase(seed, opts())
		if err != nil {
			b.Fatal(err)
		}
		probeLoad(b, d, n, valueSize)
		if err := d.Close(); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	b.SetBytes(int64(n) * (benchKeySize + valueSize))
	for b.Loop() {
		b.StopTimer()
		dir, err := os.MkdirTemp(benchBaseDir(), "shale-bench-compact-")
		if err != nil {
			b.Fatal(err)
		}
		if err := copyDirFiles(seed, dir); err != nil {
			b.Fatal(err)
		}
		o := opts()
		o.DisableAutoCompactions = true
		d, err := openDatabase(dir, o)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := d.Compact(ctx, nil, nil); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := d.Close(); err != nil {
			b.Fatal(err)
		}
		_ = os.RemoveAll(dir)
		b.StartTimer()
	}
}
