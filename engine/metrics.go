package engine

import (
	"context"
	"path/filepath"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/internal/compact"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/ratelimit"
	"github.com/shaledb/shale/statistics"
)

// Metrics returns the shape of the database at the moment of the call (see
// driver.Metrics): per level its tables, bytes, compaction score and the
// bytes compactions and flushes moved through it since open; the memtables;
// the block and table caches; compactions and flushes running and done,
// and the bytes waiting for compaction; the WAL files; write stalls.
//
// The levels, scores and memtables are read together under the database
// mutex, briefly; the WAL files are listed from the directory. The block
// cache's hits and misses are the statistics' tickers, so they read 0 with
// statistics disabled; the counters by level come from the call sites of
// the events (see EventListener) and are kept whether or not a listener is
// set.
func (d *database) Metrics(ctx context.Context) (*driver.Metrics, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	m := &driver.Metrics{}
	o := d.obs()
	opts := d.compactOptions().WithDefaults()

	d.mu.Lock()
	if d.mu.closed || d.readState.Load() == nil {
		// Close ran between checkOpen and here.
		d.mu.Unlock()
		return nil, d.checkOpen()
	}
	v := d.readState.Load().current
	scores := compact.Scores(v, opts)
	m.Levels = make([]driver.LevelMetrics, manifest.NumLevels)
	var pending uint64
	for level := range manifest.NumLevels {
		lm := &m.Levels[level]
		lm.Level = level
		lm.Tables = v.NumFiles(level)
		lm.Bytes = v.LevelSize(level)
		lm.Score = scores[level]
		lm.BytesRead = o.levels[level].bytesRead.Load()
		lm.BytesWritten = o.levels[level].bytesWritten.Load()
		lm.BytesFlushed = o.levels[level].bytesFlushed.Load()
		pending += pendingBytes(level, lm.Tables, lm.Bytes, opts)
	}
	mems := &driver.MemTableMetrics{}
	for _, mt := range append([]*memTable{d.mu.mem}, d.mu.imm...) {
		if mt != nil {
			mems.Count++
			mems.Bytes += uint64(mt.ApproximateSize())
		}
	}
	d.mu.Unlock()
	m.MemTables = mems

	if d.cache != nil {
		m.BlockCache = &driver.CacheMetrics{
			Capacity: d.cache.Capacity(),
			Usage:    d.cache.Size(),
			Hits:     d.stats.TickerCount(statistics.BlockCacheHit),
			Misses:   d.stats.TickerCount(statistics.BlockCacheMiss),
		}
	}
	if tc := d.tables; tc != nil {
		tc.mu.RLock()
		m.TableCache = &driver.TableCacheMetrics{Open: len(tc.entries), Capacity: tc.capacity}
		tc.mu.RUnlock()
	}
	m.Compactions = &driver.CompactionMetrics{
		InProgress:   int(o.compactionsRunning.Load()),
		Done:         o.compactionsDone.Load(),
		PendingBytes: pending,
	}
	m.Flushes = &driver.FlushMetrics{InProgress: int(o.flushesRunning.Load()), Done: o.flushesDone.Load()}
	m.WriteStalls = &driver.WriteStallMetrics{
		Count:    o.stalls.Load(),
		Duration: timeDuration(o.stallNanos.Load()),
		Active:   int(o.stalling.Load()),
	}
	wal, err := d.walMetrics()
	if err != nil {
		return nil, err
	}
	m.WAL = wal
	m.RateLimiter = rateLimiterMetrics(d.opts.RateLimiter)
	return m, nil
}

// priorityCounter is a rate limiter that counts by priority, as
// ratelimit.Generic does (RocksDB's GetTotalRequests and friends).
type priorityCounter interface {
	TotalRequests(ioctx.Priority) int64
	TotalBytesThrough(ioctx.Priority) int64
	TotalPendingRequests(ioctx.Priority) int64
}

// rateLimiterMetrics reports lim's counts at each charged priority, or nil
// when there is no limiter or it does not count by priority.
func rateLimiterMetrics(lim ratelimit.Limiter) *driver.RateLimiterMetrics {
	pc, ok := lim.(priorityCounter)
	if !ok {
		return nil
	}
	m := &driver.RateLimiterMetrics{}
	for p := ioctx.PriorityLow; p < ioctx.NumPriorities; p++ {
		m.ByPriority = append(m.ByPriority, driver.RateLimiterPriorityMetrics{
			Priority: p,
			Requests: pc.TotalRequests(p),
			Bytes:    pc.TotalBytesThrough(p),
			Pending:  pc.TotalPendingRequests(p),
		})
	}
	return m
}

// pendingBytes estimates the bytes compactions must move out of a level
// holding tables tables of bytes bytes: all of L0 once it reaches the
// compaction trigger, and for L1 to the next-to-last level what exceeds the
// level's target (RocksDB's estimated pending compaction bytes, without its
// fan-out factor).
func pendingBytes(level, tables int, bytes uint64, opts compact.Options) uint64 {
	switch {
	case level == 0:
		if tables >= opts.L0CompactionTrigger {
			return bytes
		}
	case level < manifest.NumLevels-1:
		if target := opts.MaxBytesForLevel(level); bytes > target {
			return bytes - target
		}
	}
	return 0
}

// walMetrics lists the WAL files in the database's directory.
func (d *database) walMetrics() (*driver.WALMetrics, error) {
	names, err := d.fs.List(d.dirname)
	if err != nil {
		return nil, errors.Wrapf(err, "engine: listing %s for the WAL metrics", d.dirname)
	}
	w := &driver.WALMetrics{}
	for _, name := range names {
		if kind, _, ok := manifest.ParseFileName(name); !ok || kind != manifest.FileKindLog {
			continue
		}
		info, err := d.fs.Stat(filepath.Join(d.dirname, name))
		if err != nil {
			continue // deleted since the listing
		}
		w.Files++
		w.Bytes += uint64(info.Size())
	}
	return w, nil
}

func timeDuration(nanos int64) time.Duration { return time.Duration(nanos) }

// Metrics makes the engine's connection a driver.MetricsReporter, so
// driver.DB.Metrics reports the engine's LSM shape.
func (c *conn) Metrics(ctx context.Context) (*driver.Metrics, error) { return c.db.Metrics(ctx) }

var _ driver.MetricsReporter = (*conn)(nil)
