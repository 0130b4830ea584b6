package sstable

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/bloom"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/rangedel"
	"github.com/shaledb/shale/internal/sstable/block"
	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

// This file tests partitioned indexes and filters (IndexPartitionSize). The
// round-trip tests (TestReaderRoundTrip, TestCheckWriterTables) also run
// partitioned tables through every read path: see writerCombos.

// partOpts are writer options that give a table of a few hundred entries
// many partitions.
var partOpts = WriterOptions{BlockSize: 256, BloomBitsPerKey: 10, Compression: compress.Snappy,
	Checksum: checksum.CRC32C, IndexPartitionSize: 128}

// requirePartitioned checks that data is a partitioned table of at least
// minParts partitions.
func requirePartitioned(t testing.TB, data []byte, minParts int) *Reader {
	t.Helper()
	r := openTable(t, data, openConfig{})
	require.Equal(t, uint32(FormatVersionPartitioned), r.footer.FormatVersion)
	require.NotNil(t, r.top)
	require.GreaterOrEqual(t, r.top.len(), minParts)
	require.Equal(t, uint64(r.top.len()), r.props.IndexPartitions)
	return r
}

// TestPartitionedLayout checks what the writer writes: the partitions'
// entries are exactly the unpartitioned index's, each filter partition
// holds the keys of its partition's data blocks, and the properties sum the
// partitions.
func TestPartitionedLayout(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(61, 62)), 500, 40)
	flatOpts := partOpts
	flatOpts.IndexPartitionSize = 0
	flat := openTable(t, buildTable(t, flatOpts, es), openConfig{})
	data := buildTable(t, partOpts, es)
	r := requirePartitioned(t, data, 5)

	var seps [][]byte
	var handles []block.Handle
	var indexSize, filterSize uint64
	for p := range r.top.len() {
		x := &r.parts[p]
		require.Positive(t, x.len(), "partition %d is empty", p)
		require.Equal(t, r.top.x.sep(p), x.appendSep(nil, x.len()-1), "partition %d's top-level key", p)
		for b := range x.len() {
			seps = append(seps, x.appendSep(nil, b))
			handles = append(handles, x.handle(b))
		}
		indexSize += r.top.x.handles[p].Length + block.TrailerLen
		filterSize += r.top.filters[p].Length + block.TrailerLen
		// Every key of the partition's blocks is in its filter.
		for b := range x.len() {
			it := dataIter(t, r, x.handle(b))
			for ok := it.First(); ok; ok = it.Next() {
				ik, _ := base.DecodeInternalKey(it.Key())
				require.True(t, bloom.MayContainHash(r.filterParts[p], bloom.Hash(ik.UserKey)),
					"partition %d's filter lacks %s", p, ik)
			}
		}
	}
	require.Equal(t, flat.index.len(), len(seps))
	for b := range seps {
		require.Equal(t, flat.index.sep(b), seps[b], "separator %d", b)
		require.Equal(t, flat.index.handles[b], handles[b], "handle %d", b)
	}
	require.Equal(t, indexSize+r.footer.Index.Length+block.TrailerLen, r.props.IndexSize)
	require.Equal(t, filterSize, r.props.FilterSize)
	require.Equal(t, flat.props.DataSize, r.props.DataSize)
	for _, m := range r.metaHandles {
		require.NotEqual(t, MetaFilterName, m.name, "a partitioned filter has no metaindex entry")
	}
}

// dataIter returns an iterator over the data block at h of r's file.
func dataIter(t *testing.T, r *Reader, h block.Handle) *block.Iter {
	t.Helper()
	var buf, dec []byte
	data, err := r.readWhat(context.Background(), verifyEnv, blockWhat{name: "data"}, h, r.dataEnd, &buf, &dec)
	require.NoError(t, err)
	it := &block.Iter{}
	require.NoError(t, it.InitInternal(bytes.Clone(data)))
	return it
}

// TestOnePartitionWrittenUnpartitioned: a table whose index fits in one
// partition, including one cut exactly after its last block, is written
// byte for byte as without partitioning.
func TestOnePartitionWrittenUnpartitioned(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(63, 64)), 200, 40)
	for _, tc := range []struct {
		name string
		es   []entry
		size int
	}{
		{"index-below-partition", es, 1 << 20},
		{"one-block-cut-at-once", es[:3], 1},
		{"index-exactly-one-partition", es, 0}, // size set below
	} {
		t.Run(tc.name, func(t *testing.T) {
			flatOpts := partOpts
			flatOpts.IndexPartitionSize = 0
			flat := buildTable(t, flatOpts, tc.es)
			size := tc.size
			if size == 0 {
				// The index block's own (uncompressed) size: the cut comes
				// after the last entry.
				footer, err := DecodeFooter(flat, uint64(len(flat)))
				require.NoError(t, err)
				index, _, err := readBlock(flat, testFile, footer, footer.Index)
				require.NoError(t, err)
				size = len(index)
			}
			opts := partOpts
			opts.IndexPartitionSize = size
			got := buildTable(t, opts, tc.es)
			require.Equal(t, flat, got)
			r := openTable(t, got, openConfig{})
			require.Nil(t, r.top)
			require.Equal(t, uint32(FormatVersion), r.footer.FormatVersion)
		})
	}
}

// TestPartitionedDeterministic: the same entries and options give the same
// bytes.
func TestPartitionedDeterministic(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(65, 66)), 400, 40)
	a, b := buildTable(t, partOpts, es), buildTable(t, partOpts, es)
	require.Equal(t, a, b)
	requirePartitioned(t, a, 3)
}

// TestPartitionedVersionsAcrossBoundary writes one user key with so many
// versions that they span several data blocks and partitions, and reads
// every version back by Get, MultiGet and iterators, with the filter
// partitions in memory and in a cache. A filter partition that lacked the
// key because the previous partition already had it would make these Gets
// miss.
func TestPartitionedVersionsAcrossBoundary(t *testing.T) {
	var es []entry
	es = append(es, entry{base.MakeInternalKey([]byte("a"), 5, base.KindSet), []byte("a")})
	const versions = 400
	for v := versions; v >= 1; v-- {
		es = append(es, entry{base.MakeInternalKey([]byte("hot"), base.SeqNum(10*v), base.KindSet),
			fmt.Appendf(nil, "value-%04d", v)})
	}
	es = append(es, entry{base.MakeInternalKey([]byte("z"), 5, base.KindSet), []byte("z")})
	opts := partOpts
	opts.BlockSize = 64
	opts.IndexPartitionSize = 96
	data := buildTable(t, opts, es)
	requirePartitioned(t, data, 4)
	for _, cfg := range []openConfig{{}, {cache: cache.New(8 << 10), cacheMeta: true}} {
		t.Run(cfg.String(), func(t *testing.T) {
			r := openTable(t, data, cfg)
			for seq := base.SeqNum(0); seq <= 10*versions+10; seq += 3 {
				checkGet(t, r, verifyEnv, es, []byte("hot"), seq)
			}
			rng := rand.New(rand.NewPCG(67, 68))
			checkIterOps(t, r, verifyEnv, es, rng, 200)
			for range 20 {
				keys := []MultiGetKey{
					{Key: []byte("a"), Seq: base.SeqNum(rng.IntN(20))},
					{Key: []byte("hot"), Seq: base.SeqNum(rng.IntN(10*versions + 20))},
					{Key: []byte("z"), Seq: base.SeqNum(rng.IntN(20))},
				}
				for i := range keys {
					keys[i].Hash = bloom.Hash(keys[i].Key)
				}
				require.NoError(t, r.MultiGet(context.Background(), verifyEnv, keys))
				checkMultiGetResults(t, keys, es)
				releaseKeys(keys)
			}
			require.NoError(t, r.Check(context.Background(), verifyEnv))
		})
	}
}

// TestPartitionedRangeDels: a partitioned table with range tombstones has
// format version 3, its tombstones and its entries.
func TestPartitionedRangeDels(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(69, 70)), 400, 30)
	frags := []rangedel.Fragment{frag("key000010", "key000020", 900, 7), frag("key000300", "key000400", 50)}
	var buf bytes.Buffer
	w := NewWriter(&buf, partOpts)
	for _, f := range frags {
		require.NoError(t, w.AddRangeDeletion(f))
	}
	for _, e := range es {
		require.NoError(t, w.Add(e.key, e.value))
	}
	_, err := w.Close()
	require.NoError(t, err)
	r := requirePartitioned(t, buf.Bytes(), 3)
	require.Equal(t, uint64(FormatVersionPartitioned), r.props.FormatVersion)
	require.Equal(t, frags, r.RangeDeletions().Fragments())
	require.NoError(t, r.Check(context.Background(), verifyEnv))
	checkIterOps(t, r, verifyEnv, es, rand.New(rand.NewPCG(71, 72)), 100)
}

// TestPartitionsInCache: with CacheIndexAndFilterBlocks, Open loads no
// partition; reads load the ones they need under their own handles and tick
// the index and filter counters; an iterator keeps working, and its values
// stay valid, while other reads evict its partition from a tiny cache.
func TestPartitionsInCache(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(73, 74)), 800, 30)
	data := buildTable(t, partOpts, es)
	stats := statistics.New(statistics.LevelAll)
	c := cache.New(4 << 10)
	r := openTable(t, data, openConfig{cache: c, cacheMeta: true, stats: stats})
	require.Zero(t, stats.TickerCount(statistics.BlockCacheIndexMiss), "Open loads no partition")
	require.Zero(t, stats.TickerCount(statistics.BlockCacheFilterMiss), "Open loads no partition")
	require.Nil(t, r.parts)

	checkGet(t, r, verifyEnv, es, es[len(es)/2].key.UserKey, base.MaxSeqNum)
	require.Equal(t, uint64(1), stats.TickerCount(statistics.BlockCacheFilterMiss))
	require.Equal(t, uint64(1), stats.TickerCount(statistics.BlockCacheIndexMiss))
	p := r.partitionOf(appendSearchKey(nil, es[len(es)/2].key.UserKey, base.MaxSeqNum))
	_, ok := c.Get(r.metaCacheKey(r.top.x.handles[p], metaBlock{index: true, part: p}))
	require.True(t, ok, "the partition is cached under its own handle")

	ctx := context.Background()
	rng := rand.New(rand.NewPCG(75, 76))
	for _, backward := range []bool{false, true} {
		it, err := r.NewIter(ctx, verifyEnv, nil, nil)
		require.NoError(t, err)
		var got []entry
		for kv := first(it, backward); kv != nil; kv = next(it, backward) {
			got = append(got, entry{kv.K.Clone(), bytes.Clone(kv.V)})
			// Reads in between churn the tiny cache; the entry's memory
			// stays valid until the iterator moves.
			for range 2 {
				checkGet(t, r, verifyEnv, es, es[rng.IntN(len(es))].key.UserKey, base.MaxSeqNum)
			}
			require.Equal(t, got[len(got)-1].value, kv.V)
		}
		require.NoError(t, it.Close())
		if backward {
			got = reversed(got)
		}
		requireSameEntries(t, es, got)
	}
	require.Greater(t, stats.TickerCount(statistics.BlockCacheIndexMiss), uint64(r.top.len()),
		"the tiny cache evicted partitions")
}

func first(it *Iter, backward bool) *base.InternalKV {
	if backward {
		return it.Last()
	}
	return it.First()
}

func reversed(es []entry) []entry {
	out := make([]entry, len(es))
	for i, e := range es {
		out[len(es)-1-i] = e
	}
	return out
}

// TestPartitionCorruption flips a bit in index partition 3, filter partition
// 3 and the top-level index: Open (which loads partitions when they do not
// live in the cache), or a read that loads the partition from the cache,
// fails with a corruption error that names the file, the block, its handle
// and both checksums; VerifyChecksums and Check do too.
func TestPartitionCorruption(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(77, 78)), 600, 20)
	data := buildTable(t, partOpts, es)
	probe := requirePartitioned(t, data, 5)
	for _, tc := range []struct {
		name string
		h    block.Handle
		m    metaBlock
	}{
		{"index partition 3", probe.top.x.handles[3], metaBlock{index: true, part: 3}},
		{"filter partition 3", probe.top.filters[3], metaBlock{part: 3}},
		{"top-level index", probe.footer.Index, wholeIndex},
	} {
		bad := bytes.Clone(data)
		bad[tc.h.Offset+tc.h.Length/2] ^= 0x10
		requireBlockErr := func(t *testing.T, err error, what string) {
			t.Helper()
			require.Error(t, err, what)
			require.True(t, base.IsCorruption(err), "%s: %v", what, err)
			msg := err.Error()
			require.Contains(t, msg, testFile)
			require.Contains(t, msg, tc.name)
			require.Contains(t, msg, fmt.Sprintf("offset %d size %d", tc.h.Offset, tc.h.Length))
			require.True(t, strings.Contains(msg, "stored =") && strings.Contains(msg, "computed ="), msg)
		}
		t.Run(tc.name, func(t *testing.T) {
			_, err := tryOpen(memWith(t, bad), openConfig{})
			requireBlockErr(t, err, "Open")

			c := cache.New(1 << 20)
			r, err := tryOpen(memWith(t, bad), openConfig{cache: c, cacheMeta: true})
			if tc.name == "top-level index" {
				requireBlockErr(t, err, "Open with the partitions in the cache")
				return
			}
			require.NoError(t, err, "Open loads no partition")
			defer r.Close()
			key := keyOfPartition(t, probe, 3)
			_, _, _, _, err = r.Get(context.Background(), verifyEnv, key, base.MaxSeqNum)
			requireBlockErr(t, err, "Get")
			requireBlockErr(t, r.VerifyChecksums(context.Background(), verifyEnv), "VerifyChecksums")
			requireBlockErr(t, r.Check(context.Background(), verifyEnv), "Check")
			_, cached := c.Get(r.metaCacheKey(tc.h, tc.m))
			require.False(t, cached, "nothing corrupt is cached")
		})
	}
}

// keyOfPartition returns the first user key of partition p's first data
// block.
func keyOfPartition(t *testing.T, r *Reader, p int) []byte {
	t.Helper()
	it := dataIter(t, r, r.parts[p].handle(0))
	require.True(t, it.First())
	ik, _ := base.DecodeInternalKey(it.Key())
	return bytes.Clone(ik.UserKey)
}

// FuzzTopIndex decodes arbitrary top-level index blocks: decodeTopIndex
// never panics, fails only with corruption, and what it accepts has a
// filter handle for every partition or for none.
func FuzzTopIndex(f *testing.F) {
	h1, h2 := block.Handle{Offset: 10, Length: 20}, block.Handle{Offset: 40, Length: 5}
	entry := func(sep []byte, hs ...block.Handle) [2][]byte {
		var v []byte
		for _, h := range hs {
			v = h.Append(v)
		}
		return [2][]byte{sep, v}
	}
	topBlock := func(entries ...[2][]byte) []byte {
		var b block.Builder
		b.Init(metaRestartInterval)
		for _, e := range entries {
			b.Add(e[0], e[1])
		}
		return bytes.Clone(b.Finish())
	}
	f.Add(topBlock(entry(encSep("a", 1), h1, h2), entry(encSep("b", 2), h2, h1)))
	f.Add(topBlock(entry(encSep("a", 1), h1), entry(encSep("b", 2), h2)))
	f.Add(topBlock(entry(encSep("a", 1), h1), entry(encSep("b", 2), h2, h1)))
	f.Add(topBlock(entry(encSep("a", 1), h1, h2, h1)))
	f.Add(topBlock())
	f.Add([]byte{0, 0, 0, 0})
	es := genEntries(rand.New(rand.NewPCG(79, 80)), 300, 20)
	data := buildTable(f, partOpts, es)
	footer, err := DecodeFooter(data, uint64(len(data)))
	if err != nil {
		f.Fatal(err)
	}
	top, _, err := readBlock(data, testFile, footer, footer.Index)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(top)
	f.Fuzz(func(t *testing.T, data []byte) {
		top, err := decodeTopIndex(data)
		if err != nil {
			requireCorruption(t, err)
			return
		}
		if n := len(top.filters); n != 0 && n != top.len() {
			t.Fatalf("%d filter handles for %d partitions", n, top.len())
		}
		if top.len() == 0 {
			t.Fatal("accepted an empty top-level index")
		}
		for p := range top.len() {
			if len(top.x.sep(p)) < base.TrailerLen {
				t.Fatalf("separator %d, %q, is shorter than a trailer", p, top.x.sep(p))
			}
		}
	})
}

// TestPartitionedVersionMismatch: a footer whose version byte says
// partitioned over an unpartitioned index, or the reverse, is caught at
// Open by the properties' version instead of the index being misread.
func TestPartitionedVersionMismatch(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(81, 82)), 300, 20)
	flatOpts := partOpts
	flatOpts.IndexPartitionSize = 0
	for _, tc := range []struct {
		name string
		data []byte
		to   byte
		want string
	}{
		{"flat-as-partitioned", buildTable(t, flatOpts, es), FormatVersionPartitioned, "footer says format version 3, properties say 1"},
		{"partitioned-as-flat", buildTable(t, partOpts, es), FormatVersion, "footer says format version 1, properties say 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := bytes.Clone(tc.data)
			bad[len(bad)-FooterLen+footerVersionOffset] = tc.to
			_, err := tryOpen(memWith(t, bad), openConfig{})
			require.Error(t, err)
			require.True(t, base.IsCorruption(err), "%v", err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestCheckPartitionTopLevelKey: Check reports a top-level key that is not
// its partition's last separator (here, partition 1's key replaced by its
// first separator, which still orders the top level), with both keys.
func TestCheckPartitionTopLevelKey(t *testing.T) {
	opts := partOpts
	opts.Compression = compress.None
	es := genEntries(rand.New(rand.NewPCG(83, 84)), 400, 20)
	data := buildTable(t, opts, es)
	r := requirePartitioned(t, data, 3)
	require.NoError(t, r.Check(context.Background(), verifyEnv))

	// Rebuild the top-level block, which is the last before the footer.
	var b block.Builder
	b.Init(metaRestartInterval)
	for p := range r.top.len() {
		key := r.top.x.sep(p)
		if p == 1 {
			key = r.parts[1].appendSep(nil, 0)
		}
		v := r.top.x.handles[p].Append(nil)
		v = r.top.filters[p].Append(v)
		b.Add(key, v)
	}
	raw := b.Finish()
	h := block.Handle{Offset: r.footer.Index.Offset, Length: uint64(len(raw))}
	bad := append(bytes.Clone(data[:h.Offset]), raw...)
	bad = block.AppendTrailer(bad, opts.Checksum, compress.None, bad[h.Offset:])
	footer := r.footer
	footer.Index = h
	bad = footer.Encode(bad)

	r2 := openTable(t, bad, openConfig{})
	err := r2.Check(context.Background(), verifyEnv)
	require.Error(t, err)
	require.True(t, base.IsCorruption(err), "%v", err)
	require.Contains(t, err.Error(), "index partition 1")
	require.Contains(t, err.Error(), "but its top-level key is")
}
