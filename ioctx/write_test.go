package ioctx

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriteOptionsContext(t *testing.T) {
	ctx := context.Background()
	require.Equal(t, WriteOptions{}, WriteOptionsFrom(ctx), "no options: RocksDB's defaults")
	wo := WriteOptions{Sync: true, RateLimiterPriority: PriorityHigh}
	ctx = WithWriteOptions(ctx, wo)
	require.Equal(t, wo, WriteOptionsFrom(ctx))
	ro := ReadOptions{RateLimiterPriority: PriorityLow}
	rctx := WithReadOptions(ctx, ro)
	require.Equal(t, wo, WriteOptionsFrom(rctx), "read and write options do not shadow each other")
	require.Equal(t, ro, ReadOptionsFrom(rctx))
	require.Equal(t, WriteOptions{DisableWAL: true}, WriteOptionsFrom(WithWriteOptions(ctx, WriteOptions{DisableWAL: true})),
		"a later WithWriteOptions replaces the earlier")
	require.Equal(t, ReadOptions{}, ReadOptionsFrom(ctx), "write options are not read options")
}

func TestWriteOptionsZero(t *testing.T) {
	var wo WriteOptions
	require.False(t, wo.Sync)
	require.False(t, wo.DisableWAL)
	require.False(t, wo.RateLimiterPriority.Charged(), "the zero value is not charged")
}

func TestMergeWrite(t *testing.T) {
	for _, tc := range []struct {
		name           string
		defaults, over WriteOptions
		want           WriteOptions
	}{
		{"zero", WriteOptions{}, WriteOptions{}, WriteOptions{}},
		{"sync in defaults", WriteOptions{Sync: true}, WriteOptions{}, WriteOptions{Sync: true}},
		{"sync in call", WriteOptions{}, WriteOptions{Sync: true}, WriteOptions{Sync: true}},
		{"disableWAL in defaults", WriteOptions{DisableWAL: true}, WriteOptions{Sync: true}, WriteOptions{Sync: true, DisableWAL: true}},
		{"disableWAL in call", WriteOptions{}, WriteOptions{DisableWAL: true}, WriteOptions{DisableWAL: true}},
		{"priority default kept", WriteOptions{RateLimiterPriority: PriorityLow}, WriteOptions{}, WriteOptions{RateLimiterPriority: PriorityLow}},
		{"priority overridden", WriteOptions{RateLimiterPriority: PriorityLow}, WriteOptions{RateLimiterPriority: PriorityUser},
			WriteOptions{RateLimiterPriority: PriorityUser}},
	} {
		require.Equal(t, tc.want, MergeWrite(tc.defaults, tc.over), tc.name)
	}
}

func TestWriteOptionsFromAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	ctx := WithWriteOptions(context.Background(), WriteOptions{Sync: true})
	var wo WriteOptions
	require.Zero(t, testing.AllocsPerRun(1000, func() { wo = WriteOptionsFrom(ctx) }))
	require.True(t, wo.Sync)
}
