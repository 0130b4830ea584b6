package ioctx

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type countingBudget struct {
	mu    sync.Mutex
	bytes int64
}

func (b *countingBudget) ChargeRead(_ context.Context, n int64, _ Priority) (int64, error) {
	b.mu.Lock()
	b.bytes += n
	b.mu.Unlock()
	return n, nil
}

func TestRegisterTag(t *testing.T) {
	budget := &countingBudget{}
	name := fmt.Sprintf("tag-test-tenant_a-%d", tagSeq.Add(1))
	tg, err := RegisterTag(name, TagOptions{Priority: PriorityLow, Budget: budget})
	require.NoError(t, err)
	require.GreaterOrEqual(t, int(tg), 0x80)
	require.LessOrEqual(t, int(tg), 0xFE)
	require.Equal(t, uint8(tg), tg.RocksDBValue())
	require.Equal(t, name, tg.String())
	require.Equal(t, PriorityLow, tg.Priority())
	require.Same(t, budget, tg.Budget().(*countingBudget))
	require.True(t, tg.Registered())

	got, ok := LookupTag(name)
	require.True(t, ok)
	require.Equal(t, tg, got)

	_, err = RegisterTag(name, TagOptions{})
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.Contains(t, err.Error(), "already registered")

	for _, bad := range []string{"", "has space", "dot.name", strings.Repeat("x", 65)} {
		_, err := RegisterTag(bad, TagOptions{})
		require.ErrorIs(t, err, ErrInvalidArgument, "%q", bad)
	}

	require.Equal(t, "", TagNone.String())
	require.Equal(t, uint8(0xFF), TagNone.RocksDBValue())
	require.Nil(t, TagNone.Budget())
	require.Equal(t, PriorityTotal, TagNone.Priority())
	require.False(t, Tag(0xFF).Registered())
	require.Equal(t, "Tag(255)", Tag(0xFF).String())
}

// TestRegisterTagBound fills a registry of its own: the 128th tag does not
// fit in RocksDB's custom range.
func TestRegisterTagBound(t *testing.T) {
	var r tagRegistry
	seen := map[Tag]bool{}
	for i := range MaxTags {
		tg, err := r.register("t"+strconv.Itoa(i), TagOptions{})
		require.NoError(t, err)
		require.False(t, seen[tg])
		seen[tg] = true
		require.GreaterOrEqual(t, int(tg), 0x80)
		require.LessOrEqual(t, int(tg), 0xFE)
	}
	_, err := r.register("one-more", TagOptions{})
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.Contains(t, err.Error(), "0x80-0xFE")
}

func TestTagInReadOptions(t *testing.T) {
	tg := testTag("tag-test-resolve", TagOptions{Priority: PriorityMid})
	perf := &PerfContext{}

	// Merge: the context's tag and sink override the session's.
	other := testTag("tag-test-session", TagOptions{})
	m := Merge(ReadOptions{Tag: other}, ReadOptions{Tag: tg, Perf: perf})
	require.Equal(t, tg, m.Tag)
	require.Same(t, perf, m.Perf)
	m = Merge(ReadOptions{Tag: other, Perf: perf}, ReadOptions{})
	require.Equal(t, other, m.Tag, "an unset tag keeps the default")
	require.Same(t, perf, m.Perf)

	// The activity keeps its meaning and check-then-tag rule.
	ctx := WithReadOptions(context.Background(), ReadOptions{Tag: tg, Perf: perf})
	req, err := ResolveRead(ctx, nil, "Get", ActivityGet)
	require.NoError(t, err)
	require.Equal(t, ActivityGet, req.IO.Activity)
	require.Equal(t, tg, req.IO.Tag)
	require.Same(t, perf, req.IO.Perf)
	require.Equal(t, PriorityMid, req.IO.RateLimiterPriority, "the tag's default priority")
	_, err = ResolveRead(WithReadOptions(context.Background(), ReadOptions{Tag: tg, Activity: ActivityFlush}),
		nil, "Get", ActivityGet)
	require.ErrorIs(t, err, ErrInvalidArgument)

	// An explicit priority wins over the tag's, with or without a deadline.
	for _, dl := range []time.Time{{}, time.Now().Add(time.Hour)} {
		req, err = ResolveRead(WithReadOptions(context.Background(),
			ReadOptions{Tag: tg, RateLimiterPriority: PriorityHigh, Deadline: dl}), nil, "Get", ActivityGet)
		require.NoError(t, err)
		require.Equal(t, PriorityHigh, req.IO.RateLimiterPriority)
		require.Equal(t, tg, req.IO.Tag)
	}
}

func TestResolveReadWithTagDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	tg := testTag("tag-test-alloc", TagOptions{Priority: PriorityLow})
	ctx := WithReadOptions(context.Background(), ReadOptions{Tag: tg, Perf: &PerfContext{}})
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := ResolveRead(ctx, &ReadOptions{}, "Get", ActivityGet); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}

func TestPerfContext(t *testing.T) {
	var nilPerf *PerfContext
	nilPerf.AddTableConsulted() // nil-safe
	nilPerf.AddFileRead(10, time.Second)
	require.Equal(t, PerfCounts{}, nilPerf.Counts())

	p := &PerfContext{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				p.AddTableConsulted()
				p.AddFilterCheck(true)
				p.AddFilterCheck(false)
				p.AddBlockCacheHit(DataBlock)
				p.AddBlockCacheMiss(DataBlock)
				p.AddBlockCacheHit(IndexBlock)
				p.AddBlockCacheMiss(FilterBlock)
				p.AddBlockRead(100)
				p.AddFileRead(200, time.Microsecond)
				p.AddRateLimiterWait(time.Nanosecond)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, PerfCounts{
		TablesConsulted: 4000, FilterChecks: 8000, FilterHits: 4000,
		BlockCacheHits: 8000, BlockCacheMisses: 8000, BlockCacheIndexHits: 4000, BlockCacheFilterMisses: 4000, BlocksRead: 4000, BlockReadBytes: 400000,
		FileReads: 4000, FileReadBytes: 800000, FileReadTime: 4000 * time.Microsecond,
		RateLimiterWait: 4000 * time.Nanosecond,
	}, p.Counts())
	require.Contains(t, p.String(), "tables_consulted=4000 ")
	p.Reset()
	require.Equal(t, PerfCounts{}, p.Counts())
}

// tagSeq numbers the tags the tests register: the registry is per process
// and never forgets, so a test run again (-count) needs fresh names.
var tagSeq atomic.Int64

// testTag registers a tag named prefix plus a number unique in the process.
func testTag(prefix string, opts TagOptions) Tag {
	return MustRegisterTag(fmt.Sprintf("%s-%d", prefix, tagSeq.Add(1)), opts)
}
