package sstable

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/sstable/block"
	"github.com/stretchr/testify/require"
)

// TestZstdTable writes tables with zstd, plain and partitioned, at several
// levels, and checks what the package doc promises: the compression is in
// the properties, the index a reader loads at open is always zstd (so that
// a release without zstd refuses the table when it opens it), and the table
// reads back.
func TestZstdTable(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(5, 6)), 2000, 60)
	for _, partition := range []int{0, 128} {
		for _, level := range []int{0, 1, 9, 22} {
			t.Run(fmt.Sprintf("partition=%d/level=%d", partition, level), func(t *testing.T) {
				data := buildTable(t, WriterOptions{BlockSize: 1024, BloomBitsPerKey: 10, Compression: compress.Zstd,
					ZstdLevel: level, Checksum: checksum.CRC32C, IndexPartitionSize: partition}, es)
				r := openTable(t, data, openConfig{})
				require.Equal(t, compress.Zstd, r.props.Compression)
				h := r.footer.Index
				require.Equal(t, compress.Zstd, compress.Type(data[h.Offset+h.Length]), "index block %s", h)
				if partition == 0 {
					dt, err := decodeTable(data, "t.sst")
					require.NoError(t, err)
					require.Equal(t, len(es), len(dt.entries))
					for i := range es {
						require.Equal(t, es[i].String(), dt.entries[i].String())
					}
					require.Contains(t, dt.layout.String(), "(zstd)", "no data block is zstd")
				}
				require.NoError(t, r.Check(context.Background(), verifyEnv))
				require.NoError(t, r.VerifyChecksums(context.Background(), verifyEnv))
				for i := 0; i < len(es); i += 37 {
					checkGet(t, r, verifyEnv, es, es[i].key.UserKey, es[i].key.SeqNum())
				}
				require.NoError(t, r.Close())
			})
		}
	}
}

var dataLayout = regexp.MustCompile(`-> data \((\d+), (\d+)\) \(zstd\)`)

// firstZstdData returns the handle of the first zstd data block of data,
// an unpartitioned table.
func firstZstdData(t *testing.T, data []byte) block.Handle {
	dt, err := decodeTable(data, "t.sst")
	require.NoError(t, err)
	m := dataLayout.FindStringSubmatch(dt.layout.String())
	require.NotNil(t, m, "no zstd data block")
	off, _ := strconv.ParseUint(m[1], 10, 64)
	n, _ := strconv.ParseUint(m[2], 10, 64)
	return block.Handle{Offset: off, Length: n}
}

// TestZstdCorruptBlock damages a zstd data block of a table without
// checksums, so that the decoder sees it: every read fails with a
// corruption error naming the file and the block, and none panics.
func TestZstdCorruptBlock(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(7, 8)), 500, 60)
	data := buildTable(t, WriterOptions{BlockSize: 1024, Compression: compress.Zstd, Checksum: checksum.None}, es)
	h := firstZstdData(t, data)
	for _, tc := range []struct {
		name string
		bad  func(b []byte)
	}{
		// The length prefix no longer matches the frame's content size.
		{"length", func(b []byte) { b[h.Offset] ^= 0x01 }},
		// The frame's magic number.
		{"magic", func(b []byte) { b[h.Offset+2] ^= 0xff }},
		// The frame cut short: its last half zeroed.
		{"tail", func(b []byte) { clear(b[h.Offset+h.Length/2 : h.Offset+h.Length]) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := slices.Clone(data)
			tc.bad(bad)
			r := openTable(t, bad, openConfig{})
			defer r.Close()
			var err error
			for _, e := range es {
				if _, _, _, pin, gerr := r.Get(context.Background(), verifyEnv, e.key.UserKey, e.key.SeqNum()); gerr != nil {
					err = gerr
					break
				} else {
					pin.Release()
				}
			}
			if tc.name == "tail" && err == nil {
				return // zeroed literals can decode; the block checksum is what catches those
			}
			require.True(t, base.IsCorruption(err), "%v", err)
			require.True(t, strings.HasPrefix(err.Error(), "sstable: 000001.sst: "), "%v", err)
			require.Contains(t, err.Error(), h.String())
			require.Contains(t, err.Error(), "zstd")
		})
	}
}
