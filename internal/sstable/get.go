package sstable

import (
	"bytes"
	"context"
	"encoding/binary"
	"sync"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/bloom"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/sstable/block"
	"github.com/shaledb/shale/statistics"
)

// getState is the per-call state of a Get, pooled so that a Get whose block
// is cached allocates nothing: the block iterator keeps its key buffers,
// and the byte buffers serve reads that bypass the cache.
type getState struct {
	data     block.Iter
	key      []byte
	raw, dec []byte
	// meta holds the filter and index a Get without ReadEnv.FillCache
	// reads past the cache (see metaScratch).
	meta metaScratch
}

var getStates = sync.Pool{New: func() any { return new(getState) }}

// appendSearchKey appends the encoded internal key that sorts before every
// entry of userKey visible at seq: (userKey, seq, KindMax).
func appendSearchKey(dst, userKey []byte, seq base.SeqNum) []byte {
	dst = append(dst, userKey...)
	return binary.LittleEndian.AppendUint64(dst, base.MakeTrailer(min(seq, base.MaxSeqNum), base.KindMax))
}

// Get finds the newest entry of key with a sequence number <= seq: the
// filter first (ticking BloomFilterUseful when it rules the key out,
// BloomFilterFullPositive when it does not, and BloomFilterFullTruePositive
// when the key is then found), then the index, then the one data
// block that can hold the entry (see the package doc). In a partitioned
// table the top-level index picks the one partition whose filter and index
// these are; a key above every entry of the table stops there.
//
// When found, kind is the entry's kind and value points into the block,
// which pin keeps alive: value is valid until pin.Release, which the caller
// must call exactly once (also when kind is KindDelete, whose value is
// empty). When not found, pin is the zero BlockPin and needs no Release.
// The block is read, if it is not cached, with one file read using env (see
// ReadEnv); a corrupt block is an error marked base.ErrCorruption. key is
// not retained.
func (r *Reader) Get(ctx context.Context, env ReadEnv, key []byte, seq base.SeqNum) (value []byte, kind base.Kind, found bool, pin BlockPin, err error) {
	return r.GetHash(ctx, env, key, bloom.Hash(key), seq)
}

// GetHash is Get for a key whose bloom.Hash is h: a caller that looks one
// key up in several tables hashes it once.
func (r *Reader) GetHash(ctx context.Context, env ReadEnv, key []byte, h uint32, seq base.SeqNum) (value []byte, kind base.Kind, found bool, pin BlockPin, err error) {
	value, kind, _, found, pin, err = r.GetHashSeq(ctx, env, key, h, seq)
	return value, kind, found, pin, err
}

// GetHashSeq is GetHash that also returns the found entry's sequence
// number, which a reader compares with the range tombstones covering key.
func (r *Reader) GetHashSeq(ctx context.Context, env ReadEnv, key []byte, h uint32, seq base.SeqNum) (value []byte, kind base.Kind, entrySeq base.SeqNum, found bool, pin BlockPin, err error) {
	var t statistics.TableTicks
	value, kind, entrySeq, found, pin, err = r.GetCounted(ctx, env, key, h, seq, &t)
	r.opts.Stats.RecordTableTicks(&t)
	return value, kind, entrySeq, found, pin, err
}

// GetCounted is GetHashSeq that adds its bloom filter and data block cache
// tickers to *t instead of recording them, for the caller to record them
// in ReaderOptions.Stats (see Stats) with the rest of its lookup's, in one
// shard access (statistics.RecordGet): a cached Get would otherwise pin
// the caller's stripe five times. The tickers of reads it makes (index or
// filter blocks in the cache, checksums, decompression, cache inserts) are
// recorded as they happen, as GetHashSeq records them.
func (r *Reader) GetCounted(ctx context.Context, env ReadEnv, key []byte, h uint32, seq base.SeqNum, t *statistics.TableTicks) (value []byte, kind base.Kind, entrySeq base.SeqNum, found bool, pin BlockPin, err error) {
	env.IO.Perf.AddTableConsulted()
	if r.opts.GlobalSeqNum > seq {
		// Every entry of the ingested table is newer than the read.
		return nil, 0, 0, false, BlockPin{}, nil
	}
	gs := getStates.Get().(*getState)
	defer putGetState(gs)
	gs.key = appendSearchKey(gs.key[:0], key, seq)
	// A partitioned table has a filter and an index per partition; the one
	// partition that can hold the entry is the top-level index's pick (see
	// the package doc). part is -1 for an unpartitioned table.
	part := r.partitionOf(gs.key)
	if r.top != nil && part == r.top.len() {
		return nil, 0, 0, false, BlockPin{}, nil
	}
	// The filter and the index are the Reader's own or, with
	// CacheIndexAndFilterBlocks, looked up in the cache and pinned only
	// while this call uses them. On a miss they are read with env.IO and,
	// with env.FillCache, loaded into the cache; without it, read into
	// gs.meta and not inserted, so that a one-off lookup does not evict the
	// working set. This call is done with both before it returns: the value
	// points into the data block, which pin holds, and the data block's
	// handle is copied out of the index.
	own := r.scratchFor(&env, &gs.meta)
	// checked says the filter was consulted: a skipped one (see
	// pinLookupFilter) counts in no filter statistic, as if the table had
	// none.
	checked := false
	if r.hasFilter {
		// The Reader's own filter, the usual case, without a call: a Get
		// that the filter answers is a few hundred nanoseconds, and each
		// call of the cached path copies the IO options.
		var filter []byte
		var fh cache.Handle
		if !r.metaInCache {
			filter = r.ownFilter(part)
		} else if filter, fh, err = r.pinLookupFilter(ctx, env.IO, part, own); err != nil {
			return nil, 0, 0, false, BlockPin{}, err
		}
		checked = filter != nil
		absent := checked && !r.lookupMayContain(filter, h)
		fh.Release()
		switch {
		case absent:
			t.BloomUseful++
			env.IO.Perf.AddFilterCheck(false)
			return nil, 0, 0, false, BlockPin{}, nil
		case checked:
			t.BloomPositive++
			env.IO.Perf.AddFilterCheck(true)
		}
	}
	var view indexTable
	x, ih, err := r.pinIndexFor(ctx, env.IO, part, &view, own)
	if err != nil {
		return nil, 0, 0, false, BlockPin{}, err
	}
	value, kind, entrySeq, found, pin, err = r.get(ctx, &env, gs, key, x, t)
	ih.Release()
	if found && checked {
		t.BloomTruePositive++
	}
	return value, kind, entrySeq, found, pin, err
}

// putGetState drops gs's references to block memory and pools it.
func putGetState(gs *getState) {
	gs.data.Reset()
	gs.meta.trim()
	getStates.Put(gs)
}

// get looks the search key gs.key up in the table whose index is x,
// counting its data block's cache tickers in t.
func (r *Reader) get(ctx context.Context, env *ReadEnv, gs *getState, key []byte, x *indexTable, t *statistics.TableTicks) ([]byte, base.Kind, base.SeqNum, bool, BlockPin, error) {
	b := x.seekGE(gs.key)
	if b == x.len() {
		return nil, 0, 0, false, BlockPin{}, nil
	}
	h := x.handle(b)
	hits := t.DataHits
	data, pin, loc, err := r.readDataCounted(ctx, env, h, blockDest{raw: &gs.raw, dec: &gs.dec}, t)
	if err != nil {
		return nil, 0, 0, false, BlockPin{}, err
	}
	if t.DataHits != hits {
		// A cached block is rarely in the processor's cache: load its lines
		// at once rather than one dependent load after another (restart
		// count, restart points, entries). A block just read is.
		block.Prefetch(data)
	}
	// A block in one of gs's buffers moves to a pooled buffer that the pin
	// owns; gs takes that buffer's old memory in exchange.
	switch loc {
	case locRaw:
		b := newOwnedBlock(1)
		b.buf, gs.raw = gs.raw, b.buf
		pin = b.pin()
	case locDec:
		b := newOwnedBlock(1)
		b.buf, gs.dec = gs.dec, b.buf
		pin = b.pin()
	}
	if err := gs.data.InitInternalCmp(r.cmp, data); err != nil {
		pin.Release()
		return nil, 0, 0, false, BlockPin{}, r.wrapBlockErr(err, "data", h)
	}
	if !gs.data.SeekGE(gs.key) {
		pin.Release()
		if err := gs.data.Error(); err != nil {
			return nil, 0, 0, false, BlockPin{}, r.wrapBlockErr(err, "data", h)
		}
		return nil, 0, 0, false, BlockPin{}, nil
	}
	ik, err := r.decodeKey(gs.data.Key(), h)
	if err != nil {
		pin.Release()
		return nil, 0, 0, false, BlockPin{}, err
	}
	r.applyGlobalSeqNum(&ik)
	if !bytes.Equal(ik.UserKey, key) {
		pin.Release()
		return nil, 0, 0, false, BlockPin{}, nil
	}
	return gs.data.Value(), ik.Kind(), ik.SeqNum(), true, pin, nil
}

// applyGlobalSeqNum gives ik the table's global sequence number, if it has
// one (ReaderOptions.GlobalSeqNum): the one hook of ingested tables on the
// read path.
func (r *Reader) applyGlobalSeqNum(ik *base.InternalKey) {
	if g := r.opts.GlobalSeqNum; g != 0 {
		ik.Trailer = base.MakeTrailer(g, ik.Kind())
	}
}

// decodeKey decodes an encoded internal key of the data block at h; one too
// short for a trailer or of an unknown kind is corruption.
func (r *Reader) decodeKey(enc []byte, h block.Handle) (base.InternalKey, error) {
	ik, ok := base.DecodeInternalKey(enc)
	if !ok {
		return base.InternalKey{}, base.CorruptionErrorf("sstable: %s: data block %s: key %q is shorter than a %d-byte trailer",
			r.name, h, enc, base.TrailerLen)
	}
	if !ik.Valid() {
		return base.InternalKey{}, base.CorruptionErrorf("sstable: %s: data block %s: key %s has unknown kind %d",
			r.name, h, ik, ik.Trailer&0xff)
	}
	return ik, nil
}

// readsIntoCache says whether the data blocks of the table that go to the
// block cache are read straight into a buffer of the cache (loadDataDirect,
// multiGetFetch), rather than into a buffer of the caller's and then
// copied. The copy cost a read from the file as much as the block's
// checksum: the cache's buffer is an evicted block's, cold. Reading into it
// pays when the block is stored uncompressed, as every block of a table
// written without compression is, and most blocks of a table that
// compression shrank by less than an eighth overall are (the writer stores
// a block compressed only when that saves an eighth of it); a compressed
// block is decompressed into another buffer of the cache, and the one it
// was read into given back.
func (r *Reader) readsIntoCache() bool {
	p := &r.props
	return !r.file.Mapped() && (p.Compression == compress.None || p.DataSize*8 >= (p.RawKeySize+p.RawValueSize)*7)
}
