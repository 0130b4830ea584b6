package sstable

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/rangedel"
	"github.com/stretchr/testify/require"
)

var writeFormatGolden = flag.Bool("write-format-golden", false,
	"write the format-version golden tables of testdata/ that do not exist yet (never overwrites one)")

// formatGolden is a checked-in table of one format version, written by the
// release named, that every later release must read (FORMAT.md's promise).
// Unlike TestGolden's files, these are never rewritten when the writer
// changes: they are what an old release left on a disk. A new format
// version adds one (-write-format-golden writes only missing files).
type formatGolden struct {
	version uint32
	file    string // in testdata
	release string // the first release that writes it
	// spec returns the table's contents and the options it was written
	// with; nil for a file that TestGolden's .txt spec describes.
	spec func() (WriterOptions, []entry, []rangedel.Fragment)
}

var formatGoldens = []formatGolden{
	{FormatVersion, "snappy-bloom.sst", "v0.1.0", nil},
	{FormatVersion, "deletions.sst", "v0.1.0", nil},
	{FormatVersionRangeDel, "format-v2-rangedel.sst", "v0.2.0", rangeDelGoldenSpec},
	{FormatVersionPartitioned, "format-v3-partitioned.sst", "v0.2.0", partitionedGoldenSpec},
	// zstd blocks (compression byte 7) are not a format version of their
	// own; FORMAT.md says what older releases do with them.
	{FormatVersionRangeDel, "format-v2-zstd.sst", "v0.3.0", zstdGoldenSpec},
	{FormatVersionPartitioned, "format-v3-zstd-partitioned.sst", "v0.3.0", zstdPartitionedGoldenSpec},
}

func zstdGoldenSpec() (WriterOptions, []entry, []rangedel.Fragment) {
	o, es, frags := rangeDelGoldenSpec()
	o.Compression, o.ZstdLevel = compress.Zstd, 3
	return o, es, frags
}

func zstdPartitionedGoldenSpec() (WriterOptions, []entry, []rangedel.Fragment) {
	o, es, frags := partitionedGoldenSpec()
	o.Compression, o.ZstdLevel = compress.Zstd, 19
	return o, es, frags
}

// goldenPoints returns n point entries over keys "key%04d": every fifth key
// has an older version under it, every seventh is a tombstone.
func goldenPoints(n int) []entry {
	var es []entry
	for i := range n {
		k := fmt.Appendf(nil, "key%04d", i)
		seq := base.SeqNum(2*i + 10)
		if i%7 == 3 {
			es = append(es, entry{base.MakeInternalKey(k, seq, base.KindDelete), nil})
		} else {
			es = append(es, entry{base.MakeInternalKey(k, seq, base.KindSet), fmt.Appendf(nil, "value-%04d-%s", i, bytes.Repeat([]byte{'a' + byte(i%26)}, i%40))})
		}
		if i%5 == 0 {
			es = append(es, entry{base.MakeInternalKey(k, seq-1, base.KindSet), fmt.Appendf(nil, "older-%04d", i)})
		}
	}
	return es
}

// goldenFrags are range tombstones over parts of goldenPoints' keys, newer
// than every point entry, one fragment with two tombstones.
func goldenFrags() []rangedel.Fragment {
	return []rangedel.Fragment{
		{Start: []byte("key0010"), End: []byte("key0020"), Seqs: []base.SeqNum{900}},
		{Start: []byte("key0050"), End: []byte("key0055"), Seqs: []base.SeqNum{920, 910}},
		{Start: []byte("key0055"), End: []byte("key0070"), Seqs: []base.SeqNum{910}},
	}
}

func rangeDelGoldenSpec() (WriterOptions, []entry, []rangedel.Fragment) {
	return WriterOptions{BlockSize: 512, BlockRestartInterval: 8, BloomBitsPerKey: 10,
		Compression: compress.Snappy, Checksum: checksum.XXHash64}, goldenPoints(120), goldenFrags()
}

func partitionedGoldenSpec() (WriterOptions, []entry, []rangedel.Fragment) {
	return WriterOptions{BlockSize: 256, BlockRestartInterval: 4, BloomBitsPerKey: 10,
		Compression: compress.Snappy, Checksum: checksum.CRC32C, IndexPartitionSize: 128}, goldenPoints(300), goldenFrags()
}

// contents returns what g's table holds.
func (g formatGolden) contents(t *testing.T) ([]entry, []rangedel.Fragment) {
	if g.spec == nil {
		spec := parseSpec(t, filepath.Join("testdata", g.file[:len(g.file)-len(".sst")]+".txt"))
		return spec.entries, nil
	}
	_, es, frags := g.spec()
	return es, frags
}

// TestFormatVersionGoldens reads a checked-in table of every format version
// the reader accepts, as the release that first wrote it wrote it: the
// footer's version, every entry both ways, every key at every sequence
// number it holds, the range tombstones, and both checks.
func TestFormatVersionGoldens(t *testing.T) {
	for _, g := range formatGoldens {
		path := filepath.Join("testdata", g.file)
		if _, err := os.Stat(path); os.IsNotExist(err) && *writeFormatGolden && g.spec != nil {
			opts, es, frags := g.spec()
			var buf bytes.Buffer
			w := NewWriter(&buf, opts)
			for _, f := range frags {
				require.NoError(t, w.AddRangeDeletion(f))
			}
			for _, e := range es {
				require.NoError(t, w.Add(e.key, e.value))
			}
			_, err := w.Close()
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
		}
	}

	covered := make(map[uint32]bool)
	for _, g := range formatGoldens {
		t.Run(g.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", g.file))
			require.NoError(t, err)
			es, frags := g.contents(t)
			for _, cfg := range []openConfig{{}, {cache: cache.New(1 << 20)}, {mmap: true}, {cache: cache.New(1 << 20), cacheMeta: true}} {
				t.Run(cfg.String(), func(t *testing.T) {
					r := openTable(t, data, cfg)
					require.Equal(t, g.version, r.footer.FormatVersion)
					require.Equal(t, uint64(g.version), r.Properties().FormatVersion)
					require.Equal(t, g.version == FormatVersionPartitioned, r.Properties().IndexPartitions > 1)
					for _, backward := range []bool{false, true} {
						it, err := r.NewIter(context.Background(), verifyEnv, nil, nil)
						require.NoError(t, err)
						got, err := scan(it, backward)
						require.NoError(t, err)
						requireSameEntries(t, es, got)
						require.NoError(t, it.Close())
					}
					for _, e := range es {
						for _, seq := range []base.SeqNum{e.key.SeqNum() - 1, e.key.SeqNum(), base.MaxSeqNum} {
							checkGet(t, r, verifyEnv, es, e.key.UserKey, seq)
						}
					}
					require.Equal(t, len(frags), r.RangeDeletions().Len())
					for i, f := range r.RangeDeletions().Fragments() {
						require.Equal(t, string(frags[i].Start), string(f.Start))
						require.Equal(t, string(frags[i].End), string(f.End))
						require.Equal(t, frags[i].Seqs, f.Seqs)
					}
					require.NoError(t, r.VerifyChecksums(context.Background(), verifyEnv))
					require.NoError(t, r.Check(context.Background(), verifyEnv))
				})
			}
		})
		covered[g.version] = true
	}

	// Every version the footer decoder accepts has a golden table, and the
	// first one it refuses is refused with an error that names it: what an
	// older release says about a table of a newer one.
	three, err := os.ReadFile(filepath.Join("testdata", "three-keys.sst"))
	require.NoError(t, err)
	for v := uint32(1); ; v++ {
		b := bytes.Clone(three)
		binary.LittleEndian.PutUint32(b[len(b)-FooterLen+footerVersionOffset:], v)
		_, err := DecodeFooter(b, uint64(len(b)))
		if err != nil {
			require.ErrorContains(t, err, fmt.Sprintf("unsupported format version %d, want %d to %d", v, FormatVersion, v-1))
			require.ErrorIs(t, err, base.ErrCorruption)
			_, err = tryOpen(memWith(t, b), openConfig{})
			require.ErrorContains(t, err, fmt.Sprintf("sstable: %s: footer: unsupported format version %d", testFile, v))
			break
		}
		require.True(t, covered[v], "format version %d is read but has no golden table in formatGoldens", v)
	}
}
