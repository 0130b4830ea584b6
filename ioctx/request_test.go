package ioctx

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestResolveRead checks the one resolution of a public read's options, step
// by step.
func TestResolveRead(t *testing.T) {
	bg := context.Background()

	req, err := ResolveRead(bg, nil, "Get", ActivityGet)
	require.NoError(t, err)
	require.Equal(t, ReadRequest{IO: IOOptions{Activity: ActivityGet}, VerifyChecksums: true, FillCache: true}, req,
		"the zero ReadOptions are RocksDB's defaults, tagged with the API's activity")

	ctx := WithReadOptions(bg, ReadOptions{
		RateLimiterPriority: PriorityUser, DontVerifyChecksums: true, DontFillCache: true,
		ReadaheadSize: 1 << 20, AsyncIO: true,
	})
	req, err = ResolveRead(ctx, nil, "NewIterator", ActivityDBIterator)
	require.NoError(t, err)
	require.Equal(t, ReadRequest{IO: IOOptions{Activity: ActivityDBIterator, RateLimiterPriority: PriorityUser},
		ReadaheadSize: 1 << 20, AsyncIO: true}, req)

	defaults := &ReadOptions{RateLimiterPriority: PriorityLow, IOTimeout: time.Second}
	req, err = ResolveRead(bg, defaults, "MultiGet", ActivityMultiGet)
	require.NoError(t, err)
	require.Equal(t, IOOptions{Activity: ActivityMultiGet, RateLimiterPriority: PriorityLow, Timeout: time.Second},
		req.IO, "a session's defaults apply")

	_, err = ResolveRead(WithReadOptions(bg, ReadOptions{Activity: ActivityFlush}), nil, "Get", ActivityGet)
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.Contains(t, err.Error(), "kFlush")
}

// TestResolveReadDeadlines checks where a deadline ends up: the context's
// bounds the request through the context itself, an earlier one of the
// ReadOptions is kept for the engine to derive a context from, and either
// becomes the IO timeout.
func TestResolveReadDeadlines(t *testing.T) {
	bg := context.Background()
	ctx, cancel := context.WithTimeout(bg, time.Hour)
	defer cancel()
	req, err := ResolveRead(ctx, nil, "Get", ActivityGet)
	require.NoError(t, err)
	require.True(t, req.Deadline.IsZero(), "the context's own deadline needs no derived context")
	require.InDelta(t, time.Hour, req.IO.Timeout, float64(time.Minute))

	soon := time.Now().Add(time.Minute)
	req, err = ResolveRead(WithReadOptions(ctx, ReadOptions{Deadline: soon}), nil, "Get", ActivityGet)
	require.NoError(t, err)
	require.Equal(t, soon, req.Deadline, "a deadline earlier than the context's is kept")
	require.LessOrEqual(t, req.IO.Timeout, time.Minute+time.Microsecond)

	late := time.Now().Add(2 * time.Hour)
	req, err = ResolveRead(WithReadOptions(ctx, ReadOptions{Deadline: late}), nil, "Get", ActivityGet)
	require.NoError(t, err)
	require.True(t, req.Deadline.IsZero(), "a deadline after the context's is moot")

	_, err = ResolveRead(WithReadOptions(bg, ReadOptions{Deadline: time.Now().Add(-time.Second)}), nil, "Get", ActivityGet)
	require.ErrorIs(t, err, ErrTimedOut)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	done, cancelDone := context.WithCancel(bg)
	cancelDone()
	_, err = ResolveRead(done, nil, "Get", ActivityGet)
	require.True(t, errors.Is(err, done.Err()), "%v", err)
}

// TestResolveReadDoesNotAllocate pins the boundary's allocation budget: none,
// with or without a deadline on the context.
func TestResolveReadDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	ctx, cancel := context.WithTimeout(WithReadOptions(context.Background(),
		ReadOptions{RateLimiterPriority: PriorityLow}), time.Hour)
	defer cancel()
	defaults := &ReadOptions{IOTimeout: time.Second}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := ResolveRead(ctx, defaults, "Get", ActivityGet); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}

// BenchmarkResolveRead is the per-call cost of resolving a Get's options at
// the API boundary: with nothing in the context, with options, and with a
// context deadline (which adds a clock read).
func BenchmarkResolveRead(b *testing.B) {
	bg := context.Background()
	withOpts := WithReadOptions(bg, ReadOptions{RateLimiterPriority: PriorityUser})
	withDeadline, cancel := context.WithTimeout(withOpts, time.Hour)
	defer cancel()
	for _, bc := range []struct {
		name string
		ctx  context.Context
	}{{"ctx=background", bg}, {"ctx=options", withOpts}, {"ctx=deadline", withDeadline}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req, err := ResolveRead(bc.ctx, nil, "Get", ActivityGet)
				if err != nil || req.IO.Activity != ActivityGet {
					b.Fatal(err)
				}
			}
		})
	}
}
