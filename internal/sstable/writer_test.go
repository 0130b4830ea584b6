package sstable

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/bloom"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/cpubench"
	"github.com/shaledb/shale/internal/crc"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden .sst and .layout files in testdata/")

// goldenSpec is a testdata/*.txt file: the options line and the entries.
type goldenSpec struct {
	opts    WriterOptions
	entries []entry
}

func parseSpec(t *testing.T, path string) goldenSpec {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var spec goldenSpec
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		where := fmt.Sprintf("%s:%d", path, line)
		switch fields[0] {
		case "options":
			for _, kv := range fields[1:] {
				name, val, _ := strings.Cut(kv, "=")
				var err error
				switch name {
				case "block_size":
					spec.opts.BlockSize, err = strconv.Atoi(val)
				case "restart_interval":
					spec.opts.BlockRestartInterval, err = strconv.Atoi(val)
				case "bloom_bits_per_key":
					spec.opts.BloomBitsPerKey, err = strconv.Atoi(val)
				case "compression":
					spec.opts.Compression, err = compress.ParseType(val)
				case "checksum":
					spec.opts.Checksum, err = checksum.ParseType(val)
				default:
					err = errors.Newf("unknown option %q", name)
				}
				require.NoError(t, err, where)
			}
		case "SET", "DEL":
			require.GreaterOrEqual(t, len(fields), 3, where)
			seq, err := strconv.ParseUint(fields[2], 10, 64)
			require.NoError(t, err, where)
			kind, value := base.KindSet, []byte(strings.Join(fields[3:], " "))
			if fields[0] == "DEL" {
				require.Len(t, fields, 3, where)
				kind, value = base.KindDelete, nil
			}
			uk, err := strconv.Unquote(`"` + fields[1] + `"`)
			require.NoError(t, err, where)
			spec.entries = append(spec.entries, entry{base.MakeInternalKey([]byte(uk), base.SeqNum(seq), kind), value})
		default:
			t.Fatalf("%s: unknown directive %q", where, fields[0])
		}
	}
	require.NoError(t, sc.Err())
	return spec
}

// countingWriter records every Write.
type countingWriter struct {
	bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

func writeTable(t testing.TB, opts WriterOptions, entries []entry) ([]byte, WriterMetadata, int) {
	t.Helper()
	var out countingWriter
	w := NewWriter(&out, opts)
	for _, e := range entries {
		require.NoError(t, w.Add(e.key, e.value))
	}
	meta, err := w.Close()
	require.NoError(t, err)
	return out.Bytes(), meta, out.writes
}

// TestGolden writes each testdata/*.txt table and compares it byte for byte
// with the checked-in .sst; the test decoder must read the .sst back to the
// listed entries, and its description of the file must match the .layout.
// "go test ./internal/sstable -run TestGolden -update" rewrites the .sst and
// .layout files.
func TestGolden(t *testing.T) {
	specs, err := filepath.Glob("testdata/*.txt")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(specs), 3)
	for _, specPath := range specs {
		base := strings.TrimSuffix(specPath, ".txt")
		t.Run(filepath.Base(base), func(t *testing.T) {
			spec := parseSpec(t, specPath)
			got, meta, _ := writeTable(t, spec.opts, spec.entries)
			if *update {
				require.NoError(t, os.WriteFile(base+".sst", got, 0o644))
			}
			want, err := os.ReadFile(base + ".sst")
			require.NoError(t, err)
			require.True(t, bytes.Equal(want, got), "writer output differs from %s.sst (run with -update if the format change is intended)", base)

			// The checked-in file (not just our output) decodes back.
			dt, err := decodeTable(want, base+".sst")
			require.NoError(t, err)
			require.Equal(t, len(spec.entries), len(dt.entries))
			for i := range spec.entries {
				require.Equal(t, spec.entries[i].String(), dt.entries[i].String(), "entry %d", i)
			}
			require.Equal(t, meta.Properties, dt.props)
			require.Equal(t, crc.Value(want), meta.FileChecksum)
			require.Equal(t, uint64(len(want)), meta.Size)

			if *update {
				require.NoError(t, os.WriteFile(base+".layout", []byte(dt.layout.String()), 0o644))
			}
			layout, err := os.ReadFile(base + ".layout")
			require.NoError(t, err)
			require.Equal(t, string(layout), dt.layout.String())
		})
	}
}

// TestGoldenFilesPinned guards the golden files' shape: each exercises what
// it is meant to.
func TestGoldenFilesPinned(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		minBlocks              uint64
		compressedData, filter bool
		deletions              bool
		checksum               checksum.Type
	}{
		{"three-keys", 1, false, false, false, checksum.CRC32C},
		{"snappy-bloom", 4, true, true, false, checksum.XXHash64},
		{"deletions", 4, false, true, true, checksum.XXHash64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file, err := os.ReadFile(filepath.Join("testdata", tc.name+".sst"))
			require.NoError(t, err)
			dt, err := decodeTable(file, tc.name)
			require.NoError(t, err)
			require.GreaterOrEqual(t, dt.props.NumDataBlocks, tc.minBlocks)
			require.Equal(t, tc.filter, dt.filter != nil)
			require.Equal(t, tc.deletions, dt.props.NumDeletions > 0)
			require.Equal(t, tc.checksum, dt.footer.Checksum)
			require.Equal(t, tc.compressedData, strings.Contains(dt.layout.String(), "(snappy)"))
		})
	}
}

func TestWriterRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, opts := range []WriterOptions{
		{},
		{BlockSize: 64, BlockRestartInterval: 1},
		{BlockSize: 512, BlockRestartInterval: 3, BloomBitsPerKey: 5, Compression: compress.Snappy, Checksum: checksum.CRC32C},
		{BloomBitsPerKey: 10, Compression: compress.Snappy, Checksum: checksum.XXHash64},
		{BlockSize: 1 << 16, BloomBitsPerKey: 20, Checksum: checksum.XXHash64},
		{BlockSize: 512, BloomBitsPerKey: 10, Compression: compress.Zstd, Checksum: checksum.CRC32C},
		{BloomBitsPerKey: 10, Compression: compress.Zstd, ZstdLevel: 19, Checksum: checksum.XXHash64},
	} {
		for _, n := range []int{1, 2, 50, 2000} {
			t.Run(fmt.Sprintf("%+v/n=%d", opts, n), func(t *testing.T) {
				entries := randomEntries(rng, n)
				file, meta, writes := writeTable(t, opts, entries)
				dt, err := decodeTable(file, "t.sst")
				require.NoError(t, err)
				require.Equal(t, len(entries), len(dt.entries))
				for i := range entries {
					require.Equal(t, entries[i].String(), dt.entries[i].String())
				}

				require.Equal(t, uint64(len(file)), meta.Size)
				require.Equal(t, crc.Value(file), meta.FileChecksum)
				require.Equal(t, entries[0].key.String(), meta.Smallest.String())
				require.Equal(t, entries[len(entries)-1].key.String(), meta.Largest.String())
				require.Equal(t, uint64(n), meta.NumEntries)
				require.Equal(t, countDeletions(entries), meta.NumDeletions)
				minSeq, maxSeq := base.MaxSeqNum, base.SeqNum(0)
				for _, e := range entries {
					minSeq, maxSeq = min(minSeq, e.key.SeqNum()), max(maxSeq, e.key.SeqNum())
				}
				require.Equal(t, minSeq, meta.SmallestSeqNum)
				require.Equal(t, maxSeq, meta.LargestSeqNum)
				require.Equal(t, minSeq, dt.props.SmallestSeqNum)
				require.Equal(t, maxSeq, dt.props.LargestSeqNum)
				require.Equal(t, meta.Properties, dt.props)

				// The blocks go out in writes of writeBufferSize (the
				// last one shorter), not one each.
				require.GreaterOrEqual(t, writes, (len(file)+writeBufferSize-1)/writeBufferSize)
				require.LessOrEqual(t, writes, len(file)/(writeBufferSize/2)+1)
			})
		}
	}
}

// randomEntries returns n entries in order: user keys with several versions,
// some tombstones.
func randomEntries(rng *rand.Rand, n int) []entry {
	var es []entry
	for i := 0; len(es) < n; i++ {
		uk := fmt.Appendf(nil, "k%06d", i*3+rng.IntN(3))
		versions := 1
		if rng.IntN(5) == 0 {
			versions = 1 + rng.IntN(6)
		}
		seq := base.SeqNum(1 + rng.IntN(1000))
		for v := 0; v < versions && len(es) < n; v++ {
			kind := base.KindSet
			var value []byte
			if rng.IntN(6) == 0 {
				kind = base.KindDelete
			} else {
				value = make([]byte, rng.IntN(100))
				for j := range value {
					value[j] = byte('a' + rng.IntN(4))
				}
			}
			es = append(es, entry{base.MakeInternalKey(uk, seq+base.SeqNum(versions-v), kind), value})
		}
	}
	return es
}

func TestWriterOrder(t *testing.T) {
	k := func(uk string, seq base.SeqNum) base.InternalKey {
		return base.MakeInternalKey([]byte(uk), seq, base.KindSet)
	}
	for _, tc := range []struct {
		name        string
		first, next base.InternalKey
	}{
		{"same-key", k("b", 5), k("b", 5)},
		{"smaller-user-key", k("b", 5), k("a", 9)},
		{"older-then-newer", k("b", 5), k("b", 6)},
		{"set-then-delete-same-seq", base.MakeInternalKey([]byte("b"), 5, base.KindDelete), k("b", 5)},
		{"unknown-kind", k("a", 1), base.InternalKey{UserKey: []byte("b"), Trailer: base.MakeTrailer(1, 7)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := NewWriter(&buf, WriterOptions{})
			require.NoError(t, w.Add(tc.first, []byte("v")))
			add := func() error { return w.Add(tc.next, []byte("w")) }
			if invariants.Enabled {
				require.Panics(t, func() { _ = add() })
			} else {
				err := add()
				require.True(t, errors.IsAssertionFailure(err), "%v", err)
				require.Contains(t, err.Error(), tc.next.String())
			}
			// The bad entry was not added; the table is still good.
			_, err := w.Close()
			require.NoError(t, err)
			dt, err := decodeTable(buf.Bytes(), "t")
			require.NoError(t, err)
			require.Len(t, dt.entries, 1)
		})
	}
	// Newer versions of one user key sort first, and are in order.
	_, _, _ = writeTable(t, WriterOptions{}, []entry{
		{base.MakeInternalKey([]byte("a"), 9, base.KindSet), nil},
		{base.MakeInternalKey([]byte("a"), 8, base.KindSet), nil},
		{base.MakeInternalKey([]byte("a"), 8, base.KindDelete), nil},
	})
}

func TestWriterEmpty(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, WriterOptions{})
	_, err := w.Close()
	require.True(t, errors.Is(err, base.ErrInvalidArgument), "%v", err)
	require.Zero(t, buf.Len())
}

func TestWriterClosed(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, WriterOptions{})
	require.NoError(t, w.Add(base.MakeInternalKey([]byte("a"), 1, base.KindSet), nil))
	_, err := w.Close()
	require.NoError(t, err)
	err = w.Add(base.MakeInternalKey([]byte("b"), 1, base.KindSet), nil)
	require.True(t, errors.Is(err, base.ErrClosed), "%v", err)
	_, err = w.Close()
	require.True(t, errors.Is(err, base.ErrClosed), "%v", err)
}

func TestWriterOptionsInvalid(t *testing.T) {
	for _, opts := range []WriterOptions{
		{BlockSize: -1},
		{BlockRestartInterval: -1},
		{BloomBitsPerKey: -1},
		{Compression: compress.Type(4)},
		{Compression: compress.Zstd, ZstdLevel: 23},
		{Compression: compress.Zstd, ZstdLevel: -1},
		{Checksum: checksum.XXH3},
		{Checksum: checksum.Type(99)},
	} {
		var buf bytes.Buffer
		w := NewWriter(&buf, opts)
		err := w.Add(base.MakeInternalKey([]byte("a"), 1, base.KindSet), nil)
		require.True(t, errors.Is(err, base.ErrInvalidArgument), "%+v: %v", opts, err)
		_, err = w.Close()
		require.True(t, errors.Is(err, base.ErrInvalidArgument), "%+v: %v", opts, err)
	}
}

// failingWriter accepts limit bytes, then fails (or, if short, claims a
// short write without an error).
type failingWriter struct {
	n, limit int
	short    bool
}

var errInjected = errors.New("injected write error")

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n+len(p) > w.limit {
		if w.short {
			w.n = w.limit
			return len(p) - 1, nil
		}
		return 0, errInjected
	}
	w.n += len(p)
	return len(p), nil
}

func TestWriterWriteErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	entries := randomEntries(rng, 500)
	opts := WriterOptions{BlockSize: 512, BloomBitsPerKey: 10, Compression: compress.Snappy, Checksum: checksum.CRC32C}
	full, _, _ := writeTable(t, opts, entries)
	// Fail at every write in turn: the error must surface, from Add or
	// Close, and stick.
	for limit := 0; limit < len(full); limit += 97 {
		for _, short := range []bool{false, true} {
			fw := &failingWriter{limit: limit, short: short}
			w := NewWriter(fw, opts)
			var err error
			for _, e := range entries {
				if err = w.Add(e.key, e.value); err != nil {
					break
				}
			}
			if err == nil {
				_, err = w.Close()
			}
			want := errInjected
			if short {
				want = io.ErrShortWrite
			}
			require.True(t, errors.Is(err, want), "limit %d: %v", limit, err)
			require.Contains(t, err.Error(), "at offset")
			_, err2 := w.Close()
			require.True(t, errors.Is(err2, want), "sticky: %v", err2)
		}
	}
}

func TestWriterMetadataOwnsKeys(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, WriterOptions{})
	first, last := []byte("aaa"), []byte("zzz")
	require.NoError(t, w.Add(base.MakeInternalKey(first, 2, base.KindSet), nil))
	require.NoError(t, w.Add(base.MakeInternalKey(last, 1, base.KindSet), nil))
	meta, err := w.Close()
	require.NoError(t, err)
	copy(first, "XXX")
	copy(last, "XXX")
	require.Equal(t, "aaa", string(meta.Smallest.UserKey))
	require.Equal(t, "zzz", string(meta.Largest.UserKey))
}

func TestWriterBloomDedup(t *testing.T) {
	// A hundred versions of one key add one key to the filter: the filter
	// is the minimum one 512-bit line (64 bytes + 2), not the two lines
	// that 1000 bits would take.
	var es []entry
	for seq := base.SeqNum(100); seq >= 1; seq-- {
		es = append(es, entry{base.MakeInternalKey([]byte("k"), seq, base.KindSet), nil})
	}
	file, _, _ := writeTable(t, WriterOptions{BloomBitsPerKey: 10}, es)
	dt, err := decodeTable(file, "t")
	require.NoError(t, err)
	require.Len(t, dt.filter, bloom.Size(1, 10))
	require.Equal(t, 66, bloom.Size(1, 10))
	require.Equal(t, 130, bloom.Size(100, 10))
}

func TestSeparator(t *testing.T) {
	ik := func(uk string, seq base.SeqNum) []byte {
		return base.MakeInternalKey([]byte(uk), seq, base.KindSet).Append(nil)
	}
	short := func(uk string) string {
		return base.MakeInternalKey([]byte(uk), base.MaxSeqNum, separatorKind).String()
	}
	str := func(b []byte) string { k, _ := base.DecodeInternalKey(b); return k.String() }
	var w Writer
	for _, tc := range []struct {
		a, b []byte
		want string
	}{
		{ik("abcdef", 5), ik("abzzzz", 9), short("abd")},
		{ik("abc", 5), ik("abd", 9), str(ik("abc", 5))},     // no room between 'c' and 'd'
		{ik("ab", 5), ik("abcd", 9), str(ik("ab", 5))},      // prefix
		{ik("a", 5), ik("c", 9), str(ik("a", 5))},           // "b" is not shorter than "a"
		{ik("same", 5), ik("same", 4), str(ik("same", 5))},  // same user key
		{ik("a\xffz", 5), ik("b", 1), str(ik("a\xffz", 5))}, // 0xff cannot be incremented... and 'a'+1 == 'b'
		{ik("x\x00\x00", 1), ik("x\x05", 1), short("x\x01")},
	} {
		got := w.separator(tc.a, tc.b)
		require.Equal(t, tc.want, str(got), "separator(%s, %s)", str(tc.a), str(tc.b))
		require.LessOrEqual(t, base.CompareEncoded(tc.a, got), 0)
		require.Less(t, base.CompareEncoded(got, tc.b), 0)
	}
	for _, tc := range []struct {
		a    []byte
		want string
	}{
		{ik("abc", 5), short("b")},
		{ik("\xff\xffab", 5), short("\xff\xffb")},
		{ik("\xff\xff", 5), str(ik("\xff\xff", 5))},
		{ik("a", 5), str(ik("a", 5))}, // "b" is not shorter
		{ik("", 5), str(ik("", 5))},
	} {
		got := w.successor(tc.a)
		require.Equal(t, tc.want, str(got), "successor(%s)", str(tc.a))
		require.LessOrEqual(t, base.CompareEncoded(tc.a, got), 0)
	}
}

func TestEstimatedSize(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	entries := randomEntries(rng, 3000)
	opts := WriterOptions{BloomBitsPerKey: 10, Checksum: checksum.CRC32C}
	var buf bytes.Buffer
	w := NewWriter(&buf, opts)
	prev := w.EstimatedSize()
	for _, e := range entries {
		require.NoError(t, w.Add(e.key, e.value))
		est := w.EstimatedSize()
		require.GreaterOrEqual(t, est, prev)
		prev = est
	}
	meta, err := w.Close()
	require.NoError(t, err)
	ratio := float64(prev) / float64(meta.Size)
	require.InDelta(t, 1.0, ratio, 0.05, "estimate %d, final %d", prev, meta.Size)
}

// TestWriterAddAllocs pins that adding entries allocates nothing once the
// Writer's buffers have grown, whether the blocks compress or not: a block
// that snappy cannot shrink is stored as it is, and the Writer used to drop
// the output buffer Compress had allocated for it, so with values that do
// not compress (the bench's) every data block allocated one.
func TestWriterAddAllocs(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	same := bytes.Repeat([]byte("v"), 50)
	random := make([]byte, 1<<16)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	for _, tc := range []struct {
		name string
		// value returns entry i's value.
		value func(i int) []byte
		// perRun is the number of entries a run adds: at least a block's
		// worth, so that a per-block allocation shows in the average.
		perRun int
	}{
		{"compressible", func(int) []byte { return same }, 1},
		{"incompressible", func(i int) []byte {
			off := (i * 7919) % (len(random) - 256)
			return random[off : off+256]
		}, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWriter(io.Discard, WriterOptions{BloomBitsPerKey: 10, Compression: compress.Snappy, Checksum: checksum.XXHash64})
			uk := make([]byte, 0, 16)
			i := 0
			add := func() {
				for range tc.perRun {
					uk = strconv.AppendInt(append(uk[:0], "key"...), int64(1e9+i), 10)
					if err := w.Add(base.MakeInternalKey(uk, 1, base.KindSet), tc.value(i)); err != nil {
						t.Fatal(err)
					}
					i++
				}
			}
			for range 10000 / tc.perRun {
				add() // warm the buffers up
			}
			// Amortised: buffers that grow (index, filter hashes) allocate rarely.
			require.Zero(t, testing.AllocsPerRun(5000/tc.perRun, add))
		})
	}
}

func BenchmarkWriter(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	entries := randomEntries(rng, 10000)
	var size int64
	for _, e := range entries {
		size += int64(e.key.Size() + len(e.value))
	}
	for _, tc := range []struct {
		name string
		opts WriterOptions
	}{
		{"compression=none/bloom=0", WriterOptions{Checksum: checksum.CRC32C}},
		{"compression=snappy/bloom=10", WriterOptions{BloomBitsPerKey: 10, Compression: compress.Snappy, Checksum: checksum.XXHash64}},
	} {
		b.Run(tc.name+"/entries=10000", func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			defer cpubench.Start(b)()
			var buf bytes.Buffer
			for b.Loop() {
				buf.Reset()
				w := NewWriter(&buf, tc.opts)
				for _, e := range entries {
					if err := w.Add(e.key, e.value); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestGoldenCorruption flips every byte of each golden file in turn: the test
// decoder must report corruption (never panic, never return entries), and a
// flip inside a block must be a checksum mismatch naming the file.
func TestGoldenCorruption(t *testing.T) {
	for _, name := range []string{"three-keys", "snappy-bloom", "deletions"} {
		t.Run(name, func(t *testing.T) {
			file, err := os.ReadFile(filepath.Join("testdata", name+".sst"))
			require.NoError(t, err)
			ft, err := DecodeFooter(file, uint64(len(file)))
			require.NoError(t, err)
			stride := 1
			if testing.Short() || invariants.RaceEnabled {
				stride = 7 // a sample, to keep slow builds fast
			}
			for off := 0; off < len(file); off += stride {
				bad := bytes.Clone(file)
				bad[off] ^= 0xff
				_, err := decodeTable(bad, name+".sst")
				require.True(t, base.IsCorruption(err), "flip at %d: %v", off, err)
				if uint64(off) < ft.Index.Offset+ft.Index.Length+5 {
					require.Contains(t, err.Error(), "block checksum mismatch", "flip at %d", off)
					require.Contains(t, err.Error(), "in "+name+".sst offset ", "flip at %d", off)
				}
			}
		})
	}
}

// TestWriterLargeBlocks: blocks too large to gather (writeBufferSize/2 and
// more) are written on their own, in order with the gathered ones around
// them, and the table reads back.
func TestWriterLargeBlocks(t *testing.T) {
	var es []entry
	for i := range 40 {
		n := 10 + i
		if i%7 == 3 {
			n = writeBufferSize/2 + i*1000 // a block of its own, written alone
		}
		v := bytes.Repeat([]byte{byte('a' + i%26)}, n)
		es = append(es, entry{base.MakeInternalKey(fmt.Appendf(nil, "key%03d", i), 1, base.KindSet), v})
	}
	file, meta, writes := writeTable(t, WriterOptions{BlockSize: 4096, Compression: compress.None}, es)
	require.Equal(t, uint64(len(file)), meta.Size)
	require.Equal(t, crc.Value(file), meta.FileChecksum)
	require.Greater(t, writes, 6)
	r := openTable(t, file, openConfig{})
	for _, e := range es {
		v, _, found, pin, err := r.Get(context.Background(), verifyEnv, e.key.UserKey, base.MaxSeqNum)
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, e.value, v)
		pin.Release()
	}
}
