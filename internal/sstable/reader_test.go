package sstable

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/internal/sstable/block"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// This file holds the reader's shared test helpers (a table model, table
// building and opening) and the tests of Open and the Reader as a whole.

const testFile = "000001.sst"

// verifyEnv is the default read: verify checksums, fill the cache.
var verifyEnv = ReadEnv{VerifyChecksums: true, FillCache: true}

// genEntries returns n sorted entries over user keys "key%06d" (every third
// number is skipped, so absent keys sort between present ones), some with
// several versions and some tombstones. Values are up to maxValue bytes.
func genEntries(rng *rand.Rand, n, maxValue int) []entry {
	var es []entry
	for i := 0; len(es) < n; i++ {
		if i%3 == 2 {
			continue
		}
		uk := fmt.Appendf(nil, "key%06d", i)
		versions := 1
		if rng.IntN(4) == 0 {
			versions = 2 + rng.IntN(5)
		}
		seq := base.SeqNum(10 + rng.IntN(1000))
		for v := 0; v < versions && len(es) < n; v++ {
			s := seq + base.SeqNum(10*(versions-v))
			if rng.IntN(5) == 0 {
				es = append(es, entry{base.MakeInternalKey(uk, s, base.KindDelete), nil})
				continue
			}
			value := make([]byte, rng.IntN(maxValue+1))
			for j := range value {
				value[j] = byte('a' + rng.IntN(3)) // compressible
			}
			es = append(es, entry{base.MakeInternalKey(uk, s, base.KindSet), value})
		}
	}
	return es
}

// buildTable writes es with opts and returns the file.
func buildTable(t testing.TB, opts WriterOptions, es []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf, opts)
	for _, e := range es {
		require.NoError(t, w.Add(e.key, e.value))
	}
	_, err := w.Close()
	require.NoError(t, err)
	return buf.Bytes()
}

// memWith returns a MemFS holding data as testFile.
func memWith(t testing.TB, data []byte) *vfs.MemFS {
	t.Helper()
	fs := vfs.NewMem()
	f, err := fs.Create(testFile)
	require.NoError(t, err)
	_, err = f.Write(data)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return fs
}

// openConfig says how a test opens a table.
type openConfig struct {
	cache *cache.Cache
	stats *statistics.Statistics
	mmap  bool
	// cacheMeta is ReaderOptions.CacheIndexAndFilterBlocks.
	cacheMeta bool
	// wrap, when set, wraps the filesystem the file is read from.
	wrap func(vfs.FS) vfs.FS
	env  ReadEnv
}

func (c openConfig) String() string {
	return fmt.Sprintf("cache=%t/mmap=%t/meta=%t", c.cache != nil, c.mmap, c.cacheMeta)
}

// openTable opens data as a table with cfg, failing the test on an error.
// The Reader is closed when the test ends.
func openTable(t testing.TB, data []byte, cfg openConfig) *Reader {
	t.Helper()
	r, err := tryOpen(memWith(t, data), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// tryOpen opens testFile on fs with cfg.
func tryOpen(fs vfs.FS, cfg openConfig) (*Reader, error) {
	if cfg.wrap != nil {
		fs = cfg.wrap(fs)
	}
	f, err := fileio.Open(fs, testFile, fileio.Options{Mmap: cfg.mmap})
	if err != nil {
		return nil, err
	}
	env := cfg.env
	if env == (ReadEnv{}) {
		env = verifyEnv
	}
	return Open(context.Background(), f, env, ReaderOptions{
		Cache: cfg.cache, CacheID: cfg.cache.NewID(), FileNum: 1, Stats: cfg.stats,
		CacheIndexAndFilterBlocks: cfg.cacheMeta,
	})
}

// modelGet returns the newest entry of ukey visible at seq.
func modelGet(es []entry, ukey []byte, seq base.SeqNum) (entry, bool) {
	for _, e := range es {
		if bytes.Equal(e.key.UserKey, ukey) && e.key.SeqNum() <= seq {
			return e, true
		}
	}
	return entry{}, false
}

// inRange returns the entries whose user keys are in [lower, upper).
func inRange(es []entry, lower, upper []byte) []entry {
	var out []entry
	for _, e := range es {
		if (lower == nil || bytes.Compare(e.key.UserKey, lower) >= 0) &&
			(upper == nil || bytes.Compare(e.key.UserKey, upper) < 0) {
			out = append(out, e)
		}
	}
	return out
}

// scan iterates over it forward (or backward) and returns the entries,
// copied, with the iterator's error.
func scan(it *Iter, backward bool) ([]entry, error) {
	var out []entry
	kv := it.First()
	if backward {
		kv = it.Last()
	}
	for ; kv != nil; kv = next(it, backward) {
		out = append(out, entry{kv.K.Clone(), bytes.Clone(kv.V)})
	}
	if backward {
		slices.Reverse(out)
	}
	return out, it.Error()
}

func next(it *Iter, backward bool) *base.InternalKV {
	if backward {
		return it.Prev()
	}
	return it.Next()
}

// requireSameEntries compares entries by key, kind and value (a tombstone's
// nil and empty values are the same).
func requireSameEntries(t testing.TB, want, got []entry, msgAndArgs ...any) {
	t.Helper()
	if !sameEntries(want, got) {
		require.Equal(t, fmt.Sprint(want), fmt.Sprint(got), msgAndArgs...)
		require.Fail(t, "entries differ", msgAndArgs...)
	}
}

func sameEntries(want, got []entry) bool {
	if len(want) != len(got) {
		return false
	}
	for i := range want {
		if base.CompareInternal(want[i].key, got[i].key) != 0 || want[i].key.Trailer != got[i].key.Trailer ||
			!bytes.Equal(want[i].value, got[i].value) {
			return false
		}
	}
	return true
}

// TestReaderGolden reads the checked-in golden tables: properties, every
// entry both ways, and every key at every sequence number the file holds.
func TestReaderGolden(t *testing.T) {
	specs, err := filepath.Glob("testdata/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, specs)
	for _, specPath := range specs {
		name := strings.TrimSuffix(filepath.Base(specPath), ".txt")
		t.Run(name, func(t *testing.T) {
			spec := parseSpec(t, specPath)
			data, err := os.ReadFile(strings.TrimSuffix(specPath, ".txt") + ".sst")
			require.NoError(t, err)
			for _, cfg := range []openConfig{{}, {cache: cache.New(1 << 20)}, {mmap: true}} {
				t.Run(cfg.String(), func(t *testing.T) {
					r := openTable(t, data, cfg)
					p := r.Properties()
					require.Equal(t, uint64(len(spec.entries)), p.NumEntries)
					require.Equal(t, spec.opts.Checksum, p.Checksum)
					require.Equal(t, spec.opts.Compression, p.Compression)
					require.Equal(t, uint64(1), r.FileNum())
					require.Equal(t, spec.opts.BloomBitsPerKey > 0, r.filter != nil)

					for _, backward := range []bool{false, true} {
						it, err := r.NewIter(context.Background(), verifyEnv, nil, nil)
						require.NoError(t, err)
						got, err := scan(it, backward)
						require.NoError(t, err)
						requireSameEntries(t, spec.entries, got)
						require.NoError(t, it.Close())
					}
					for _, e := range spec.entries {
						for _, seq := range []base.SeqNum{e.key.SeqNum(), e.key.SeqNum() + 1, base.MaxSeqNum} {
							checkGet(t, r, verifyEnv, spec.entries, e.key.UserKey, seq)
						}
					}
					require.NoError(t, r.VerifyChecksums(context.Background(), verifyEnv))
					require.NoError(t, r.Check(context.Background(), verifyEnv))
				})
			}
		})
	}
}

// checkGet compares r.Get with the model.
func checkGet(t testing.TB, r *Reader, env ReadEnv, es []entry, ukey []byte, seq base.SeqNum) {
	t.Helper()
	value, kind, found, pin, err := r.Get(context.Background(), env, ukey, seq)
	require.NoError(t, err, "Get(%q, %d)", ukey, seq)
	defer pin.Release()
	want, ok := modelGet(es, ukey, seq)
	require.Equal(t, ok, found, "Get(%q, %d)", ukey, seq)
	if ok {
		require.Equal(t, want.key.Kind(), kind, "Get(%q, %d)", ukey, seq)
		require.True(t, bytes.Equal(want.value, value), "Get(%q, %d) = %q, want %q", ukey, seq, value, want.value)
	}
}

// writerCombos are the writer options the round-trip tests cover.
func writerCombos() []WriterOptions {
	var out []WriterOptions
	for _, comp := range []compress.Type{compress.None, compress.Snappy, compress.Zstd} {
		for _, ck := range []checksum.Type{checksum.CRC32C, checksum.XXHash64} {
			for _, bits := range []int{0, 10} {
				for _, bs := range []int{256, 4096} {
					out = append(out, WriterOptions{BlockSize: bs, BloomBitsPerKey: bits, Compression: comp, Checksum: ck,
						BlockRestartInterval: 1 + bs%7})
				}
			}
		}
	}
	// Partitioned indexes and filters: partitions of a few entries (so that
	// tables of a few hundred entries have many), and one size that many
	// small blocks fill only a few partitions of.
	for _, comp := range []compress.Type{compress.None, compress.Snappy, compress.Zstd} {
		for _, bits := range []int{0, 10} {
			out = append(out, WriterOptions{BlockSize: 256, BloomBitsPerKey: bits, Compression: comp,
				Checksum: checksum.CRC32C, IndexPartitionSize: 64 + 64*bits})
		}
	}
	out = append(out, WriterOptions{BlockSize: 64, BloomBitsPerKey: 10, Compression: compress.Snappy,
		Checksum: checksum.XXHash64, IndexPartitionSize: 1024, BlockRestartInterval: 2})
	return out
}

// readerCombos are the ways of reading a table the round-trip tests cover.
func readerCombos() []openConfig {
	var out []openConfig
	for _, withCache := range []bool{false, true} {
		for _, mmap := range []bool{false, true} {
			for _, fill := range []bool{true, false} {
				cfg := openConfig{mmap: mmap, env: ReadEnv{VerifyChecksums: true, FillCache: fill}}
				if !fill {
					// Vary the readahead of the reads that bypass the cache.
					cfg.env.AsyncIO = !mmap
					cfg.env.ReadaheadSize = int64(len(out) * 512)
				}
				if withCache {
					cfg.cache = cache.New(1 << 20)
				}
				out = append(out, cfg)
				if withCache {
					// The index and filter in the cache: one that holds
					// them, and one so small that every read loads them
					// again (or gets them uncached).
					meta := cfg
					meta.cacheMeta = true
					if fill {
						meta.cache = cache.New(1 << 20)
					} else {
						meta.cache = cache.New(4 << 10)
					}
					out = append(out, meta)
				}
			}
		}
	}
	return out
}

// TestReaderRoundTrip writes random tables with every writer option
// combination and reads them back every way: Get at various sequence
// numbers, full scans both ways, MultiGet, and random iterator operations
// with bounds, all against a model.
func TestReaderRoundTrip(t *testing.T) {
	n := 600
	if testing.Short() || invariants.RaceEnabled {
		n = 200
	}
	for wi, wopts := range writerCombos() {
		name := fmt.Sprintf("comp=%s/checksum=%s/bloom=%d/block=%d/partition=%d", wopts.Compression, wopts.Checksum,
			wopts.BloomBitsPerKey, wopts.BlockSize, wopts.IndexPartitionSize)
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(wi)))
			es := genEntries(rng, n, 60)
			data := buildTable(t, wopts, es)
			if wopts.IndexPartitionSize > 0 {
				// Else the test would not cover the partitioned layout.
				requirePartitioned(t, data, 2)
			}
			for ri, cfg := range readerCombos() {
				t.Run(fmt.Sprintf("%s/fill=%t/async=%t/readahead=%d", cfg, cfg.env.FillCache, cfg.env.AsyncIO,
					cfg.env.ReadaheadSize), func(t *testing.T) {
					r := openTable(t, data, cfg)
					rng := rand.New(rand.NewPCG(2, uint64(wi*100+ri)))
					env := cfg.env
					for range 100 {
						e := es[rng.IntN(len(es))]
						seq := e.key.SeqNum() + base.SeqNum(rng.IntN(3)) - 1
						checkGet(t, r, env, es, e.key.UserKey, seq)
						checkGet(t, r, env, es, fmt.Appendf(nil, "key%06d", rng.IntN(n*3/2+10)), base.MaxSeqNum)
					}
					for _, backward := range []bool{false, true} {
						it, err := r.NewIter(context.Background(), env, nil, nil)
						require.NoError(t, err)
						got, err := scan(it, backward)
						require.NoError(t, err)
						requireSameEntries(t, es, got)
						require.NoError(t, it.Close())
					}
					checkIterOps(t, r, env, es, rng, 150)
					checkMultiGet(t, r, env, es, rng)
					require.NoError(t, r.Check(context.Background(), env))
				})
			}
		})
	}
}

// TestOpenReads checks that Open makes one tagged read per block it needs
// (footer, metaindex, properties, filter, index) and ticks a checksum
// computation for each block.
func TestOpenReads(t *testing.T) {
	for _, bits := range []int{0, 10} {
		t.Run(fmt.Sprintf("bloom=%d", bits), func(t *testing.T) {
			es := genEntries(rand.New(rand.NewPCG(1, 2)), 50, 10)
			data := buildTable(t, WriterOptions{BloomBitsPerKey: bits, Checksum: checksum.XXHash64}, es)
			var mu sync.Mutex
			var reads []errorfs.Op
			stats := statistics.New(statistics.LevelAll)
			io := ioctx.IOOptions{Activity: ioctx.ActivityDBOpen, RateLimiterPriority: ioctx.PriorityHigh}
			r, err := tryOpen(memWith(t, data), openConfig{
				stats: stats,
				env:   ReadEnv{IO: io},
				wrap: func(fs vfs.FS) vfs.FS {
					return errorfs.WrapObserver(fs, func(op errorfs.Op) {
						if op.Kind == errorfs.OpFileRead {
							mu.Lock()
							reads = append(reads, op)
							mu.Unlock()
						}
					})
				},
			})
			require.NoError(t, err)
			defer r.Close()
			blocks := 3 // metaindex, properties, index
			if bits > 0 {
				blocks++
			}
			require.Len(t, reads, blocks+1, "%v", reads)
			require.Equal(t, int64(len(data)-FooterLen), reads[0].Offset, "the footer is read first")
			for _, op := range reads {
				require.Equal(t, io, op.IO, "%s", op)
			}
			require.Equal(t, uint64(blocks), stats.TickerCount(statistics.BlockChecksumComputeCount))
		})
	}
}

// TestOpenErrors feeds Open broken tables: each must fail with a corruption
// error that says what is wrong, and close the file.
func TestOpenErrors(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(3, 4)), 40, 10)
	good := buildTable(t, WriterOptions{BloomBitsPerKey: 10, Checksum: checksum.CRC32C}, es)
	footer, err := DecodeFooter(good, uint64(len(good)))
	require.NoError(t, err)
	withFooter := func(f Footer) []byte {
		out := bytes.Clone(good[:len(good)-FooterLen])
		return f.Encode(out)
	}
	tests := []struct {
		name string
		data []byte
		// want is in the error; "" accepts any corruption.
		want string
		// opens says Open succeeds and Check finds the damage.
		opens bool
	}{
		{"empty", nil, "too short for a 53-byte footer", false},
		{"short", good[len(good)-FooterLen+1:], "too short for a 53-byte footer", false},
		{"bad magic", append(bytes.Clone(good[:len(good)-1]), 0), "bad magic number", false},
		{"truncated", good[100:], "", false}, // same footer, but the blocks moved
		{"non-canonical handle", func() []byte {
			b := bytes.Clone(good)
			ft := b[len(b)-FooterLen:]
			// Re-encode the index handle's length with a redundant
			// continuation byte: it decodes to the same handle.
			enc := footer.MetaIndex.Append(nil)
			enc = binary.AppendUvarint(enc, footer.Index.Offset)
			l := footer.Index.Length
			enc = append(enc, byte(l)|0x80, byte(l>>7))
			require.Less(t, l, uint64(1<<14))
			copy(ft[1:], enc)
			return b
		}(), "not canonically encoded", false},
		{"checksum type differs from properties", func() []byte {
			f := footer
			f.Checksum = checksum.None
			return withFooter(f)
		}(), "footer says checksum type none, properties say crc32c", false},
		{"metaindex beyond footer", func() []byte {
			f := footer
			f.MetaIndex.Length = uint64(len(good))
			return withFooter(f)
		}(), "ends beyond the footer", false},
		{"metaindex checksum", func() []byte {
			b := bytes.Clone(good)
			b[footer.MetaIndex.Offset] ^= 1
			return b
		}(), "block checksum mismatch", false},
		{"index is the metaindex", func() []byte {
			f := footer
			f.Index = f.MetaIndex
			return withFooter(f)
		}(), "", true}, // the metaindex is a valid block, but not an index
		{"short separator", craftTable(t, craftSpec{blocks: [][]entry{es[:2], es[2:4]}, seps: [][]byte{nil, []byte("c")}}),
			`separator 1, "c", is shorter than a 8-byte trailer`, false},
		{"separator without a handle", craftTable(t, craftSpec{blocks: [][]entry{es[:2]},
			rawIndex: func(sep, handle []byte) ([]byte, []byte) { return sep, handle[:1] }}),
			"truncated handle", false},
		{"handle with stray bytes", craftTable(t, craftSpec{blocks: [][]entry{es[:2]},
			rawIndex: func(sep, handle []byte) ([]byte, []byte) { return sep, append(handle, 0) }}),
			"stray bytes", false},
		{"metaindex without properties", func() []byte {
			f := footer
			f.MetaIndex = footer.Index // the index has no properties entry
			return withFooter(f)
		}(), "has no shale.properties entry", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := memWith(t, tc.data)
			var closes int
			r, err := tryOpen(fs, openConfig{wrap: func(fs vfs.FS) vfs.FS {
				return errorfs.WrapObserver(fs, func(op errorfs.Op) {
					if op.Kind == errorfs.OpFileClose {
						closes++
					}
				})
			}})
			if tc.opens {
				require.NoError(t, err)
				err = r.Check(context.Background(), verifyEnv)
				require.True(t, base.IsCorruption(err), "%v", err)
				require.NoError(t, r.Close())
				return
			}
			require.Error(t, err)
			require.True(t, base.IsCorruption(err), "%v", err)
			require.Contains(t, err.Error(), tc.want)
			require.Contains(t, err.Error(), testFile)
			require.Equal(t, 1, closes, "a failed Open closes the file")
		})
	}
}

// TestReaderClose checks Close closes the file once and a second Close
// fails.
func TestReaderClose(t *testing.T) {
	data := buildTable(t, WriterOptions{}, genEntries(rand.New(rand.NewPCG(1, 1)), 10, 5))
	r, err := tryOpen(memWith(t, data), openConfig{})
	require.NoError(t, err)
	require.NoError(t, r.Close())
	err = r.Close()
	require.True(t, errors.Is(err, base.ErrClosed), "%v", err)
}

// TestEveryReadTagged runs every operation with tagged IO options and
// checks that each file read carries them.
func TestEveryReadTagged(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(5, 6)), 300, 40)
	data := buildTable(t, WriterOptions{BlockSize: 512, BloomBitsPerKey: 10, Compression: compress.Snappy,
		Checksum: checksum.XXHash64}, es)
	var mu sync.Mutex
	want := ioctx.IOOptions{Activity: ioctx.ActivityDBOpen}
	var reads int
	var bad []string
	r := openTable(t, data, openConfig{
		env: ReadEnv{IO: ioctx.IOOptions{Activity: ioctx.ActivityDBOpen}},
		wrap: func(fs vfs.FS) vfs.FS {
			return errorfs.WrapObserver(fs, func(op errorfs.Op) {
				if op.Kind != errorfs.OpFileRead {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				reads++
				if op.IO != want {
					bad = append(bad, op.String())
				}
			})
		},
	})
	ctx := context.Background()
	for _, tc := range []struct {
		act ioctx.Activity
		run func(env ReadEnv)
	}{
		{ioctx.ActivityGet, func(env ReadEnv) {
			for _, e := range es[:20] {
				_, _, _, pin, err := r.Get(ctx, env, e.key.UserKey, base.MaxSeqNum)
				require.NoError(t, err)
				pin.Release()
			}
		}},
		{ioctx.ActivityMultiGet, func(env ReadEnv) {
			keys := multiGetKeys(es[100:140], base.MaxSeqNum)
			require.NoError(t, r.MultiGet(ctx, env, keys))
			releaseKeys(keys)
		}},
		{ioctx.ActivityDBIterator, func(env ReadEnv) {
			it, err := r.NewIter(ctx, env, nil, nil)
			require.NoError(t, err)
			_, err = scan(it, false)
			require.NoError(t, err)
			require.NoError(t, it.Close())
		}},
		{ioctx.ActivityVerifyDBChecksum, func(env ReadEnv) {
			require.NoError(t, r.VerifyChecksums(ctx, env))
			require.NoError(t, r.Check(ctx, env))
		}},
	} {
		mu.Lock()
		want = ioctx.IOOptions{Activity: tc.act, RateLimiterPriority: ioctx.PriorityUser}
		before := reads
		mu.Unlock()
		tc.run(ReadEnv{IO: want, VerifyChecksums: true, ReadaheadSize: 4096})
		mu.Lock()
		require.Greater(t, reads, before, "%s made no read", tc.act)
		mu.Unlock()
	}
	require.Empty(t, bad)
}

// TestCacheStats checks the block cache and bloom filter tickers, and that
// a read that does not fill the cache leaves it untouched.
func TestCacheStats(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(7, 8)), 200, 20)
	data := buildTable(t, WriterOptions{BlockSize: 512, BloomBitsPerKey: 10, Compression: compress.Snappy,
		Checksum: checksum.CRC32C}, es)
	c := cache.New(1 << 20)
	stats := statistics.New(statistics.LevelAll)
	r := openTable(t, data, openConfig{cache: c, stats: stats})
	ctx := context.Background()
	stats.Reset()
	tick := func(tk statistics.Ticker) uint64 { return stats.TickerCount(tk) }
	key := es[len(es)/2].key.UserKey

	// Without filling, the cache stays empty, and a miss is counted.
	_, _, found, pin, err := r.Get(ctx, ReadEnv{VerifyChecksums: true}, key, base.MaxSeqNum)
	require.NoError(t, err)
	require.True(t, found)
	pin.Release()
	require.Zero(t, c.Len())
	require.Equal(t, uint64(1), tick(statistics.BlockCacheMiss))
	require.Equal(t, uint64(1), tick(statistics.BlockCacheDataMiss))
	require.Zero(t, tick(statistics.BlockCacheAdd))
	require.Equal(t, uint64(1), tick(statistics.BlockChecksumComputeCount))
	require.Equal(t, uint64(1), tick(statistics.NumberBlockDecompressed))
	stats.Reset()

	// A filling read adds the block; the next one hits.
	for i := range 2 {
		_, _, found, pin, err := r.Get(ctx, verifyEnv, key, base.MaxSeqNum)
		require.NoError(t, err)
		require.True(t, found)
		pin.Release()
		require.Equal(t, 1, c.Len(), "Get %d", i)
	}
	require.Equal(t, uint64(1), tick(statistics.BlockCacheMiss))
	require.Equal(t, uint64(1), tick(statistics.BlockCacheDataMiss))
	require.Equal(t, uint64(1), tick(statistics.BlockCacheAdd))
	require.Equal(t, uint64(1), tick(statistics.BlockCacheHit))
	require.Equal(t, uint64(1), tick(statistics.BlockCacheDataHit))
	require.Equal(t, tick(statistics.BlockCacheBytesWrite), tick(statistics.BlockCacheBytesRead))
	require.NotZero(t, tick(statistics.BlockCacheBytesRead))
	require.Equal(t, uint64(2), tick(statistics.BloomFilterFullPositive))
	require.Equal(t, uint64(2), tick(statistics.BloomFilterFullTruePositive))
	stats.Reset()

	// Absent keys: the filter rules out most; the rest are positives that
	// are not true.
	const absent = 200
	for i := range absent {
		_, _, found, _, err := r.Get(ctx, verifyEnv, fmt.Appendf(nil, "absent%d", i), base.MaxSeqNum)
		require.NoError(t, err)
		require.False(t, found)
	}
	useful, positive := tick(statistics.BloomFilterUseful), tick(statistics.BloomFilterFullPositive)
	require.Equal(t, uint64(absent), useful+positive)
	require.Greater(t, useful, uint64(absent*9/10))
	require.Zero(t, tick(statistics.BloomFilterFullTruePositive))

	// A scan without filling leaves the cache as it was.
	n := c.Len()
	it, err := r.NewIter(ctx, ReadEnv{VerifyChecksums: true}, nil, nil)
	require.NoError(t, err)
	got, err := scan(it, false)
	require.NoError(t, err)
	requireSameEntries(t, es, got)
	require.NoError(t, it.Close())
	require.Equal(t, n, c.Len())

	// EvictFromCache drops the table's blocks.
	r.EvictFromCache()
	require.Zero(t, c.Len())
}

// TestMmapInPlace checks that uncompressed blocks of a mapped file are used
// in place (not cached) and compressed ones are cached.
func TestMmapInPlace(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(9, 10)), 200, 20)
	for _, comp := range []compress.Type{compress.None, compress.Snappy, compress.Zstd} {
		t.Run(comp.String(), func(t *testing.T) {
			data := buildTable(t, WriterOptions{BlockSize: 512, Compression: comp, Checksum: checksum.CRC32C}, es)
			c := cache.New(1 << 20)
			r := openTable(t, data, openConfig{cache: c, mmap: true})
			require.True(t, r.file.Mapped())
			it, err := r.NewIter(context.Background(), verifyEnv, nil, nil)
			require.NoError(t, err)
			got, err := scan(it, false)
			require.NoError(t, err)
			requireSameEntries(t, es, got)
			require.NoError(t, it.Close())
			if comp == compress.None {
				require.Zero(t, c.Len())
				// The value is a slice of the file's mapping.
				v, _, found, pin, err := r.Get(context.Background(), verifyEnv, es[0].key.UserKey, base.MaxSeqNum)
				require.NoError(t, err)
				require.True(t, found)
				require.Equal(t, BlockPin{}, pin)
				i := bytes.Index(data, v)
				require.GreaterOrEqual(t, i, 0)
				mapped, err := r.file.Read(context.Background(), ioctx.IOOptions{}, int64(i), len(v), nil)
				require.NoError(t, err)
				require.Same(t, &mapped[0], &v[0])
			} else {
				// The blocks that compression paid for are cached.
				require.NotZero(t, c.Len())
				require.LessOrEqual(t, c.Len(), int(r.props.NumDataBlocks))
			}
		})
	}
}

// TestContextDone checks that a done context fails every read with an
// error that matches the context's.
func TestContextDone(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(11, 12)), 100, 20)
	data := buildTable(t, WriterOptions{BlockSize: 256, Checksum: checksum.CRC32C}, es)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	f, err := fileio.Open(memWith(t, data), testFile, fileio.Options{})
	require.NoError(t, err)
	_, err = Open(ctx, f, verifyEnv, ReaderOptions{})
	require.True(t, errors.Is(err, context.Canceled), "Open: %v", err)

	c := cache.New(1 << 20)
	r := openTable(t, data, openConfig{cache: c})
	_, _, _, _, err = r.Get(ctx, verifyEnv, es[0].key.UserKey, base.MaxSeqNum)
	require.True(t, errors.Is(err, context.Canceled), "Get: %v", err)
	require.Zero(t, c.Len())

	keys := multiGetKeys(es[:10], base.MaxSeqNum)
	err = r.MultiGet(ctx, verifyEnv, keys)
	require.True(t, errors.Is(err, context.Canceled), "MultiGet: %v", err)

	it, err := r.NewIter(ctx, verifyEnv, nil, nil)
	require.NoError(t, err)
	require.Nil(t, it.First())
	require.True(t, errors.Is(it.Error(), context.Canceled), "Iter: %v", it.Error())
	require.True(t, errors.Is(it.Close(), context.Canceled))

	// The context is checked at every block, cached or not: one cancelled
	// while the iterator runs stops it.
	live, cancelLive := context.WithCancel(context.Background())
	it, err = r.NewIter(live, verifyEnv, nil, nil)
	require.NoError(t, err)
	require.NotNil(t, it.First())
	cancelLive()
	var kv *base.InternalKV
	for kv = it.Next(); kv != nil; kv = it.Next() {
	}
	require.True(t, errors.Is(it.Error(), context.Canceled), "Iter: %v", it.Error())
	require.NoError(t, errors.CombineErrors(nil, nil))
	_ = it.Close()

	err = r.VerifyChecksums(ctx, verifyEnv)
	require.True(t, errors.Is(err, context.Canceled), "VerifyChecksums: %v", err)
	err = r.Check(ctx, verifyEnv)
	require.True(t, errors.Is(err, context.Canceled), "Check: %v", err)
}

// TestBitFlips flips one bit of every byte of a table in turn. Each flip
// must make Open, VerifyChecksums and reads of the data it hits fail with a
// corruption error; no read may return an entry that is not in the table.
func TestBitFlips(t *testing.T) {
	tables := map[string][]byte{}
	for _, name := range []string{"three-keys", "deletions"} {
		data, err := os.ReadFile(filepath.Join("testdata", name+".sst"))
		require.NoError(t, err)
		tables[name] = data
	}
	es := genEntries(rand.New(rand.NewPCG(13, 14)), 120, 30)
	tables["snappy-crc"] = buildTable(t, WriterOptions{BlockSize: 256, BloomBitsPerKey: 10,
		Compression: compress.Snappy, Checksum: checksum.CRC32C}, es)
	tables["partitioned"] = buildTable(t, WriterOptions{BlockSize: 256, BloomBitsPerKey: 10,
		Compression: compress.Snappy, Checksum: checksum.CRC32C, IndexPartitionSize: 64}, es)
	for name, data := range tables {
		t.Run(name, func(t *testing.T) {
			want := readAll(t, data)
			stride := 1
			if testing.Short() || invariants.RaceEnabled {
				stride = 5
			}
			for off := 0; off < len(data); off += stride {
				bits := []int{off % 8}
				if len(data) < 1024 {
					bits = []int{0, 1, 2, 3, 4, 5, 6, 7}
				}
				for _, bit := range bits {
					bad := bytes.Clone(data)
					bad[off] ^= 1 << bit
					checkFlipped(t, bad, want, fmt.Sprintf("byte %d bit %d", off, bit))
				}
			}
		})
	}
}

// readAll returns every entry of a table.
func readAll(t testing.TB, data []byte) []entry {
	r := openTable(t, data, openConfig{})
	it, err := r.NewIter(context.Background(), verifyEnv, nil, nil)
	require.NoError(t, err)
	es, err := scan(it, false)
	require.NoError(t, err)
	require.NoError(t, it.Close())
	return es
}

func checkFlipped(t *testing.T, bad []byte, want []entry, what string) {
	r, err := tryOpen(memWith(t, bad), openConfig{})
	if err != nil {
		require.True(t, base.IsCorruption(err), "%s: Open: %v", what, err)
		return
	}
	defer r.Close()
	ctx := context.Background()
	err = r.VerifyChecksums(ctx, verifyEnv)
	require.True(t, base.IsCorruption(err), "%s: VerifyChecksums: %v", what, err)

	// Reads either fail with corruption or return what the table holds.
	for _, backward := range []bool{false, true} {
		it, err := r.NewIter(ctx, verifyEnv, nil, nil)
		require.NoError(t, err)
		got, err := scan(it, backward)
		_ = it.Close()
		if err != nil {
			require.True(t, base.IsCorruption(err), "%s: scan: %v", what, err)
			continue
		}
		requireSameEntries(t, want, got, what)
	}
	for _, e := range want {
		value, kind, found, pin, err := r.Get(ctx, verifyEnv, e.key.UserKey, e.key.SeqNum())
		if err != nil {
			require.True(t, base.IsCorruption(err), "%s: Get: %v", what, err)
			continue
		}
		require.True(t, found, "%s: Get(%s)", what, e.key)
		require.Equal(t, e.key.Kind(), kind, what)
		require.True(t, bytes.Equal(e.value, value), "%s: Get(%s) = %q", what, e.key, value)
		pin.Release()
	}
}

// TestFaultInjection fails the i-th file operation of a workload for
// i = 0, 1, 2, ... until the workload runs clean. Every failure must surface
// as the injected error, and nothing read may differ from the table.
func TestFaultInjection(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(15, 16)), 150, 40)
	for _, partition := range []int{0, 128} {
		data := buildTable(t, WriterOptions{BlockSize: 512, BloomBitsPerKey: 10, Compression: compress.Snappy,
			Checksum: checksum.XXHash64, IndexPartitionSize: partition}, es)
		if partition > 0 {
			requirePartitioned(t, data, 2)
		}
		t.Run(fmt.Sprintf("partition=%d", partition), func(t *testing.T) { testFaultInjection(t, data, es) })
	}
}

func testFaultInjection(t *testing.T, data []byte, es []entry) {
	for _, cfg := range []openConfig{
		{env: ReadEnv{VerifyChecksums: true, FillCache: true, ReadaheadSize: 2048}},
		{cache: cache.New(1 << 20), env: ReadEnv{VerifyChecksums: true, FillCache: true}},
		{cache: cache.New(1 << 20), cacheMeta: true, env: ReadEnv{VerifyChecksums: true, FillCache: true}},
		{env: ReadEnv{VerifyChecksums: true, AsyncIO: true}},
	} {
		t.Run(fmt.Sprintf("%s/async=%t", cfg, cfg.env.AsyncIO), func(t *testing.T) {
			mem := memWith(t, data)
			for i := int64(0); ; i++ {
				var efs *errorfs.FS
				cfg := cfg
				if cfg.cache != nil {
					cfg.cache = cache.New(1 << 20)
				}
				cfg.wrap = func(fs vfs.FS) vfs.FS {
					efs = errorfs.Wrap(fs, errorfs.OnIndex(i))
					return efs
				}
				err := faultWorkload(t, mem, cfg, es)
				if err != nil {
					require.True(t, errors.Is(err, errorfs.ErrInjected), "op %d: %v", i, err)
				}
				if efs.Injected() == 0 {
					require.NoError(t, err)
					require.Greater(t, i, int64(10), "the workload makes file operations")
					break
				}
			}
		})
	}
}

// faultWorkload opens the table and reads all of it every way, comparing
// what it reads with es. It returns the first error.
func faultWorkload(t *testing.T, fs vfs.FS, cfg openConfig, es []entry) (err error) {
	r, err := tryOpen(fs, cfg)
	if err != nil {
		return err
	}
	defer func() { err = errors.CombineErrors(err, r.Close()) }()
	ctx := context.Background()
	env := cfg.env
	for _, e := range es {
		value, kind, found, pin, err := r.Get(ctx, env, e.key.UserKey, e.key.SeqNum())
		if err != nil {
			return err
		}
		require.True(t, found && kind == e.key.Kind() && bytes.Equal(value, e.value), "Get(%s)", e.key)
		pin.Release()
	}
	keys := multiGetKeys(es, base.MaxSeqNum)
	if err := r.MultiGet(ctx, env, keys); err != nil {
		return err
	}
	for i := range keys {
		if keys[i].Err != nil {
			releaseKeys(keys)
			return keys[i].Err
		}
	}
	checkMultiGetResults(t, keys, es)
	releaseKeys(keys)
	for _, backward := range []bool{false, true} {
		it, err := r.NewIter(ctx, env, nil, nil)
		if err != nil {
			return err
		}
		got, err := scan(it, backward)
		_ = it.Close()
		if err != nil {
			return err
		}
		requireSameEntries(t, es, got)
	}
	if err := r.VerifyChecksums(ctx, env); err != nil {
		return err
	}
	return r.Check(ctx, env)
}

// TestHandleOutOfRange hand-builds tables whose index points outside the
// data region: every read of it must be a corruption error.
func TestHandleOutOfRange(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(17, 18)), 20, 10)
	for _, tc := range []struct {
		name string
		h    block.Handle
	}{
		{"beyond the file", block.Handle{Offset: 1 << 40, Length: 10}},
		{"overflowing", block.Handle{Offset: 1<<64 - 3, Length: 10}},
		{"into the index", block.Handle{Offset: 0, Length: 1 << 20}},
		{"huge", block.Handle{Offset: 0, Length: 1<<63 + 1}},
		{"empty", block.Handle{Offset: 1, Length: 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := craftTable(t, craftSpec{blocks: [][]entry{es}, handles: []block.Handle{tc.h}})
			for _, cfg := range []openConfig{{}, {mmap: true}, {cache: cache.New(1 << 20)}} {
				r := openTable(t, data, cfg)
				ctx := context.Background()
				_, _, _, _, err := r.Get(ctx, verifyEnv, es[0].key.UserKey, base.MaxSeqNum)
				require.True(t, base.IsCorruption(err), "Get: %v", err)
				keys := multiGetKeys(es[:3], base.MaxSeqNum)
				require.NoError(t, r.MultiGet(ctx, verifyEnv, keys))
				for _, k := range keys {
					require.True(t, base.IsCorruption(k.Err), "MultiGet: %v", k.Err)
				}
				it, err := r.NewIter(ctx, verifyEnv, nil, nil)
				require.NoError(t, err)
				_, err = scan(it, false)
				require.True(t, base.IsCorruption(err), "scan: %v", err)
				_ = it.Close()
				require.True(t, base.IsCorruption(r.VerifyChecksums(ctx, verifyEnv)))
				require.True(t, base.IsCorruption(r.Check(ctx, verifyEnv)))
			}
		})
	}
}

// TestDecompressionBomb hand-builds a tiny Snappy block that claims a huge
// decoded length: it must be refused, not allocated.
func TestDecompressionBomb(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(19, 20)), 5, 10)
	for _, claim := range []uint64{1 << 20, maxBlockLen + 1, 1 << 40} {
		t.Run(fmt.Sprint(claim), func(t *testing.T) {
			payload := binary.AppendUvarint(nil, claim)
			payload = append(payload, 0, 'x') // a 1-byte literal
			data := craftTable(t, craftSpec{blocks: [][]entry{es}, rawBlocks: map[int]rawBlock{
				0: {payload: payload, comp: compress.Snappy},
			}})
			r := openTable(t, data, openConfig{})
			_, _, _, _, err := r.Get(context.Background(), verifyEnv, es[0].key.UserKey, base.MaxSeqNum)
			require.True(t, base.IsCorruption(err), "%v", err)
			require.Contains(t, err.Error(), "decompress")
		})
	}
}

// rawBlock replaces a crafted data block's stored bytes.
type rawBlock struct {
	payload []byte
	comp    compress.Type
}

// craftSpec describes a table built by hand, possibly breaking the rules the
// Writer keeps.
type craftSpec struct {
	// blocks are the entries of each data block, written as given.
	blocks [][]entry
	// handles and seps, where set (non-zero, non-nil), replace the index
	// entry of block i; the default separator is the block's last key.
	handles []block.Handle
	seps    [][]byte
	// rawBlocks replace the stored bytes of data blocks.
	rawBlocks map[int]rawBlock
	// props, if set, edits the properties before they are written.
	props func(*Properties)
	// padAfter[i] zero bytes follow data block i.
	padAfter map[int]int
	// rawIndex, if set, edits each index entry's key and value.
	rawIndex func(sep, handle []byte) ([]byte, []byte)
}

// craftTable builds a table from spec, with CRC32C checksums, no filter and
// no compression (but for rawBlocks).
func craftTable(t testing.TB, spec craftSpec) []byte {
	t.Helper()
	const ck = checksum.CRC32C
	var out []byte
	appendBlock := func(payload []byte, comp compress.Type) block.Handle {
		h := block.Handle{Offset: uint64(len(out)), Length: uint64(len(payload))}
		out = append(out, payload...)
		out = block.AppendTrailer(out, ck, comp, payload)
		return h
	}
	props := Properties{BlockSize: 4096, Checksum: ck, FormatVersion: FormatVersion}
	var index block.Builder
	index.Init(1)
	for i, es := range spec.blocks {
		var b block.Builder
		b.Init(4)
		for _, e := range es {
			b.Add(e.key.Append(nil), e.value)
			seq := e.key.SeqNum()
			if props.NumEntries == 0 {
				props.SmallestSeqNum, props.LargestSeqNum = seq, seq
			}
			props.SmallestSeqNum, props.LargestSeqNum = min(props.SmallestSeqNum, seq), max(props.LargestSeqNum, seq)
			props.NumEntries++
			if e.key.Kind() == base.KindDelete {
				props.NumDeletions++
			}
			props.RawKeySize += uint64(e.key.Size())
			props.RawValueSize += uint64(len(e.value))
		}
		payload, comp := b.Finish(), compress.None
		if rb, ok := spec.rawBlocks[i]; ok {
			payload, comp = rb.payload, rb.comp
		}
		h := appendBlock(payload, comp)
		out = append(out, make([]byte, spec.padAfter[i])...)
		props.NumDataBlocks++
		if i < len(spec.handles) && spec.handles[i] != (block.Handle{}) {
			h = spec.handles[i]
		}
		var sep []byte
		if len(es) > 0 {
			sep = es[len(es)-1].key.Append(nil)
		}
		if i < len(spec.seps) && spec.seps[i] != nil {
			sep = spec.seps[i]
		}
		hv := h.Append(nil)
		if spec.rawIndex != nil {
			sep, hv = spec.rawIndex(sep, hv)
		}
		index.Add(sep, hv)
	}
	props.DataSize = uint64(len(out))
	indexBlock := index.Finish()
	props.IndexSize = uint64(len(indexBlock)) + block.TrailerLen
	if spec.props != nil {
		spec.props(&props)
	}
	propsHandle := appendBlock(props.Encode(), compress.None)
	var meta block.Builder
	meta.Init(1)
	meta.Add([]byte(MetaPropertiesName), propsHandle.Append(nil))
	metaHandle := appendBlock(meta.Finish(), compress.None)
	indexHandle := appendBlock(indexBlock, compress.None)
	return Footer{Checksum: ck, MetaIndex: metaHandle, Index: indexHandle, FormatVersion: FormatVersion}.Encode(out)
}
