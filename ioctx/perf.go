package ioctx

import (
	"fmt"
	"sync/atomic"
	"time"
)

// PerfContext is a per-request statistics sink (RocksDB's PerfContext and
// IOStatsContext for one call): set [ReadOptions.Perf] to one and the call
// adds what it did to it. Unlike RocksDB's, which are thread-local, it is
// attached to the request, so it sees the reads a MultiGet makes on other
// goroutines (AsyncIO) as well.
//
// Counters are atomic, so a PerfContext is safe for concurrent use: the
// goroutines of one call may add to it at once, and one shared by several
// concurrent calls sums them (it can then no longer tell them apart). Reset
// it, or use a fresh one, per call to measure one call. The zero value is
// ready to use; a nil *PerfContext in ReadOptions costs the read path one nil
// check per site and records nothing.
//
// What is counted: tables consulted and their filter checks by point reads
// (Get, MultiGet), once per key and table; for every read, the block-cache
// hits and misses of every kind of block (data, index, filter), with the
// index and filter blocks' also counted on their own, the blocks read from
// files, the file reads with their bytes and time, and the time spent
// waiting for a rate limiter (the database's and the tag's budget). The
// meanings are RocksDB's (block_cache_hit_count, block_read_count, ...),
// and each cache counter moves with the database ticker named in its doc,
// for the reads the request made.
type PerfContext struct {
	tablesConsulted atomic.Uint64
	filterChecks    atomic.Uint64
	filterHits      atomic.Uint64
	blockCacheHits  atomic.Uint64
	blockCacheMiss  atomic.Uint64
	indexHits       atomic.Uint64
	indexMiss       atomic.Uint64
	filterBlockHits atomic.Uint64
	filterBlockMiss atomic.Uint64
	blocksRead      atomic.Uint64
	blockReadBytes  atomic.Uint64
	fileReads       atomic.Uint64
	fileReadBytes   atomic.Uint64
	fileReadNanos   atomic.Int64
	limiterNanos    atomic.Int64
}

// PerfCounts is a PerfContext read at one moment (each counter read
// atomically).
type PerfCounts struct {
	// TablesConsulted counts the tables a point read looked a key up in
	// (after the key-range check, before the filter), once per key and
	// table: a MultiGet of 3 keys that all fall in one table counts 3.
	TablesConsulted uint64
	// FilterChecks counts filter queries, one per key and table with a
	// filter; FilterHits those the filter answered "may be present"
	// (RocksDB's bloom_sst_hit_count), so FilterChecks-FilterHits of the
	// TablesConsulted were skipped without reading a data block. They move
	// with the tickers shale.bloom.filter.useful (the skipped ones) and
	// shale.bloom.filter.full.positive (the hits).
	FilterChecks, FilterHits uint64
	// BlockCacheHits and BlockCacheMisses count block-cache lookups of
	// every kind of block, data, index and filter (RocksDB's
	// block_cache_hit_count; the tickers shale.block.cache.hit and
	// shale.block.cache.miss). Index and filter blocks are looked up in the
	// cache only with cache_index_and_filter_blocks.
	BlockCacheHits, BlockCacheMisses uint64
	// BlockCacheIndexHits and BlockCacheIndexMisses are the index blocks'
	// share of BlockCacheHits and BlockCacheMisses (RocksDB's
	// block_cache_index_hit_count; shale.block.cache.index.hit and .miss),
	// BlockCacheFilterHits and BlockCacheFilterMisses the filter blocks'
	// (block_cache_filter_hit_count; shale.block.cache.filter.hit and
	// .miss). What remains is the data blocks' share, which a tag's
	// block.cache.hit and .miss count (shale.block.cache.data.hit, .miss).
	BlockCacheIndexHits, BlockCacheIndexMisses   uint64
	BlockCacheFilterHits, BlockCacheFilterMisses uint64
	// BlocksRead counts blocks of every kind read from table files by the
	// request (cache misses it loaded, and reads with no cache; RocksDB's
	// block_read_count), BlockReadBytes their stored size with the block
	// trailer (block_read_byte). A block read by readahead counts when the
	// read path takes it from the readahead buffer.
	BlocksRead, BlockReadBytes uint64
	// FileReads counts calls of the file reader (one may cover several
	// blocks: readahead, a MultiGet batch), FileReadBytes their bytes and
	// FileReadTime their duration, rate-limiter waits excluded.
	FileReads, FileReadBytes uint64
	FileReadTime             time.Duration
	// RateLimiterWait is the time spent waiting for rate limiters.
	RateLimiterWait time.Duration
}

// Counts returns the counters; a nil PerfContext reads as zero.
func (p *PerfContext) Counts() PerfCounts {
	if p == nil {
		return PerfCounts{}
	}
	return PerfCounts{
		TablesConsulted:  p.tablesConsulted.Load(),
		FilterChecks:     p.filterChecks.Load(),
		FilterHits:       p.filterHits.Load(),
		BlockCacheHits:   p.blockCacheHits.Load(),
		BlockCacheMisses: p.blockCacheMiss.Load(),

		BlockCacheIndexHits:    p.indexHits.Load(),
		BlockCacheIndexMisses:  p.indexMiss.Load(),
		BlockCacheFilterHits:   p.filterBlockHits.Load(),
		BlockCacheFilterMisses: p.filterBlockMiss.Load(),

		BlocksRead:      p.blocksRead.Load(),
		BlockReadBytes:  p.blockReadBytes.Load(),
		FileReads:       p.fileReads.Load(),
		FileReadBytes:   p.fileReadBytes.Load(),
		FileReadTime:    time.Duration(p.fileReadNanos.Load()),
		RateLimiterWait: time.Duration(p.limiterNanos.Load()),
	}
}

// Reset zeroes the counters. It is not atomic with respect to a call adding
// to p at the same time.
func (p *PerfContext) Reset() {
	if p == nil {
		return
	}
	for _, c := range []*atomic.Uint64{&p.tablesConsulted, &p.filterChecks, &p.filterHits, &p.blockCacheHits,
		&p.blockCacheMiss, &p.indexHits, &p.indexMiss, &p.filterBlockHits, &p.filterBlockMiss, &p.blocksRead, &p.blockReadBytes, &p.fileReads, &p.fileReadBytes} {
		c.Store(0)
	}
	p.fileReadNanos.Store(0)
	p.limiterNanos.Store(0)
}

// String returns the counters on one line, as name=value pairs.
func (p *PerfContext) String() string { return p.Counts().String() }

// String returns the counters on one line, as name=value pairs.
func (c PerfCounts) String() string {
	return fmt.Sprintf("tables_consulted=%d filter_checks=%d filter_hits=%d block_cache_hits=%d "+
		"block_cache_misses=%d block_cache_index_hits=%d block_cache_index_misses=%d "+
		"block_cache_filter_hits=%d block_cache_filter_misses=%d "+
		"blocks_read=%d block_read_bytes=%d file_reads=%d file_read_bytes=%d "+
		"file_read_time=%s rate_limiter_wait=%s",
		c.TablesConsulted, c.FilterChecks, c.FilterHits, c.BlockCacheHits, c.BlockCacheMisses,
		c.BlockCacheIndexHits, c.BlockCacheIndexMisses, c.BlockCacheFilterHits, c.BlockCacheFilterMisses,
		c.BlocksRead, c.BlockReadBytes, c.FileReads, c.FileReadBytes, c.FileReadTime, c.RateLimiterWait)
}

// The recording methods are for the read path (the table and file readers);
// each is nil-safe, so a call site costs a nil check when no sink is set.

// AddTableConsulted counts one table a point read consulted.
func (p *PerfContext) AddTableConsulted() {
	if p != nil {
		p.tablesConsulted.Add(1)
	}
}

// AddFilterCheck counts one filter query and whether it answered "may be
// present".
func (p *PerfContext) AddFilterCheck(hit bool) {
	if p != nil {
		p.filterChecks.Add(1)
		if hit {
			p.filterHits.Add(1)
		}
	}
}

// BlockKind says which kind of table block a block-cache lookup was for.
type BlockKind uint8

// The kinds of blocks.
const (
	// DataBlock is a data block.
	DataBlock BlockKind = iota
	// IndexBlock is an index block or index partition (the top-level index
	// of a partitioned table included).
	IndexBlock
	// FilterBlock is a filter block or filter partition.
	FilterBlock
)

// AddBlockCacheHit counts a block-cache hit of a block of kind k.
func (p *PerfContext) AddBlockCacheHit(k BlockKind) {
	if p != nil {
		p.blockCacheHits.Add(1)
		switch k {
		case IndexBlock:
			p.indexHits.Add(1)
		case FilterBlock:
			p.filterBlockHits.Add(1)
		}
	}
}

// AddBlockCacheMiss counts a block-cache miss of a block of kind k.
func (p *PerfContext) AddBlockCacheMiss(k BlockKind) {
	if p != nil {
		p.blockCacheMiss.Add(1)
		switch k {
		case IndexBlock:
			p.indexMiss.Add(1)
		case FilterBlock:
			p.filterBlockMiss.Add(1)
		}
	}
}

// AddBlockRead counts a block (of any kind) of n stored bytes, its
// trailer included, read from a file.
func (p *PerfContext) AddBlockRead(n int) {
	if p != nil {
		p.blocksRead.Add(1)
		p.blockReadBytes.Add(uint64(n))
	}
}

// AddFileRead counts one call of the file reader, of n bytes, that took d
// (rate-limiter waits excluded).
func (p *PerfContext) AddFileRead(n int, d time.Duration) {
	if p != nil {
		p.fileReads.Add(1)
		p.fileReadBytes.Add(uint64(n))
		p.fileReadNanos.Add(int64(d))
	}
}

// AddRateLimiterWait adds d to the time spent waiting for rate limiters.
func (p *PerfContext) AddRateLimiterWait(d time.Duration) {
	if p != nil {
		p.limiterNanos.Add(int64(d))
	}
}
