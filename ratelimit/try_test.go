package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

// TestTryRequestToken checks that TryRequestToken grants what RequestToken
// would grant without waiting, charging and counting it the same way, and
// declines, charging and counting nothing, what RequestToken would wait for.
func TestTryRequestToken(t *testing.T) {
	var _ Granter = (*Generic)(nil)
	for _, tc := range []struct {
		name             string
		mode             Mode
		op               OpType
		pri              ioctx.Priority
		bytes, alignment int64
		want             int64
		charged          bool
	}{
		{name: "not-charged-total", mode: ModeAll, op: OpRead, pri: ioctx.PriorityTotal, bytes: 1 << 40, want: 1 << 40},
		{name: "not-charged-mode", mode: ModeWrites, op: OpRead, pri: ioctx.PriorityUser, bytes: 1 << 40, want: 1 << 40},
		{name: "under-burst", mode: ModeAll, op: OpRead, pri: ioctx.PriorityUser, bytes: 700, want: 700, charged: true},
		{name: "clamped", mode: ModeAll, op: OpWrite, pri: ioctx.PriorityLow, bytes: 5000, want: 1000, charged: true},
		{name: "clamped-then-aligned", mode: ModeAll, op: OpRead, pri: ioctx.PriorityHigh, bytes: 5000, alignment: 300, want: 900, charged: true},
		{name: "negative", mode: ModeAll, op: OpRead, pri: ioctx.PriorityMid, bytes: -3, want: 0, charged: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A long refill period: whatever the first refill leaves is all
			// there is for the test.
			g := NewGeneric(1000, time.Second, 10, tc.mode)
			defer g.Close()
			tried, viaTry := statistics.New(statistics.DefaultLevel), NewGeneric(1000, time.Second, 10, tc.mode)
			defer viaTry.Close()
			n, ok := viaTry.TryRequestToken(tc.bytes, tc.alignment, tc.pri, tried, tc.op)
			require.True(t, ok)
			require.Equal(t, tc.want, n)
			requested := statistics.New(statistics.DefaultLevel)
			m, err := g.RequestToken(context.Background(), tc.bytes, tc.alignment, tc.pri, requested, tc.op)
			require.NoError(t, err)
			require.Equal(t, m, n)
			for _, p := range []ioctx.Priority{tc.pri, ioctx.PriorityTotal} {
				require.Equal(t, g.TotalRequests(p), viaTry.TotalRequests(p))
				require.Equal(t, g.TotalBytesThrough(p), viaTry.TotalBytesThrough(p))
			}
			require.Equal(t, requested.Snapshot().Tickers, tried.Snapshot().Tickers)
		})
	}

	// What does not fit the bytes left is declined, charging nothing; what
	// fits is granted.
	stats := statistics.New(statistics.DefaultLevel)
	g := NewGeneric(1000, time.Second, 10, ModeAll)
	defer g.Close()
	n, ok := g.TryRequestToken(800, 0, ioctx.PriorityUser, stats, OpRead)
	require.True(t, ok)
	require.Equal(t, int64(800), n)
	n, ok = g.TryRequestToken(300, 0, ioctx.PriorityUser, stats, OpRead)
	require.False(t, ok)
	require.Zero(t, n)
	require.Equal(t, int64(1), g.TotalRequests(ioctx.PriorityUser))
	require.Equal(t, int64(800), g.TotalBytesThrough(ioctx.PriorityUser))
	require.Equal(t, uint64(1), stats.TickerCount(statistics.RateLimiterRequestsRead))
	require.Equal(t, uint64(800), stats.TickerCount(statistics.RateLimiterBytesRead))
	n, ok = g.TryRequestToken(200, 0, ioctx.PriorityUser, stats, OpRead)
	require.True(t, ok)
	require.Equal(t, int64(200), n)

	// An invalid priority and a closed limiter are declined, for
	// RequestToken to report.
	_, ok = g.TryRequestToken(1, 0, ioctx.NumPriorities, nil, OpRead)
	require.False(t, ok)
	g.Close()
	_, ok = g.TryRequestToken(1, 0, ioctx.PriorityUser, nil, OpRead)
	require.False(t, ok)
}
