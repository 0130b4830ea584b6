package ioctx

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestActivityNames(t *testing.T) {
	// RocksDB's Env::IOActivityToString at HEAD (spec §1.3) and its enum values
	// (spec §1.2).
	for _, tc := range []struct {
		a       Activity
		name    string
		rocksdb uint8
	}{
		{ActivityFlush, "Flush", 0},
		{ActivityCompaction, "Compaction", 1},
		{ActivityDBOpen, "DBOpen", 2},
		{ActivityGet, "Get", 3},
		{ActivityMultiGet, "MultiGet", 4},
		{ActivityDBIterator, "DBIterator", 5},
		{ActivityVerifyDBChecksum, "VerifyDBChecksum", 6},
		{ActivityVerifyFileChecksums, "VerifyFileChecksums", 7},
		{ActivityGetEntity, "GetEntity", 8},
		{ActivityMultiGetEntity, "MultiGetEntity", 9},
		{ActivityGetFileChecksumsFromCurrentManifest, "GetFileChecksumsFromCurrentManifest", 10},
		{ActivityLazyResolve, "LazyResolve", 11},
		{ActivityUnknown, "Unknown", 0xFF},
	} {
		require.Equal(t, tc.name, tc.a.String())
		require.Equal(t, tc.rocksdb, tc.a.RocksDBValue(), tc.name)
		require.Equal(t, "Env::IOActivity::k"+tc.name, tc.a.EnvName())
	}
	require.Equal(t, "Invalid", Activity(200).String())
	require.Equal(t, Activity(0), ActivityUnknown, "the zero Activity must be Unknown")
}

func TestPriority(t *testing.T) {
	require.Equal(t, Priority(0), PriorityTotal, "the zero Priority must be Total (not charged)")
	for _, tc := range []struct {
		p       Priority
		name    string
		charged bool
	}{
		{PriorityLow, "Low", true},
		{PriorityMid, "Mid", true},
		{PriorityHigh, "High", true},
		{PriorityUser, "User", true},
		{PriorityTotal, "Total", false},
		{Priority(9), "Priority(9)", false},
	} {
		require.Equal(t, tc.name, tc.p.String())
		require.Equal(t, tc.charged, tc.p.Charged(), tc.name)
	}
}

func TestZeroReadOptionsAreRocksDBDefaults(t *testing.T) {
	var ro ReadOptions
	require.Equal(t, ActivityUnknown, ro.Activity)
	require.Equal(t, PriorityTotal, ro.RateLimiterPriority)
	require.False(t, ro.DontVerifyChecksums, "checksums are verified by default")
	require.False(t, ro.DontFillCache, "the cache is filled by default")
	require.False(t, ro.AsyncIO)
	require.True(t, ro.Deadline.IsZero())
	opts, err := ro.IOOptions()
	require.NoError(t, err)
	require.Equal(t, IOOptions{}, opts)
}

func TestIOOptionsDeadlineAndTimeout(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		deadline  time.Duration // relative to now; 0 = none
		ioTimeout time.Duration
		want      time.Duration
		timedOut  bool
	}{
		{name: "none", want: 0},
		{name: "io timeout only", ioTimeout: 5 * time.Millisecond, want: 5 * time.Millisecond},
		{name: "deadline only", deadline: 30 * time.Millisecond, want: 30 * time.Millisecond},
		{name: "deadline sooner than timeout", deadline: 2 * time.Millisecond, ioTimeout: 5 * time.Millisecond, want: 2 * time.Millisecond},
		{name: "timeout sooner than deadline", deadline: 20 * time.Millisecond, ioTimeout: 5 * time.Millisecond, want: 5 * time.Millisecond},
		{name: "sub-microsecond left rounds up", deadline: 300 * time.Nanosecond, want: time.Microsecond},
		{name: "fraction rounds up", deadline: 1500 * time.Nanosecond, want: 2 * time.Microsecond},
		{name: "deadline passed", deadline: -time.Nanosecond, timedOut: true},
		{name: "deadline long passed", deadline: -time.Hour, ioTimeout: time.Second, timedOut: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ro := ReadOptions{
				Activity:            ActivityGet,
				RateLimiterPriority: PriorityUser,
				IOTimeout:           tc.ioTimeout,
			}
			if tc.deadline != 0 {
				ro.Deadline = now.Add(tc.deadline)
			}
			opts, err := ro.IOOptionsAt(now)
			if tc.timedOut {
				require.Error(t, err)
				require.Equal(t, "Operation timed out: Deadline exceeded", err.Error())
				require.True(t, errors.Is(err, ErrTimedOut))
				require.True(t, errors.Is(err, context.DeadlineExceeded))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, opts.Timeout)
			require.Equal(t, PriorityUser, opts.RateLimiterPriority)
			require.Equal(t, ActivityGet, opts.Activity)
		})
	}
	// A deadline exactly at now has no time left: RocksDB fails it (now >= deadline).
	_, err := ReadOptions{Deadline: now}.IOOptionsAt(now)
	require.ErrorIs(t, err, ErrTimedOut)
}

func TestContextRoundTrip(t *testing.T) {
	ctx := context.Background()
	require.Equal(t, ReadOptions{}, ReadOptionsFrom(ctx))

	ro := ReadOptions{RateLimiterPriority: PriorityLow, DontFillCache: true, ReadaheadSize: 1 << 20}
	ctx = WithReadOptions(ctx, ro)
	require.Equal(t, ro, ReadOptionsFrom(ctx))

	// A later WithReadOptions replaces, and other values do not disturb the lookup.
	type otherKey struct{}
	ctx = context.WithValue(WithReadOptions(ctx, ReadOptions{AsyncIO: true}), otherKey{}, 1)
	require.Equal(t, ReadOptions{AsyncIO: true}, ReadOptionsFrom(ctx))
}

func TestContextLookupDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	ctx := WithReadOptions(context.Background(), ReadOptions{RateLimiterPriority: PriorityUser})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var sink ReadOptions
	allocs := testing.AllocsPerRun(1000, func() { sink = ReadOptionsFrom(ctx) })
	require.Zero(t, allocs)
	require.Equal(t, PriorityUser, sink.RateLimiterPriority)
	allocs = testing.AllocsPerRun(1000, func() { sink = ReadOptionsFrom(context.Background()) })
	require.Zero(t, allocs)
}

// TestActivityCheck pins the check-then-tag rule of ResolveRead (spec §3.2).
func TestActivityCheck(t *testing.T) {
	apis := []struct {
		api  string
		want Activity
	}{
		{"Get", ActivityGet},
		{"MultiGet", ActivityMultiGet},
		{"NewIterator", ActivityDBIterator},
		{"NewIterators", ActivityDBIterator},
		{"VerifyChecksum", ActivityVerifyDBChecksum},
		{"VerifyFileChecksums", ActivityVerifyFileChecksums},
	}
	for _, api := range apis {
		for a := ActivityUnknown; a < NumActivities; a++ {
			ctx := WithReadOptions(context.Background(), ReadOptions{Activity: a, RateLimiterPriority: PriorityMid})
			req, err := ResolveRead(ctx, nil, api.api, api.want)
			if a == ActivityUnknown || a == api.want {
				require.NoError(t, err, "%s with %s", api.api, a)
				require.Equal(t, api.want, req.IO.Activity, "the tag is set")
				require.Equal(t, PriorityMid, req.IO.RateLimiterPriority, "other fields are kept")
				continue
			}
			require.Error(t, err, "%s with %s", api.api, a)
			require.True(t, errors.Is(err, ErrInvalidArgument))
			// RocksDB's literal message (spec §3.2), then the activity given.
			want := "Can only call " + api.api + " with `ReadOptions::io_activity` is " +
				"`Env::IOActivity::kUnknown` or `Env::IOActivity::k" + api.want.String() + "`" +
				", not `Env::IOActivity::k" + a.String() + "`"
			require.Equal(t, want, err.Error())
		}
	}
	// Spot-check one message in full, spelled out, against the spec.
	_, err := ResolveRead(WithReadOptions(context.Background(), ReadOptions{Activity: ActivityFlush}),
		nil, "VerifyChecksum", ActivityVerifyDBChecksum)
	require.EqualError(t, err, "Can only call VerifyChecksum with `ReadOptions::io_activity` is "+
		"`Env::IOActivity::kUnknown` or `Env::IOActivity::kVerifyDBChecksum`, not `Env::IOActivity::kFlush`")
}

func TestMerge(t *testing.T) {
	d1 := time.Unix(100, 0)
	d2 := time.Unix(50, 0)
	defaults := ReadOptions{
		RateLimiterPriority: PriorityLow,
		Deadline:            d1,
		IOTimeout:           time.Second,
		DontFillCache:       true,
		ReadaheadSize:       4096,
	}
	require.Equal(t, defaults, Merge(defaults, ReadOptions{}), "a zero override changes nothing")
	got := Merge(defaults, ReadOptions{
		Activity:            ActivityGet,
		RateLimiterPriority: PriorityUser,
		Deadline:            d2,
		IOTimeout:           2 * time.Second,
		AsyncIO:             true,
		ReadaheadSize:       1 << 20,
	})
	require.Equal(t, ReadOptions{
		Activity:            ActivityGet,
		RateLimiterPriority: PriorityUser,
		Deadline:            d2,
		IOTimeout:           time.Second, // the smaller timeout wins
		DontFillCache:       true,
		AsyncIO:             true,
		ReadaheadSize:       1 << 20,
	}, got)
	require.Equal(t, d1, Merge(defaults, ReadOptions{Deadline: time.Unix(200, 0)}).Deadline, "the earlier deadline wins")
}

func TestWithContextDeadline(t *testing.T) {
	ro := ReadOptions{Deadline: time.Now().Add(time.Hour)}
	require.Equal(t, ro, ro.WithContextDeadline(context.Background()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, _ := ctx.Deadline()
	require.Equal(t, d, ro.WithContextDeadline(ctx).Deadline)
	early := ReadOptions{Deadline: time.Now().Add(time.Second)}
	require.Equal(t, early.Deadline, early.WithContextDeadline(ctx).Deadline)

	// An expired context deadline turns into the timed-out error, which matches
	// ctx.Err().
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	_, err := ReadOptions{}.WithContextDeadline(expired).IOOptions()
	require.True(t, errors.Is(err, expired.Err()))
}

func BenchmarkReadOptionsFrom(b *testing.B) {
	for _, depth := range []int{0, 4} {
		b.Run("depth="+string(rune('0'+depth)), func(b *testing.B) {
			ctx := WithReadOptions(context.Background(), ReadOptions{RateLimiterPriority: PriorityUser})
			type k struct{ i int }
			for i := range depth {
				ctx = context.WithValue(ctx, k{i}, i)
			}
			b.ReportAllocs()
			var sink ReadOptions
			for b.Loop() {
				sink = ReadOptionsFrom(ctx)
			}
			_ = sink
		})
	}
}
