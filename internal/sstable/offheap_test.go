package sstable

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/stretchr/testify/require"
)

// TestFailedDecodeFreesCacheBuffer reads a table whose first data block
// does not decompress, through a block cache whose buffers live off the Go
// heap, again and again: each failed load allocated a buffer from the cache
// for the block, and must give it back, or the region loses an object per
// read (the garbage collector does not reclaim off-heap memory).
func TestFailedDecodeFreesCacheBuffer(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(21, 22)), 200, 40)
	data := buildTable(t, WriterOptions{BlockSize: 512, Compression: compress.Snappy,
		Checksum: checksum.CRC32C}, es)
	// The first data block starts the file: a snappy block is its decoded
	// length (a varint), then elements. Make the first element a copy from
	// offset 0, which no decoder accepts; the length stays valid, so the
	// reader allocates the block's buffer before decoding fails.
	_, n := binary.Uvarint(data)
	require.Positive(t, n)
	data[n], data[n+1] = 0x01, 0x00 // tag: copy with a 1-byte offset; offset 0

	// Checksums are not verified, so the damage reaches the decoder.
	env := ReadEnv{FillCache: true}
	ctx := context.Background()
	for _, mmap := range []bool{false, true} {
		c := cache.New(1 << 20)
		if !c.HasOffHeap() {
			t.Skip("no off-heap block cache on this platform")
		}
		r := openTable(t, data, openConfig{cache: c, mmap: mmap})
		for range 20 {
			_, _, _, pin, err := r.Get(ctx, env, es[0].key.UserKey, base.MaxSeqNum)
			pin.Release()
			require.True(t, base.IsCorruption(err), "mmap=%t: Get: %v", mmap, err)

			keys := multiGetKeys(es[:1], base.MaxSeqNum)
			require.NoError(t, r.MultiGet(ctx, env, keys))
			require.True(t, base.IsCorruption(keys[0].Err), "mmap=%t: MultiGet: %v", mmap, keys[0].Err)
			releaseKeys(keys)
		}
		require.Zero(t, c.Len(), "mmap=%t: a damaged block was cached", mmap)
		require.Zero(t, c.OffHeapInUse(), "mmap=%t: buffers of failed decodes were not given back", mmap)
	}
}

// TestUncompressedBlocksCachedOffHeap checks that uncompressed blocks read
// into an off-heap cache land in its region: the reader copies them there
// rather than handing the cache its Go heap read buffer (the exchange it
// makes with a Go heap cache), which would leave the block on the Go heap
// and give the reader a region buffer that it may drop.
func TestUncompressedBlocksCachedOffHeap(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(23, 24)), 300, 40)
	data := buildTable(t, WriterOptions{BlockSize: 512, Compression: compress.None,
		Checksum: checksum.CRC32C}, es)
	c := cache.New(1 << 20)
	if !c.HasOffHeap() {
		t.Skip("no off-heap block cache on this platform")
	}
	r := openTable(t, data, openConfig{cache: c})
	ctx := context.Background()
	for _, e := range es {
		if e.key.Kind() != base.KindSet {
			continue
		}
		v, _, found, pin, err := r.Get(ctx, verifyEnv, e.key.UserKey, base.MaxSeqNum)
		require.NoError(t, err)
		if found && len(v) > 0 {
			require.True(t, c.OffHeap(v), "the block of %s is not in the cache's region", e.key)
		}
		pin.Release()
	}
	require.Positive(t, c.Len())
	require.Equal(t, int64(c.Len()), c.OffHeapInUse(), "cached blocks and off-heap buffers in use differ")
}

// TestFailedIndexDecodeFreesCacheBuffer is TestFailedDecodeFreesCacheBuffer
// for an index partition loaded into the cache: a partition that passes its
// checksum (here the table has none) but does not decode took a buffer from
// the cache for its flat form, and must give it back.
func TestFailedIndexDecodeFreesCacheBuffer(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(25, 26)), 400, 40)
	data := buildTable(t, WriterOptions{BlockSize: 256, IndexPartitionSize: 256,
		Compression: compress.None, Checksum: checksum.None}, es)
	c := cache.New(1 << 20)
	if !c.HasOffHeap() {
		t.Skip("no off-heap block cache on this platform")
	}
	// Find the first index partition with an intact table, then damage the
	// value of its first entry (a block handle, two varints) so that it no
	// longer decodes: the block still iterates, so the decoder has sized and
	// taken its buffer when the handle fails.
	r := openTable(t, data, openConfig{cache: cache.New(1 << 20), cacheMeta: true})
	require.NotNil(t, r.top, "the table is not partitioned")
	h := r.top.x.handles[0]
	entry := data[h.Offset:]
	shared, n1 := binary.Uvarint(entry)
	unshared, n2 := binary.Uvarint(entry[n1:])
	vlen, n3 := binary.Uvarint(entry[n1+n2:])
	require.Zero(t, shared)
	value := entry[n1+n2+n3+int(unshared):][:vlen]
	for i := range value {
		value[i] = 0x80 // a varint that never ends
	}

	r = openTable(t, data, openConfig{cache: c, cacheMeta: true})
	ctx := context.Background()
	for range 20 {
		_, _, _, pin, err := r.Get(ctx, ReadEnv{FillCache: true}, es[0].key.UserKey, base.MaxSeqNum)
		pin.Release()
		require.True(t, base.IsCorruption(err), "Get: %v", err)
	}
	require.Zero(t, c.OffHeapInUse()-int64(c.Len()), "buffers of failed index decodes were not given back")
}
