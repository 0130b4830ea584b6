package sstable

import (
	"context"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/bloom"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/internal/sstable/block"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
)

// This file keeps the index and the filter in the block cache, for
// ReaderOptions.CacheIndexAndFilterBlocks (see "Memory in the cache" in the
// Reader's doc).

// metaBlock says which metadata block a cache entry holds: the index
// (index set) or the filter, whole (part -1) or partition part of it. It
// names the block in errors and picks the tickers.
type metaBlock struct {
	index bool
	part  int
}

var (
	wholeIndex  = metaBlock{index: true, part: -1}
	wholeFilter = metaBlock{part: -1}
)

func (m metaBlock) String() string {
	what := "filter"
	if m.index {
		what = "index"
	}
	if m.part < 0 {
		return what
	}
	return partName(what, m.part)
}

// metaShardShare: a table whose whole index or filter is larger than
// 1/metaShardShare of what a cache shard holds keeps both in its Reader
// instead of the cache. Larger than a shard, a block is evicted as soon as
// it is inserted; but one a little smaller fares no better: larger than
// the shard's high-priority share (half, at its default) it is demoted to
// the data blocks' ring as it is inserted, and there, taking most of the
// shard, it is evicted by the next few blocks, with the table's filter and
// the other tables' metadata. The default 8 MiB cache has 1 MiB shards, a
// 64 MiB table of small keys about 700 KB of index: bench/'s rss-defaults
// child with cache_index_and_filter_blocks read and decoded it again for
// most Gets, 388-742 µs a Get hit, and peaked at 363-442 MiB.
const metaShardShare = 2

// cachedMeta returns a handle to the cached index or filter (whole or a
// partition, as m says) whose block is at h, loading it with one file read
// using io on a miss. The caller releases the handle once it no longer uses
// the value.
func (r *Reader) cachedMeta(ctx context.Context, io ioctx.IOOptions, h block.Handle, m metaBlock) (cache.Handle, error) {
	hd, ok, err := r.lookupMeta(io, h, m)
	if err != nil || ok {
		return hd, err
	}
	return r.loadMeta(ctx, io, h, m)
}

// lookupMeta looks up the cached metadata block m at h, recording the hit
// or the miss; ok reports a hit.
func (r *Reader) lookupMeta(io ioctx.IOOptions, h block.Handle, m metaBlock) (_ cache.Handle, ok bool, _ error) {
	st := r.opts.Stats
	// Every meta block lies before the footer. A handle beyond it is
	// damaged; checked before the lookup, it cannot reach the key bits
	// that tell the forms apart (see metaCacheKey).
	if !blockWithin(h, r.metaLimit) {
		return cache.Handle{}, false, base.CorruptionErrorf("sstable: %s: %s block %s with its %d-byte trailer ends beyond %d",
			r.name, m, h, block.TrailerLen, r.metaLimit)
	}
	hit, miss, kind := statistics.BlockCacheFilterHit, statistics.BlockCacheFilterMiss, ioctx.FilterBlock
	if m.index {
		hit, miss, kind = statistics.BlockCacheIndexHit, statistics.BlockCacheIndexMiss, ioctx.IndexBlock
	}
	if hd, ok := r.opts.Cache.Get(r.metaCacheKey(h, m)); ok {
		st.RecordTick(statistics.BlockCacheHit, 1)
		st.RecordTick(hit, 1)
		fileio.NoteCacheHit(st, io, kind)
		return hd, true, nil
	}
	st.RecordTick(statistics.BlockCacheMiss, 1)
	st.RecordTick(miss, 1)
	fileio.NoteCacheMiss(st, io, kind)
	return cache.Handle{}, false, nil
}

// loadMeta is cachedMeta's miss: a function of its own, so that the closure
// GetOrLoadWithPriority takes is allocated on misses only. Index and filter
// blocks go in with cache.PriorityHigh (RocksDB's
// cache_index_and_filter_blocks_with_high_priority, on by default there):
// every read of a table or partition needs them, so within the cache's
// high-priority share they are evicted only after data blocks. Without it,
// a data set whose partitions exceed the cache evicts them at the rate it
// inserts data blocks read once.
func (r *Reader) loadMeta(ctx context.Context, io ioctx.IOOptions, h block.Handle, m metaBlock) (cache.Handle, error) {
	return r.loadMetaPri(ctx, io, h, m, cache.PriorityHigh)
}

// loadMetaPri is loadMeta inserting at pri.
func (r *Reader) loadMetaPri(ctx context.Context, io ioctx.IOOptions, h block.Handle, m metaBlock, pri cache.Priority) (cache.Handle, error) {
	c := r.opts.Cache
	var loaded bool
	hd, _, err := c.GetOrLoadUntil(ctx, io.Deadline, r.metaCacheKey(h, m), pri, func() ([]byte, error) {
		var v []byte
		var err error
		if m.index {
			// A block that fails to decode after its buffer was taken
			// gives the buffer back: from an off-heap cache, the garbage
			// collector would never reclaim it.
			var buf []byte
			v, err = r.decodeIndexFor(ctx, io, h, m.part, func(n int) []byte {
				buf = c.Alloc(n)
				return buf
			})
			if err != nil {
				c.Free(buf)
			}
		} else {
			v, err = r.decodeFilterFor(ctx, io, h, m.part, c.Alloc)
		}
		loaded = err == nil
		return v, err
	})
	if err != nil {
		return cache.Handle{}, err
	}
	r.noteCacheAdd(loaded, len(hd.Value()))
	return hd, nil
}

// decodeIndexFor reads and verifies the index block at h, index partition
// part (-1: the whole index of an unpartitioned table), and returns its
// flat decoded form in a buffer from alloc (a new one when alloc is nil):
// a partition's compact one (see encodeIndexCompactWith), the whole index's
// with the abbreviations.
func (r *Reader) decodeIndexFor(ctx context.Context, io ioctx.IOOptions, h block.Handle, part int, alloc func(int) []byte) ([]byte, error) {
	s := metaScratches.Get().(*metaScratch)
	defer putMetaScratch(s)
	return r.decodeIndexInto(ctx, io, h, part, s, alloc)
}

// metaScratches holds the read buffers of index and filter loads (cache
// misses, Open), which copy what they read into a buffer of their own. With
// index and filter partitions in a cache that cannot hold them all (the
// bench at 4 GiB), most Gets miss one or two, and allocating a new read
// buffer for each was 6% of a Get hit's CPU profile, besides the
// collections the garbage caused.
var metaScratches = sync.Pool{New: func() any { return new(metaScratch) }}

func putMetaScratch(s *metaScratch) {
	s.trim()
	metaScratches.Put(s)
}

// decodeIndexInto is decodeIndexFor reading the block into s's raw and dec
// buffers.
func (r *Reader) decodeIndexInto(ctx context.Context, io ioctx.IOOptions, h block.Handle, part int, s *metaScratch, alloc func(int) []byte) ([]byte, error) {
	m := metaBlock{index: true, part: part}
	data, err := r.readMetaScratch(ctx, io, m, h, s)
	if err != nil {
		return nil, err
	}
	// Direct calls, not a function value: through one, alloc would
	// escape, and with it the caller's method value on every miss.
	var buf []byte
	if part >= 0 && r.cmp != nil {
		// The compact form compares keys bytewise only.
		buf, err = encodeIndexPartition(data, alloc)
	} else if part >= 0 {
		buf, err = encodeIndexCompactWith(data, alloc, &s.entries, true, sepTrailerStored)
	} else {
		buf, err = encodeIndexTable(data, alloc)
	}
	if err != nil {
		return nil, r.wrapBlockErr(err, m.String(), h)
	}
	return buf, nil
}

// readMetaScratch reads, verifies and decompresses the metadata block m at
// h into s's buffers. m is formatted only for an error: a partition's name
// would cost a no-fill Get an allocation.
func (r *Reader) readMetaScratch(ctx context.Context, io ioctx.IOOptions, m metaBlock, h block.Handle, s *metaScratch) ([]byte, error) {
	return r.readMetaBlockInto(ctx, io, metaWhat(m), h, r.metaLimit, &s.raw, &s.dec)
}

// decodeFilterFor reads and verifies the filter block at h and returns it
// in a buffer from alloc, bloom.LineSize-1 bytes longer than the filter so
// that alignedFilter finds it starting on a cache line.
func (r *Reader) decodeFilterFor(ctx context.Context, io ioctx.IOOptions, h block.Handle, part int, alloc func(int) []byte) ([]byte, error) {
	s := metaScratches.Get().(*metaScratch)
	defer putMetaScratch(s)
	return r.decodeFilterInto(ctx, io, h, part, s, alloc)
}

// decodeFilterInto is decodeFilterFor reading the block into s's raw and
// dec buffers.
func (r *Reader) decodeFilterInto(ctx context.Context, io ioctx.IOOptions, h block.Handle, part int, s *metaScratch, alloc func(int) []byte) ([]byte, error) {
	data, err := r.readMetaScratch(ctx, io, metaBlock{part: part}, h, s)
	if err != nil {
		return nil, err
	}
	v := alloc(len(data) + bloom.LineSize - 1)
	copy(alignedFilter(v), data)
	return v, nil
}

// alignedFilter returns the filter within v, a buffer from decodeFilterFor:
// its len(v)-(bloom.LineSize-1) bytes from the first cache-line boundary.
// The buffer does not move while cached, so every lookup finds the same
// bytes.
func alignedFilter(v []byte) []byte { return bloom.AlignedIn(v, len(v)-(bloom.LineSize-1)) }

// indexHandle returns the handle of the index block that part names: index
// partition part, or for -1 the whole index of an unpartitioned table.
func (r *Reader) indexHandle(part int) block.Handle {
	if part < 0 {
		return r.footer.Index
	}
	return r.top.x.handle(part)
}

// pinIndex returns the index that part names (a partition, or -1 for the
// whole index of an unpartitioned table) for a read: the Reader's own, or a
// view of the cached one in *view, with the handle that pins it (the zero
// Handle for the Reader's own).
func (r *Reader) pinIndex(ctx context.Context, io ioctx.IOOptions, part int, view *indexTable) (*indexTable, cache.Handle, error) {
	if !r.metaInCache {
		if part < 0 {
			return r.index, cache.Handle{}, nil
		}
		return &r.parts[part], cache.Handle{}, nil
	}
	hd, err := r.cachedMeta(ctx, io, r.indexHandle(part), metaBlock{index: true, part: part})
	if err != nil {
		return nil, cache.Handle{}, err
	}
	*view = viewIndexTable(hd.Value())
	view.cmp = r.cmp
	return view, hd, nil
}

// pinFilter returns the filter that part names (nil when the table has
// none), with the handle that pins it, as pinIndex does.
func (r *Reader) pinFilter(ctx context.Context, io ioctx.IOOptions, part int) ([]byte, cache.Handle, error) {
	if !r.metaInCache || !r.hasFilter {
		return r.ownFilter(part), cache.Handle{}, nil
	}
	hd, err := r.cachedMeta(ctx, io, r.filterHandle(part), metaBlock{part: part})
	if err != nil {
		return nil, cache.Handle{}, err
	}
	return alignedFilter(hd.Value()), hd, nil
}

// metaScratch is the memory in which a read that does not fill the cache
// (ReadEnv.FillCache false) keeps an index or filter the cache does not
// hold, instead of inserting it, as RocksDB's fill_cache=false covers index
// and filter blocks: raw and dec take the block as read and decompressed,
// for the moment of decoding it; filter and index its decoded forms, which
// the read uses (apart, as MultiGet holds a partition's filter and index at
// once). A scratch belongs to one read at a time and lives in that read's
// pooled state (Get's getState), so that a Get that misses them allocates
// nothing once its pool is warm; a decoded form is valid until the next
// pinFilterFor or pinIndexFor with the same scratch.
type metaScratch struct {
	raw, dec      []byte
	filter, index []byte
	// entries is the compact decode's scratch (see encodeIndexCompactWith).
	entries []indexEntry
}

// trim drops the buffers larger than maxPooledBuf (a whole index or filter
// of a large table), so that a pooled scratch does not keep them forever.
func (s *metaScratch) trim() {
	for _, b := range [...]*[]byte{&s.raw, &s.dec, &s.filter, &s.index} {
		if cap(*b) > maxPooledBuf {
			*b = nil
		}
	}
	if cap(s.entries)*int(unsafe.Sizeof(indexEntry{})) > maxPooledBuf {
		s.entries = nil
	}
}

// scratchFor returns s when a read with env keeps its index and filter out
// of the cache (metaInCache without env.FillCache), and nil when it fills
// the cache or the Reader keeps them: what pinFilterFor and pinIndexFor
// take.
func (r *Reader) scratchFor(env *ReadEnv, s *metaScratch) *metaScratch {
	if !r.metaInCache || env.FillCache {
		return nil
	}
	return s
}

// pinFilterFor is pinFilter for a read that honours ReadEnv.FillCache for
// the filter: own is nil for a read that fills the cache (pinFilter), and
// otherwise the read's scratch (see scratchFor), into which a filter the
// cache does not hold is read, without inserting it. A cached filter is
// used either way. The filter returned is valid until the handle's release
// and, in own, until own's next pinFilterFor.
func (r *Reader) pinFilterFor(ctx context.Context, io ioctx.IOOptions, part int, own *metaScratch) ([]byte, cache.Handle, error) {
	if own == nil || !r.metaInCache || !r.hasFilter {
		return r.pinFilter(ctx, io, part)
	}
	h := r.filterHandle(part)
	hd, ok, err := r.lookupMeta(io, h, metaBlock{part: part})
	if err != nil {
		return nil, cache.Handle{}, err
	}
	if ok {
		return alignedFilter(hd.Value()), hd, nil
	}
	v, err := r.decodeFilterInto(ctx, io, h, part, own, func(n int) []byte { return grow(&own.filter, n) })
	if err != nil {
		return nil, cache.Handle{}, err
	}
	return alignedFilter(v), cache.Handle{}, nil
}

// pinIndexFor is pinIndex for a read that honours ReadEnv.FillCache for the
// index, as pinFilterFor does for the filter: with own set, an index the
// cache does not hold is read and decoded into own.index and not inserted.
// The index returned is valid until the handle's release and, in own, until
// own's next pinIndexFor. Iterators, Get and MultiGet all read indexes
// through it: a compaction reads with FillCache false so as not to evict
// the working set, and inserting every input's index partitions filled the
// bench's whole 32 MiB cache during the full compaction of 4 GiB.
func (r *Reader) pinIndexFor(ctx context.Context, io ioctx.IOOptions, part int, view *indexTable, own *metaScratch) (*indexTable, cache.Handle, error) {
	if own == nil || !r.metaInCache {
		return r.pinIndex(ctx, io, part, view)
	}
	h := r.indexHandle(part)
	hd, ok, err := r.lookupMeta(io, h, metaBlock{index: true, part: part})
	if err != nil {
		return nil, cache.Handle{}, err
	}
	if ok {
		*view = viewIndexTable(hd.Value())
		view.cmp = r.cmp
		return view, hd, nil
	}
	buf, err := r.decodeIndexInto(ctx, io, h, part, own, func(n int) []byte { return grow(&own.index, n) })
	if err != nil {
		return nil, cache.Handle{}, err
	}
	*view = viewIndexTable(buf)
	view.cmp = r.cmp
	return view, cache.Handle{}, nil
}

// ownFilter returns the filter that part names as the Reader keeps it when
// it is not in the cache: nil when the table has none.
func (r *Reader) ownFilter(part int) []byte {
	if part < 0 || !r.hasFilter {
		return r.filter
	}
	return r.filterParts[part]
}

// filterHandle returns the handle of the filter block that part names.
func (r *Reader) filterHandle(part int) block.Handle {
	if part < 0 {
		return r.filterH
	}
	return r.top.filters[part]
}

// filterUse decides whether point lookups read a table's filter from the
// block cache (CacheIndexAndFilterBlocks), from what its filter recently
// answered them.
//
// A filter pays for itself by the lookups it answers "absent": each skips
// an index partition and a data block. A lookup that finds its key gets
// "maybe" and pays for the filter for nothing: where the filter is not
// cached, a block read as costly as the data block's. At 4 GiB with a
// 32 MiB cache the index and filter partitions (about 20 MiB each) do not
// fit together, so a Get hit read a filter partition and an index
// partition besides its data block most of the time: 1.27× Pebble's time,
// against 0.65× with no filters on the last level (OptimizeFiltersForHits),
// which then cost a Get miss a data block read. Where a table's lookups
// keep finding their keys, as in the last level of a read-mostly database
// queried for keys it holds, the filter is skipped: neither looked up in
// the cache nor read, so that its partitions age out of the cache and leave
// the room to the index partitions every lookup needs. A lookup that skips
// it reads the index and, for an absent key, a data block (the
// OptimizeFiltersForHits cost, and only while absent keys are rare).
//
// score is an exponential moving average of the filter's answers, in
// 1/filterScoreOne: 0 when it always answers "absent", filterScoreOne when
// it always answers "maybe"; a new table starts at 0 (filters used). While
// score is at least filterSkipAt the filter is skipped, except on one
// lookup in filterSampleEvery, which reads it to keep score current: when
// absent keys come back, it falls below the bar within about a hundred
// samples. The updates are racy by design (a lost update costs nothing),
// and a lookup stores only when the average moves, so that concurrent hits
// of one table do not all write its cache line.
type filterUse struct {
	score   atomic.Uint32
	skipped atomic.Uint32
}

const (
	filterScoreOne = 1 << 16
	// filterScoreShift sets the average's memory: each answer moves it
	// 1/64 of the way.
	filterScoreShift = 6
	// filterSkipAt: skip while at most about one lookup in ten gets
	// "absent", where the filter saves less than it costs whenever it is
	// not cached.
	filterSkipAt      = filterScoreOne * 9 / 10
	filterSampleEvery = 32
)

// skip reports whether a lookup skips the filter and, when it does not,
// whether it reads it only as a sample, counting the lookups skipped to
// pick the samples.
func (u *filterUse) skip() (skip, sample bool) {
	if u.score.Load() < filterSkipAt {
		return false, false
	}
	if u.skipped.Add(1)%filterSampleEvery != 0 {
		return true, false
	}
	return false, true
}

// note records one answer of the filter.
func (u *filterUse) note(may bool) {
	s := u.score.Load()
	var n uint32
	if may {
		n = s + (filterScoreOne-s)>>filterScoreShift
	} else {
		n = s - s>>filterScoreShift
	}
	if n != s {
		u.score.Store(n)
	}
}

// pinLookupFilter is pinFilterFor for a point lookup (Get, MultiGet): it
// returns a nil filter, which bloom.MayContainHash answers "maybe", and no
// handle when filterUse skips the filter of a table whose filter lives in
// the cache. Lookups test keys against what it returns with
// lookupMayContain, which keeps filterUse's record.
//
// A sample's filter, when the cache does not hold it, goes in at
// cache.PriorityNormal, among the data blocks, rather than in the
// high-priority share: while the filter is skipped nothing else reads it,
// and in that share it would displace the index partitions every lookup
// reads (BenchmarkGetPartitionedPriority at ratio 0.5: 0.031 index misses
// per Get with the samples at high priority).
func (r *Reader) pinLookupFilter(ctx context.Context, io ioctx.IOOptions, part int, own *metaScratch) ([]byte, cache.Handle, error) {
	if !r.metaInCache || !r.hasFilter {
		return r.pinFilterFor(ctx, io, part, own)
	}
	skip, sample := r.filterUse.skip()
	if skip {
		return nil, cache.Handle{}, nil
	}
	if !sample || own != nil {
		return r.pinFilterFor(ctx, io, part, own)
	}
	h := r.filterHandle(part)
	m := metaBlock{part: part}
	hd, ok, err := r.lookupMeta(io, h, m)
	if err == nil && !ok {
		hd, err = r.loadMetaPri(ctx, io, h, m, cache.PriorityNormal)
	}
	if err != nil {
		return nil, cache.Handle{}, err
	}
	return alignedFilter(hd.Value()), hd, nil
}

// lookupMayContain is bloom.MayContainHash for a filter pinLookupFilter
// returned (not a skipped one: callers test skipped filters, nil, first),
// recording its answer when the filter lives in the cache.
func (r *Reader) lookupMayContain(filter []byte, h uint32) bool {
	may := bloom.MayContainHash(filter, h)
	if r.metaInCache {
		r.filterUse.note(may)
	}
	return may
}
