package sstable

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/sstable/block"
	"github.com/stretchr/testify/require"
)

// withFooterIndex returns data with its footer's index handle replaced by h.
func withFooterIndex(t *testing.T, data []byte, h block.Handle) []byte {
	t.Helper()
	n := len(data) - FooterLen
	f, err := DecodeFooter(data[n:], uint64(len(data)))
	require.NoError(t, err)
	f.Index = h
	return f.Encode(bytes.Clone(data[:n]))
}

// withTopIndex returns the partitioned table data, written uncompressed and
// without checksums, with its top-level index rewritten: entry i's value
// becomes value(i, index, filter).
func withTopIndex(t *testing.T, data []byte, value func(i int, index, filter block.Handle) []byte) []byte {
	t.Helper()
	n := len(data) - FooterLen
	f, err := DecodeFooter(data[n:], uint64(len(data)))
	require.NoError(t, err)
	require.Equal(t, checksum.None, f.Checksum)
	require.Equal(t, uint64(n), f.Index.Offset+f.Index.Length+block.TrailerLen, "the top-level index is last")
	var it block.Iter
	require.NoError(t, it.Init(base.CompareEncoded, data[f.Index.Offset:f.Index.Offset+f.Index.Length]))
	var b block.Builder
	b.Init(metaRestartInterval)
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		ih, fh, _, err := DecodeTopIndexValue(it.Value())
		require.NoError(t, err)
		b.Add(it.Key(), value(i, ih, fh))
		i++
	}
	out := bytes.Clone(data[:f.Index.Offset])
	top := b.Finish()
	f.Index.Length = uint64(len(top))
	out = append(out, top...)
	out = block.AppendTrailer(out, checksum.None, compress.None, top)
	return f.Encode(out)
}

// TestMetaCacheKeyKinds: the block cache holds a table's blocks in three
// forms (a data block as stored, a filter aligned to cache lines, an index
// decoded into its flat searchable form), so a block's offset alone must not
// be its key: a handle that names a block of another kind (a flipped
// footer, or a table without checksums whose top-level index is damaged)
// would otherwise find that block's other form in the cache and read, say,
// a bloom filter as a flat index (whose header is then a garbage length).
// With the cache, such a table must fail as it fails without one: with an
// error marked corruption, not a panic or a wrong answer.
func TestMetaCacheKeyKinds(t *testing.T) {
	ctx := context.Background()
	es := genEntries(rand.New(rand.NewPCG(5, 6)), 600, 20)

	flat := buildTable(t, WriterOptions{BlockSize: 256, BloomBitsPerKey: 10, Checksum: checksum.CRC32C}, es)
	probe := openTable(t, flat, openConfig{})
	// The footer is not checksummed: its index handle, damaged, names the
	// filter block.
	footerOnFilter := withFooterIndex(t, flat, probe.filterH)

	partOpts := WriterOptions{BlockSize: 256, BloomBitsPerKey: 10, Checksum: checksum.None, IndexPartitionSize: 128}
	part := buildTable(t, partOpts, es)
	pprobe := requirePartitioned(t, part, 3)
	// Without checksums, a damaged top-level entry names its own filter
	// partition as its index partition.
	indexOnFilter := withTopIndex(t, part, func(i int, ih, fh block.Handle) []byte {
		if i == 1 {
			ih = fh
		}
		return fh.Append(ih.Append(nil))
	})
	// A key whose newest version partition 1 holds.
	var key []byte
	for _, e := range es {
		if pprobe.partitionOf(appendSearchKey(nil, e.key.UserKey, base.MaxSeqNum)) == 1 {
			key = e.key.UserKey
			break
		}
	}
	require.NotNil(t, key)

	for _, tc := range []struct {
		name string
		data []byte
		key  []byte
	}{
		{"footer index names the filter", footerOnFilter, es[len(es)/2].key.UserKey},
		{"top-level entry names its filter partition as index", indexOnFilter, key},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Without the cache, the damage is corruption.
			_, errFlat := tryOpen(memWith(t, tc.data), openConfig{})
			if errFlat == nil {
				r := openTable(t, tc.data, openConfig{})
				_, _, _, _, errFlat = r.Get(ctx, verifyEnv, tc.key, base.MaxSeqNum)
			}
			require.Error(t, errFlat)
			require.True(t, base.IsCorruption(errFlat), "%v", errFlat)

			// With the index and filter in the cache, the same.
			c := cache.New(1 << 20)
			r, err := tryOpen(memWith(t, tc.data), openConfig{cache: c, cacheMeta: true})
			if err == nil {
				defer r.Close()
				require.NotPanics(t, func() {
					var pin BlockPin
					_, _, _, pin, err = r.Get(ctx, verifyEnv, tc.key, base.MaxSeqNum)
					pin.Release()
				})
			}
			require.Error(t, err)
			require.True(t, base.IsCorruption(err), "%v", err)
		})
	}
}

// TestEvictFromCacheDropsMetaForms: the index and filter forms, keyed apart
// from the data blocks (see metaCacheKey), are still the table's entries,
// which EvictFromCache drops with its data blocks.
func TestEvictFromCacheDropsMetaForms(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(7, 8)), 600, 20)
	for _, opts := range []WriterOptions{
		{BlockSize: 256, BloomBitsPerKey: 10, Checksum: checksum.CRC32C},
		partOpts,
	} {
		c := cache.New(1 << 20)
		r := openTable(t, buildTable(t, opts, es), openConfig{cache: c, cacheMeta: true})
		for _, e := range es[:50] {
			_, _, _, pin, err := r.Get(context.Background(), verifyEnv, e.key.UserKey, base.MaxSeqNum)
			require.NoError(t, err)
			pin.Release()
		}
		require.NotZero(t, c.Len())
		r.EvictFromCache()
		require.Zero(t, c.Len(), "partitioned: %t", opts.IndexPartitionSize > 0)
		require.Zero(t, c.Size())
	}
}
