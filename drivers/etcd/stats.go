package etcd

import (
	"context"

	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/ratelimit"
	"github.com/shaledb/shale/statistics"
)

// For this driver an RPC is what a file read is for the engine: each read
// RPC is timed into statistics.SSTReadMicros and into its activity's
// FileRead*Micros histogram (statistics.FileReadHistogram, the engine's
// mapping, with its gating: the five user-read histograms only above
// LevelExceptDetailedTimers), and its response is charged to the rate
// limiter at the read's priority.

// startRead starts timing one read RPC made for io's activity. No clock is
// read when statistics are off or gated.
func (c *conn) startRead(io ioctx.IOOptions) statistics.StopWatch {
	return c.stats.StartStopWatch(statistics.SSTReadMicros, statistics.FileReadHistogram(io.Activity.RocksDBValue()))
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
