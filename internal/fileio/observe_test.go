package fileio

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/ratelimit"
	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

// TestTagAndPerfRecording: every reading method records the tag's
// histogram and bytes (from TagMinLevel up) and fills the request's sink
// (at any level, statistics or not).
func TestTagAndPerfRecording(t *testing.T) {
	tag := testTag(t, "fileio-test-record", ioctx.TagOptions{})
	fs, _ := testFile(t, "f", 1<<16)
	ctx := context.Background()
	for _, level := range []statistics.Level{statistics.DefaultLevel, statistics.LevelExceptTimeForMutex, statistics.LevelAll} {
		stats := statistics.New(level)
		r := openTest(t, fs, "f", Options{Stats: stats})
		perf := &ioctx.PerfContext{}
		opts := ioctx.IOOptions{Activity: ioctx.ActivityGet, Tag: tag, Perf: perf}

		_, err := r.Read(ctx, opts, 0, 4096, make([]byte, 4096))
		require.NoError(t, err)
		reqs := []ReadRequest{{Offset: 0, Len: 100, Scratch: make([]byte, 100)}, {Offset: 200, Len: 300, Scratch: make([]byte, 300)}}
		require.NoError(t, r.MultiRead(ctx, opts, reqs))
		done := make(chan struct{})
		require.NoError(t, r.ReadAsync(ctx, opts, &ReadRequest{Offset: 1000, Len: 1000, Scratch: make([]byte, 1000)},
			func(*ReadRequest) { close(done) }))
		<-done

		c := perf.Counts()
		require.Equal(t, uint64(3), c.FileReads, "level %s", level)
		require.Equal(t, uint64(4096+400+1000), c.FileReadBytes)
		require.Positive(t, c.FileReadTime)
		require.Zero(t, c.RateLimiterWait)

		ts := stats.Tag(tag.RocksDBValue(), tag.String())
		if level < statistics.TagMinLevel {
			require.Nil(t, ts)
			require.Empty(t, stats.Tags())
			continue
		}
		require.Equal(t, uint64(3), ts.HistogramSnapshot().Count)
		require.Equal(t, uint64(4096+400+1000), ts.TickerCount(statistics.TagBytesRead))
		require.Equal(t, uint64(3), stats.HistogramData(statistics.FileReadGetMicros).Count,
			"the activity's histogram is recorded as before")
	}
}

// TestTagRecordingDoesNotAllocate: a tagged read with a sink, at LevelAll,
// charged to the limiter, allocates nothing once the tag has been seen.
func TestTagRecordingDoesNotAllocate(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	tag := testTag(t, "fileio-test-alloc", ioctx.TagOptions{Priority: ioctx.PriorityLow})
	fs, _ := testFile(t, "f", 1<<16)
	limiter := ratelimit.NewGeneric(1<<40, 0, 0, ratelimit.ModeAll)
	defer limiter.Close()
	r := openTest(t, fs, "f", Options{Stats: statistics.New(statistics.LevelAll), Limiter: limiter})
	scratch := make([]byte, 4096)
	opts := ioctx.IOOptions{Activity: ioctx.ActivityGet, Tag: tag, Perf: &ioctx.PerfContext{}, RateLimiterPriority: ioctx.PriorityLow}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := r.Read(context.Background(), opts, 0, 4096, scratch); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}

// TestTagBudget: a tag's budget throttles its reads and only its reads,
// and it is charged exactly the bytes read, as is the database's limiter.
func TestTagBudget(t *testing.T) {
	const rate = 1 << 20 // 1 MiB/s: 10 KiB per 10 ms refill
	budget := ratelimit.NewGeneric(rate, 10*time.Millisecond, 0, ratelimit.ModeReads)
	defer budget.Close()
	slow := testTag(t, "fileio-test-slow-tenant", ioctx.TagOptions{Budget: budget})
	fast := testTag(t, "fileio-test-fast-tenant", ioctx.TagOptions{})
	db := ratelimit.NewGeneric(1<<40, 0, 0, ratelimit.ModeAll)
	defer db.Close()

	fs, _ := testFile(t, "f", 1<<20)
	stats := statistics.New(statistics.LevelAll)
	r := openTest(t, fs, "f", Options{Stats: stats, Limiter: db})
	scratch := make([]byte, 100<<10)
	ctx := context.Background()

	timeRead := func(tag ioctx.Tag, pri ioctx.Priority, perf *ioctx.PerfContext) time.Duration {
		start := time.Now()
		_, err := r.Read(ctx, ioctx.IOOptions{Activity: ioctx.ActivityDBIterator, Tag: tag, RateLimiterPriority: pri, Perf: perf},
			0, len(scratch), scratch)
		require.NoError(t, err)
		return time.Since(start)
	}

	// 100 KiB at 1 MiB/s, less the first refill's 10 KiB: at least 80 ms.
	perf := &ioctx.PerfContext{}
	slowTook := timeRead(slow, ioctx.PriorityTotal, perf)
	require.GreaterOrEqual(t, slowTook, 80*time.Millisecond)
	require.Equal(t, int64(100<<10), budget.TotalBytesThrough(ioctx.PriorityUser),
		"a read the database does not charge is charged to the budget at User")
	require.Zero(t, db.TotalBytesThrough(ioctx.PriorityTotal))
	require.GreaterOrEqual(t, perf.Counts().RateLimiterWait, 60*time.Millisecond)
	require.GreaterOrEqual(t, stats.Tag(slow.RocksDBValue(), slow.String()).TickerCount(statistics.TagRateLimiterWaitMicros),
		uint64(60_000))

	// The other tenant's reads do not wait for the first one's budget.
	fastTook := timeRead(fast, ioctx.PriorityLow, nil)
	require.Less(t, fastTook, slowTook/2)
	require.Equal(t, int64(100<<10), budget.TotalBytesThrough(ioctx.PriorityTotal), "untouched")

	// Charged by both: each sees the read's bytes once, at its priority.
	timeRead(slow, ioctx.PriorityLow, nil)
	require.Equal(t, int64(100<<10), budget.TotalBytesThrough(ioctx.PriorityLow))
	require.Equal(t, int64(200<<10), db.TotalBytesThrough(ioctx.PriorityLow))
}

// TestTagBudgetCancel: a wait for a tag's budget ends with the context.
func TestTagBudgetCancel(t *testing.T) {
	budget := ratelimit.NewGeneric(1, time.Hour, 0, ratelimit.ModeReads)
	defer budget.Close()
	tag := testTag(t, "fileio-test-starved", ioctx.TagOptions{Budget: budget})
	fs, _ := testFile(t, "f", 1<<16)
	r := openTest(t, fs, "f", Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := r.Read(ctx, ioctx.IOOptions{Tag: tag}, 0, 1<<16, make([]byte, 1<<16))
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// BenchmarkObserve measures what the tag and sink recording adds to one
// file read (with the StopWatch the read starts anyway at LevelAll, whose
// two clock reads are most of "read/unused") and to one block-cache hit:
// compares only without a tag or a sink ("unused"), and the recording with
// a tag at LevelAll, with a sink, and with both.
func BenchmarkObserve(b *testing.B) {
	tag, ok := ioctx.LookupTag("fileio-bench")
	if !ok {
		tag = ioctx.MustRegisterTag("fileio-bench", ioctx.TagOptions{})
	}
	st := statistics.New(statistics.LevelAll)
	r := &Reader{opts: Options{Stats: st}}
	for _, bc := range []struct {
		name string
		opts ioctx.IOOptions
	}{
		{"unused", ioctx.IOOptions{Activity: ioctx.ActivityGet}},
		{"tag", ioctx.IOOptions{Activity: ioctx.ActivityGet, Tag: tag}},
		{"perf", ioctx.IOOptions{Activity: ioctx.ActivityGet, Perf: &ioctx.PerfContext{}}},
		{"tag+perf", ioctx.IOOptions{Activity: ioctx.ActivityGet, Tag: tag, Perf: &ioctx.PerfContext{}}},
	} {
		b.Run("read/"+bc.name, func(b *testing.B) {
			for b.Loop() {
				sw := st.StartStopWatch(statistics.SSTReadMicros, statistics.FileReadGetMicros)
				obs := r.observe(bc.opts, &sw)
				us := sw.Stop()
				obs.done(4096, us, false)
			}
		})
		b.Run("cache-hit/"+bc.name, func(b *testing.B) {
			for b.Loop() {
				NoteCacheHit(st, bc.opts, ioctx.DataBlock)
			}
		})
	}
}

// tagSeq numbers the tags the tests register: the registry is per process
// and never forgets, so a test run again (-count) needs fresh names.
var tagSeq atomic.Int64

// testTag registers a tag named prefix plus a number unique in the process.
func testTag(t testing.TB, prefix string, opts ioctx.TagOptions) ioctx.Tag {
	t.Helper()
	tag, err := ioctx.RegisterTag(fmt.Sprintf("%s-%d", prefix, tagSeq.Add(1)), opts)
	require.NoError(t, err)
	return tag
}
