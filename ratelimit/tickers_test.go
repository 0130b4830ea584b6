package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

func TestChargedRequestTickers(t *testing.T) {
	ctx := context.Background()
	stats := statistics.New(statistics.DefaultLevel)
	// 100 KiB/s in 100 ms refills: 10 KiB per refill.
	g := NewGeneric(100<<10, 100*time.Millisecond, 0, ModeAll)
	defer g.Close()
	require.NoError(t, g.Request(ctx, 1000, ioctx.PriorityUser, stats, OpRead))
	require.NoError(t, g.Request(ctx, 2000, ioctx.PriorityLow, stats, OpWrite))
	require.NoError(t, g.Request(ctx, 3000, ioctx.PriorityTotal, stats, OpRead), "not charged, not counted")
	n, err := g.RequestToken(ctx, 1<<20, 0, ioctx.PriorityHigh, stats, OpRead)
	require.NoError(t, err)
	require.Equal(t, g.SingleBurstBytes(), n)

	require.Equal(t, uint64(2), stats.TickerCount(statistics.RateLimiterRequestsRead))
	require.Equal(t, uint64(1000)+uint64(n), stats.TickerCount(statistics.RateLimiterBytesRead))
	require.Equal(t, uint64(1), stats.TickerCount(statistics.RateLimiterRequestsWrite))
	require.Equal(t, uint64(2000), stats.TickerCount(statistics.RateLimiterBytesWrite))
	// The burst-sized request could not fit what was left: it waited.
	require.Equal(t, uint64(1), stats.TickerCount(statistics.RateLimiterDelayedRequestsRead))
	require.Zero(t, stats.TickerCount(statistics.RateLimiterDelayedRequestsWrite))
}
