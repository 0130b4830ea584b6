package sstable

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/bloom"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/internal/rangedel"
	"github.com/shaledb/shale/internal/sstable/block"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// countReads returns an openConfig wrap that counts file reads into *n.
func countReads(n *int) func(vfs.FS) vfs.FS {
	return func(fs vfs.FS) vfs.FS {
		return errorfs.WrapObserver(fs, func(op errorfs.Op) {
			if op.Kind == errorfs.OpFileRead {
				*n++
			}
		})
	}
}

// dataHandles returns the handles of r's data blocks.
func dataHandles(t testing.TB, r *Reader) []block.Handle {
	return slices.Clone(r.index.handles)
}

// refills returns how many reads a fixed-size readahead of r bytes makes
// to read the blocks hs in order: each refill starts at the first block not
// buffered and reads max(r, block) bytes.
func refills(hs []block.Handle, r int) int {
	n := 0
	var start, end uint64
	for _, h := range hs {
		bend := h.Offset + h.Length + block.TrailerLen
		if h.Offset >= start && bend <= end {
			continue
		}
		n++
		start, end = h.Offset, h.Offset+max(uint64(r), bend-h.Offset)
	}
	return n
}

// TestVerifyChecksumsReads checks the reads and tickers of VerifyChecksums:
// one read per meta block and the index, then the data blocks by readahead
// chunk; one checksum computation per block.
func TestVerifyChecksumsReads(t *testing.T) {
	for _, tc := range []struct {
		name      string
		bits      int
		n         int
		readahead int64
	}{
		{"small", 0, 3, 0},
		{"small/bloom", 10, 3, 0},
		{"large/default readahead", 10, 3000, 0},
		{"large/readahead=8KiB", 10, 3000, 8 << 10},
		{"large/readahead=1", 0, 500, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es := genEntries(rand.New(rand.NewPCG(61, 62)), tc.n, 100)
			data := buildTable(t, WriterOptions{BloomBitsPerKey: tc.bits, Compression: compress.Snappy,
				Checksum: checksum.CRC32C}, es)
			var reads int
			stats := statistics.New(statistics.LevelAll)
			r := openTable(t, data, openConfig{stats: stats, wrap: countReads(&reads)})
			hs := dataHandles(t, r)
			readahead := int(tc.readahead)
			if readahead == 0 {
				readahead = 256 << 10
			}
			meta := 3 // metaindex, properties, index
			if tc.bits > 0 {
				meta++
			}
			for _, check := range []bool{false, true} {
				reads = 0
				stats.Reset()
				env := ReadEnv{ReadaheadSize: tc.readahead} // verifies anyway
				if check {
					require.NoError(t, r.Check(context.Background(), env))
				} else {
					require.NoError(t, r.VerifyChecksums(context.Background(), env))
				}
				require.Equal(t, meta+refills(hs, readahead), reads, "check=%t", check)
				require.Equal(t, uint64(meta+len(hs)), stats.TickerCount(statistics.BlockChecksumComputeCount))
				require.Zero(t, stats.TickerCount(statistics.BlockChecksumMismatchCount))
			}
			if tc.n == 3 {
				require.Equal(t, meta+1, reads, "a small table is read in one chunk")
			}
		})
	}
}

// mismatchRE is RocksDB's checksum mismatch message.
var mismatchRE = regexp.MustCompile(`block checksum mismatch: stored = \d+, computed = \d+, type = \d+  in ` +
	regexp.QuoteMeta(testFile) + ` offset (\d+) size \d+`)

// TestVerifyChecksumsMismatch corrupts each kind of block after Open and
// checks that VerifyChecksums reports it, in RocksDB's words, with the
// block's offset, and ticks the mismatch.
func TestVerifyChecksumsMismatch(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(63, 64)), 500, 100)
	for _, ck := range []checksum.Type{checksum.CRC32C, checksum.XXHash64} {
		data := buildTable(t, WriterOptions{BlockSize: 1024, BloomBitsPerKey: 10, Compression: compress.Snappy, Checksum: ck}, es)
		stats := statistics.New(statistics.LevelAll)
		r := openTable(t, data, openConfig{stats: stats})
		hs := dataHandles(t, r)
		targets := map[string]block.Handle{
			"metaindex":        r.footer.MetaIndex,
			"index":            r.footer.Index,
			"first data":       hs[0],
			"last data":        hs[len(hs)-1],
			"middle data":      hs[len(hs)/2],
			MetaFilterName:     {},
			MetaPropertiesName: {},
		}
		for _, m := range r.metaHandles {
			targets[m.name] = m.h
		}
		for name, h := range targets {
			t.Run(fmt.Sprintf("%s/%s", ck, name), func(t *testing.T) {
				bad := bytes.Clone(data)
				bad[h.Offset+h.Length/2] ^= 0x40
				// Swap the file under the open Reader, as if it had
				// changed on disk.
				f, err := fileio.Open(memWith(t, bad), testFile, fileio.Options{})
				require.NoError(t, err)
				orig := r.file
				r.file = f
				defer func() { r.file = orig; _ = f.Close() }()
				stats.Reset()
				err = r.VerifyChecksums(context.Background(), ReadEnv{})
				require.True(t, base.IsCorruption(err), "%v", err)
				m := mismatchRE.FindStringSubmatch(err.Error())
				require.NotNil(t, m, "%v", err)
				require.Equal(t, fmt.Sprint(h.Offset), m[1])
				require.Equal(t, uint64(1), stats.TickerCount(statistics.BlockChecksumMismatchCount))
			})
		}
	}
}

// TestVerifyNoChecksums checks a table written without checksums: there is
// nothing to verify, and nothing is counted.
func TestVerifyNoChecksums(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(65, 66)), 200, 20)
	data := buildTable(t, WriterOptions{BlockSize: 512, Checksum: checksum.None}, es)
	stats := statistics.New(statistics.LevelAll)
	r := openTable(t, data, openConfig{stats: stats})
	require.NoError(t, r.VerifyChecksums(context.Background(), verifyEnv))
	require.NoError(t, r.Check(context.Background(), verifyEnv))
	require.Zero(t, stats.TickerCount(statistics.BlockChecksumComputeCount))
}

// fuzzSeeds returns the tables FuzzTable starts from: the two small golden
// files, and small writer outputs (one without checksums, so that mutations
// reach the decoders). Seeds are kept small: the fuzzer minimizes every new
// interesting input, which takes time in proportion to its length.
func fuzzSeeds(t testing.TB) [][]byte {
	var seeds [][]byte
	for _, name := range []string{"three-keys", "deletions"} {
		data, err := os.ReadFile(filepath.Join("testdata", name+".sst"))
		require.NoError(t, err)
		seeds = append(seeds, data)
	}
	rng := rand.New(rand.NewPCG(67, 68))
	for _, opts := range []WriterOptions{
		{BlockSize: 32, BlockRestartInterval: 2, Checksum: checksum.CRC32C},
		{BlockSize: 64, BloomBitsPerKey: 10, Compression: compress.Snappy, Checksum: checksum.XXHash64},
		{BlockSize: 48, BlockRestartInterval: 1, Checksum: checksum.None},
		// zstd without checksums, so that mutations reach the decoder.
		{BlockSize: 256, Compression: compress.Zstd, Checksum: checksum.None},
		{BlockSize: 64, BloomBitsPerKey: 10, Compression: compress.Zstd, ZstdLevel: 9, Checksum: checksum.None},
		// A prefix filter (capped:3): prefixes besides whole keys, and the
		// shale.prefix.extractor.name property.
		{BlockSize: 64, BloomBitsPerKey: 10, Checksum: checksum.CRC32C,
			PrefixExtractor: func(k []byte) []byte { return k[:min(len(k), 3)] }, PrefixExtractorName: "capped:3"},
	} {
		seeds = append(seeds, buildTable(t, opts, genEntries(rng, 6, 12)))
	}
	// Tables with a range deletion block, with and without point entries.
	for _, es := range [][]entry{genEntries(rng, 4, 8), nil} {
		var buf bytes.Buffer
		w := NewWriter(&buf, WriterOptions{BlockSize: 32, Checksum: checksum.CRC32C})
		require.NoError(t, w.AddRangeDeletion(rangedel.Fragment{Start: []byte("a"), End: []byte("k"), Seqs: []base.SeqNum{9, 2}}))
		require.NoError(t, w.AddRangeDeletion(rangedel.Fragment{Start: []byte("m"), End: []byte("z"), Seqs: []base.SeqNum{5}}))
		for _, e := range es {
			require.NoError(t, w.Add(e.key, e.value))
		}
		_, err := w.Close()
		require.NoError(t, err)
		seeds = append(seeds, buf.Bytes())
	}
	// A range deletion block with an unbounded fragment (an empty end),
	// which no writer writes: corruption.
	seeds = append(seeds, unboundedRangeDelTable(t, checksum.None))
	return seeds
}

// FuzzTable opens arbitrary bytes as a table and uses it every way: nothing
// may panic or hang, and every error must be a corruption error.
func FuzzTable(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fs := memWith(t, data)
		for _, cfg := range []openConfig{
			{cache: cache.New(64 << 10), env: ReadEnv{FillCache: true}},
			{mmap: true, env: ReadEnv{VerifyChecksums: true}},
			{cache: cache.New(8 << 10), cacheMeta: true, env: ReadEnv{VerifyChecksums: true, FillCache: true}},
		} {
			r, err := tryOpen(fs, cfg)
			if err != nil {
				requireCorruption(t, err)
				continue
			}
			exerciseTable(t, r, cfg.env)
			require.NoError(t, r.Close())
		}
	})
}

func requireCorruption(t *testing.T, err error) {
	t.Helper()
	if err != nil && !base.IsCorruption(err) {
		t.Fatalf("not a corruption error: %+v", err)
	}
}

// exerciseTable reads r with env every way a caller can, boundedly.
func exerciseTable(t *testing.T, r *Reader, env ReadEnv) {
	ctx := context.Background()
	const maxSteps, maxKeys = 1000, 8
	var keys [][]byte
	for _, backward := range []bool{false, true} {
		it, err := r.NewIter(ctx, env, nil, nil)
		requireCorruption(t, err)
		if err != nil {
			return
		}
		kv := it.First()
		if backward {
			kv = it.Last()
		}
		for n := 0; kv != nil && n < maxSteps; n++ {
			if len(keys) < maxKeys && !backward {
				keys = append(keys, bytes.Clone(kv.K.UserKey))
			}
			kv = next(it, backward)
		}
		requireCorruption(t, it.Close())
	}
	keys = append(keys, []byte("zzz"), []byte(""))
	slices.SortFunc(keys, bytes.Compare)
	keys = slices.CompactFunc(keys, bytes.Equal)
	for _, k := range keys {
		if seq, f := r.RangeDeletions().Covering(k, base.MaxSeqNum); seq != 0 && !f.Contains(k) {
			t.Fatalf("range deletion fragment [%q, %q) does not contain %q", f.Start, f.End, k)
		}
		_, _, _, pin, err := r.Get(ctx, env, k, base.MaxSeqNum)
		requireCorruption(t, err)
		pin.Release()
		if name := r.Properties().PrefixExtractorName; name != "" {
			_, _, err := r.PrefixMayMatch(ctx, env.IO, name, k[:min(len(k), 3)], bloom.Hash(k[:min(len(k), 3)]))
			requireCorruption(t, err)
		}
		it, err := r.NewIter(ctx, env, k, append(bytes.Clone(k), 0xff))
		requireCorruption(t, err)
		if err != nil {
			continue
		}
		it.SeekLT(k)
		it.Prev()
		it.SeekGE(k)
		it.Next()
		requireCorruption(t, it.Close())
	}
	mg := make([]MultiGetKey, len(keys))
	for i, k := range keys {
		mg[i] = MultiGetKey{Key: k, Hash: bloom.Hash(k), Seq: base.MaxSeqNum}
	}
	requireCorruption(t, r.MultiGet(ctx, env, mg))
	for _, k := range mg {
		requireCorruption(t, k.Err)
		k.Pin.Release()
	}
	requireCorruption(t, r.VerifyChecksums(ctx, env))
	requireCorruption(t, r.Check(ctx, env))
}

// TestVerifyChecksumsReadsEachByteOnce: the walk reads every byte of the
// table but the footer exactly once, whatever the readahead: the data
// blocks through a readahead buffer bounded at the data region, which
// neither reads a block that straddles a refill again nor reads ahead into
// the meta blocks, which it reads on their own.
func TestVerifyChecksumsReadsEachByteOnce(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(71, 72)), 3000, 60)
	for _, tc := range []struct {
		name      string
		opts      WriterOptions
		readahead int64
	}{
		{"default readahead", WriterOptions{BloomBitsPerKey: 10, Compression: compress.Snappy, Checksum: checksum.XXHash64}, 0},
		{"odd readahead", WriterOptions{BloomBitsPerKey: 10, Checksum: checksum.CRC32C}, 10007},
		{"partitioned", WriterOptions{BloomBitsPerKey: 10, Checksum: checksum.CRC32C, IndexPartitionSize: 256}, 20000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := buildTable(t, tc.opts, es)
			r := openTable(t, data, openConfig{})
			before := r.file.BytesRead()
			env := verifyEnv
			env.ReadaheadSize = tc.readahead
			require.NoError(t, r.VerifyChecksums(context.Background(), env))
			require.Equal(t, int64(len(data)-FooterLen), r.file.BytesRead()-before)
		})
	}
}
