package sstable

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/bloom"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/sstable/block"
	"github.com/stretchr/testify/require"
)

// withEmptyFilter returns data with the filter block at h replaced by a
// filter of the same size and encoding with no bit set, which rules every
// key out, under a valid checksum: what a writer that left keys out of a
// filter (partition) would write.
func withEmptyFilter(t *testing.T, data []byte, h block.Handle) []byte {
	t.Helper()
	bad := bytes.Clone(data)
	f := bad[h.Offset : h.Offset+h.Length]
	require.Equal(t, byte(bloom.EncodingBlocked), f[len(f)-1])
	clear(f[:len(f)-2]) // the lines; the trailer (probes, encoding) stays
	trailer := block.AppendTrailer(nil, checksum.CRC32C, compress.None, f)
	copy(bad[h.Offset+h.Length:], trailer)
	return bad
}

// TestCheckFilterHoldsKeys: a filter (partition) without some of its keys
// makes Get miss entries the table has, and no checksum can tell. Check
// reads every filter and must report every key its filter rules out.
func TestCheckFilterHoldsKeys(t *testing.T) {
	ctx := context.Background()
	es := genEntries(rand.New(rand.NewPCG(13, 14)), 600, 20)
	flat := buildTable(t, WriterOptions{BlockSize: 256, BloomBitsPerKey: 10, Checksum: checksum.CRC32C}, es)
	part := buildTable(t, partOpts, es)
	flatProbe := openTable(t, flat, openConfig{})
	partProbe := requirePartitioned(t, part, 5)

	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"filter", withEmptyFilter(t, flat, flatProbe.filterH), "filter block"},
		{"filter partition", withEmptyFilter(t, part, partProbe.top.filters[3]), "filter partition 3 block"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := openTable(t, tc.data, openConfig{})
			require.NoError(t, r.VerifyChecksums(ctx, verifyEnv), "the checksums are valid")
			err := r.Check(ctx, verifyEnv)
			require.Error(t, err)
			require.True(t, base.IsCorruption(err), "%v", err)
			require.Contains(t, err.Error(), tc.want)
			require.Contains(t, err.Error(), "is not in the")
		})
	}
	// The tables as written pass.
	require.NoError(t, flatProbe.Check(ctx, verifyEnv))
	require.NoError(t, partProbe.Check(ctx, verifyEnv))
}
