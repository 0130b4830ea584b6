package readpath

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/memtable"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
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
				if v, err := Get(ctx, db.view, env, []byte(k), db.maxSeq, nil); err == nil {
					v.Release()
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				v, err := Get(ctx, db.view, env, keys[i&4095], db.maxSeq, nil)
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

// largeLSM is the side-by-side workload's database after a full
// compaction: an empty memtable over ~128 MiB (493,447 keys of 16 bytes — the big-endian uint32 3k,
// zero-padded — with 256-byte random printable values) in one level of
// 64 MiB tables, with statistics at the engine's default level. With a
// 32 MiB block cache most blocks come through the iterator's readahead, as
// in the side-by-side run; with a cache larger than the data every block is
// cached after the first pass, which leaves the CPU cost of the iterators.
func largeLSM(b *testing.B, cacheSize int64) *lsm {
	const (
		nKeys      = largeKeys
		valueSize  = 256
		targetSize = 64 << 20
	)
	rng := rand.New(rand.NewPCG(1, 2))
	fs := vfs.NewMem()
	stats := statistics.New(statistics.LevelExceptDetailedTimers)
	db := &lsm{fs: fs, model: model{}, stats: stats}
	db.src = newTestSource(b, fs, cache.New(cacheSize), stats)
	vers := &manifest.Version{}
	// The engine's view always has the mutable memtable, empty after the
	// compaction.
	mem := memtable.New(1 << 20)
	db.view = &View{Mems: []*memtable.MemTable{mem}, Version: vers, Tables: db.src, Stats: stats}
	opts := sstable.WriterOptions{BloomBitsPerKey: 10, Compression: compress.Snappy, Checksum: checksum.XXHash64}
	require.NoError(b, fs.MkdirAll(testDir, 0o755))

	value := make([]byte, valueSize)
	for k := 0; k < nKeys; {
		n := manifest.FileNum(len(vers.Levels[6]) + 1)
		f, err := fs.Create(manifest.TableFileName(testDir, n))
		require.NoError(b, err)
		w := sstable.NewWriter(f, opts)
		for ; k < nKeys && w.EstimatedSize() < targetSize; k++ {
			for i := range value {
				value[i] = byte(' ' + rng.IntN(95))
			}
			require.NoError(b, w.Add(base.MakeInternalKey(largeKey(k), base.SeqNum(k+1), base.KindSet), value))
		}
		md, err := w.Close()
		require.NoError(b, err)
		require.NoError(b, f.Close())
		vers.Levels[6] = append(vers.Levels[6], &manifest.FileMetadata{
			FileNum: n, Size: md.Size, Smallest: md.Smallest, Largest: md.Largest,
			SmallestSeqNum: md.SmallestSeqNum, LargestSeqNum: md.LargestSeqNum,
		})
	}
	require.NoError(b, vers.CheckConsistency())
	db.maxSeq = nKeys
	return db
}

// largeKeys is the number of keys of largeLSM.
const largeKeys = 493447

// largeKey returns largeLSM's k-th key.
func largeKey(k int) []byte {
	key := make([]byte, 16)
	binary.BigEndian.PutUint32(key, uint32(3*k))
	return key
}

// largeReadEnv is the engine's ReadEnv for an iterator with default read
// options.
func largeReadEnv() sstable.ReadEnv {
	env := readEnv()
	env.IO.Activity = ioctx.ActivityDBIterator
	return env
}

func BenchmarkIteratorNextLarge(b *testing.B) {
	for _, bc := range []struct {
		name  string
		cache int64
	}{{"cache=32MiB", 32 << 20}, {"cache=256MiB", 256 << 20}} {
		b.Run(bc.name, func(b *testing.B) {
			db := largeLSM(b, bc.cache)
			it := NewIterator(context.Background(), db.view, largeReadEnv(), db.maxSeq, IterOptions{})
			defer it.Close()
			for ok := it.First(); ok; ok = it.Next() { // open the tables, fill the cache
			}
			it.First()
			b.ReportAllocs()
			for b.Loop() {
				if !it.Next() {
					it.First()
				}
			}
		})
	}
}

func BenchmarkIteratorSeekGELarge(b *testing.B) {
	db := largeLSM(b, 32<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([][]byte, 4096)
	for i := range keys {
		keys[i] = largeKey(rng.IntN(largeKeys))
	}
	it := NewIterator(context.Background(), db.view, largeReadEnv(), db.maxSeq, IterOptions{})
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if !it.SeekGE(keys[i&4095]) {
			b.Fatal("SeekGE found nothing")
		}
		i++
	}
}
