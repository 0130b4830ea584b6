package etcd

import (
	"context"

	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/ratelimit"
	"github.com/shaledb/shale/statistics"
)

// For this driver an RPC is what a file read is for the engine: each read
// RPC is timed into statistics.SSTReadMicros and into its activity's
// FileRead*Micros histogram (with the engine's gating: the five user-read
// histograms only above LevelExceptDetailedTimers), and its response is
// charged to the rate limiter at the read's priority.

// fileReadHistogram is the engine's mapping (internal/fileio's
// FileReadHistogram, RocksDB's GetFileReadHistograms), copied until the core
// gives it a public home: Flush, Compaction and DBOpen map to their own
// histograms, the five user reads to theirs, and every other activity
// (Unknown included) to none, so those reads count only in the aggregate.
func fileReadHistogram(a ioctx.Activity) statistics.Histogram {
	switch a {
	case ioctx.ActivityFlush:
		return statistics.FileReadFlushMicros
	case ioctx.ActivityCompaction:
		return statistics.FileReadCompactionMicros
	case ioctx.ActivityDBOpen:
		return statistics.FileReadDBOpenMicros
	case ioctx.ActivityGet:
		return statistics.FileReadGetMicros
	case ioctx.ActivityMultiGet:
		return statistics.FileReadMultiGetMicros
	case ioctx.ActivityDBIterator:
		return statistics.FileReadDBIteratorMicros
	case ioctx.ActivityVerifyDBChecksum:
		return statistics.FileReadVerifyDBChecksumMicros
	case ioctx.ActivityVerifyFileChecksums:
		return statistics.FileReadVerifyFileChecksumsMicros
	}
	return statistics.HistogramNone
}

// startRead starts timing one read RPC made for io's activity. No clock is
// read when statistics are off or gated.
func (c *conn) startRead(io ioctx.IOOptions) statistics.StopWatch {
	return c.stats.StartStopWatch(statistics.SSTReadMicros, fileReadHistogram(io.Activity))
}

// charge charges n response bytes to the rate limiter at io's priority, in
// pieces of at most the limiter's burst, waiting as long as ctx allows. A
// read at PriorityTotal, or with no limiter, is not charged. The read has
// already happened: the wait paces the reads that follow, as the engine's
// file reader does for a read it charges after the fact.
func (c *conn) charge(ctx context.Context, io ioctx.IOOptions, n int) error {
	if c.limiter == nil || !io.RateLimiterPriority.Charged() {
		return nil
	}
	for left := int64(n); left > 0; {
		granted, err := c.limiter.RequestToken(ctx, left, 0, io.RateLimiterPriority, c.stats, ratelimit.OpRead)
		if err != nil {
			return newError("etcd: waiting for the rate limiter", err)
		}
		left -= granted
	}
	return nil
}
