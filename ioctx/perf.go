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
// (Get, MultiGet); for every read, the block-cache hits and misses of data
// blocks, the file reads with their bytes and time, and the time spent
// waiting for a rate limiter (the database's and the tag's budget).
type PerfContext struct {
	tablesConsulted atomic.Uint64
	filterChecks    atomic.Uint64
	filterHits      atomic.Uint64
	blockCacheHits  atomic.Uint64
	blockCacheMiss  atomic.Uint64
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
	// TablesConsulted counts the tables a point read looked the key up in
	// (after the key-range check, before the filter).
	TablesConsulted uint64
	// FilterChecks counts filter queries; FilterHits those the filter
	// answered "may be present" (RocksDB's bloom_sst_hit_count), so
	// FilterChecks-FilterHits tables were skipped without a block read.
	FilterChecks, FilterHits uint64
	// BlockCacheHits and BlockCacheMisses count data-block lookups in the
	// block cache.
	BlockCacheHits, BlockCacheMisses uint64
	// BlocksRead counts data blocks read from table files (cache misses
	// and reads with no cache), BlockReadBytes their stored size.
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
		BlocksRead:       p.blocksRead.Load(),
		BlockReadBytes:   p.blockReadBytes.Load(),
		FileReads:        p.fileReads.Load(),
		FileReadBytes:    p.fileReadBytes.Load(),
		FileReadTime:     time.Duration(p.fileReadNanos.Load()),
		RateLimiterWait:  time.Duration(p.limiterNanos.Load()),
	}
}

// Reset zeroes the counters. It is not atomic with respect to a call adding
// to p at the same time.
func (p *PerfContext) Reset() {
	if p == nil {
		return
	}
	for _, c := range []*atomic.Uint64{&p.tablesConsulted, &p.filterChecks, &p.filterHits, &p.blockCacheHits,
		&p.blockCacheMiss, &p.blocksRead, &p.blockReadBytes, &p.fileReads, &p.fileReadBytes} {
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
		"block_cache_misses=%d blocks_read=%d block_read_bytes=%d file_reads=%d file_read_bytes=%d "+
		"file_read_time=%s rate_limiter_wait=%s",
		c.TablesConsulted, c.FilterChecks, c.FilterHits, c.BlockCacheHits, c.BlockCacheMisses,
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

// AddBlockCacheHit counts a data-block cache hit.
func (p *PerfContext) AddBlockCacheHit() {
	if p != nil {
		p.blockCacheHits.Add(1)
	}
}

// AddBlockCacheMiss counts a data-block cache miss.
func (p *PerfContext) AddBlockCacheMiss() {
	if p != nil {
		p.blockCacheMiss.Add(1)
	}
}

// AddBlockRead counts a data block of n stored bytes read from a file.
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
