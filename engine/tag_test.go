package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/ratelimit"
	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

// TestTaggedReadAllocations: at LevelAll, a Get, a MultiGet and an iterator
// carrying a tag and a PerfContext allocate what they do without them
// (GetPinned nothing; a copying Get its copy), through the engine and
// through the façade, and fill the sink and the tag's statistics.
func TestTaggedReadAllocations(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	tag := testTag(t, "engine-test-tagged", ioctx.TagOptions{})
	opts := smallOptions(nil)
	opts.BlockCacheSize = 64 << 20
	st := statistics.New(statistics.LevelAll)
	opts.Statistics = st
	db, _ := openTestDB(t, opts)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 3000
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = key(i)
		require.NoError(t, db.Put(ctx, keys[i], value(rng, 100)))
	}
	require.NoError(t, db.Flush(ctx))
	perf := &ioctx.PerfContext{}
	tctx := ioctx.WithReadOptions(ctx, ioctx.ReadOptions{Tag: tag, Perf: perf})
	for _, k := range keys { // warm the cache, and the tag's statistics
		v, err := db.GetPinned(tctx, k)
		require.NoError(t, err)
		v.Release()
	}
	c := perf.Counts()
	require.Positive(t, c.TablesConsulted)
	require.Positive(t, c.BlockCacheMisses)
	require.Positive(t, c.FileReads)
	ts := st.Tag(tag.RocksDBValue(), tag.String())
	require.NotNil(t, ts)
	require.Positive(t, ts.TickerCount(statistics.TagBytesRead))
	require.Positive(t, ts.HistogramSnapshot().Count)

	i := 0
	allocs := testing.AllocsPerRun(2000, func() {
		v, err := db.GetPinned(tctx, keys[i%n])
		if err != nil {
			t.Fatal(err)
		}
		v.Release()
		i += 13
	})
	require.Zero(t, allocs, "GetPinned with a tag and a sink")
	require.Positive(t, ts.TickerCount(statistics.TagBlockCacheHit))

	fdb := driver.OpenDB(&connector{db: db})
	allocs = testing.AllocsPerRun(2000, func() {
		if _, err := fdb.Get(tctx, keys[i%n]); err != nil {
			t.Fatal(err)
		}
		i += 13
	})
	require.LessOrEqual(t, allocs, 1.0, "driver.DB.Get with a tag and a sink (the copy)")
}

// TestTagBudgetThrottlesOneTenant: two tenants scan the same database; the
// one whose tag has a budget of 256 KiB/s is held to it, the other scans at
// full speed, and the database's own limiter is not involved.
func TestTagBudgetThrottlesOneTenant(t *testing.T) {
	budget := ratelimit.NewGeneric(256<<10, 10*time.Millisecond, 0, ratelimit.ModeReads)
	defer budget.Close()
	slow := testTag(t, "engine-test-throttled", ioctx.TagOptions{Budget: budget})
	fast := testTag(t, "engine-test-free", ioctx.TagOptions{})
	db, _ := openTestDB(t, nil)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range 1500 {
		require.NoError(t, db.Put(ctx, key(i), value(rng, 100)))
	}
	require.NoError(t, db.Flush(ctx))

	scan := func(tag ioctx.Tag) (time.Duration, int) {
		start := time.Now()
		// DontFillCache: as scans should, and so every scan reads its
		// blocks from the files.
		it, err := db.NewIterator(ioctx.WithReadOptions(ctx, ioctx.ReadOptions{Tag: tag, DontFillCache: true}), nil)
		require.NoError(t, err)
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		require.NoError(t, it.Close())
		return time.Since(start), n
	}
	fastTook, n := scan(fast)
	require.Equal(t, 1500, n)
	slowTook, n := scan(slow)
	require.Equal(t, 1500, n)
	charged := budget.TotalBytesThrough(ioctx.PriorityTotal)
	require.Positive(t, charged, "the budget was charged")
	// The first refill (2.5 KiB) is free; the rest comes at 256 KiB/s.
	minTook := time.Duration(float64(charged-(256<<10)/100) / (256 << 10) * float64(time.Second))
	require.GreaterOrEqual(t, slowTook, minTook*8/10, "charged %d bytes", charged)
	require.Less(t, fastTook, slowTook/2, "the other tenant is not throttled")
	again, _ := scan(fast)
	require.Less(t, again, slowTook/2)
	require.Equal(t, charged, budget.TotalBytesThrough(ioctx.PriorityTotal), "untagged-by-budget scans charge nothing")
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
