package driver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/shaledb/shale/ioctx"
)

// MetricsReporter is an optional interface of a [DriverConn]: Metrics
// reports the shape of the database's storage at the moment of the call
// (see [Metrics]). Without it, DB.Metrics returns an error matching
// ErrNotSupported.
type MetricsReporter interface {
	Metrics(ctx context.Context) (*Metrics, error)
}

// Metrics is the shape of an LSM database at one moment, in the spirit of
// Pebble's Metrics. A driver fills in what it knows; a group it does not
// report is nil (Levels: empty), and exporters leave it out.
type Metrics struct {
	// Levels are the levels of the tree, L0 first.
	Levels []LevelMetrics
	// MemTables are the mutable memtable and the immutable ones waiting
	// for a flush.
	MemTables *MemTableMetrics
	// BlockCache is the cache of decoded table blocks.
	BlockCache *CacheMetrics
	// TableCache is the cache of open table readers.
	TableCache *TableCacheMetrics
	// Compactions and Flushes are background work.
	Compactions *CompactionMetrics
	Flushes     *FlushMetrics
	// WAL is the write-ahead log.
	WAL *WALMetrics
	// WriteStalls counts the waits of writes for background work.
	WriteStalls *WriteStallMetrics
	// RateLimiter is the database's rate limiter by priority, when it has
	// one that counts by priority.
	RateLimiter *RateLimiterMetrics
}

// RateLimiterMetrics are a rate limiter's counts at each charged priority
// (Low, Mid, High, User, in that order), since the limiter was made:
// RocksDB's GetTotalRequests, GetTotalBytesThrough and
// GetTotalPendingRequests.
type RateLimiterMetrics struct {
	ByPriority []RateLimiterPriorityMetrics
}

// RateLimiterPriorityMetrics are the requests a limiter granted at one
// priority, their bytes, and the requests waiting at it now.
type RateLimiterPriorityMetrics struct {
	Priority        ioctx.Priority
	Requests, Bytes int64
	Pending         int64
}

// LevelMetrics is one level of the tree.
type LevelMetrics struct {
	Level int
	// Tables and Bytes are the level's table files and their size.
	Tables int
	Bytes  uint64
	// Score is the level's compaction score: it needs compacting at 1 or
	// more (for L0, tables over the compaction trigger; below, bytes over
	// the level's target).
	Score float64
	// BytesRead is what compactions read from the level, BytesWritten what
	// they wrote into it, BytesFlushed what flushes wrote into it (L0),
	// since the database was opened.
	BytesRead, BytesWritten, BytesFlushed uint64
}

// MemTableMetrics are the memtables.
type MemTableMetrics struct {
	Count int
	Bytes uint64
}

// CacheMetrics are the block cache: its capacity and usage in bytes and
// its hits and misses since the database was opened.
type CacheMetrics struct {
	Capacity, Usage int64
	Hits, Misses    uint64
}

// HitRate is Hits/(Hits+Misses), 0 before the first lookup.
func (c *CacheMetrics) HitRate() float64 {
	if c.Hits+c.Misses == 0 {
		return 0
	}
	return float64(c.Hits) / float64(c.Hits+c.Misses)
}

// TableCacheMetrics are the open table readers; Capacity 0 means
// unbounded (every table stays open).
type TableCacheMetrics struct {
	Open, Capacity int
}

// CompactionMetrics are the compactions: running now, finished since open,
// and the bytes the levels hold above their targets, which compactions
// have yet to move down.
type CompactionMetrics struct {
	InProgress   int
	Done         uint64
	PendingBytes uint64
}

// FlushMetrics are the flushes: running now and finished since open.
type FlushMetrics struct {
	InProgress int
	Done       uint64
}

// WALMetrics are the WAL files on disk and their bytes.
type WALMetrics struct {
	Files int
	Bytes uint64
}

// WriteStallMetrics are the write stalls since open: how many waits, how
// long in all, and how many writes are stalled now.
type WriteStallMetrics struct {
	Count    uint64
	Duration time.Duration
	Active   int
}

// Total returns the levels summed: tables, bytes and the byte counters
// (Level is -1, Score 0).
func (m *Metrics) Total() LevelMetrics {
	t := LevelMetrics{Level: -1}
	for _, l := range m.Levels {
		t.Tables += l.Tables
		t.Bytes += l.Bytes
		t.BytesRead += l.BytesRead
		t.BytesWritten += l.BytesWritten
		t.BytesFlushed += l.BytesFlushed
	}
	return t
}

// ReadAmp is the read amplification: the tables a point read may have to
// consult, every L0 table plus one per other non-empty level.
func (m *Metrics) ReadAmp() int {
	n := 0
	for _, l := range m.Levels {
		switch {
		case l.Level == 0:
			n += l.Tables
		case l.Tables > 0:
			n++
		}
	}
	return n
}

// WriteAmp is the write amplification since open: the bytes flushes and
// compactions wrote, over the bytes flushes wrote (what came in); 0 before
// the first flush.
func (m *Metrics) WriteAmp() float64 {
	t := m.Total()
	if t.BytesFlushed == 0 {
		return 0
	}
	return float64(t.BytesFlushed+t.BytesWritten) / float64(t.BytesFlushed)
}

// String returns the metrics as a table a person reads at a glance: one
// row per level and a total, then one line per other group reported.
//
//	level | tables     size | score |     read  written  flushed
//	------+-----------------+-------+---------------------------
//	    0 |      2  4.0 MiB |  0.50 |      0 B      0 B  4.0 MiB
//	...
func (m *Metrics) String() string {
	var b strings.Builder
	if len(m.Levels) > 0 {
		b.WriteString("level | tables      size | score |      read   written   flushed\n")
		b.WriteString("------+------------------+-------+------------------------------\n")
		for _, l := range m.Levels {
			fmt.Fprintf(&b, "%5d | %6d %9s | %5.2f | %9s %9s %9s\n", l.Level, l.Tables, humanBytes(l.Bytes), l.Score,
				humanBytes(l.BytesRead), humanBytes(l.BytesWritten), humanBytes(l.BytesFlushed))
		}
		t := m.Total()
		fmt.Fprintf(&b, "total | %6d %9s |     - | %9s %9s %9s\n", t.Tables, humanBytes(t.Bytes),
			humanBytes(t.BytesRead), humanBytes(t.BytesWritten), humanBytes(t.BytesFlushed))
		fmt.Fprintf(&b, "read amp %d, write amp %.2f\n", m.ReadAmp(), m.WriteAmp())
	}
	if c := m.MemTables; c != nil {
		fmt.Fprintf(&b, "memtables: %d, %s\n", c.Count, humanBytes(c.Bytes))
	}
	if c := m.BlockCache; c != nil {
		fmt.Fprintf(&b, "block cache: %s of %s, %d hits, %d misses (%.1f%% hit)\n", humanBytes(uint64(max(c.Usage, 0))),
			humanBytes(uint64(max(c.Capacity, 0))), c.Hits, c.Misses, 100*c.HitRate())
	}
	if c := m.TableCache; c != nil {
		capacity := "unbounded"
		if c.Capacity > 0 {
			capacity = fmt.Sprint(c.Capacity)
		}
		fmt.Fprintf(&b, "table cache: %d open, capacity %s\n", c.Open, capacity)
	}
	if c := m.Compactions; c != nil {
		fmt.Fprintf(&b, "compactions: %d in progress, %d done, %s pending\n", c.InProgress, c.Done, humanBytes(c.PendingBytes))
	}
	if c := m.Flushes; c != nil {
		fmt.Fprintf(&b, "flushes: %d in progress, %d done\n", c.InProgress, c.Done)
	}
	if c := m.WAL; c != nil {
		fmt.Fprintf(&b, "WAL: %d files, %s\n", c.Files, humanBytes(c.Bytes))
	}
	if c := m.WriteStalls; c != nil {
		fmt.Fprintf(&b, "write stalls: %d, %s in all, %d now\n", c.Count, c.Duration.Round(time.Microsecond), c.Active)
	}
	if c := m.RateLimiter; c != nil {
		b.WriteString("rate limiter:")
		for i, p := range c.ByPriority {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, " %s %d requests %s %d waiting", p.Priority, p.Requests, humanBytes(uint64(max(p.Bytes, 0))), p.Pending)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// humanBytes prints n in binary units with two significant decimals at
// most: "0 B", "512 B", "4.0 KiB", "12 MiB".
func humanBytes(n uint64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v, u := float64(n)/1024, 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if v < 10 {
		return fmt.Sprintf("%.1f %ciB", v, units[u])
	}
	return fmt.Sprintf("%.0f %ciB", v, units[u])
}

// Metrics returns the shape of the database's storage (see
// [MetricsReporter]); an error matching ErrNotSupported when the driver
// does not report it.
func (db *DB) Metrics(ctx context.Context) (*Metrics, error) {
	cs, err := db.start(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer db.exit()
	mr, ok := cs.conn.(MetricsReporter)
	if !ok {
		return nil, notSupported("Metrics", "MetricsReporter")
	}
	return mr.Metrics(ctx)
}
