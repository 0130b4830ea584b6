package fileio

import (
	"bytes"
	"context"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/shaledb/shale/internal/vfs"
	"github.com/shaledb/shale/internal/vfs/errorfs"
	"github.com/shaledb/shale/ioctx"
	"github.com/stretchr/testify/require"
)

// bytesReadFS counts the bytes read from fs's files.
func bytesReadFS(fs vfs.FS) (vfs.FS, *atomic.Int64) {
	var n atomic.Int64
	return errorfs.WrapObserver(fs, func(op errorfs.Op) {
		if op.Kind == errorfs.OpFileRead {
			n.Add(int64(op.Len))
		}
	}), &n
}

// TestPrefetchBufferReadaheadFollowsCachedShare checks how much a scan reads
// from the file when it finds some of its blocks in a block cache (visited
// with Sequential, not read): while it reads a quarter of its blocks or
// more, readahead runs as for a scan that reads them all, and the file is
// read nearly whole; below that, most of the readahead would be blocks the
// caller does not want, and refills read only the initial readahead, so
// that little more than the blocks read is read. Every block read is
// right either way.
func TestPrefetchBufferReadaheadFollowsCachedShare(t *testing.T) {
	const (
		size  = 4 << 20
		block = 4096
	)
	mfs, data := testFile(t, "f", size)
	ctx := context.Background()
	for _, tc := range []struct {
		readShare float64 // of the blocks, the ones read (missing from the cache)
		minBytes  float64 // bounds on the bytes read, as shares of the file
		maxBytes  float64
	}{
		{1, 1, 1.01},
		{0.5, 0.95, 1.01},
		{0.3, 0.7, 1.01},
		{0.16, 0.16, 0.45},
		{0.05, 0.05, 0.15},
	} {
		fs, nread := bytesReadFS(mfs)
		r := openTest(t, fs, "f", Options{})
		p := NewPrefetchBuffer(r, 0, 0, 0, false)
		rng := rand.New(rand.NewPCG(1, 2))
		var want int64
		for off := 0; off < size; off += block {
			p.Sequential(int64(off), block)
			if rng.Float64() >= tc.readShare {
				continue // found in the cache
			}
			want += block
			got, err := p.Read(ctx, ioctx.IOOptions{}, int64(off), block)
			require.NoError(t, err)
			require.True(t, bytes.Equal(data[off:off+block], got), "offset %d", off)
		}
		share := float64(nread.Load()) / size
		t.Logf("read share %.2f: %.3f of the file read", tc.readShare, share)
		require.GreaterOrEqual(t, nread.Load(), want)
		require.GreaterOrEqual(t, share, tc.minBytes, "blocks read: %.2f", tc.readShare)
		require.LessOrEqual(t, share, tc.maxBytes, "blocks read: %.2f", tc.readShare)
	}
}
