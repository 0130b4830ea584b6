package main

import (
	"strings"

	"github.com/shaledb/shale/driver"
)

// statsJSONDoc is the schema of "shale stats -json", for the command's
// help. The keys are snake_case, and a key that holds a quantity with a unit
// names it: sizes end in "bytes" (in bytes), durations in "micros" (whole
// microseconds, the unit of the statistics' *.micros histograms). The
// golden file testdata/stats-json-shape.golden pins the shape.
const statsJSONDoc = `
The -json object (keys are snake_case; a size's key ends in "bytes" and is
in bytes, a duration's ends in "micros" and is in whole microseconds):

	dir, dsn             the database's directory and the DSN opened
	open_micros          how long opening took
	table_files          table files in the directory, table_bytes their size
	disk_usage_bytes     DB.DiskUsage (absent when the driver cannot tell)
	scan                 with -scan: keys, bytes (of keys and values),
	                     scan_micros, verify_micros
	lsm                  DB.Metrics (absent when the driver cannot tell):
	  levels[]           level, tables, bytes, score, and the bytes
	                     compactions read from it (compaction_read_bytes),
	                     wrote into it (compaction_written_bytes) and
	                     flushes wrote into it (flushed_bytes)
	  memtables          count, bytes
	  block_cache        capacity_bytes, usage_bytes, hits, misses
	  table_cache        open, capacity (0: unbounded)
	  compactions        in_progress, done, pending_bytes
	  flushes            in_progress, done
	  wal                files, bytes
	  write_stalls       count, duration_micros, active
	  rate_limiter       by_priority[]: priority, requests, bytes, pending
	stats_level          the statistics level
	tickers              every ticker by its statistics name
	histograms           every histogram by its statistics name: count, sum,
	                     min, max, average, stddev, p50, p95, p99, in the
	                     histogram's own unit (the name's suffix says which)`

// lsmJSON is driver.Metrics in the -json schema (see statsJSONDoc); groups
// the driver does not report are absent.
type lsmJSON struct {
	Levels      []levelJSON      `json:"levels"`
	MemTables   *memTablesJSON   `json:"memtables,omitempty"`
	BlockCache  *blockCacheJSON  `json:"block_cache,omitempty"`
	TableCache  *tableCacheJSON  `json:"table_cache,omitempty"`
	Compactions *compactionsJSON `json:"compactions,omitempty"`
	Flushes     *flushesJSON     `json:"flushes,omitempty"`
	WAL         *walJSON         `json:"wal,omitempty"`
	WriteStalls *writeStallsJSON `json:"write_stalls,omitempty"`
	RateLimiter *rateLimiterJSON `json:"rate_limiter,omitempty"`
}

type levelJSON struct {
	Level                  int     `json:"level"`
	Tables                 int     `json:"tables"`
	Bytes                  uint64  `json:"bytes"`
	Score                  float64 `json:"score"`
	CompactionReadBytes    uint64  `json:"compaction_read_bytes"`
	CompactionWrittenBytes uint64  `json:"compaction_written_bytes"`
	FlushedBytes           uint64  `json:"flushed_bytes"`
}

type memTablesJSON struct {
	Count int    `json:"count"`
	Bytes uint64 `json:"bytes"`
}

type blockCacheJSON struct {
	CapacityBytes int64  `json:"capacity_bytes"`
	UsageBytes    int64  `json:"usage_bytes"`
	Hits          uint64 `json:"hits"`
	Misses        uint64 `json:"misses"`
}

type tableCacheJSON struct {
	Open     int `json:"open"`
	Capacity int `json:"capacity"`
}

type compactionsJSON struct {
	InProgress   int    `json:"in_progress"`
	Done         uint64 `json:"done"`
	PendingBytes uint64 `json:"pending_bytes"`
}

type flushesJSON struct {
	InProgress int    `json:"in_progress"`
	Done       uint64 `json:"done"`
}

type walJSON struct {
	Files int    `json:"files"`
	Bytes uint64 `json:"bytes"`
}

type writeStallsJSON struct {
	Count          uint64 `json:"count"`
	DurationMicros int64  `json:"duration_micros"`
	Active         int    `json:"active"`
}

type rateLimiterJSON struct {
	ByPriority []rateLimiterPriorityJSON `json:"by_priority"`
}

type rateLimiterPriorityJSON struct {
	Priority string `json:"priority"`
	Requests int64  `json:"requests"`
	Bytes    int64  `json:"bytes"`
	Pending  int64  `json:"pending"`
}

// toLSMJSON converts m; nil stays nil.
func toLSMJSON(m *driver.Metrics) *lsmJSON {
	if m == nil {
		return nil
	}
	j := &lsmJSON{Levels: make([]levelJSON, 0, len(m.Levels))}
	for _, l := range m.Levels {
		j.Levels = append(j.Levels, levelJSON{Level: l.Level, Tables: l.Tables, Bytes: l.Bytes, Score: l.Score,
			CompactionReadBytes: l.BytesRead, CompactionWrittenBytes: l.BytesWritten, FlushedBytes: l.BytesFlushed})
	}
	if x := m.MemTables; x != nil {
		j.MemTables = &memTablesJSON{Count: x.Count, Bytes: x.Bytes}
	}
	if x := m.BlockCache; x != nil {
		j.BlockCache = &blockCacheJSON{CapacityBytes: x.Capacity, UsageBytes: x.Usage, Hits: x.Hits, Misses: x.Misses}
	}
	if x := m.TableCache; x != nil {
		j.TableCache = &tableCacheJSON{Open: x.Open, Capacity: x.Capacity}
	}
	if x := m.Compactions; x != nil {
		j.Compactions = &compactionsJSON{InProgress: x.InProgress, Done: x.Done, PendingBytes: x.PendingBytes}
	}
	if x := m.Flushes; x != nil {
		j.Flushes = &flushesJSON{InProgress: x.InProgress, Done: x.Done}
	}
	if x := m.WAL; x != nil {
		j.WAL = &walJSON{Files: x.Files, Bytes: x.Bytes}
	}
	if x := m.WriteStalls; x != nil {
		j.WriteStalls = &writeStallsJSON{Count: x.Count, DurationMicros: x.Duration.Microseconds(), Active: x.Active}
	}
	if x := m.RateLimiter; x != nil {
		j.RateLimiter = &rateLimiterJSON{ByPriority: make([]rateLimiterPriorityJSON, 0, len(x.ByPriority))}
		for _, p := range x.ByPriority {
			j.RateLimiter.ByPriority = append(j.RateLimiter.ByPriority, rateLimiterPriorityJSON{
				Priority: strings.ToLower(p.Priority.String()), Requests: p.Requests, Bytes: p.Bytes, Pending: p.Pending})
		}
	}
	return j
}
