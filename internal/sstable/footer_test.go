package sstable

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/sstable/block"
	"github.com/stretchr/testify/require"
)

func TestFooterEncoding(t *testing.T) {
	f := Footer{
		Checksum:      checksum.XXHash64,
		MetaIndex:     block.Handle{Offset: 1000, Length: 50},
		Index:         block.Handle{Offset: 1055, Length: 300},
		FormatVersion: FormatVersion,
	}
	enc := f.Encode([]byte("prefix"))[len("prefix"):]
	require.Len(t, enc, FooterLen)
	want := "03" + // checksum type
		"e807" + "32" + // metaindex (1000, 50)
		"9f08" + "ac02" + // index (1055, 300)
		"000000000000000000000000000000000000000000000000000000000000000000" + // padding to 41
		"01000000" + // format version
		"545353454c414853" // magic, little-endian ("TSSELAHS")
	require.Equal(t, want, hex.EncodeToString(enc))
	require.Equal(t, "SHALESST", string(binary.BigEndian.AppendUint64(nil, Magic)))

	got, err := DecodeFooter(enc, 2000)
	require.NoError(t, err)
	require.Equal(t, f, got)

	// The longest handles still fit before the version.
	longest := Footer{
		MetaIndex:     block.Handle{Offset: math.MaxUint64, Length: math.MaxUint64},
		Index:         block.Handle{Offset: math.MaxUint64, Length: math.MaxUint64},
		FormatVersion: FormatVersion,
	}
	require.Len(t, longest.Encode(nil), FooterLen)
	big := Footer{
		Checksum:      checksum.CRC32C,
		MetaIndex:     block.Handle{Offset: math.MaxUint64 - 100, Length: 1},
		Index:         block.Handle{Offset: math.MaxUint64 - 90, Length: 30},
		FormatVersion: FormatVersion,
	}
	got, err = DecodeFooter(big.Encode(nil), math.MaxUint64)
	require.NoError(t, err)
	require.Equal(t, big, got)
}

func TestDecodeFooterErrors(t *testing.T) {
	good := Footer{
		Checksum:      checksum.CRC32C,
		MetaIndex:     block.Handle{Offset: 100, Length: 20},
		Index:         block.Handle{Offset: 125, Length: 30},
		FormatVersion: FormatVersion,
	}.Encode(nil)
	const size = 160 + FooterLen // index ends at 125+30+5 = 160
	patch := func(off int, b ...byte) []byte {
		out := slices.Clone(good)
		copy(out[off:], b)
		return out
	}
	_, err := DecodeFooter(good, size)
	require.NoError(t, err)

	for _, tc := range []struct {
		name     string
		b        []byte
		fileSize uint64
		want     string
	}{
		{"file-too-short", good[:10], 10, "too short"},
		{"bytes-too-short", good[1:], size, "needs 53 bytes"},
		{"bad-magic", patch(FooterLen-1, 'X'), size, "bad magic number 0x5848414c45535354, want 0x5348414c45535354"},
		{"version-0", patch(41, 0), size, "unsupported format version 0"},
		{"version-4", patch(41, 4), size, "unsupported format version 4, want 1 to 3"},
		{"checksum-xxh3", patch(0, 4), size, "xxh3 (4)"},
		{"checksum-unknown", patch(0, 9), size, "Type(9) (9)"},
		{"metaindex-handle-overflow", patch(1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), size, "metaindex handle"},
		{"index-handle-truncated", slices.Concat(good[:1], []byte{0x64, 0x14}, slices.Repeat([]byte{0x80}, 38), good[41:]), size, "index handle"},
		{"padding", patch(40, 1), size, "the 36 bytes after metaindex handle (100, 20) and index handle (125, 30) are not zero padding"},
		// A continuation bit cleared in the index handle's offset varint
		// ends it early: the handle decodes shorter and its rest shows
		// up where padding should be.
		{"handle-cut-short", func() []byte {
			b := Footer{Checksum: checksum.CRC32C, MetaIndex: block.Handle{Offset: 100, Length: 20},
				Index: block.Handle{Offset: 300, Length: 30}, FormatVersion: FormatVersion}.Encode(nil)
			b[3] &^= 0x80 // 300 is ac 02: the offset now ends at its first byte
			return b
		}(), 335 + FooterLen, "index handle (44, 2) are not zero padding (a damaged handle or padding): 1e 00"},
		{"index-beyond-file", good, size - 1, "index block (125, 30)"},
		{"metaindex-beyond-file", Footer{
			Checksum:      checksum.CRC32C,
			MetaIndex:     block.Handle{Offset: 1000, Length: 20},
			Index:         block.Handle{Offset: 125, Length: 30},
			FormatVersion: FormatVersion,
		}.Encode(nil), size, "metaindex block (1000, 20) with its 5-byte trailer ends beyond the footer at 160"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeFooter(tc.b, tc.fileSize)
			require.True(t, base.IsCorruption(err), "%v", err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestBlockWithin(t *testing.T) {
	for _, tc := range []struct {
		h     block.Handle
		limit uint64
		want  bool
	}{
		{block.Handle{Offset: 0, Length: 0}, 5, true},
		{block.Handle{Offset: 0, Length: 0}, 4, false},
		{block.Handle{Offset: 10, Length: 5}, 20, true},
		{block.Handle{Offset: 10, Length: 6}, 20, false},
		{block.Handle{Offset: math.MaxUint64, Length: 1}, math.MaxUint64, false},
		{block.Handle{Offset: 1, Length: math.MaxUint64}, math.MaxUint64, false},
		{block.Handle{Offset: math.MaxUint64 - 5, Length: 0}, math.MaxUint64, true},
	} {
		require.Equal(t, tc.want, blockWithin(tc.h, tc.limit), "%s within %d", tc.h, tc.limit)
	}
}

// FuzzFooter decodes arbitrary bytes as a footer. A decoded footer must
// describe blocks inside the file and re-encode to an equivalent footer.
func FuzzFooter(f *testing.F) {
	for _, name := range []string{"three-keys", "snappy-bloom", "deletions"} {
		file, err := os.ReadFile(filepath.Join("testdata", name+".sst"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(file[len(file)-FooterLen:], uint64(len(file)))
	}
	f.Add(Footer{Checksum: checksum.None, FormatVersion: FormatVersion}.Encode(nil), uint64(FooterLen+5))
	f.Add([]byte("short"), uint64(5))
	f.Fuzz(func(t *testing.T, b []byte, fileSize uint64) {
		ft, err := DecodeFooter(b, fileSize)
		if err != nil {
			if !base.IsCorruption(err) {
				t.Fatalf("not corruption: %v", err)
			}
			return
		}
		if !ft.Checksum.Supported() || ft.FormatVersion < FormatVersion || ft.FormatVersion > FormatVersionPartitioned {
			t.Fatalf("accepted %+v", ft)
		}
		for _, h := range []block.Handle{ft.MetaIndex, ft.Index} {
			if h.Offset+h.Length+block.TrailerLen > fileSize-FooterLen || h.Offset > fileSize {
				t.Fatalf("handle %s beyond file of %d bytes", h, fileSize)
			}
		}
		enc := ft.Encode(nil)
		if len(enc) != FooterLen {
			t.Fatalf("encoded %d bytes", len(enc))
		}
		again, err := DecodeFooter(enc, fileSize)
		if err != nil || again != ft {
			t.Fatalf("round trip: %+v -> %+v, %v", ft, again, err)
		}
	})
}
