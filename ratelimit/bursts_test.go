package ratelimit

import (
	"context"
	"testing"

	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

// burstRecorder records the sizes of the requests it is given.
type burstRecorder struct {
	limited bool
	burst   int64
	got     []int64
}

func (r *burstRecorder) Request(_ context.Context, bytes int64, _ ioctx.Priority, _ *statistics.Statistics, _ OpType) error {
	r.got = append(r.got, bytes)
	return nil
}

func (r *burstRecorder) RequestToken(context.Context, int64, int64, ioctx.Priority, *statistics.Statistics, OpType) (int64, error) {
	panic("not used")
}
func (r *burstRecorder) IsRateLimited(OpType) bool { return r.limited }
func (r *burstRecorder) SingleBurstBytes() int64   { return r.burst }

func TestRequestBursts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		limited bool
		n       int64
		want    []int64
	}{
		{"nothing", true, 0, nil},
		{"one burst", true, 100, []int64{100}},
		{"exactly two", true, 200, []int64{100, 100}},
		{"two and a half", true, 250, []int64{100, 100, 50}},
		{"not limited", false, 250, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &burstRecorder{limited: tc.limited, burst: 100}
			require.NoError(t, RequestBursts(context.Background(), r, tc.n, ioctx.PriorityHigh, nil, OpWrite))
			require.Equal(t, tc.want, r.got)
		})
	}
	require.NoError(t, RequestBursts(context.Background(), nil, 250, ioctx.PriorityHigh, nil, OpWrite))
}
