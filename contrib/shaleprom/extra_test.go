package shaleprom

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/engine"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/ratelimit"
	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

// TestTagsExported: each tag's statistics are exported with the label tag,
// from the level of the detailed timers up.
func TestTagsExported(t *testing.T) {
	s := statistics.New(statistics.LevelAll)
	db := openWithStats(t, s)
	a := s.Tag(0x80, "tenant_a")
	a.RecordTick(statistics.TagBytesRead, 4096)
	a.RecordTick(statistics.TagBlockCacheHit, 3)
	a.RecordTick(statistics.TagRateLimiterWaitMicros, 1_500_000)
	a.RecordReadMicros(250)
	s.Tag(0x81, "batch-job").RecordTick(statistics.TagBlockCacheMiss, 2)
	c := NewCollector(db, nil)

	mfs := gather(t, c)
	require.Equal(t, 4096.0, metric(mfs, "shale_tag_read_bytes_total", "tag", "tenant_a").GetCounter().GetValue())
	require.Equal(t, 3.0, metric(mfs, "shale_tag_block_cache_hit_total", "tag", "tenant_a").GetCounter().GetValue())
	require.Equal(t, 1.5, metric(mfs, "shale_tag_rate_limiter_wait_seconds_total", "tag", "tenant_a").GetCounter().GetValue())
	require.Equal(t, 2.0, metric(mfs, "shale_tag_block_cache_miss_total", "tag", "batch-job").GetCounter().GetValue())
	h := metric(mfs, tagReadFam, "tag", "tenant_a").GetHistogram()
	require.Equal(t, uint64(1), h.GetSampleCount())
	require.Equal(t, 250e-6, h.GetSampleSum())
	require.Len(t, mfs[tagReadFam].GetMetric(), 2)

	problems, err := testutil.CollectAndLint(c)
	require.NoError(t, err)
	require.Empty(t, problems)

	s.SetLevel(statistics.DefaultLevel)
	mfs = gather(t, c)
	for name := range mfs {
		require.False(t, strings.HasPrefix(name, "shale_tag_"), "%s exported below the tags' level", name)
	}
}

// TestTagsFromEngine: tagged reads through the façade land in their tag's
// series.
func TestTagsFromEngine(t *testing.T) {
	tag := testTag(t, "shaleprom-test-tenant", ioctx.TagOptions{})
	db, err := driver.Open("shale", t.TempDir()+"?stats_level=all&block_cache_size=0")
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	for i := range 100 {
		require.NoError(t, db.Put(ctx, fmt.Appendf(nil, "k%03d", i), []byte("value")))
	}
	require.NoError(t, db.Flush(ctx))
	tctx := ioctx.WithReadOptions(ctx, ioctx.ReadOptions{Tag: tag})
	for i := range 10 {
		_, err := db.Get(tctx, fmt.Appendf(nil, "k%03d", i))
		require.NoError(t, err)
	}
	mfs := serveAndScrape(t, db)
	n, ok := histCount(mfs, tagReadFam, tagLabel, tag.String())
	require.True(t, ok)
	require.GreaterOrEqual(t, n, uint64(10), "one file read per uncached Get at least")
	require.Positive(t, metric(mfs, "shale_tag_read_bytes_total", tagLabel, tag.String()).GetCounter().GetValue())
}

// TestLSMExported: the LSM metrics of a real database, per level with the
// label level; none once the database is closed.
func TestLSMExported(t *testing.T) {
	db := driver.OpenDB(engine.NewConnector(engine.MemoryPath, nil))
	ctx := context.Background()
	require.NoError(t, db.Put(ctx, []byte("k"), []byte("v")))
	require.NoError(t, db.Flush(ctx))
	m, err := db.Metrics(ctx)
	require.NoError(t, err)
	c := NewCollector(db, nil)
	mfs := gather(t, c)

	require.Len(t, mfs["shale_lsm_level_tables"].GetMetric(), len(m.Levels))
	var tables float64
	for _, l := range m.Levels {
		lm := metric(mfs, "shale_lsm_level_tables", lsmLevel, fmt.Sprint(l.Level))
		require.NotNil(t, lm, "level %d", l.Level)
		tables += lm.GetGauge().GetValue()
		require.Equal(t, float64(l.Bytes), metric(mfs, "shale_lsm_level_bytes", lsmLevel, fmt.Sprint(l.Level)).GetGauge().GetValue())
	}
	require.Equal(t, 1.0, tables)
	require.Equal(t, float64(m.ReadAmp()), metric(mfs, "shale_lsm_read_amplification").GetGauge().GetValue())
	require.Equal(t, float64(m.MemTables.Count), metric(mfs, "shale_lsm_memtables").GetGauge().GetValue())
	require.Equal(t, float64(m.BlockCache.Capacity), metric(mfs, "shale_lsm_block_cache_capacity_bytes").GetGauge().GetValue())
	require.NotNil(t, metric(mfs, "shale_lsm_wal_files"))
	require.NotNil(t, metric(mfs, "shale_lsm_write_stalls_active").GetGauge())
	require.Equal(t, 0.0, metric(mfs, "shale_background_errors_total").GetCounter().GetValue())

	problems, err := testutil.CollectAndLint(c)
	require.NoError(t, err)
	require.Empty(t, problems)

	require.NoError(t, db.Close())
	for name := range gather(t, c) {
		require.False(t, strings.HasPrefix(name, "shale_lsm_") || name == "shale_background_errors_total", "%s exported after Close", name)
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

// TestRateLimiterByPriority: a database whose limiter counts by priority has
// its counts exported with the label priority, one series per priority.
func TestRateLimiterByPriority(t *testing.T) {
	lim := ratelimit.NewGeneric(1<<30, 0, 0, ratelimit.ModeAll)
	db := driver.OpenDB(engine.NewConnector(engine.MemoryPath, &engine.Options{RateLimiter: lim}))
	defer func() { require.NoError(t, db.Close()) }()
	ctx := context.Background()
	require.NoError(t, db.Put(ctx, []byte("k"), []byte("v")))
	require.NoError(t, db.Flush(ctx))
	low := ioctx.WithReadOptions(ctx, ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityLow})
	require.NoError(t, db.VerifyChecksum(low))

	c := NewCollector(db, nil)
	mfs := gather(t, c)
	require.Len(t, mfs["shale_rate_limiter_priority_bytes_total"].GetMetric(), 4)
	got := metric(mfs, "shale_rate_limiter_priority_bytes_total", priorityLabel, "low").GetCounter().GetValue()
	require.Equal(t, float64(lim.TotalBytesThrough(ioctx.PriorityLow)), got)
	require.Positive(t, got)
	require.NotNil(t, metric(mfs, "shale_rate_limiter_priority_pending_requests", priorityLabel, "user").GetGauge())

	problems, err := testutil.CollectAndLint(c)
	require.NoError(t, err)
	require.Empty(t, problems)
}
