package sstable

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/bloom"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/cpubench"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// The large-table benchmarks model one table of the engine's read benchmark
// (bench/): 16-byte keys (big-endian uint32 k*3, zero-filled, as RocksDB's
// db_basic_bench), 256-byte random printable values that barely compress,
// 4 KiB Snappy blocks, XXH64 checksums and a 10 bits/key filter; about
// 15 MiB and 3.5k data blocks. The file is on the OS filesystem, so a block
// cache miss is a pread served by the page cache.
const (
	largeKeys      = 56000
	largeValueSize = 256
)

func largeKey(buf []byte, k, offset int) []byte {
	buf = buf[:16]
	clear(buf)
	binary.BigEndian.PutUint32(buf, uint32(k*3+offset))
	return buf
}

// largeWriterOptions are the large table's writer options.
var largeWriterOptions = WriterOptions{BloomBitsPerKey: 10, Compression: compress.Snappy, Checksum: checksum.XXHash64}

// addLargeEntries adds the large table's first n entries to w.
func addLargeEntries(w *Writer, n int) error {
	rng := rand.New(rand.NewPCG(1, 2))
	pool := make([]byte, 1<<20)
	for i := range pool {
		pool[i] = ' ' + byte(rng.IntN(95))
	}
	var kbuf [16]byte
	for k := range n {
		off := (k * 7919) % (len(pool) - largeValueSize)
		ik := base.MakeInternalKey(largeKey(kbuf[:], k, 0), base.SeqNum(k+1), base.KindSet)
		if err := w.Add(ik, pool[off:off+largeValueSize]); err != nil {
			return err
		}
	}
	return nil
}

var largeTable = sync.OnceValues(func() ([]byte, error) {
	var out countingWriter
	w := NewWriter(&out, largeWriterOptions)
	if err := addLargeEntries(w, largeKeys); err != nil {
		return nil, err
	}
	if _, err := w.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
})

// openLarge writes the large table to a temporary directory and opens it
// with c as its block cache.
func openLarge(b *testing.B, c *cache.Cache) *Reader {
	b.Helper()
	data, err := largeTable()
	require.NoError(b, err)
	path := filepath.Join(b.TempDir(), testFile)
	require.NoError(b, os.WriteFile(path, data, 0o644))
	f, err := fileio.Open(vfs.Default, path, fileio.Options{})
	require.NoError(b, err)
	r, err := Open(context.Background(), f, verifyEnv, ReaderOptions{Cache: c, CacheID: c.NewID(), FileNum: 1})
	require.NoError(b, err)
	b.Cleanup(func() { _ = r.Close() })
	return r
}

// largeCaches are the cache configurations of the large benchmarks:
// cache=quarter holds a quarter of the table, so about 3 of 4 random
// lookups miss it and read their block; cache=full holds all of it.
func largeCaches() []struct {
	name string
	size int64
} {
	data, _ := largeTable()
	return []struct {
		name string
		size int64
	}{
		{"cache=quarter", int64(len(data) / 4)},
		{"cache=full", 64 << 20},
	}
}

// BenchmarkGetLarge measures Get of random keys in the large table: present
// keys, and absent keys (k*3+1, between present ones) that the filter
// mostly rules out.
func BenchmarkGetLarge(b *testing.B) {
	for _, cc := range largeCaches() {
		for _, present := range []bool{true, false} {
			name := cc.name + "/key=present"
			if !present {
				name = cc.name + "/key=absent"
			}
			b.Run(name, func(b *testing.B) {
				r := openLarge(b, cache.New(cc.size))
				rng := rand.New(rand.NewPCG(1, 2))
				keys := make([][]byte, 1<<16)
				offset := 0
				if !present {
					offset = 1
				}
				for i := range keys {
					keys[i] = largeKey(make([]byte, 16), rng.IntN(largeKeys), offset)
				}
				ctx := context.Background()
				get := func(k []byte) {
					_, _, found, pin, err := r.Get(ctx, verifyEnv, k, base.MaxSeqNum)
					if err != nil || (present && !found) {
						b.Fatalf("Get(%x) = %t, %v", k, found, err)
					}
					pin.Release()
				}
				for _, k := range keys { // fill the cache
					get(k)
				}
				b.ReportAllocs()
				defer cpubench.Start(b)()
				i := 0
				for b.Loop() {
					get(keys[i%len(keys)])
					i++
				}
			})
		}
	}
}

// BenchmarkMultiGetLarge measures MultiGet of 16 random present keys of the
// large table, per call.
func BenchmarkMultiGetLarge(b *testing.B) {
	for _, cc := range largeCaches() {
		b.Run(cc.name+"/keys=16", func(b *testing.B) {
			r := openLarge(b, cache.New(cc.size))
			rng := rand.New(rand.NewPCG(1, 2))
			const batches = 4096
			ks := make([]int, 16)
			all := make([][]MultiGetKey, batches)
			for j := range all {
				for i := range ks {
					ks[i] = rng.IntN(largeKeys)
				}
				sortUnique(ks)
				for _, k := range ks {
					all[j] = append(all[j], MultiGetKey{Key: largeKey(make([]byte, 16), k, 0), Seq: base.MaxSeqNum})
				}
				for i := range all[j] {
					all[j][i].Hash = bloom.Hash(all[j][i].Key)
				}
			}
			ctx := context.Background()
			keys := make([]MultiGetKey, 16)
			mget := func(j int) {
				keys = append(keys[:0], all[j%batches]...)
				if err := r.MultiGet(ctx, verifyEnv, keys); err != nil {
					b.Fatal(err)
				}
				for i := range keys {
					if !keys[i].Found {
						b.Fatalf("MultiGet(%x): not found (%v)", keys[i].Key, keys[i].Err)
					}
				}
				releaseKeys(keys)
			}
			for j := range batches {
				mget(j)
			}
			b.ReportAllocs()
			defer cpubench.Start(b)()
			j := 0
			for b.Loop() {
				mget(j)
				j++
			}
		})
	}
}

// BenchmarkSeekGELarge measures iterator seeks to random present keys of the
// large table.
func BenchmarkSeekGELarge(b *testing.B) {
	for _, cc := range largeCaches() {
		b.Run(cc.name, func(b *testing.B) {
			r := openLarge(b, cache.New(cc.size))
			it, err := r.NewIter(context.Background(), verifyEnv, nil, nil)
			require.NoError(b, err)
			defer it.Close()
			rng := rand.New(rand.NewPCG(1, 2))
			keys := make([][]byte, 1<<16)
			for i := range keys {
				keys[i] = largeKey(make([]byte, 16), rng.IntN(largeKeys), 0)
			}
			for _, k := range keys {
				it.SeekGE(k)
			}
			b.ReportAllocs()
			defer cpubench.Start(b)()
			i := 0
			for b.Loop() {
				if it.SeekGE(keys[i%len(keys)]) == nil {
					b.Fatal("not found")
				}
				i++
			}
		})
	}
}

// sortUnique sorts ks and drops duplicates in place, keeping the length by
// replacing each duplicate with a fresh value above the maximum.
func sortUnique(ks []int) {
	for {
		slices.Sort(ks)
		dup := false
		for i := 1; i < len(ks); i++ {
			if ks[i] == ks[i-1] {
				ks[i] = (ks[len(ks)-1] + 1 + i) % largeKeys
				dup = true
			}
		}
		if !dup {
			return
		}
	}
}

func TestLargeTableShape(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 15 MiB table")
	}
	data, err := largeTable()
	require.NoError(t, err)
	r := openTable(t, data, openConfig{})
	p := r.Properties()
	t.Logf("large table: %d bytes, %d data blocks, index %d bytes, filter %d bytes",
		len(data), p.NumDataBlocks, p.IndexSize, p.FilterSize)
	require.InDelta(t, 15<<20, len(data), 2<<20)
	require.InDelta(t, 3500, p.NumDataBlocks, 300)
}
