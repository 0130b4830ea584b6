package sstable

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/sstable/block"
	"github.com/stretchr/testify/require"
)

// TestReviewIndexFormDirtyBuffer encodes both flat forms into recycled
// buffers full of stale bytes (as Cache.Alloc hands out, or 0xDB poison in
// invariants builds): the form flag comes from the encoder, not from what
// the buffer held, so a partition's form never grows an abbreviation array
// read from garbage, and the whole index's always has one.
func TestReviewIndexFormDirtyBuffer(t *testing.T) {
	var seps [][]byte
	for k := range 150 {
		seps = append(seps, encSep(string(binary.BigEndian.AppendUint32([]byte("user/"), uint32(k*7))), 3))
	}
	data := indexBlock(seps)
	for _, fill := range []byte{0x00, 0x01, 0xDB, 0xFF} {
		dirty := func(n int) []byte { return bytes.Repeat([]byte{fill}, n+64)[:n] }
		for _, form := range indexForms {
			buf, err := form.encode(data, dirty)
			require.NoError(t, err)
			x := viewIndexTable(buf)
			require.Equal(t, form.abbr, x.abbr != nil, "%s form in a buffer of %#x", form.name, fill)
			require.Equal(t, indexFlatLen(len(seps), len(x.keys), len(x.common), form.abbr), len(buf))
			checkIndexSeeksOf(t, &x, seps, [][]byte{nil, []byte("user/"), []byte("user/\x00\x00\x01"), []byte("v")})
		}
	}
}

// TestReviewIndexFormForeignBlocks decodes index blocks that are valid as
// blocks but not as indexes (separators out of order, duplicates, user
// keys that share no prefix, as a damaged file whose checksum still
// matches or a foreign one could hold) into both flat forms: every seek
// must return a block in [0, n] and read only within the form, whatever
// it finds. Separators shorter than a trailer are corruption in both.
func TestReviewIndexFormForeignBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	randKey := func() []byte {
		uk := make([]byte, rng.IntN(12))
		for i := range uk {
			uk[i] = "ab\x00\xffp"[rng.IntN(5)]
		}
		return uk
	}
	for range 300 {
		n := rng.IntN(40)
		var seps [][]byte
		for range n {
			seps = append(seps, base.MakeInternalKey(randKey(), base.SeqNum(rng.IntN(4)), base.KindSet).Append(nil))
		}
		// Shuffled, not sorted: the block holds them in this order.
		rng.Shuffle(len(seps), func(i, j int) { seps[i], seps[j] = seps[j], seps[i] })
		data := indexBlock(seps)
		for _, form := range indexForms {
			buf, err := form.encode(data, nil)
			require.NoError(t, err, form.name)
			x := viewIndexTable(buf)
			require.Equal(t, n, x.len())
			start := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
			end := start + uintptr(len(buf))
			within := func(b []byte) bool {
				if len(b) == 0 {
					return true
				}
				p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
				return p >= start && p+uintptr(len(b)) <= end
			}
			require.True(t, within(x.keys) && within(x.common), form.name)
			for i := range n {
				require.True(t, within(x.sep(i)), "%s: separator %d", form.name, i)
				require.Equal(t, seps[i], x.sep(i))
			}
			for range 20 {
				key := appendSearchKey(nil, randKey(), base.SeqNum(rng.IntN(5)))
				i := x.seekGE(key)
				require.GreaterOrEqual(t, i, 0, form.name)
				require.LessOrEqual(t, i, n, form.name)
			}
		}
	}
	// A separator shorter than a trailer: corruption, in either form.
	var b block.Builder
	b.Init(metaRestartInterval)
	b.Add([]byte("short"), block.Handle{Offset: 1, Length: 2}.Append(nil))
	data := bytes.Clone(b.Finish())
	for _, form := range indexForms {
		_, err := form.encode(data, nil)
		require.Error(t, err, form.name)
		requireCorruption(t, err)
	}
}

// TestReviewIndexFormCachedPartitions opens a partitioned table whose
// index partitions live in the block cache and checks, for every
// partition, that the cached value is the partition form (no
// abbreviations, flag 0), that the unpartitioned table's cached whole
// index is the abbreviated form, and that for every key of the table, and
// for keys between them, the cached partition's search picks the data
// block a seek in the partition's block itself picks.
func TestReviewIndexFormCachedPartitions(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(71, 72)), 6000, 60)
	ctx := context.Background()
	for _, partition := range []int{0, 128} {
		data := buildTable(t, WriterOptions{BloomBitsPerKey: 10, Compression: compress.Snappy,
			Checksum: checksum.XXHash64, IndexPartitionSize: partition}, es)
		r := openTable(t, data, openConfig{cache: cache.New(16 << 20), cacheMeta: true})
		parts := []int{-1}
		if partition > 0 {
			require.NotNil(t, r.top)
			require.Greater(t, r.top.len(), 4)
			parts = parts[:0]
			for p := range r.top.len() {
				parts = append(parts, p)
			}
		}
		views := make([]indexTable, len(parts))
		refs := make([]block.Iter, len(parts))
		for i, p := range parts {
			x, hd, err := r.pinIndex(ctx, verifyEnv.IO, p, &views[i])
			require.NoError(t, err)
			defer hd.Release()
			flag := binary.NativeEndian.Uint64(hd.Value()[24:32])
			require.Equal(t, p < 0, flag&formAbbr != 0, "form flag of part %d", p)
			require.Equal(t, p < 0 && x.len() > 0, x.abbr != nil, "part %d", p)
			h := r.footer.Index
			if p >= 0 {
				h = r.top.x.handles[p]
			}
			raw, err := r.readMetaBlock(ctx, verifyEnv, metaBlock{index: true, part: p}.String(), h, r.metaLimit)
			require.NoError(t, err)
			require.NoError(t, refs[i].Init(base.CompareEncoded, bytes.Clone(raw)))
		}
		check := func(key []byte) {
			i := 0
			if partition > 0 {
				if i = r.partitionOf(key); i == r.top.len() {
					return
				}
			}
			x := &views[i]
			got := x.seekGE(key)
			ref := &refs[i]
			if !ref.SeekGE(key) {
				require.Equal(t, x.len(), got, "seekGE(%s) in part %d", decoded(key), parts[i])
				return
			}
			want, err := decodeHandleExact(ref.Value())
			require.NoError(t, err)
			require.Less(t, got, x.len(), "seekGE(%s) in part %d", decoded(key), parts[i])
			require.Equal(t, want, x.handle(got), "seekGE(%s) in part %d", decoded(key), parts[i])
		}
		for _, e := range es {
			uk := e.key.UserKey
			check(appendSearchKey(nil, uk, base.MaxSeqNum))
			check(appendSearchKey(nil, uk, 0))
			check(appendSearchKey(nil, append(bytes.Clone(uk), 0), base.MaxSeqNum))
			check(appendSearchKey(nil, uk[:len(uk)/2], base.MaxSeqNum))
		}
	}
}
