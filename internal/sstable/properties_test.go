package sstable

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/sstable/block"
	"github.com/stretchr/testify/require"
)

func fullProperties() Properties {
	return Properties{
		BlockSize: 4096, BloomBitsPerKey: 10, Checksum: checksum.XXHash64, Compression: compress.Snappy,
		DataSize: 1 << 40, FilterSize: 2, IndexSize: 3, NumDataBlocks: 4, NumDeletions: 5, NumEntries: 6,
		RawKeySize: 7, RawValueSize: 8, SmallestSeqNum: 9, LargestSeqNum: base.MaxSeqNum, FormatVersion: FormatVersion,
		IndexPartitions: 11, PrefixExtractorName: "fixed:8", ExternalVersion: 1,
		ComparerName: "rocksdb.ReverseBytewiseComparator",
	}
}

func TestPropertiesRoundTrip(t *testing.T) {
	for _, p := range []Properties{{}, fullProperties()} {
		got, err := DecodeProperties(p.Encode())
		require.NoError(t, err)
		require.Equal(t, p, got)
	}
}

func TestPropertyNamesSorted(t *testing.T) {
	require.True(t, slices.IsSortedFunc(properties[:], func(a, b property) int { return strings.Compare(a.name, b.name) }))
	p := fullProperties()
	s := p.String()
	require.Equal(t, len(properties), strings.Count(s, "\n"))
	require.Contains(t, s, "shale.checksum.type: xxh64\n")
	require.Contains(t, s, "shale.compression: snappy\n")
	require.Contains(t, s, "shale.data.size: 1099511627776\n")
	require.Contains(t, s, "shale.largest.seqno: 72057594037927935\n")
	require.Contains(t, s, "shale.index.partitions: 11\n")
	require.Contains(t, s, "shale.prefix.extractor.name: fixed:8\n")
	require.Contains(t, s, "shale.comparator: rocksdb.ReverseBytewiseComparator\n")
}

// TestPrefixExtractorNameOmittedWhenEmpty: a table written without a prefix
// extractor stores no shale.prefix.extractor.name, so that its bytes are
// what they were before the property existed.
func TestPrefixExtractorNameOmittedWhenEmpty(t *testing.T) {
	p := fullProperties()
	p.PrefixExtractorName = ""
	require.NotContains(t, string(p.Encode()), "prefix")
	require.NotContains(t, p.String(), "prefix")
	got, err := DecodeProperties(p.Encode())
	require.NoError(t, err)
	require.Equal(t, p, got)
}

// TestIndexPartitionsOmittedWhenZero: a table without partitions stores no
// shale.index.partitions, so that its bytes are what they were before the
// property existed.
func TestIndexPartitionsOmittedWhenZero(t *testing.T) {
	p := fullProperties()
	p.IndexPartitions = 0
	require.NotContains(t, string(p.Encode()), "partitions")
	require.NotContains(t, p.String(), "partitions")
	got, err := DecodeProperties(p.Encode())
	require.NoError(t, err)
	require.Equal(t, p, got)
}

// propsBlock builds a properties block from name/value pairs (in order).
func propsBlock(pairs ...string) []byte {
	var b block.Builder
	b.Init(1)
	for i := 0; i < len(pairs); i += 2 {
		b.Add([]byte(pairs[i]), []byte(pairs[i+1]))
	}
	return b.Finish()
}

func TestDecodePropertiesForwardCompatible(t *testing.T) {
	got, err := DecodeProperties(propsBlock(
		"aaa.other", "ignored",
		"shale.block.size", "\x80\x20",
		"shale.brand.new.property", "\xff\xff\xff",
		"shale.compression", "snappy",
		"zzz", "",
	))
	require.NoError(t, err)
	require.Equal(t, Properties{BlockSize: 4096, Compression: compress.Snappy}, got)
}

func TestDecodePropertiesErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"not-a-block", []byte{1, 2}, "properties block"},
		{"trailing-bytes", propsBlock("shale.num.entries", "\x05\x00"), "shale.num.entries"},
		{"empty-value", propsBlock("shale.num.entries", ""), "not one varint64"},
		{"overflow", propsBlock("shale.num.entries", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"), "not one varint64"},
		{"bad-checksum-name", propsBlock("shale.checksum.type", "md5"), `unknown checksum type "md5"`},
		{"bad-compression-name", propsBlock("shale.compression", "zlib"), `unknown compression "zlib"`},
		{"out-of-order", propsBlock("shale.num.entries", "\x01", "shale.block.size", "\x01"), "follows"},
		{"duplicate", propsBlock("shale.num.entries", "\x01", "shale.num.entries", "\x02"), "follows"},
		{"corrupt-entry", func() []byte {
			b := propsBlock("shale.num.entries", "\x01")
			b[1] = 100 // key length past the end
			return b
		}(), "corrupt entry at offset 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeProperties(tc.data)
			require.True(t, base.IsCorruption(err), "%v", err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

// FuzzProperties decodes arbitrary bytes as a properties block. Whatever
// decodes must encode and decode back to the same Properties.
func FuzzProperties(f *testing.F) {
	full := fullProperties()
	f.Add(full.Encode())
	p := Properties{}
	f.Add(p.Encode())
	f.Add(propsBlock("shale.block.size", "\x80\x20", "shale.zzz", "x"))
	f.Add(propsBlock("shale.num.entries", "\x03", "shale.prefix.extractor.name", "capped:255"))
	f.Add(propsBlock("shale.prefix.extractor.name", ""))
	for _, name := range []string{"three-keys", "deletions"} {
		file, err := os.ReadFile(filepath.Join("testdata", name+".sst"))
		if err != nil {
			f.Fatal(err)
		}
		dt, err := decodeTable(file, name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(dt.props.Encode())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := DecodeProperties(data)
		if err != nil {
			if !base.IsCorruption(err) {
				t.Fatalf("not corruption: %v", err)
			}
			return
		}
		enc := p.Encode()
		again, err := DecodeProperties(enc)
		if err != nil || again != p {
			t.Fatalf("round trip: %+v -> %+v, %v", p, again, err)
		}
		if !bytes.Equal(enc, again.Encode()) {
			t.Fatal("encoding is not deterministic")
		}
	})
}
