package sstable

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/bloom"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/internal/rangedel"
	"github.com/shaledb/shale/internal/sstable/block"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
)

// ReadEnv is what a table read needs from its request: the
// ioctx.ReadRequest that ioctx.ResolveRead produced at the API boundary,
// passed by value, so that no block read consults the context's values. The
// zero value neither verifies checksums nor fills the cache.
type ReadEnv = ioctx.ReadRequest

// ReaderOptions configure a Reader. The zero value reads without a block
// cache or statistics. It is a plain value; the cache and statistics it
// points to are shared and safe for concurrent use.
type ReaderOptions struct {
	// Cache is the block cache; nil means none.
	Cache *cache.Cache
	// CacheID is the DB's ID in Cache (from Cache.NewID), so that DBs
	// sharing a cache do not see each other's blocks.
	CacheID uint64
	// FileNum identifies the table in cache keys.
	FileNum uint64
	// Stats receives the reader's tickers (block cache, bloom filter,
	// checksums, decompression); nil records nothing. File-read latencies
	// are recorded by the fileio.Reader, with its own statistics.
	Stats *statistics.Statistics
	// CacheIndexAndFilterBlocks keeps the decoded index and filter in
	// Cache, charged at their decoded size and evictable, instead of on the
	// heap for the Reader's life (RocksDB's cache_index_and_filter_blocks,
	// and Pebble's only behaviour): memory then stays within the cache's
	// budget however many tables are open. A read pins them only while it
	// uses them. It has no effect without a Cache.
	CacheIndexAndFilterBlocks bool
	// GlobalSeqNum, when not 0, replaces the sequence number of every
	// entry and range tombstone the Reader returns (Iter, Get, MultiGet,
	// RangeDeletions): an ingested table's keys are written with sequence
	// number 0 and take the one the ingest assigned, as RocksDB's global
	// seqno. Get and MultiGet then find nothing for a read below it. Check
	// and VerifyChecksums see the file's own numbers.
	GlobalSeqNum base.SeqNum
	// Comparer is the order the table's user keys must be in; nil is
	// bytewise. Open fails, with an error marked base.ErrInvalidArgument,
	// on a table whose recorded comparer (shale.comparator; none is
	// bytewise) has another name.
	Comparer *base.Comparer
	// BuiltinComparer, with a nil Comparer, reads a table with the
	// built-in comparer it records (bytewise or reverse bytewise) instead
	// of refusing it: for tools that read any table.
	BuiltinComparer bool
}

// maxBlockLen bounds the decoded size of a block. The writer cuts data
// blocks at a few KiB but never splits an entry, so a block can be as large
// as its largest value; anything above this is taken for a corrupt length
// rather than allocated.
const maxBlockLen = 256 << 20

// maxSnappyExpansion bounds how much larger than its compressed form a
// Snappy block can decode to: the densest element, a 3-byte copy, yields 64
// bytes. A length header claiming more is corrupt, which stops a few bytes of
// garbage from asking for a huge buffer.
const maxSnappyExpansion = 32

// Reader reads one table file: point lookups, batched lookups, iterators and
// verification. It is safe for concurrent use after Open; Close must be
// called once, when no read is in flight (the engine refcounts readers).
//
// # File reads
//
// Every byte goes through the fileio.Reader given to Open, so each read is
// charged to the rate limiter, timed, and tagged with the caller's
// ReadEnv.IO. The number of fileio calls per operation, which is what
// RocksDB's rate-limiter request counts observe, is:
//
//   - Open: 4 Reads (footer, metaindex, properties, index), 5 when the table
//     has a filter. They are checksum-verified whatever the ReadEnv says.
//     A partitioned table takes 4 (the index Read is of the top-level
//     index), plus, unless its partitions live in the block cache, 1 per
//     index partition and 1 per filter partition.
//   - Get: 0 when the filter rules the key out or the data block is cached;
//     otherwise 1 Read (the data block; the index and filter are in memory).
//     With the index and filter in the block cache, 1 more Read for each of
//     them that is not cached (see Memory in the cache). In a partitioned
//     table these are the partition's index and filter.
//   - MultiGet: 0 when every needed block is cached or filtered out;
//     otherwise 1 MultiRead, with one request per run of uncached blocks
//     adjacent on disk.
//   - Iterator: moving within a block reads nothing; moving into a data
//     block that is neither cached nor in the readahead buffer makes 1 Read
//     (of that block, or of a readahead chunk from it on), plus 1 ReadAsync
//     of the next chunk with ReadEnv.AsyncIO.
//   - VerifyChecksums and Check: 1 Read each for the metaindex, every meta
//     block (properties, and filter if any) and the index, then the data
//     blocks through a readahead buffer of R = ReadEnv.ReadaheadSize bytes
//     (256 KiB when 0): one Read per refill, each starting at the first block
//     not yet buffered and reading max(R, that block) bytes, so about
//     ceil(data size / R). A small table takes 4 + 1 Reads, 5 + 1 with a
//     filter. A partitioned table's index Read is of the top-level index,
//     and each partition's filter and index take 1 Read each (outside the
//     readahead buffer) before its data blocks.
//   - Close and EvictFromCache read nothing.
//
// With a memory-mapped fileio.Reader, reads slice the mapping; they are
// still fileio calls (charged, timed, tagged), but readahead buffers are
// bypassed, so an iterator makes 1 Read per uncached block.
//
// # Memory
//
// The index block and the filter are decoded at Open and kept for the
// Reader's life, unless ReaderOptions.CacheIndexAndFilterBlocks puts them in
// the block cache (see Memory in the cache, below).
// The index is kept as flat arrays for searching (see indexTable): about 28
// bytes per data block plus the separators, which the Writer shortens
// (about 40 bytes per block for 16-byte keys); an index partition's compact
// form has no abbreviation array, narrow handles and separators without
// their common prefix or shortened trailer, about 15 bytes a block on the
// bench's keys (see encodeIndexCompactWith). The filter is copied when its
// lines are not aligned to cache lines in memory.
// Data blocks come from the block cache, or, when the cache is not filled,
// from buffers owned by the caller's BlockPin or iterator. An uncompressed
// block of a memory-mapped file is used in place and never cached; one read
// from the file into the cache by Get or MultiGet is cached in the buffer it
// was read into, without a copy. Get and MultiGet insert data blocks with
// cache.PriorityNormal; an iterator inserts the blocks of a sequential run
// with cache.PriorityScan (see Iter), so a scan recycles only the cache's
// probation share instead of evicting what point reads keep.
//
// # Memory in the cache
//
// With ReaderOptions.CacheIndexAndFilterBlocks and a cache, Open still reads,
// verifies and decodes the filter and the index, but puts them in the cache
// (as RocksDB's prefetch_index_and_filter_in_cache does) and keeps neither.
// The index is cached in its decoded, searchable form (see encodeIndexTable),
// the filter aligned to cache lines, each charged at that size and inserted
// with cache.PriorityHigh, so that within the cache's high-priority share
// they are evicted only after data blocks; their cache
// keys are their blocks' offsets tagged with their form (see
// metaCacheKey), in the table's file, so EvictFromCache drops them too. Get and
// MultiGet look each up once per call (a hit ticks BlockCacheHit and
// BlockCacheIndexHit or BlockCacheFilterHit; a miss BlockCacheMiss and
// BlockCacheIndexMiss or BlockCacheFilterMiss) and release them before
// returning; an Iter pins the index until Close. A lookup that misses
// reads the block again with one Read, tagged with the IOOptions of the read
// that needed it, and always verifies its checksum. A block too large for a
// cache shard is returned uncached, so it is read again by every use.
//
// # Partitioned index and filters
//
// A table written with WriterOptions.IndexPartitionSize has a top-level
// index that Open decodes and keeps whatever the options say (RocksDB's
// pin_top_level_index_and_filter): it is small, one entry per partition.
// Without the cache Open also loads every index and filter partition and
// keeps them, as it keeps an unpartitioned index and filter. With
// CacheIndexAndFilterBlocks and a cache, Open loads no partition: a read
// looks up only the partition it needs, under that partition's handle,
// with the tickers above, so Get's cost and the memory used no longer grow
// with the size of a table's index, only with the partition size. An Iter
// pins its current index partition until it moves to another or closes.
type Reader struct {
	file *fileio.Reader
	name string
	opts ReaderOptions
	// cmp is opts.Comparer's user-key order, nil for bytewise.
	cmp base.Compare

	footer Footer
	props  Properties
	// index is the index block decoded for searching, filter the bloom
	// filter (nil if the table has none), aligned to cache lines. Both
	// live as long as the Reader.
	index  *indexTable
	filter []byte
	// hasFilter says the table has a filter, at filterH; filter is nil
	// when the filter lives in the cache.
	hasFilter bool
	filterH   block.Handle
	// metaInCache says the index and filter live in the block cache
	// (ReaderOptions.CacheIndexAndFilterBlocks with a cache); index and
	// filter are then nil.
	metaInCache bool
	// metaLoaded is the size of the largest whole index or filter Open
	// loaded into the cache: Open keeps them in the Reader instead when
	// the cache cannot hold it.
	metaLoaded int
	// metaLimit is where the meta blocks end: the footer's offset.
	metaLimit uint64
	// dataEnd is where the data blocks end: the offset of the first block
	// after them. A data handle reaching past it is corrupt.
	dataEnd uint64
	// metaHandles are the metaindex entries, in metaindex order, for
	// VerifyChecksums.
	metaHandles []metaHandle
	// top is the top-level index of a partitioned table
	// (FormatVersionPartitioned), nil for any other; index and filter are
	// then nil. parts and filterParts are its decoded index and filter
	// partitions, loaded at Open and kept, unless metaInCache puts them in
	// the block cache (then they are nil).
	top         *topIndex
	parts       []indexTable
	filterParts [][]byte
	// rangeDels are the table's range tombstones, loaded at open; nil when
	// the table has none (every table of FormatVersion 1).
	rangeDels *rangedel.Set
	// filterUse is the lookups' recent record of this table's filter, for
	// point lookups to skip a filter that keeps answering "maybe" (see
	// pinLookupFilter).
	filterUse filterUse

	closed atomic.Bool
}

// metaHandle is one metaindex entry.
type metaHandle struct {
	name string
	h    block.Handle
}

// Open opens the table that f reads. It reads the footer, metaindex,
// properties, filter (if any) and index, each with one f.Read using env.IO,
// and verifies every one of those blocks whatever env.VerifyChecksums says.
// It keeps the decoded index and filter in memory for the Reader's life, or
// puts them in the block cache (ReaderOptions.CacheIndexAndFilterBlocks).
// A malformed table is an error marked base.ErrCorruption that names the
// file and what was wrong; that includes every index entry that does not
// decode (a separator shorter than an internal key trailer, a value that is
// not exactly a handle), since Open decodes them all. Open does not check
// that the separators increase or that the handles point into the data
// region: Check does the first, and every block read the second.
//
// Open takes ownership of f: Close closes it, and so does a failed Open.
func Open(ctx context.Context, f *fileio.Reader, env ReadEnv, opts ReaderOptions) (*Reader, error) {
	r := &Reader{file: f, name: f.Name(), opts: opts, cmp: opts.Comparer.UserCompare()}
	r.metaInCache = opts.CacheIndexAndFilterBlocks && opts.Cache != nil
	if err := r.open(ctx, env); err != nil {
		_ = f.Close()
		return nil, err
	}
	return r, nil
}

func (r *Reader) open(ctx context.Context, env ReadEnv) error {
	size := r.file.Size()
	if size < FooterLen {
		return base.CorruptionErrorf("sstable: %s: file of %d bytes is too short for a %d-byte footer",
			r.name, size, FooterLen)
	}
	var scratch [FooterLen]byte
	raw, err := r.file.Read(ctx, env.IO, size-FooterLen, FooterLen, scratch[:])
	if err != nil {
		// The file reader's error names the file and the offset.
		return errors.Wrap(err, "sstable: reading footer")
	}
	if r.footer, err = decodeFooter(raw, uint64(size)); err != nil {
		return errors.Wrapf(err, "sstable: %s: footer", r.name)
	}
	// The footer is the one part of the file no checksum covers. Requiring
	// its canonical encoding makes every change to it visible, such as a
	// handle's varint given a redundant continuation byte.
	if enc := r.footer.Encode(scratch[:0:0]); !bytes.Equal(enc, raw) {
		return base.CorruptionErrorf("sstable: %s: footer is not canonically encoded: % x, expected % x",
			r.name, raw, enc)
	}
	limit := uint64(size) - FooterLen
	r.metaLimit = limit
	r.dataEnd = min(r.footer.MetaIndex.Offset, r.footer.Index.Offset)

	meta, err := r.readMetaBlock(ctx, env, "metaindex", r.footer.MetaIndex, limit)
	if err != nil {
		return err
	}
	var it block.Iter
	if err := it.Init(bytes.Compare, meta); err != nil {
		return r.wrapBlockErr(err, "metaindex", r.footer.MetaIndex)
	}
	var propsHandle, filterHandle, rangeDelHandle block.Handle
	var hasProps, hasFilter, hasRangeDel bool
	var prev []byte
	for ok := it.First(); ok; ok = it.Next() {
		name := it.Key()
		if prev != nil && bytes.Compare(prev, name) >= 0 {
			return base.CorruptionErrorf("sstable: %s: metaindex %s: %q follows %q",
				r.name, r.footer.MetaIndex, name, prev)
		}
		prev = append(prev[:0], name...)
		h, err := decodeHandleExact(it.Value())
		if err != nil {
			return r.wrapBlockErr(err, "metaindex entry "+string(name)+" of", r.footer.MetaIndex)
		}
		r.metaHandles = append(r.metaHandles, metaHandle{name: string(name), h: h})
		switch string(name) {
		case MetaPropertiesName:
			propsHandle, hasProps = h, true
		case MetaFilterName:
			filterHandle, hasFilter = h, true
		case MetaRangeDelName:
			rangeDelHandle, hasRangeDel = h, true
		}
		r.dataEnd = min(r.dataEnd, h.Offset)
	}
	if err := it.Error(); err != nil {
		return r.wrapBlockErr(err, "metaindex", r.footer.MetaIndex)
	}
	if !hasProps {
		return base.CorruptionErrorf("sstable: %s: metaindex %s has no %s entry", r.name, r.footer.MetaIndex, MetaPropertiesName)
	}

	propsData, err := r.readMetaBlock(ctx, env, "properties", propsHandle, limit)
	if err != nil {
		return err
	}
	if r.props, err = decodeProperties(propsData); err != nil {
		return r.wrapBlockErr(err, "properties", propsHandle)
	}
	// A flipped checksum-type byte in the footer could otherwise turn
	// verification off (crc32c, 1, becomes none, 0) without any block
	// failing to decode.
	if r.props.Checksum != r.footer.Checksum {
		return base.CorruptionErrorf("sstable: %s: footer says checksum type %s, properties say %s",
			r.name, r.footer.Checksum, r.props.Checksum)
	}
	// Likewise a flipped version byte would read an unpartitioned index as
	// a top-level one (1 becomes 3), or the reverse.
	if r.props.FormatVersion != uint64(r.footer.FormatVersion) {
		return base.CorruptionErrorf("sstable: %s: footer says format version %d, properties say %d",
			r.name, r.footer.FormatVersion, r.props.FormatVersion)
	}
	if err := r.checkComparer(); err != nil {
		return err
	}
	partitioned := r.footer.FormatVersion == FormatVersionPartitioned
	if partitioned && hasFilter {
		return base.CorruptionErrorf("sstable: %s: metaindex %s has a %s entry, but the table's filter is partitioned",
			r.name, r.footer.MetaIndex, MetaFilterName)
	}

	if hasFilter {
		r.hasFilter, r.filterH = true, filterHandle
		if err := r.openFilter(ctx, env, limit); err != nil {
			return err
		}
	}
	if hasRangeDel {
		if err := r.loadRangeDels(ctx, env, rangeDelHandle, limit); err != nil {
			return err
		}
	}
	if partitioned {
		return r.openPartitioned(ctx, env, limit)
	}
	if err := r.openIndex(ctx, env, limit); err != nil {
		return err
	}
	if r.metaInCache && r.metaLoaded > r.opts.Cache.MaxValueSize()/metaShardShare {
		// The cache cannot hold this table's whole index or filter (see
		// metaShardShare): in the cache, every lookup would read and
		// decode it again, megabytes a Get. The Reader keeps both, as
		// without CacheIndexAndFilterBlocks; a table written with
		// partitions has blocks of metadata_block_size instead.
		r.metaInCache = false
		if r.hasFilter {
			if r.filter, err = r.readFilter(ctx, env, "filter", r.filterH, limit); err != nil {
				return err
			}
		}
		return r.openIndex(ctx, env, limit)
	}
	return nil
}

// openFilter loads the filter: into the Reader, or into the cache.
func (r *Reader) openFilter(ctx context.Context, env ReadEnv, limit uint64) error {
	if r.metaInCache {
		hd, err := r.cachedMeta(ctx, env.IO, r.filterH, wholeFilter)
		r.metaLoaded = max(r.metaLoaded, len(hd.Value()))
		hd.Release()
		return err
	}
	filter, err := r.readFilter(ctx, env, "filter", r.filterH, limit)
	r.filter = filter
	return err
}

// readFilter reads and verifies the filter block at h for the Reader to
// keep, aligned to cache lines.
func (r *Reader) readFilter(ctx context.Context, env ReadEnv, what string, h block.Handle, limit uint64) ([]byte, error) {
	filter, err := r.readMetaBlock(ctx, env, what, h, limit)
	if err != nil {
		return nil, err
	}
	return bloom.CacheAligned(filter), nil
}

// openIndex loads the index: into the Reader, or into the cache.
func (r *Reader) openIndex(ctx context.Context, env ReadEnv, limit uint64) error {
	if r.metaInCache {
		hd, err := r.cachedMeta(ctx, env.IO, r.footer.Index, wholeIndex)
		r.metaLoaded = max(r.metaLoaded, len(hd.Value()))
		hd.Release()
		return err
	}
	index, err := r.readMetaBlock(ctx, env, "index", r.footer.Index, limit)
	if err != nil {
		return err
	}
	if r.index, err = newIndexTable(index); err != nil {
		return r.wrapBlockErr(err, "index", r.footer.Index)
	}
	r.index.cmp = r.cmp
	return nil
}

// loadRangeDels reads and decodes the range deletion block at h.
func (r *Reader) loadRangeDels(ctx context.Context, env ReadEnv, h block.Handle, limit uint64) error {
	data, err := r.readMetaBlock(ctx, env, "range deletion", h, limit)
	if err != nil {
		return err
	}
	var it block.Iter
	if err := it.Init(bytes.Compare, data); err != nil {
		return r.wrapBlockErr(err, "range deletion", h)
	}
	var frags []rangedel.Fragment
	for ok := it.First(); ok; ok = it.Next() {
		// Keys and values are copied: the block's memory may be a
		// mapping's or an iterator buffer.
		f, err := rangedel.DecodeFragment(bytes.Clone(it.Key()), bytes.Clone(it.Value()))
		if err != nil {
			return r.wrapBlockErr(err, "range deletion", h)
		}
		if g := r.opts.GlobalSeqNum; g != 0 {
			// An ingested table's fragments each hold one tombstone.
			f.Seqs = f.Seqs[:1]
			f.Seqs[0] = g
		}
		frags = append(frags, f)
	}
	if err := it.Error(); err != nil {
		return r.wrapBlockErr(err, "range deletion", h)
	}
	if r.rangeDels, err = rangedel.FromFragmentsCmp(r.cmp, frags); err != nil {
		return r.wrapBlockErr(err, "range deletion", h)
	}
	return nil
}

// RangeDeletions returns the table's range tombstones, or nil when it has
// none. The Set is immutable and lives as long as the Reader.
func (r *Reader) RangeDeletions() *rangedel.Set { return r.rangeDels }

// readMetaBlock reads, verifies and decodes a block kept for the Reader's
// life, in memory of its own (or in place, for an uncompressed block of a
// mapped file).
func (r *Reader) readMetaBlock(ctx context.Context, env ReadEnv, what string, h block.Handle, limit uint64) ([]byte, error) {
	var buf []byte
	return r.readMetaBlockInto(ctx, env.IO, blockWhat{name: what}, h, limit, &buf, nil)
}

// blockWhat names the kind of a block in errors: name ("properties"), or
// with meta set the index or filter m; the zero blockWhat names none (a
// block read by a caller that wraps the error with the kind itself). It is
// formatted only for an error, so that a read that succeeds does not build
// a partition's name.
type blockWhat struct {
	name string
	m    metaBlock
	meta bool
}

// String is the kind alone: "index partition 3".
func (w blockWhat) String() string {
	if w.meta {
		return w.m.String()
	}
	return w.name
}

// block is the kind followed by "block", or "block" for the zero blockWhat.
func (w blockWhat) block() string {
	if w == (blockWhat{}) {
		return "block"
	}
	return w.String() + " block"
}

// metaWhat names the index or filter m.
func metaWhat(m metaBlock) blockWhat { return blockWhat{m: m, meta: true} }

// readMetaBlockInto is readMetaBlock reading into *raw and decompressing
// into *dec, each grown as needed (into a new buffer when dec is nil). The
// block returned is in one of them (or in the mapping) and valid until
// their next use.
//
// Its errors say "sstable:" and the file once: a handle out of bounds or a
// block that does not decompress is "sstable: FILE: WHAT block H: ...", and
// a failed read or checksum, whose error from the file reader or
// block.ValidateChecksum names the file and the offset already (with both
// checksums), is "sstable: reading WHAT block: ...".
func (r *Reader) readMetaBlockInto(ctx context.Context, io ioctx.IOOptions, what blockWhat, h block.Handle, limit uint64, raw, dec *[]byte) ([]byte, error) {
	if err := r.checkBounds(what, h, limit); err != nil {
		return nil, err
	}
	stored, ct, err := r.readRaw(ctx, io, h, limit, true, nil, raw)
	if err != nil {
		return nil, errors.Wrapf(err, "sstable: reading %s block", what.String())
	}
	if ct == compress.None {
		return stored, nil
	}
	n, err := r.decodedLen(what, ct, stored, h)
	if err != nil {
		return nil, err
	}
	var dst []byte
	if dec == nil {
		dst = make([]byte, n)
	} else {
		dst = grow(dec, n)
	}
	return r.decompressInto(what, ct, stored, h, dst)
}

// Properties returns the table's properties. They are read-only and valid
// for the Reader's life.
func (r *Reader) Properties() *Properties { return &r.props }

// Stats returns ReaderOptions.Stats: where the tickers that GetCounted
// counts belong.
func (r *Reader) Stats() *statistics.Statistics { return r.opts.Stats }

// FileNum returns ReaderOptions.FileNum.
func (r *Reader) FileNum() uint64 { return r.opts.FileNum }

// Close closes the file. It must be called once, after every read, iterator
// and MultiGet has finished (BlockPins may outlive it: cached blocks belong
// to the cache, other pinned buffers to the pins; but a value that points
// into a memory mapping must not be used after Close).
func (r *Reader) Close() error {
	if r.closed.Swap(true) {
		return base.Mark(errors.Newf("sstable: %s: Close of a closed reader", r.name), base.ErrClosed)
	}
	return r.file.Close()
}

// EvictFromCache drops this table's blocks from the block cache, for a file
// that has been deleted. Blocks still pinned stay valid until released.
func (r *Reader) EvictFromCache() {
	r.opts.Cache.EvictFile(r.opts.CacheID, r.opts.FileNum)
}

// MayContain runs only the filter: false means the table certainly holds no
// entry of the key whose bloom.Hash is h. A table without a filter may
// contain anything, and so may one whose filter lives in the block cache
// and is not there at the moment, and one whose filter is partitioned
// (which partition to ask depends on the key, not its hash: see
// MayContainKey). It reads no file and records no
// statistics (callers that skip a table on its answer tick
// BloomFilterUseful themselves).
func (r *Reader) MayContain(h uint32) bool {
	if r.top != nil {
		return true
	}
	return r.filterMayContain(-1, h)
}

// MayContainKey is MayContain for key, whose bloom.Hash is h, answered for
// a partitioned table too: false means the table holds no entry of key at
// any sequence number. In a partitioned table key's newest entry, if any,
// is the first entry >= (key, MaxSeqNum, KindMax), so it lies in the
// partition the top-level index picks for that search key (see the package
// doc) and its user key is in that partition's filter: a key above every
// partition is in no entry, and otherwise that one filter partition
// answers, as MayContain's one filter does (a partition in the block cache
// that is not there at the moment answers true). It reads no file and
// records no statistics.
func (r *Reader) MayContainKey(key []byte, h uint32) bool {
	if r.top == nil {
		return r.MayContain(h)
	}
	var buf [64]byte
	p := r.partitionOf(appendSearchKey(buf[:0], key, base.MaxSeqNum))
	if p == r.top.len() {
		return false
	}
	return r.filterMayContain(p, h)
}

// filterMayContain is MayContain's answer from the filter that part names
// (see pinFilter): true when the table has no filter, or when it lives in
// the block cache and is not there at the moment; it never reads the file.
func (r *Reader) filterMayContain(part int, h uint32) bool {
	if !r.hasFilter {
		return true
	}
	if !r.metaInCache {
		return bloom.MayContainHash(r.ownFilter(part), h)
	}
	hd, ok := r.opts.Cache.Get(r.metaCacheKey(r.filterHandle(part), metaBlock{part: part}))
	if !ok {
		return true
	}
	may := bloom.MayContainHash(alignedFilter(hd.Value()), h)
	hd.Release()
	return may
}

// BlockPin keeps the memory of a block that a returned value points into
// alive: a block cache handle, a buffer of the reader's pool, both or
// neither (a block of a memory-mapped file, valid until the Reader's Close).
// The zero BlockPin pins nothing.
//
// Release must be called exactly once per pin that Get or MultiGet
// returned, after the last use of the value; copies of a BlockPin share its
// one reference. A BlockPin may be released on any goroutine.
type BlockPin struct {
	h cache.Handle
	b *ownedBlock
}

// Release unpins the block. The values that point into it must not be used
// afterwards.
func (p BlockPin) Release() {
	p.h.Release()
	if p.b != nil {
		p.b.unref()
	}
}

// ownedBlock is a block buffer outside the cache, shared by refs pins
// (several MultiGet keys can point into one block). It may also hold a cache
// handle that its pins share. Recycled through ownedBlocks.
type ownedBlock struct {
	refs atomic.Int32
	buf  []byte
	h    cache.Handle
}

// maxPooledBuf bounds the buffers kept in ownedBlocks, so that one huge
// block does not stay reachable forever.
const maxPooledBuf = 1 << 20

var ownedBlocks = sync.Pool{New: func() any { return new(ownedBlock) }}

func newOwnedBlock(refs int32) *ownedBlock {
	b := ownedBlocks.Get().(*ownedBlock)
	b.refs.Store(refs)
	return b
}

func (b *ownedBlock) pin() BlockPin { return BlockPin{b: b} }

func (b *ownedBlock) unref() {
	switch n := b.refs.Add(-1); {
	case n == 0:
		b.h.Release()
		b.h = cache.Handle{}
		if cap(b.buf) > maxPooledBuf {
			b.buf = nil
		}
		ownedBlocks.Put(b)
	case n < 0:
		panic(base.AssertionFailedf("sstable: BlockPin released more often than it was returned (%d)", n))
	}
}

// grow returns (*buf)[:n], reallocating *buf when it is too small.
func grow(buf *[]byte, n int) []byte {
	if cap(*buf) < n {
		*buf = make([]byte, n, n+n/8)
	}
	*buf = (*buf)[:n]
	return *buf
}

// decodeHandleExact decodes a handle that must fill v (index and metaindex
// values hold nothing else).
func decodeHandleExact(v []byte) (block.Handle, error) {
	h, n, err := block.DecodeHandle(v)
	if err != nil {
		return block.Handle{}, err
	}
	if n != len(v) {
		return block.Handle{}, base.CorruptionErrorf("block: handle %s followed by %d stray bytes", h, len(v)-n)
	}
	return h, nil
}

// readRaw reads the block at h followed by its trailer, after checking that
// both end at or before limit, verifies the checksum when verify is set, and
// returns the block bytes as stored with their compression type. The bytes
// are in pf's buffer when pf is set, else in the mapping when the file is
// mapped, else in *buf (grown as needed); they are valid until the next use
// of that buffer.
func (r *Reader) readRaw(
	ctx context.Context, io ioctx.IOOptions, h block.Handle, limit uint64, verify bool,
	pf *fileio.PrefetchBuffer, buf *[]byte,
) ([]byte, compress.Type, error) {
	if err := r.checkBounds(blockWhat{}, h, limit); err != nil {
		return nil, 0, err
	}
	off, n := int64(h.Offset), int(h.Length)+block.TrailerLen
	var raw []byte
	var err error
	switch {
	case pf != nil:
		raw, err = pf.Read(ctx, io, off, n)
	case r.file.Mapped():
		raw, err = r.file.Read(ctx, io, off, n, nil)
		if err == nil {
			// The block is in the page cache but rarely in the processor's:
			// start loading all of its lines at once, so that the
			// checksum's stream and the seek's dependent loads (trailer,
			// restart count, restart points, entries) do not wait for
			// one line after another.
			block.Prefetch(raw)
		}
	default:
		raw, err = r.file.Read(ctx, io, off, n, grow(buf, n))
	}
	if err != nil {
		return nil, 0, err
	}
	io.Perf.AddBlockRead(n)
	if verify && r.footer.Checksum != checksum.None {
		r.opts.Stats.RecordTick(statistics.BlockChecksumComputeCount, 1)
		if err := block.ValidateChecksum(r.footer.Checksum, raw, r.name, h.Offset); err != nil {
			r.opts.Stats.RecordTick(statistics.BlockChecksumMismatchCount, 1)
			return nil, 0, err
		}
	}
	return raw[:h.Length:h.Length], compress.Type(raw[h.Length]), nil
}

// checkBounds returns the corruption error of the block at h, of the kind
// what names, when it ends with its trailer beyond limit or is longer than
// maxBlockLen, and nil otherwise.
func (r *Reader) checkBounds(what blockWhat, h block.Handle, limit uint64) error {
	if !blockWithin(h, limit) {
		return base.CorruptionErrorf("sstable: %s: %s %s with its %d-byte trailer ends beyond %d",
			r.name, what.block(), h, block.TrailerLen, limit)
	}
	if h.Length > maxBlockLen {
		return base.CorruptionErrorf("sstable: %s: %s %s is longer than the %d-byte limit",
			r.name, what.block(), h, maxBlockLen)
	}
	return nil
}

// decodedLen returns the decompressed length of the block at h (of the kind
// what names), stored as raw with compression ct, refusing lengths no real
// block can have.
func (r *Reader) decodedLen(what blockWhat, ct compress.Type, raw []byte, h block.Handle) (int, error) {
	n, err := compress.DecodedLen(ct, raw)
	if err != nil {
		return 0, r.decompressErr(what, err, h)
	}
	if n > maxBlockLen || (ct == compress.Snappy && n > maxSnappyExpansion*len(raw)+64) {
		return 0, base.CorruptionErrorf("sstable: %s: %s %s of %d compressed bytes claims %d decompressed bytes",
			r.name, what.block(), h, len(raw), n)
	}
	return n, nil
}

// decompressErr wraps err, the failure to decompress the block at h, with
// the file and the block's kind, or "decompressing" for the zero blockWhat.
func (r *Reader) decompressErr(what blockWhat, err error, h block.Handle) error {
	if what == (blockWhat{}) {
		return r.wrapBlockErr(err, "decompressing", h)
	}
	return r.wrapBlockErr(err, what.String(), h)
}

// decompress decompresses raw (compression ct, the block at h) into a buffer
// of the decoded length that alloc returns.
func (r *Reader) decompress(ct compress.Type, raw []byte, h block.Handle, alloc func(n int) []byte) ([]byte, error) {
	n, err := r.decodedLen(blockWhat{}, ct, raw, h)
	if err != nil {
		return nil, err
	}
	return r.decompressInto(blockWhat{}, ct, raw, h, alloc(n))
}

// decompressInto decodes raw, the block at h of the kind what names, into
// dst, at least its decoded length long.
func (r *Reader) decompressInto(what blockWhat, ct compress.Type, raw []byte, h block.Handle, dst []byte) ([]byte, error) {
	data, err := compress.DecompressInto(ct, dst, raw)
	if err != nil {
		return nil, r.decompressErr(what, err, h)
	}
	if ct != compress.None {
		r.opts.Stats.RecordTick(statistics.NumberBlockDecompressed, 1)
	}
	return data, nil
}

// decompressForCache is decompress into a buffer from c.Alloc, for the
// cache to take. A buffer that a failed decode leaves unused goes back to
// c: it may be off-heap memory, which the garbage collector would not
// reclaim.
func (r *Reader) decompressForCache(c *cache.Cache, ct compress.Type, raw []byte, h block.Handle) ([]byte, error) {
	n, err := r.decodedLen(blockWhat{}, ct, raw, h)
	if err != nil {
		return nil, err
	}
	buf := c.Alloc(n)
	data, err := r.decompressInto(blockWhat{}, ct, raw, h, buf)
	if err != nil {
		c.Free(buf)
		return nil, err
	}
	return data, nil
}

// decompressTo is decompress into *buf, grown as needed.
func (r *Reader) decompressTo(ct compress.Type, raw []byte, h block.Handle, buf *[]byte) ([]byte, error) {
	return r.decompress(ct, raw, h, func(n int) []byte { return grow(buf, n) })
}

func (r *Reader) wrapBlockErr(err error, what string, h block.Handle) error {
	return errors.Wrapf(err, "sstable: %s: %s block %s", r.name, what, h)
}

// cacheKey returns the block cache key of the data block at h: its offset.
func (r *Reader) cacheKey(h block.Handle) cache.Key {
	return cache.Key{ID: r.opts.CacheID, FileNum: r.opts.FileNum, Offset: h.Offset}
}

// The block cache holds a table's blocks in three forms: a data block as
// stored (decompressed), a filter aligned to cache lines, an index decoded
// into its flat form (see encodeIndexTable). A block's offset alone would
// let a handle that names a block of another kind (a damaged footer, which
// no checksum covers, or the top-level index of a table without checksums)
// find the block's other form and read it as its own: a filter viewed as a
// flat index has a garbage header and sends unsafe slicing out of bounds.
// So the index and filter forms are keyed by their block's offset with a
// bit of their own set, which no offset within a file has (tables are far
// below 2^62 bytes), and every lookup first checks that its handle lies
// within the region of its kind, so no damaged offset reaches those bits.
const (
	indexKeyTag  = 1 << 63
	filterKeyTag = 1 << 62
)

// metaCacheKey returns the block cache key of the decoded index or filter
// (as m says) of the block at h.
func (r *Reader) metaCacheKey(h block.Handle, m metaBlock) cache.Key {
	k := r.cacheKey(h)
	if m.index {
		k.Offset |= indexKeyTag
	} else {
		k.Offset |= filterKeyTag
	}
	return k
}

// blockDest says where a data block read outside the cache goes.
type blockDest struct {
	// pf, when set, serves the read (iterators).
	pf *fileio.PrefetchBuffer
	// raw receives the block as stored when pf is nil and the file is not
	// mapped.
	raw *[]byte
	// dec receives a decompressed block.
	dec *[]byte
	// pri is the cache priority of a block this read inserts:
	// PriorityScan for the blocks of an iterator's sequential run,
	// PriorityNormal (the zero value) for point reads.
	pri cache.Priority
	// direct reads a block that the cache is to hold straight into the
	// cache's memory, and only notes the read in pf (see loadDataDirect).
	direct bool
}

// blockLoc says which memory a data block returned by readData is in.
type blockLoc uint8

const (
	locCache blockLoc = iota // the cache; the pin holds its handle
	locFile                  // the mapping or pf's buffer
	locRaw                   // *dest.raw
	locDec                   // *dest.dec
)

// readData returns the decoded data block at h: from the cache when it is
// there; else read through dest.pf or the file and, with env.FillCache and a
// cache, loaded into the cache (single flight). Otherwise, and for an
// uncompressed block of a mapped file, which is never cached, loc says where
// the block is; the pin is then zero. It records the block cache tickers
// that readDataCounted counts.
func (r *Reader) readData(
	ctx context.Context, env *ReadEnv, h block.Handle, dest blockDest,
) (data []byte, pin BlockPin, loc blockLoc, err error) {
	var t statistics.TableTicks
	data, pin, loc, err = r.readDataCounted(ctx, env, h, dest, &t)
	r.opts.Stats.RecordTableTicks(&t)
	return data, pin, loc, err
}

// noteDataHit records a data block of n bytes found in the block cache, as
// readData does: its tickers counted as readDataCounted counts them, and
// recorded at once.
func noteDataHit(st *statistics.Statistics, env *ReadEnv, n int) {
	t := statistics.TableTicks{DataHits: 1, DataHitBytes: uint64(n)}
	st.RecordTableTicks(&t)
	fileio.NoteCacheHit(st, env.IO, ioctx.DataBlock)
}

// noteDataMiss records a data block not found in the block cache, as
// readData does.
func noteDataMiss(st *statistics.Statistics, env *ReadEnv) {
	t := statistics.TableTicks{DataMisses: 1}
	st.RecordTableTicks(&t)
	fileio.NoteCacheMiss(st, env.IO, ioctx.DataBlock)
}

// readDataCounted is readData that counts its block cache hit or miss in t
// (see statistics.TableTicks) instead of recording the tickers: Get's,
// recorded with the rest of its lookup's.
func (r *Reader) readDataCounted(
	ctx context.Context, env *ReadEnv, h block.Handle, dest blockDest, t *statistics.TableTicks,
) (data []byte, pin BlockPin, loc blockLoc, err error) {
	// Checked before the cache lookup too: a damaged handle must not find
	// a cached block of another kind (see metaCacheKey).
	if !blockWithin(h, r.dataEnd) {
		return nil, BlockPin{}, 0, r.dataHandleErr(h)
	}
	if c := r.opts.Cache; c != nil {
		if hd, ok := c.Get(r.cacheKey(h)); ok {
			v := hd.Value()
			t.DataHits++
			t.DataHitBytes += uint64(len(v))
			fileio.NoteCacheHit(r.opts.Stats, env.IO, ioctx.DataBlock)
			return v, BlockPin{h: hd}, locCache, nil
		}
		t.DataMisses++
		fileio.NoteCacheMiss(r.opts.Stats, env.IO, ioctx.DataBlock)
	}
	return r.readDataUncached(ctx, env, h, dest)
}

// dataHandleErr is the error of a data block handle h that ends beyond the
// data region.
func (r *Reader) dataHandleErr(h block.Handle) error {
	return base.CorruptionErrorf("sstable: %s: data block %s with its %d-byte trailer ends beyond %d",
		r.name, h, block.TrailerLen, r.dataEnd)
}

// readDataUncached is readData after a cache miss, or without a cache.
func (r *Reader) readDataUncached(
	ctx context.Context, env *ReadEnv, h block.Handle, dest blockDest,
) (data []byte, pin BlockPin, loc blockLoc, err error) {
	c := r.opts.Cache
	fill := c != nil && env.FillCache
	if fill && !r.file.Mapped() {
		if dest.direct {
			return r.loadDataDirect(ctx, env, h, dest.pri, dest.pf)
		}
		return r.loadData(ctx, env, h, dest)
	}
	raw, ct, err := r.readRaw(ctx, env.IO, h, r.dataEnd, env.VerifyChecksums, dest.pf, dest.raw)
	if err != nil {
		return nil, BlockPin{}, 0, err
	}
	if ct == compress.None {
		if dest.pf != nil || r.file.Mapped() {
			return raw, BlockPin{}, locFile, nil
		}
		return raw, BlockPin{}, locRaw, nil
	}
	if fill {
		// A compressed block of a mapped file: decompress once into the
		// cache.
		var loaded bool
		hd, _, err := c.GetOrLoadUntil(ctx, env.IO.Deadline, r.cacheKey(h), dest.pri, func() ([]byte, error) {
			v, err := r.decompressForCache(c, ct, raw, h)
			loaded = err == nil
			return v, err
		})
		return r.cachedData(hd, loaded, err)
	}
	data, err = r.decompressTo(ct, raw, h, dest.dec)
	if err != nil {
		return nil, BlockPin{}, 0, err
	}
	return data, BlockPin{}, locDec, nil
}

// loadData loads the data block at h into the cache, reading it through
// dest.pf or into *dest.raw.
func (r *Reader) loadData(ctx context.Context, env *ReadEnv, h block.Handle, dest blockDest) ([]byte, BlockPin, blockLoc, error) {
	if dest.pf == nil && r.readsIntoCache() && r.checkBounds(blockWhat{}, h, r.dataEnd) == nil {
		return r.loadDataDirect(ctx, env, h, dest.pri, nil)
	}
	c := r.opts.Cache
	// The closure must not capture env, which would make every caller's
	// ReadEnv escape to the heap, hits included.
	io, verify := env.IO, env.VerifyChecksums
	var loaded bool
	hd, _, err := c.GetOrLoadUntil(ctx, io.Deadline, r.cacheKey(h), dest.pri, func() ([]byte, error) {
		raw, ct, err := r.readRaw(ctx, io, h, r.dataEnd, verify, dest.pf, dest.raw)
		if err != nil {
			return nil, err
		}
		if ct == compress.None && dest.pf == nil {
			if v, ok := exchangeBuf(c, dest.raw, len(raw)); ok {
				loaded = true
				return v, nil
			}
		}
		v, err := r.decompressForCache(c, ct, raw, h)
		loaded = err == nil
		return v, err
	})
	return r.cachedData(hd, loaded, err)
}

// loadDataDirect is loadData for a block read on its own (a Get's of a
// table that readsIntoCache, or an iterator's seek, not one of a readahead
// run): it reads the block straight into a
// buffer from the cache's allocator, which the cache then takes as it is
// when the block is stored uncompressed. Read into a scratch buffer, the
// block would be copied into the cache's buffer, and the copy's stores to
// that memory (cold, off the Go heap) stall the cache insert's lock.
// A compressed block is decompressed into a second cache buffer, as
// loadData does, and the first goes back to the allocator: to the region of
// an off-heap cache; a Go heap cache's buffer is left to the collector (Free
// keeps none), one garbage buffer per compressed block read this way. The
// read is noted in pf, when set, so that its readahead heuristics see it.
func (r *Reader) loadDataDirect(
	ctx context.Context, env *ReadEnv, h block.Handle, pri cache.Priority, pf *fileio.PrefetchBuffer,
) ([]byte, BlockPin, blockLoc, error) {
	c := r.opts.Cache
	// Bounds first: a damaged handle must not size the buffer.
	if err := r.checkBounds(blockWhat{}, h, r.dataEnd); err != nil {
		return nil, BlockPin{}, 0, err
	}
	io, verify := env.IO, env.VerifyChecksums
	var loaded bool
	hd, _, err := c.GetOrLoadUntil(ctx, io.Deadline, r.cacheKey(h), pri, func() ([]byte, error) {
		buf := c.Alloc(int(h.Length) + block.TrailerLen)
		scratch := buf[:0]
		raw, ct, err := r.readRaw(ctx, io, h, r.dataEnd, verify, nil, &scratch)
		if pf != nil {
			pf.NoteRead(int64(h.Offset), int(h.Length)+block.TrailerLen)
		}
		if err == nil && ct == compress.None {
			loaded = true
			// buf, not raw (whose capacity readRaw trims): the cache
			// charges and frees the buffer by the capacity Alloc gave it.
			return buf[:h.Length], nil
		}
		var v []byte
		if err == nil {
			v, err = r.decompressForCache(c, ct, raw, h)
		}
		c.Free(buf)
		loaded = err == nil
		return v, err
	})
	return r.cachedData(hd, loaded, err)
}

// cachedData ends a data block's load through the cache (GetOrLoadUntil):
// the block hd holds, pinned, with the insert counted when this call's
// load made it (loaded).
func (r *Reader) cachedData(hd cache.Handle, loaded bool, err error) ([]byte, BlockPin, blockLoc, error) {
	if err != nil {
		return nil, BlockPin{}, 0, err
	}
	v := hd.Value()
	r.noteCacheAdd(loaded, len(v))
	return v, BlockPin{h: hd}, locCache, nil
}

// exchangeBuf hands the cache *buf, which holds an uncompressed block of n
// bytes (and its trailer), in place of copying the block into a buffer from
// c.Alloc: *buf gets that buffer instead, for the caller's next read. It
// returns the block for the cache, or false when *buf's capacity exceeds
// what Alloc would give for the block (Alloc's slack, below n/8 + 64
// bytes), so that the cache never holds much more memory than it charges.
//
// It also returns false for a cache whose buffers live off the Go heap:
// the block is worth a copy to leave the Go heap (the point of such a
// cache), and a read buffer from the region would be lost to the cache
// whenever its owner drops it rather than handing it back.
func exchangeBuf(c *cache.Cache, buf *[]byte, n int) ([]byte, bool) {
	b := *buf
	if cap(b) > n+n/8+64 || c.HasOffHeap() {
		return nil, false
	}
	*buf = c.Alloc(len(b))[:0]
	return b[:n], true
}

// noteCacheAdd ticks the cache-insert counters when this call's load (rather
// than a concurrent caller's) produced the block.
func (r *Reader) noteCacheAdd(loaded bool, n int) {
	if loaded {
		r.opts.Stats.RecordTick(statistics.BlockCacheAdd, 1)
		r.opts.Stats.RecordTick(statistics.BlockCacheBytesWrite, uint64(n))
	}
}

// PrefixMayMatch asks the table's filter whether it may hold a key with
// prefix, a prefix by the extractor named extractorName whose bloom.Hash is
// h (see WriterOptions.PrefixExtractor). checked is false, and may true,
// when the filter cannot answer: the table has no filter, or its filter
// holds the prefixes of another extractor or none (RocksDB likewise ignores
// a table's prefix filter when the extractor changed). Otherwise may false
// means that no key of the table has that prefix.
//
// In a partitioned table, the smallest entry with the prefix, if any, is
// the first entry >= (prefix, MaxSeqNum, KindMax), so it lies in the
// partition the top-level index picks for that search key, and the writer
// put the prefix in that partition's filter (each partition gets the
// prefixes of its own keys): that one filter partition answers, as
// MayContainKey's does for a key; a prefix above every partition is in no
// entry.
//
// A filter kept in the block cache is read (and inserted) with io when the
// cache does not hold it, as Get does. It records no statistics: the caller
// ticks BloomFilterPrefixChecked and BloomFilterPrefixUseful.
func (r *Reader) PrefixMayMatch(ctx context.Context, io ioctx.IOOptions, extractorName string, prefix []byte, h uint32) (checked, may bool, err error) {
	if !r.hasFilter || extractorName == "" || r.props.PrefixExtractorName != extractorName {
		return false, true, nil
	}
	part := -1
	if r.top != nil {
		var buf [64]byte
		if part = r.partitionOf(appendSearchKey(buf[:0], prefix, base.MaxSeqNum)); part == r.top.len() {
			return true, false, nil
		}
	}
	filter, fh, err := r.pinFilter(ctx, io, part)
	if err != nil {
		return false, true, err
	}
	may = bloom.MayContainHash(filter, h)
	fh.Release()
	return true, may, nil
}
