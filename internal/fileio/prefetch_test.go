package fileio

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/ioctx"
	"github.com/stretchr/testify/require"
)

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
	fs, data := testFile(t, "f", size)
	ctx := context.Background()
	for _, tc := range []struct {
		readShare float64 // of the blocks, the ones read (missing from the cache)
		seeks     bool    // random reads without visits before the scan
		minBytes  float64 // bounds on the bytes read, as shares of the file
		maxBytes  float64
	}{
		{readShare: 1, minBytes: 1, maxBytes: 1.01},
		{readShare: 0.5, minBytes: 0.95, maxBytes: 1.01},
		{readShare: 0.3, minBytes: 0.7, maxBytes: 1.01},
		{readShare: 0.16, minBytes: 0.16, maxBytes: 0.45},
		{readShare: 0.05, minBytes: 0.05, maxBytes: 0.15},
		{readShare: 0.05, seeks: true, minBytes: 0.05, maxBytes: 0.15},
	} {
		r := openTest(t, fs, "f", Options{})
		p := NewPrefetchBuffer(r, 0, 0, 0, false)
		rng := rand.New(rand.NewPCG(1, 2))
		if tc.seeks {
			// A seek reads its block without a forward visit; many of
			// them must not make the scan that follows read ahead.
			for range 1000 {
				off := int64(rng.IntN(size/block)) * block
				_, err := p.Read(ctx, ioctx.IOOptions{}, off, block)
				require.NoError(t, err)
			}
		}
		start := r.BytesRead()
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
		nread := r.BytesRead() - start
		share := float64(nread) / size
		t.Logf("read share %.2f (seeks first: %t): %.3f of the file read", tc.readShare, tc.seeks, share)
		require.GreaterOrEqual(t, nread, want)
		require.GreaterOrEqual(t, share, tc.minBytes, "blocks read: %.2f, seeks first: %t", tc.readShare, tc.seeks)
		require.LessOrEqual(t, share, tc.maxBytes, "blocks read: %.2f, seeks first: %t", tc.readShare, tc.seeks)
	}
}

// TestPrefetchBufferMostlyCached checks MostlyCached over scans that read
// (miss from the cache) a given share of the blocks they visit: it reports
// true below a quarter, once the scan has visited a few blocks.
func TestPrefetchBufferMostlyCached(t *testing.T) {
	const (
		size  = 1 << 20
		block = 4096
	)
	fs, _ := testFile(t, "f", size)
	ctx := context.Background()
	for _, tc := range []struct {
		readShare float64
		seeks     bool // random reads without visits before the scan
		want      bool
	}{
		{readShare: 1, want: false},
		{readShare: 0.5, want: false},
		{readShare: 0.3, want: false},
		{readShare: 0.16, want: true},
		{readShare: 0, want: true},
		{readShare: 0.16, seeks: true, want: true},
	} {
		r := openTest(t, fs, "f", Options{})
		p := NewPrefetchBuffer(r, 0, 0, 0, false)
		require.False(t, p.MostlyCached(), "before any visit")
		rng := rand.New(rand.NewPCG(3, 4))
		if tc.seeks {
			for range 100 {
				_, err := p.Read(ctx, ioctx.IOOptions{}, int64(rng.IntN(size/block))*block, block)
				require.NoError(t, err)
			}
		}
		for off := 0; off < size; off += block {
			p.Sequential(int64(off), block)
			if rng.Float64() < tc.readShare {
				_, err := p.Read(ctx, ioctx.IOOptions{}, int64(off), block)
				require.NoError(t, err)
			}
			if off >= size/2 {
				require.Equal(t, tc.want, p.MostlyCached(), "read share %.2f (seeks first: %t) at offset %d",
					tc.readShare, tc.seeks, off)
			}
		}
	}
}

// TestPrefetchBufferLimitNextRefill checks that LimitNextRefill bounds the
// next refill of an automatic readahead (never below the bytes asked for)
// and only that one, and that a fixed readahead size or a limit at or
// before the read's offset ignores it.
func TestPrefetchBufferLimitNextRefill(t *testing.T) {
	const block = 4096
	fs, data := testFile(t, "f", 1<<20)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		fixed int
		limit func(off int64) int64 // the limit set before the read at off
		want  []int64               // bytes each of the reads at 0, block, 2*block... reads from the file
	}{
		// Sequential reads: the first exact, then 8 KiB, 16 KiB refills.
		{"none", 0, func(int64) int64 { return 0 }, []int64{block, 2 * block, 0, 4 * block}},
		{"exact", 0, func(off int64) int64 { return off + block }, []int64{block, block, block, block}},
		{"below-the-read", 0, func(off int64) int64 { return off + 10 }, []int64{block, block, block, block}},
		{"stale", 0, func(off int64) int64 { return off }, []int64{block, 2 * block, 0, 4 * block}},
		{"beyond-readahead", 0, func(off int64) int64 { return off + 64*block }, []int64{block, 2 * block, 0, 4 * block}},
		{"fixed", 3 * block, func(off int64) int64 { return off + block }, []int64{3 * block, 0, 0, 3 * block}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := openTest(t, fs, "f", Options{})
			p := NewPrefetchBuffer(r, tc.fixed, 0, 0, false)
			for k, want := range tc.want {
				off := int64(k) * block
				p.Sequential(off, block)
				p.LimitNextRefill(tc.limit(off))
				start := r.BytesRead()
				got, err := p.Read(ctx, ioctx.IOOptions{}, off, block)
				require.NoError(t, err)
				require.True(t, bytes.Equal(data[off:off+block], got), "offset %d", off)
				require.Equal(t, want, r.BytesRead()-start, "read %d", k)
			}
			// The limit went with the read that saw it.
			require.Zero(t, p.limit)
		})
	}
}

// TestPrefetchBufferBound: a bounded buffer read block after block over a
// region reads each byte of it once, whatever the readahead and block
// sizes (blocks straddle the refills), and nothing past the bound; the
// blocks it returns are the file's.
func TestPrefetchBufferBound(t *testing.T) {
	const size = 1 << 20
	fs, data := testFile(t, "f", size)
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		fixed     int
		blockSize func(rng *rand.Rand) int
		end       int64
	}{
		{"fixed 64KiB, 4000-byte blocks", 64 << 10, func(*rand.Rand) int { return 4000 }, size - 12345},
		{"fixed 10000, random blocks", 10000, func(rng *rand.Rand) int { return 1 + rng.IntN(30000) }, size / 2},
		{"automatic, random blocks", 0, func(rng *rand.Rand) int { return 1 + rng.IntN(9000) }, size - 53},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := openTest(t, fs, "f", Options{})
			p := NewPrefetchBuffer(r, tc.fixed, 0, 0, false)
			p.Bound(tc.end)
			rng := rand.New(rand.NewPCG(3, 4))
			off := int64(0)
			for off < tc.end {
				n := int(min(int64(tc.blockSize(rng)), tc.end-off))
				p.Sequential(off, n)
				got, err := p.Read(ctx, ioctx.IOOptions{}, off, n)
				require.NoError(t, err)
				require.True(t, bytes.Equal(data[off:off+int64(n)], got), "offset %d", off)
				off += int64(n)
			}
			require.Equal(t, tc.end, r.BytesRead(), "every byte of the region once, none beyond")
		})
	}
}

// TestPrefetchBufferNoteReadAndHolds checks the two calls of a caller that
// reads some blocks itself: NoteRead counts a block read outside the buffer
// as a Read does for MostlyCached (a scan that reads every block itself is
// not mostly cached) and reads nothing, and Holds reports exactly the bytes
// a Read would serve from the buffer.
func TestPrefetchBufferNoteReadAndHolds(t *testing.T) {
	const block = 4096
	fs, _ := testFile(t, "f", 1<<20)
	ctx := context.Background()
	r := openTest(t, fs, "f", Options{})
	p := NewPrefetchBuffer(r, 0, 0, 0, false)
	require.False(t, p.Holds(0, block), "an empty buffer")
	start := r.BytesRead()
	for off := int64(0); off < 16*block; off += block {
		p.Sequential(off, block)
		p.NoteRead(off, block)
		require.False(t, p.MostlyCached(), "offset %d: every visited block was read", off)
	}
	require.Zero(t, r.BytesRead()-start, "NoteRead read the file")

	// The noted reads made the next Read sequential: it refills with 8 KiB
	// of readahead.
	p.Sequential(16*block, block)
	start = r.BytesRead()
	_, err := p.Read(ctx, ioctx.IOOptions{}, 16*block, block)
	require.NoError(t, err)
	require.Equal(t, int64(2*block), r.BytesRead()-start)
	for _, tc := range []struct {
		off  int64
		n    int
		want bool
	}{
		{16 * block, block, true},
		{17 * block, block, true},
		{17*block + 100, block - 100, true},
		{17*block + 100, block, false},
		{18 * block, block, false},
		{15 * block, block, false},
	} {
		require.Equal(t, tc.want, p.Holds(tc.off, tc.n), "Holds(%d, %d)", tc.off, tc.n)
	}
}
