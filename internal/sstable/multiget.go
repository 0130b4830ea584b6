package sstable

import (
	"bytes"
	"context"
	"sync"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/internal/sstable/block"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
)

// MultiGetKey is one key of a MultiGet, with its inputs and, once MultiGet
// returns nil, its outputs. The caller owns it; MultiGet writes the outputs,
// so a key must not be read or written by anyone else during the call.
type MultiGetKey struct {
	// Key is the user key (read during the call, not retained), Hash its
	// bloom.Hash (computed once by the caller for all the tables it
	// probes), Seq the sequence number the key is read at.
	Key  []byte
	Hash uint32
	Seq  base.SeqNum
	// Done is set by the caller for a key already resolved by newer data;
	// MultiGet skips it and leaves its outputs alone.
	Done bool

	// Found, Kind and Value are Get's results. Value points into a block
	// that Pin keeps alive: the caller must call Pin.Release exactly once
	// when Found (and may call it otherwise: the zero BlockPin is a no-op).
	Found bool
	Kind  base.Kind
	Value []byte
	Pin   BlockPin
	// EntrySeq is the found entry's sequence number.
	EntrySeq base.SeqNum
	// Err is this key's own failure (a corrupt block, say); the other keys
	// are unaffected.
	Err error
}

// mgBlock is a data block that some MultiGet keys need.
type mgBlock struct {
	h block.Handle
	// keys is the number of keys that look into the block.
	keys int32
	// data is the decoded block once found or read; pin holds it (zero for
	// a block in the read buffer or the mapping: see MultiGet).
	data []byte
	pin  BlockPin
	// req is the index of the read request covering the block, or -1.
	req int
	err error
}

// mgState is the per-call state of a MultiGet, pooled.
type mgState struct {
	data block.Iter
	key  []byte
	// blockOf[i] is the index in blocks of keys[i]'s block, or -1.
	blockOf []int
	// filtered[i] says keys[i] passed a filter that was consulted, not
	// skipped (see pinLookupFilter): only those count as true positives.
	filtered []bool
	blocks   []mgBlock
	reqs     []fileio.ReadRequest
	// reqBlocks[q] is the number of blocks request q covers.
	reqBlocks []int32
	// bufs[q] holds request q's bytes, when the file is not mapped, unless
	// direct[q]: then request q reads its one block straight into a buffer
	// of the block cache (see multiGetFetch), which the call gives back
	// unless it hands it to the cache.
	bufs   []*ownedBlock
	direct []bool
	// meta is the filter and index multiGetIndex uses.
	meta mgMeta
	// scratch holds the filter and index a MultiGet without
	// ReadEnv.FillCache reads past the cache (see metaScratch); here and
	// not in meta, which multiGetIndex zeroes, so that its buffers stay
	// with the pooled state.
	scratch metaScratch
	// ckeys are the cache keys of the blocks multiGetFind looks up, in
	// blocks order, and hits the handles Cache.GetMany found for them.
	ckeys []cache.Key
	hits  []cache.Handle
	// ticks counts the call's bloom and data block cache tickers, recorded
	// once when it ends (also when it fails) instead of a pin of the
	// statistics stripe per tick.
	ticks statistics.TableTicks
}

var mgStates = sync.Pool{New: func() any { return new(mgState) }}

// MultiGet looks up several keys in the table: one filter pass and one index
// pass over all of them (in a partitioned table, moving forward through the
// partitions the keys fall in, each looked up or loaded once), then every
// data block they need that is not cached is read with a single fileio
// MultiRead, in which blocks adjacent on disk are coalesced into one
// request. Blocks read are checksum-verified (per
// env.VerifyChecksums), decompressed, and added to the cache (per
// env.FillCache). env.FillCache covers the index and filter blocks too, as
// for Get: without it, those the cache does not hold are read for this call
// and not inserted. keys must be sorted by user key, without duplicates.
//
// For each key whose Done is false, MultiGet sets Found, Kind, Value, Pin and
// Err as Get would return them (and ticks the bloom filter counters as Get
// does). Keys whose Done is true are skipped.
//
// The error is a failure that affects every key: the context is done, the
// MultiRead could not be made (rate limiter, timeout), or an index or filter
// (partition) the keys need could not be read from the file. Then no key
// holds a pin and the outputs are unspecified. Per-key failures, such as a
// corrupt block or a failed read of one request, are in the keys' Err.
func (r *Reader) MultiGet(ctx context.Context, env ReadEnv, keys []MultiGetKey) error {
	for i := 1; i < len(keys); i++ {
		if base.CompareUser(r.cmp, keys[i-1].Key, keys[i].Key) >= 0 {
			return base.AssertionFailedf("sstable: MultiGet keys are not sorted and unique: %q then %q",
				keys[i-1].Key, keys[i].Key)
		}
	}
	ms := mgStates.Get().(*mgState)
	err := r.multiGet(ctx, &env, ms, keys)
	r.opts.Stats.RecordTableTicks(&ms.ticks)
	ms.data.Reset()
	clear(ms.blocks)
	clear(ms.reqs)
	clear(ms.bufs)
	clear(ms.hits)
	ms.blocks, ms.reqs, ms.blockOf, ms.bufs = ms.blocks[:0], ms.reqs[:0], ms.blockOf[:0], ms.bufs[:0]
	ms.reqBlocks, ms.direct = ms.reqBlocks[:0], ms.direct[:0]
	ms.filtered = ms.filtered[:0]
	ms.ckeys, ms.hits = ms.ckeys[:0], ms.hits[:0]
	ms.scratch.trim()
	mgStates.Put(ms)
	return err
}

func (r *Reader) multiGet(ctx context.Context, env *ReadEnv, ms *mgState, keys []MultiGetKey) error {
	if err := r.multiGetIndex(ctx, env, ms, keys); err != nil {
		return err
	}
	r.multiGetFind(env, ms)
	if err := r.multiGetFetch(ctx, env, ms); err != nil {
		r.releaseCachedPins(ms)
		return err
	}
	ms.ticks.BloomTruePositive += r.multiGetLookup(ms, keys)
	return nil
}

// releaseCachedPins drops the pins of the cache hits, before any key took
// one: one reference per key.
func (r *Reader) releaseCachedPins(ms *mgState) {
	for b := range ms.blocks {
		for range ms.blocks[b].keys {
			ms.blocks[b].pin.Release()
		}
	}
}

// multiGetIndex runs the filter and the index over the keys (multiGetBlocks),
// with each filter and index pinned, when they live in the block cache, for
// that pass only. A failure to load one of them fails the whole call.
//
// Without env.FillCache, a filter or index the cache does not hold is read
// into ms.scratch and not inserted, as Get does, so that a one-off MultiGet
// does not evict the working set with meta blocks. Nothing points into the
// scratch once this pass is over: the blocks it lists are copies of the
// index's handles, and the keys' values come from data blocks, pinned apart.
func (r *Reader) multiGetIndex(ctx context.Context, env *ReadEnv, ms *mgState, keys []MultiGetKey) error {
	// m lives in the pooled ms: on the stack it would escape, since it
	// points into itself (x at xv).
	m := &ms.meta
	*m = mgMeta{r: r, ctx: ctx, io: env.IO, part: -2, own: r.scratchFor(env, &ms.scratch)}
	err := r.multiGetBlocks(ms, keys, env.IO.Perf, m)
	m.release()
	*m = mgMeta{}
	return err
}

// mgMeta is the filter and index of one partition (or, part -1, of an
// unpartitioned table) that MultiGet's keys are looked up in. Keys come in
// order, so partitions only move forward, and each is pinned once per call:
// its filter when a key reaches it, its index when a key passes the filter.
type mgMeta struct {
	r   *Reader
	ctx context.Context
	io  ioctx.IOOptions
	// part is the partition pinned, or -2 for none yet.
	part         int
	filter       []byte
	fh           cache.Handle
	filterLoaded bool
	x            *indexTable
	xv           indexTable
	ih           cache.Handle
	// own is the scratch a filter or index the cache does not hold is read
	// into, or nil to load it into the cache (see scratchFor). The filter
	// and the index it holds are distinct buffers (metaScratch's filter
	// and index), so the current partition's filter stays valid while its
	// index is read; both are replaced only when moveTo has dropped them.
	own *metaScratch
}

// moveTo makes part the current partition, unpinning the previous one's.
func (m *mgMeta) moveTo(part int) {
	if part != m.part {
		m.release()
		m.part = part
	}
}

// pinFilter pins the current partition's filter.
func (m *mgMeta) pinFilter() (err error) {
	if !m.filterLoaded {
		m.filter, m.fh, err = m.r.pinLookupFilter(m.ctx, m.io, m.part, m.own)
		m.filterLoaded = err == nil
	}
	return err
}

// pinIndex pins the current partition's index.
func (m *mgMeta) pinIndex() (err error) {
	if m.x == nil {
		m.x, m.ih, err = m.r.pinIndexFor(m.ctx, m.io, m.part, &m.xv, m.own)
	}
	return err
}

func (m *mgMeta) release() {
	m.fh.Release()
	m.ih.Release()
	m.filter, m.fh, m.filterLoaded, m.x, m.ih = nil, cache.Handle{}, false, nil, cache.Handle{}
}

// multiGetBlocks runs the filter and the index over the keys and lists the
// blocks they need, in file order (blocks of later partitions come later in
// the file).
func (r *Reader) multiGetBlocks(ms *mgState, keys []MultiGetKey, perf *ioctx.PerfContext, m *mgMeta) error {
	b := -1       // the index entry in m.x of the last key's block; -1 before the first
	past := false // no entry of the table is >= the last search key
	for i := range keys {
		k := &keys[i]
		ms.blockOf = append(ms.blockOf, -1)
		ms.filtered = append(ms.filtered, false)
		if k.Done {
			continue
		}
		// Per key, as Get counts it, so that FilterChecks-FilterHits of
		// the tables consulted were skipped.
		perf.AddTableConsulted()
		k.Found, k.Kind, k.Value, k.Pin, k.Err = false, 0, nil, BlockPin{}, nil
		if past {
			// Neither this key nor the following ones are in the table.
			continue
		}
		ms.key = appendSearchKey(ms.key[:0], k.Key, k.Seq)
		part := -1
		if r.top != nil {
			// Search keys increase with the keys: seek the top level only
			// when the current partition ends below the key.
			if part = m.part; part < 0 || base.CompareEncodedCmp(r.cmp, r.top.x.sep(part), ms.key) < 0 {
				if part = r.top.x.seekGE(ms.key); part == r.top.len() {
					past = true
					continue
				}
			}
		}
		if part != m.part {
			m.moveTo(part)
			b = -1
		}
		if r.hasFilter {
			if err := m.pinFilter(); err != nil {
				return err
			}
			// A skipped filter (nil) counts in no filter statistic.
			if m.filter != nil {
				if !r.lookupMayContain(m.filter, k.Hash) {
					ms.ticks.BloomUseful++
					perf.AddFilterCheck(false)
					continue
				}
				ms.ticks.BloomPositive++
				perf.AddFilterCheck(true)
				ms.filtered[i] = true
			}
		}
		if err := m.pinIndex(); err != nil {
			return err
		}
		// Likewise the index only moves forward: seek only when the last
		// block's separator is below the key.
		if b < 0 || m.x.compareSep(b, ms.key) < 0 {
			if b = m.x.seekGE(ms.key); b == m.x.len() {
				// Only the last partition (or a corrupt one) can end
				// below a key the top level sent to it.
				past = r.top == nil || part == r.top.len()-1
				b = -1
				continue
			}
		}
		h := m.x.handle(b)
		if n := len(ms.blocks); n == 0 || ms.blocks[n-1].h != h {
			ms.blocks = append(ms.blocks, mgBlock{h: h, req: -1})
		}
		ms.blockOf[i] = len(ms.blocks) - 1
		ms.blocks[len(ms.blocks)-1].keys++
	}
	return nil
}

// multiGetFind looks every listed block up in the cache, and lists the
// requests of one MultiRead for the blocks that are not cached (blk.req).
func (r *Reader) multiGetFind(env *ReadEnv, ms *mgState) {
	c := r.opts.Cache
	st := r.opts.Stats
	for b := range ms.blocks {
		blk := &ms.blocks[b]
		// Checked before the cache lookup: a damaged handle must not find
		// a cached block of another kind (see metaCacheKey).
		if !blockWithin(blk.h, r.dataEnd) || blk.h.Length > maxBlockLen {
			blk.err = base.CorruptionErrorf("sstable: %s: data block %s with its %d-byte trailer ends beyond %d",
				r.name, blk.h, block.TrailerLen, r.dataEnd)
			continue
		}
		if c != nil {
			ms.ckeys = append(ms.ckeys, r.cacheKey(blk.h))
		}
	}
	if c != nil {
		// One batch, so that the blocks' lookups overlap (see
		// cache.Cache.GetMany) instead of chaining block after block.
		ms.hits = append(ms.hits[:0], make([]cache.Handle, len(ms.ckeys))...)
		c.GetMany(ms.ckeys, ms.hits)
	}
	var end uint64 // the end of the last block to read
	next := 0      // the next of ms.hits
	for b := range ms.blocks {
		blk := &ms.blocks[b]
		if blk.err != nil {
			continue
		}
		if c != nil {
			hd := ms.hits[next]
			next++
			if hd.Valid() {
				blk.data = hd.Value()
				// Start loading its first lines, so that the blocks' cache
				// misses overlap instead of coming one key at a time.
				block.Prefetch(blk.data)
				blk.pin = r.sharedPin(hd, blk.keys)
				ms.ticks.DataHits++
				ms.ticks.DataHitBytes += uint64(len(blk.data))
				fileio.NoteCacheHit(st, env.IO, ioctx.DataBlock)
				continue
			}
			ms.ticks.DataMisses++
			fileio.NoteCacheMiss(st, env.IO, ioctx.DataBlock)
		}
		if blk.h.Offset < end {
			// MultiRead needs sorted, disjoint requests; a sane index
			// lists blocks in file order.
			blk.err = base.CorruptionErrorf("sstable: %s: index block %s: data block %s overlaps or precedes the block before it",
				r.name, r.footer.Index, blk.h)
			continue
		}
		end = blk.h.Offset + blk.h.Length + block.TrailerLen
		n := int(blk.h.Length) + block.TrailerLen
		if q := len(ms.reqs) - 1; q >= 0 && ms.reqs[q].Offset+int64(ms.reqs[q].Len) == int64(blk.h.Offset) {
			ms.reqs[q].Len += n
			ms.reqBlocks[q]++
		} else {
			ms.reqs = append(ms.reqs, fileio.ReadRequest{Offset: int64(blk.h.Offset), Len: n})
			ms.reqBlocks = append(ms.reqBlocks, 1)
		}
		blk.req = len(ms.reqs) - 1
	}
}

// multiGetFetch reads the requests multiGetFind listed, with one MultiRead,
// and verifies, decodes and pins their blocks.
func (r *Reader) multiGetFetch(ctx context.Context, env *ReadEnv, ms *mgState) error {
	if len(ms.reqs) == 0 {
		return nil
	}
	c := r.opts.Cache
	fill := c != nil && env.FillCache
	intoCache := fill && r.readsIntoCache()
	// Each request reads into a buffer of its own. A request of one block
	// that goes to the cache reads into a buffer of the cache, which takes
	// the block where it was read (see readsIntoCache). Uncompressed blocks
	// that do not go to the cache are used where they were read, so a
	// buffer is shared by the pins of its blocks' keys (and recycled at
	// once if there are none).
	if !r.file.Mapped() {
		for q := range ms.reqs {
			direct := intoCache && ms.reqBlocks[q] == 1
			ms.direct = append(ms.direct, direct)
			if direct {
				ms.reqs[q].Scratch = c.Alloc(ms.reqs[q].Len)
				ms.bufs = append(ms.bufs, nil)
				continue
			}
			b := newOwnedBlock(1)
			ms.reqs[q].Scratch = grow(&b.buf, ms.reqs[q].Len)
			ms.bufs = append(ms.bufs, b)
		}
	}
	defer func() {
		for q, b := range ms.bufs {
			if b != nil {
				b.unref()
			} else if ms.direct[q] {
				c.Free(ms.reqs[q].Scratch)
			}
		}
	}()
	err := r.file.MultiRead(ctx, env.IO, ms.reqs)
	if err != nil {
		failed := false
		for q := range ms.reqs {
			failed = failed || ms.reqs[q].Err != nil
		}
		if !failed {
			// Nothing was read: the whole call failed.
			return err
		}
	}
	if r.file.Mapped() {
		// As readRaw does, and for all the blocks at once: their lines
		// load while the first ones are verified and decoded.
		for q := range ms.reqs {
			if ms.reqs[q].Err == nil {
				block.Prefetch(ms.reqs[q].Result)
			}
		}
	}
	for b := range ms.blocks {
		blk := &ms.blocks[b]
		if blk.req < 0 {
			continue
		}
		q := &ms.reqs[blk.req]
		if q.Err != nil {
			blk.err = q.Err
			continue
		}
		start := int64(blk.h.Offset) - q.Offset
		raw := q.Result[start : start+int64(blk.h.Length)+block.TrailerLen]
		env.IO.Perf.AddBlockRead(len(raw))
		if len(ms.direct) > 0 && ms.direct[blk.req] {
			var kept bool
			blk.data, blk.pin, kept, blk.err = r.multiGetDecodeDirect(blk, raw, env)
			// The cache owns the buffer once it holds the block.
			ms.direct[blk.req] = !kept
			continue
		}
		var buf *ownedBlock
		if len(ms.bufs) > 0 {
			buf = ms.bufs[blk.req]
		}
		blk.data, blk.pin, blk.err = r.multiGetDecode(blk, raw, env, fill, buf, len(raw) == q.Len)
	}
	return nil
}

// multiGetDecodeDirect is multiGetDecode for a block read alone into a
// buffer of the cache (raw, the block and its trailer): an uncompressed
// block is inserted where it is, and kept reports that the cache now owns
// the buffer; a compressed one is decompressed into a buffer of its own.
func (r *Reader) multiGetDecodeDirect(blk *mgBlock, raw []byte, env *ReadEnv) (data []byte, pin BlockPin, kept bool, err error) {
	if err := r.multiGetVerify(blk, raw, env); err != nil {
		return nil, BlockPin{}, false, err
	}
	c := r.opts.Cache
	v, ct := raw[:blk.h.Length], compress.Type(raw[blk.h.Length])
	if ct != compress.None {
		if v, err = r.decompressForCache(c, ct, v[:len(v):len(v)], blk.h); err != nil {
			return nil, BlockPin{}, false, err
		}
	} else {
		// The trailer stays in the buffer's capacity, not charged, as an
		// Alloc's slack is not.
		kept = true
	}
	hd := c.Set(r.cacheKey(blk.h), v)
	r.noteCacheAdd(true, len(v))
	return hd.Value(), r.sharedPin(hd, blk.keys), kept, nil
}

// multiGetVerify verifies a block's checksum, per env.
func (r *Reader) multiGetVerify(blk *mgBlock, raw []byte, env *ReadEnv) error {
	if env.VerifyChecksums && r.footer.Checksum != checksum.None {
		r.opts.Stats.RecordTick(statistics.BlockChecksumComputeCount, 1)
		if err := block.ValidateChecksum(r.footer.Checksum, raw, r.name, blk.h.Offset); err != nil {
			r.opts.Stats.RecordTick(statistics.BlockChecksumMismatchCount, 1)
			return err
		}
	}
	return nil
}

// multiGetDecode verifies and decodes one block read by multiGetFetch (raw is
// the block and its trailer, in buf unless the file is mapped; alone says
// it is all of buf) and pins it for its keys.
func (r *Reader) multiGetDecode(blk *mgBlock, raw []byte, env *ReadEnv, fill bool, buf *ownedBlock, alone bool) ([]byte, BlockPin, error) {
	if err := r.multiGetVerify(blk, raw, env); err != nil {
		return nil, BlockPin{}, err
	}
	stored, ct := raw[:blk.h.Length:blk.h.Length], compress.Type(raw[blk.h.Length])
	switch {
	case ct == compress.None && buf == nil:
		// An uncompressed block of a mapped file: used in place, never
		// cached.
		return stored, BlockPin{}, nil
	case fill:
		c := r.opts.Cache
		v, ok := []byte(nil), false
		if ct == compress.None && alone {
			v, ok = exchangeBuf(c, &buf.buf, len(stored))
		}
		if !ok {
			var err error
			if v, err = r.decompressForCache(c, ct, stored, blk.h); err != nil {
				return nil, BlockPin{}, err
			}
		}
		hd := c.Set(r.cacheKey(blk.h), v)
		r.noteCacheAdd(true, len(v))
		return hd.Value(), r.sharedPin(hd, blk.keys), nil
	case ct == compress.None:
		buf.refs.Add(blk.keys)
		return stored, BlockPin{b: buf}, nil
	}
	ob := newOwnedBlock(blk.keys)
	data, err := r.decompressTo(ct, stored, blk.h, &ob.buf)
	if err != nil {
		ob.refs.Store(1)
		ob.unref()
		return nil, BlockPin{}, err
	}
	return data, ob.pin(), nil
}

// sharedPin returns a pin of hd that keys keys share: hd itself for one key,
// a reference-counted holder of it for several.
func (r *Reader) sharedPin(hd cache.Handle, keys int32) BlockPin {
	if keys == 1 {
		return BlockPin{h: hd}
	}
	ob := newOwnedBlock(keys)
	ob.h = hd
	return ob.pin()
}

// multiGetLookup looks each key up in its block and hands out the pins. It
// returns the number of keys found that passed a consulted filter, which the
// caller counts as BloomFilterFullTruePositive (as Get ticks each such key
// found).
func (r *Reader) multiGetLookup(ms *mgState, keys []MultiGetKey) (truePositives uint32) {
	cur := -1
	for i := range keys {
		b := ms.blockOf[i]
		if b < 0 {
			continue
		}
		k := &keys[i]
		blk := &ms.blocks[b]
		// Every key of a block holds one reference of the block's pin:
		// it keeps it (found) or releases it.
		if blk.err != nil {
			k.Err = blk.err
			blk.pin.Release()
			continue
		}
		if b != cur {
			cur = b
			if err := ms.data.InitInternalCmp(r.cmp, blk.data); err != nil {
				blk.err = r.wrapBlockErr(err, "data", blk.h)
				k.Err = blk.err
				blk.pin.Release()
				continue
			}
		}
		ok, err := r.lookupInBlock(ms, k, blk.h)
		if err != nil || !ok {
			k.Err = err
			blk.pin.Release()
			continue
		}
		k.Found, k.Pin = true, blk.pin
		if ms.filtered[i] {
			truePositives++
		}
	}
	return truePositives
}

// lookupInBlock seeks k in ms.data, the block at h.
func (r *Reader) lookupInBlock(ms *mgState, k *MultiGetKey, h block.Handle) (bool, error) {
	ms.key = appendSearchKey(ms.key[:0], k.Key, k.Seq)
	if !ms.data.SeekGE(ms.key) {
		if err := ms.data.Error(); err != nil {
			return false, r.wrapBlockErr(err, "data", h)
		}
		return false, nil
	}
	ik, err := r.decodeKey(ms.data.Key(), h)
	if err != nil {
		return false, err
	}
	r.applyGlobalSeqNum(&ik)
	if !bytes.Equal(ik.UserKey, k.Key) || ik.SeqNum() > k.Seq {
		return false, nil
	}
	k.Kind, k.Value, k.EntrySeq = ik.Kind(), ms.data.Value(), ik.SeqNum()
	return true, nil
}
