package sstable

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/sstable/block"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// TestOpenErrorMessages pins the exact text of the errors that damaged
// tables give: "sstable:" and the file said once (a damaged footer used to
// read "sstable: FILE: sstable: footer: ...", a block beyond its bounds
// "sstable: reading properties block: sstable: FILE: block ..."), with the
// offset or block handle, and a checksum mismatch with both checksums in
// RocksDB's words.
func TestOpenErrorMessages(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(3, 4)), 40, 10)
	good := buildTable(t, WriterOptions{BloomBitsPerKey: 10, Checksum: checksum.CRC32C}, es)
	footer, err := DecodeFooter(good, uint64(len(good)))
	require.NoError(t, err)
	size := len(good)
	footerAt := size - FooterLen

	// mismatch is block.ValidateChecksum's message for the block at h of
	// data, as stored in good.
	mismatch := func(data []byte, h block.Handle) string {
		raw := data[h.Offset : h.Offset+h.Length+block.TrailerLen]
		n := len(raw) - 4
		stored := binary.LittleEndian.Uint32(raw[n:])
		computed := checksum.Compute(checksum.CRC32C, raw[:n])
		return fmt.Sprintf("block checksum mismatch: stored = %d, computed = %d, type = 1  in %s offset %d size %d",
			checksum.CRC32C.Unmasked(stored), checksum.CRC32C.Unmasked(computed), testFile, h.Offset, h.Length)
	}
	flip := func(off uint64) []byte {
		b := bytes.Clone(good)
		b[off] ^= 1
		return b
	}
	set := func(off int, v byte) []byte {
		b := bytes.Clone(good)
		b[off] = v
		return b
	}
	badIndex := flip(footer.Index.Offset + 1)
	badMeta := flip(footer.MetaIndex.Offset + 1)
	shortSep := craftTable(t, craftSpec{blocks: [][]entry{es[:2], es[2:4]}, seps: [][]byte{nil, []byte("c")}})
	shortSepFooter, err := DecodeFooter(shortSep, uint64(len(shortSep)))
	require.NoError(t, err)

	for _, tc := range []struct {
		name string
		data []byte
		fs   func(vfs.FS) vfs.FS
		want string
	}{
		{"short file", good[:20], nil,
			"sstable: 000001.sst: file of 20 bytes is too short for a 53-byte footer"},
		{"truncated", good[100:], nil, fmt.Sprintf(
			"sstable: 000001.sst: footer: metaindex block %s with its 5-byte trailer ends beyond the footer at %d",
			footer.MetaIndex, footerAt-100)},
		{"bad magic", append(bytes.Clone(good[:size-1]), 0), nil,
			"sstable: 000001.sst: footer: bad magic number 0x0048414c45535354, want 0x5348414c45535354 (not a shale table?)"},
		{"bad footer padding", flip(uint64(size - 13)), nil, fmt.Sprintf(
			"sstable: 000001.sst: footer: the %d bytes after metaindex handle %s and index handle %s are not zero padding (a damaged handle or padding): %s01",
			footerVersionOffset-1-len(footer.MetaIndex.Append(nil))-len(footer.Index.Append(nil)), footer.MetaIndex, footer.Index,
			strings.Repeat("00 ", footerVersionOffset-1-len(footer.MetaIndex.Append(nil))-len(footer.Index.Append(nil))-1))},
		{"bad format version", flip(uint64(footerAt + footerVersionOffset)), nil,
			"sstable: 000001.sst: footer: unsupported format version 0, want 1 to 3"},
		{"bad checksum type", set(footerAt, 9), nil,
			"sstable: 000001.sst: footer: unsupported block checksum type Type(9) (9)"},
		{"corrupt index block", badIndex, nil,
			"sstable: reading index block: " + mismatch(badIndex, footer.Index)},
		{"corrupt metaindex block", badMeta, nil,
			"sstable: reading metaindex block: " + mismatch(badMeta, footer.MetaIndex)},
		{"index block that does not decode", shortSep, nil, fmt.Sprintf(
			`sstable: 000001.sst: index block %s: separator 1, "c", is shorter than a 8-byte trailer`, shortSepFooter.Index)},
		{"footer read fails", good, func(fs vfs.FS) vfs.FS {
			return errorfs.Wrap(fs, errorfs.InjectError(errorfs.ErrInjected, errorfs.OnKind(errorfs.OpFileRead)))
		}, fmt.Sprintf("sstable: reading footer: fileio: read of 53 bytes at offset %d of 000001.sst: ", footerAt)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tryOpen(memWith(t, tc.data), openConfig{wrap: tc.fs})
			require.Error(t, err)
			if tc.fs == nil {
				require.True(t, base.IsCorruption(err), "%v", err)
			}
			if tc.fs != nil {
				// errorfs describes the operation it failed after this.
				require.True(t, strings.HasPrefix(err.Error(), tc.want), "%v", err)
				require.ErrorIs(t, err, errorfs.ErrInjected)
			} else {
				require.Equal(t, tc.want, err.Error())
			}
			require.Equal(t, 1, strings.Count(err.Error(), "sstable:"), "%v", err)
		})
	}
}

// TestMetaBlockErrorMessages pins the messages of meta blocks that Open or
// a Get with the index and filter in the cache reads: a block the
// metaindex or the top-level index places beyond its region, a partition
// whose checksum fails. Each says "sstable:" once and names the file, the
// block and its handle.
func TestMetaBlockErrorMessages(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(25, 26)), 300, 20)
	data := buildTable(t, partOpts, es)
	probe := openTable(t, data, openConfig{})
	key := es[3].key.UserKey
	part := probe.partitionOf(appendSearchKey(nil, key, base.MaxSeqNum))
	h := probe.indexHandle(part)
	bad := bytes.Clone(data)
	bad[h.Offset+1] ^= 1

	t.Run("partition checksum", func(t *testing.T) {
		r := openTable(t, bad, openConfig{cache: cache.New(1 << 20), cacheMeta: true})
		_, _, _, _, err := r.Get(context.Background(), verifyEnv, key, base.MaxSeqNum)
		require.True(t, base.IsCorruption(err), "%v", err)
		raw := bad[h.Offset : h.Offset+h.Length+block.TrailerLen]
		n := len(raw) - 4
		want := fmt.Sprintf("sstable: reading index partition %d block: block checksum mismatch: stored = %d, computed = %d, type = 1  in %s offset %d size %d",
			part, checksum.CRC32C.Unmasked(binary.LittleEndian.Uint32(raw[n:])),
			checksum.CRC32C.Unmasked(checksum.Compute(checksum.CRC32C, raw[:n])), testFile, h.Offset, h.Length)
		require.Equal(t, want, err.Error())
	})

	t.Run("meta block beyond the footer", func(t *testing.T) {
		r := openTable(t, data, openConfig{})
		big := block.Handle{Offset: h.Offset, Length: r.metaLimit}
		_, err := r.readMetaBlock(context.Background(), verifyEnv, "properties", big, r.metaLimit)
		require.True(t, base.IsCorruption(err), "%v", err)
		require.Equal(t, fmt.Sprintf("sstable: 000001.sst: properties block %s with its 5-byte trailer ends beyond %d", big, r.metaLimit),
			err.Error())
	})

	t.Run("meta block that does not decompress", func(t *testing.T) {
		// A snappy block whose length header claims more than it can hold.
		payload := binary.AppendUvarint(nil, 1<<20)
		payload = append(payload, 0, 'x')
		r := openTable(t, data, openConfig{})
		_, err := r.decompressInto(metaWhat(metaBlock{index: true, part: 2}), compress.Snappy, payload, h, make([]byte, 1<<20))
		require.True(t, base.IsCorruption(err), "%v", err)
		require.True(t, strings.HasPrefix(err.Error(), fmt.Sprintf("sstable: 000001.sst: index partition 2 block %s: compress: ", h)), "%v", err)
		_, err = r.decodedLen(metaWhat(metaBlock{part: 1}), compress.Snappy, payload, h)
		require.Equal(t, fmt.Sprintf("sstable: 000001.sst: filter partition 1 block %s of %d compressed bytes claims %d decompressed bytes", h, len(payload), 1<<20),
			err.Error())
	})
}
