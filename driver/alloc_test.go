package driver

import (
	"context"
	"testing"
	"time"

	"github.com/shaledb/shale/ioctx"
	"github.com/stretchr/testify/require"
)

// TestGetAllocations pins the façade's cost: with a driver that returns a
// preallocated slice, a Get through a DB or a Conn allocates nothing, with
// or without read options and a deadline in ctx.
func TestGetAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	value := []byte("value")
	db := openFake(t, &fixedConn{value: value})
	conn, err := db.Conn(ioctx.WithReadOptions(context.Background(), ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityLow}))
	require.NoError(t, err)
	key := []byte("key")
	withRO := ioctx.WithReadOptions(context.Background(), ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityUser})
	withDeadline, cancel := context.WithTimeout(withRO, time.Hour)
	defer cancel()

	for _, tc := range []struct {
		name string
		ctx  context.Context
		get  func(context.Context, []byte) ([]byte, error)
	}{
		{"DB/background", context.Background(), db.Get},
		{"DB/read-options", withRO, db.Get},
		{"DB/deadline", withDeadline, db.Get},
		{"Conn/background", context.Background(), conn.Get},
		{"Conn/deadline", withDeadline, conn.Get},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []byte
			allocs := testing.AllocsPerRun(1000, func() {
				v, err := tc.get(tc.ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				got = v
			})
			require.Zero(t, allocs)
			require.Equal(t, value, got)
		})
	}
}

// TestReadOptionsAllocations pins the cost of steps 1–3 of the read path.
func TestReadOptionsAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	defaults := &ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityLow, IOTimeout: time.Millisecond}
	ctx, cancel := context.WithTimeout(ioctx.WithReadOptions(context.Background(), ioctx.ReadOptions{DontFillCache: true}), time.Hour)
	defer cancel()
	var req ioctx.ReadRequest
	allocs := testing.AllocsPerRun(1000, func() {
		var err error
		req, err = ioctx.ResolveRead(ctx, defaults, "MultiGet", ioctx.ActivityMultiGet)
		if err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
	require.Equal(t, ioctx.ActivityMultiGet, req.IO.Activity)
	require.Equal(t, ioctx.PriorityLow, req.IO.RateLimiterPriority)
	require.False(t, req.FillCache)
	require.Equal(t, time.Millisecond, req.IO.Timeout, "the smaller of IOTimeout and the time left")

	// A rejected activity builds its error message, which allocates; an
	// accepted one must not.
	allocs = testing.AllocsPerRun(1000, func() {
		req, _ = ioctx.ResolveRead(context.Background(), nil, "Get", ioctx.ActivityGet)
	})
	require.Zero(t, allocs)
}

// TestIteratorMoveAllocations: moving a façade iterator costs nothing over
// the driver's move.
func TestIteratorMoveAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	conn := newFullConn()
	for _, k := range []string{"a", "b", "c"} {
		conn.data[k] = []byte(k)
	}
	db := openFake(t, conn)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	it, err := db.NewIterator(ctx, nil)
	require.NoError(t, err)
	defer it.Close()
	require.True(t, it.First()) // warm the fake's buffers
	allocs := testing.AllocsPerRun(1000, func() {
		for ok := it.First(); ok; ok = it.Next() {
			_ = it.Key()
		}
	})
	require.Zero(t, allocs)
}
