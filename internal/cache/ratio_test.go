package cache

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHighPriorityRatioClamped: a ratio outside [0, 1], NaN included, gives
// every shard a high share within its capacity, and a high entry can be
// inserted. With NaN the share was MinInt64 and the first PriorityHigh
// insert dereferenced a nil hand.
func TestHighPriorityRatioClamped(t *testing.T) {
	for _, tc := range []struct {
		ratio float64
		share float64 // of each shard's capacity
	}{
		{math.NaN(), 0},
		{math.Inf(-1), 0},
		{-0.5, 0},
		{0, 0},
		{0.25, 0.25},
		{1, 1},
		{1.5, 1},
		{math.Inf(1), 1},
	} {
		c := NewWithOptions(1<<20, Options{HighPriorityPoolRatio: tc.ratio})
		for i := range c.shards {
			s := &c.shards[i]
			require.Equal(t, int64(float64(s.capacity)*tc.share), s.highCapacity, "ratio %g, shard %d", tc.ratio, i)
		}
		k := Key{ID: 1, FileNum: 1}
		h, _, err := c.GetOrLoadWithPriority(context.Background(), k, PriorityHigh, func() ([]byte, error) {
			return newValue(100, k, 1), nil
		})
		require.NoError(t, err, "ratio %g", tc.ratio)
		h.Release()
		requireQuiescent(t, c)
	}
}
