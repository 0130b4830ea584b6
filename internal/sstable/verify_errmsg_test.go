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
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/internal/sstable/block"
	"github.com/stretchr/testify/require"
)

// reseal returns a copy of data with the payload of the block at h replaced
// by payload (of the same length) and its trailer's checksum recomputed,
// with the block's compression type unless comp is set.
func reseal(t *testing.T, data []byte, ck checksum.Type, h block.Handle, payload []byte, comp ...compress.Type) []byte {
	t.Helper()
	require.Equal(t, int(h.Length), len(payload), "reseal keeps the block's length")
	ct := compress.Type(data[h.Offset+h.Length])
	if len(comp) > 0 {
		ct = comp[0]
	}
	out := append(bytes.Clone(data[:h.Offset]), payload...)
	out = block.AppendTrailer(out, ck, ct, payload)
	return append(out, data[h.Offset+h.Length+block.TrailerLen:]...)
}

// metaHandleOf returns the handle the metaindex of r lists as name.
func metaHandleOf(t *testing.T, r *Reader, name string) block.Handle {
	t.Helper()
	for _, m := range r.metaHandles {
		if m.name == name {
			return m.h
		}
	}
	t.Fatalf("no %s in the metaindex", name)
	return block.Handle{}
}

// propsOfLen returns a properties block of exactly n bytes holding pairs,
// padded with a property no reader knows ("zzz.pad", sorted last).
func propsOfLen(t *testing.T, n int, pairs ...string) []byte {
	t.Helper()
	for pad := 0; pad < n; pad++ {
		if b := propsBlock(append(pairs, "zzz.pad", strings.Repeat("p", pad))...); len(b) == n {
			return b
		}
	}
	t.Fatalf("no padding makes the properties block %d bytes long", n)
	return nil
}

// mismatchMsg is block.ValidateChecksum's message for the block at h of
// data, a CRC32C table.
func mismatchMsg(data []byte, h block.Handle) string {
	raw := data[h.Offset : h.Offset+h.Length+block.TrailerLen]
	n := len(raw) - 4
	return fmt.Sprintf("block checksum mismatch: stored = %d, computed = %d, type = 1  in %s offset %d size %d",
		checksum.CRC32C.Unmasked(binary.LittleEndian.Uint32(raw[n:])),
		checksum.CRC32C.Unmasked(checksum.Compute(checksum.CRC32C, raw[:n])), testFile, h.Offset, h.Length)
}

// TestPropertiesErrorMessages pins the messages of a damaged properties
// block: Open says "sstable:", the file and the block's handle once,
// then what is wrong (it used to go on "sstable: properties block: ..." or
// "sstable: property ..."), and DecodeProperties, which has no file to
// name, says "sstable: properties block:" once.
func TestPropertiesErrorMessages(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(211, 212)), 40, 10)
	good := buildTable(t, WriterOptions{BloomBitsPerKey: 10, Checksum: checksum.CRC32C}, es)
	ph := metaHandleOf(t, openTable(t, good, openConfig{}), MetaPropertiesName)
	n := int(ph.Length)
	notABlock := bytes.Repeat([]byte{0xff}, n)
	for _, tc := range []struct {
		name    string
		payload []byte
		want    string // after "sstable: FILE: properties block H: "
	}{
		{"out of order", propsOfLen(t, n, "shale.num.entries", "\x01", "shale.block.size", "\x01"),
			`"shale.block.size" follows "shale.num.entries"`},
		{"unknown checksum type", propsOfLen(t, n, "shale.checksum.type", "md5"),
			`property shale.checksum.type: unknown checksum type "md5"`},
		{"unknown compression", propsOfLen(t, n, "shale.compression", "zlib"),
			`property shale.compression: unknown compression "zlib"`},
		{"not one varint", propsOfLen(t, n, "shale.num.entries", "\x05\x00"),
			"property shale.num.entries: 05 00 is not one varint64"},
		{"not a block", notABlock, fmt.Sprintf("block: %d restart points do not fit in a %d-byte block",
			binary.LittleEndian.Uint32(notABlock[n-4:]), n)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tryOpen(memWith(t, reseal(t, good, checksum.CRC32C, ph, tc.payload)), openConfig{})
			require.True(t, base.IsCorruption(err), "%v", err)
			require.Equal(t, fmt.Sprintf("sstable: %s: properties block %s: %s", testFile, ph, tc.want), err.Error())

			_, err = DecodeProperties(tc.payload)
			require.True(t, base.IsCorruption(err), "%v", err)
			require.Equal(t, "sstable: properties block: "+tc.want, err.Error())
		})
	}
}

// TestVerifyErrorMessages pins the messages of VerifyChecksums and Check
// on a table damaged after Open: "sstable:", the file and the block said
// once (a data block beyond the data used to read "sstable: verifying data
// block: sstable: 000001.sst: block ... ends beyond ..."), with both
// checksums where one failed.
func TestVerifyErrorMessages(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(213, 214)), 60, 10)
	const ck = checksum.CRC32C
	good := buildTable(t, WriterOptions{BlockSize: 256, BloomBitsPerKey: 10, Compression: compress.Snappy, Checksum: ck}, es)
	probe := openTable(t, good, openConfig{})
	hs := dataHandles(t, probe)
	require.Greater(t, len(hs), 2)
	ph := metaHandleOf(t, probe, MetaPropertiesName)
	fh := metaHandleOf(t, probe, MetaFilterName)
	limit := uint64(len(good)) - FooterLen
	flip := func(data []byte, h block.Handle) []byte {
		b := bytes.Clone(data)
		b[h.Offset+h.Length/2] ^= 0x40
		return b
	}

	// A metaindex whose properties handle lies beyond the footer: its
	// offset, re-encoded in as many bytes, is as large as that allows.
	mi := good[probe.footer.MetaIndex.Offset : probe.footer.MetaIndex.Offset+probe.footer.MetaIndex.Length]
	enc := ph.Append(nil)
	at := bytes.Index(mi, enc)
	require.Positive(t, at)
	offLen := len(enc) - len(binary.AppendUvarint(nil, ph.Length))
	farProps := block.Handle{Offset: 1<<(7*offLen) - 1, Length: ph.Length}
	require.Len(t, farProps.Append(nil), len(enc))
	require.Greater(t, farProps.Offset, limit)
	farMeta := reseal(t, good, ck, probe.footer.MetaIndex,
		append(append(bytes.Clone(mi[:at]), farProps.Append(nil)...), mi[at+len(enc):]...))

	// An index whose second block lies beyond the data, from a table whose
	// index names it so (Open does not read data blocks).
	far := block.Handle{Offset: 100000, Length: 10}
	farData := craftTable(t, craftSpec{blocks: [][]entry{es[:2], es[2:4]}, handles: []block.Handle{{}, far}})
	farDataEnd := openTable(t, farData, openConfig{}).dataEnd

	// A data block whose snappy header claims more than any block holds.
	claims := binary.AppendUvarint(nil, maxBlockLen+1)
	claims = append(claims, make([]byte, int(hs[1].Length)-len(claims))...)
	bigData := reseal(t, good, ck, hs[1], claims, compress.Snappy)

	for _, tc := range []struct {
		name  string
		data  []byte // the file swapped in after Open of good
		open  []byte // the file opened, when not good
		check bool   // Check rather than VerifyChecksums
		want  string
	}{
		{"data block beyond the data", nil, farData, false, fmt.Sprintf(
			"sstable: %s: data block %s with its 5-byte trailer ends beyond %d", testFile, far, farDataEnd)},
		{"data block checksum", flip(good, hs[1]), nil, false,
			"sstable: verifying data block: " + mismatchMsg(flip(good, hs[1]), hs[1])},
		{"properties block beyond the footer", farMeta, nil, false, fmt.Sprintf(
			"sstable: %s: properties block %s with its 5-byte trailer ends beyond %d", testFile, farProps, limit)},
		{"properties block checksum", flip(good, ph), nil, false,
			"sstable: verifying properties block: " + mismatchMsg(flip(good, ph), ph)},
		{"filter block checksum", flip(good, fh), nil, false,
			"sstable: verifying filter block: " + mismatchMsg(flip(good, fh), fh)},
		{"metaindex block checksum", flip(good, probe.footer.MetaIndex), nil, false,
			"sstable: verifying metaindex block: " + mismatchMsg(flip(good, probe.footer.MetaIndex), probe.footer.MetaIndex)},
		{"index block checksum", flip(good, probe.footer.Index), nil, false,
			"sstable: verifying index block: " + mismatchMsg(flip(good, probe.footer.Index), probe.footer.Index)},
		{"data block that does not decompress", bigData, nil, true, fmt.Sprintf(
			"sstable: %s: data block %s of %d compressed bytes claims %d decompressed bytes", testFile, hs[1], hs[1].Length, maxBlockLen+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opened := good
			if tc.open != nil {
				opened = tc.open
			}
			r := openTable(t, opened, openConfig{})
			if tc.data != nil {
				// Swap the file under the open Reader, as if it had
				// changed on disk.
				f, err := fileio.Open(memWith(t, tc.data), testFile, fileio.Options{})
				require.NoError(t, err)
				orig := r.file
				r.file = f
				defer func() { r.file = orig; _ = f.Close() }()
			}
			var err error
			if tc.check {
				err = r.Check(context.Background(), verifyEnv)
			} else {
				err = r.VerifyChecksums(context.Background(), verifyEnv)
			}
			require.True(t, base.IsCorruption(err), "%v", err)
			require.Equal(t, tc.want, err.Error())
			require.Equal(t, 1, strings.Count(err.Error(), "sstable:"), "%v", err)
		})
	}
}

// TestVerifyPartitionErrorMessages is TestVerifyErrorMessages for the
// partitions of a partitioned table: a damaged filter or index partition is
// named with its number, and the top-level index as such.
func TestVerifyPartitionErrorMessages(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(215, 216)), 300, 20)
	good := buildTable(t, partOpts, es)
	probe := openTable(t, good, openConfig{})
	require.NotNil(t, probe.top)
	part := probe.top.len() / 2
	flip := func(h block.Handle) []byte {
		b := bytes.Clone(good)
		b[h.Offset+h.Length/2] ^= 0x40
		return b
	}
	for _, tc := range []struct {
		name string
		h    block.Handle
	}{
		{"top-level index", probe.footer.Index},
		{partName("index", part), probe.indexHandle(part)},
		{partName("filter", part), probe.filterHandle(part)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := flip(tc.h)
			r := openTable(t, good, openConfig{})
			f, err := fileio.Open(memWith(t, bad), testFile, fileio.Options{})
			require.NoError(t, err)
			orig := r.file
			r.file = f
			defer func() { r.file = orig; _ = f.Close() }()
			err = r.VerifyChecksums(context.Background(), verifyEnv)
			require.True(t, base.IsCorruption(err), "%v", err)
			require.Equal(t, "sstable: verifying "+tc.name+" block: "+mismatchMsg(bad, tc.h), err.Error())
		})
	}
}
