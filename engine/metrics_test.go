package engine

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/internal/compact"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/ratelimit"
	"github.com/stretchr/testify/require"
)

func TestMetricsShape(t *testing.T) {
	// No background compaction: the test compares Metrics with the version
	// it reads afterwards, which a compaction in between would change.
	opts := smallOptions(nil)
	opts.DisableAutoCompactions = true
	db, _ := openTestDB(t, opts)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		require.NoError(t, db.Put(ctx, key(i), value(rng, 100)))
	}
	require.NoError(t, db.Flush(ctx))
	for i := range 100 {
		_, _ = db.Get(ctx, key(i))
	}

	m, err := db.Metrics(ctx)
	require.NoError(t, err)
	require.Len(t, m.Levels, manifest.NumLevels)

	rs := mustReadState(t, db)
	defer rs.unref()
	var tables int
	for level, lm := range m.Levels {
		require.Equal(t, level, lm.Level)
		require.Equal(t, rs.current.NumFiles(level), lm.Tables, "L%d", level)
		require.Equal(t, rs.current.LevelSize(level), lm.Bytes, "L%d", level)
		tables += lm.Tables
	}
	require.Positive(t, tables)
	require.Equal(t, tables, m.Total().Tables)
	require.Positive(t, m.ReadAmp())

	require.NotNil(t, m.MemTables)
	require.GreaterOrEqual(t, m.MemTables.Count, 1)
	require.Equal(t, int64(256<<10), m.BlockCache.Capacity)
	require.Positive(t, m.BlockCache.Hits+m.BlockCache.Misses)
	require.Positive(t, m.TableCache.Open)
	require.Zero(t, m.TableCache.Capacity, "unbounded")
	require.GreaterOrEqual(t, m.WAL.Files, 1)
	require.NotNil(t, m.Compactions)
	require.NotNil(t, m.WriteStalls)
	require.Contains(t, m.String(), "read amp ")

	ctx2, cancel := context.WithCancel(ctx)
	cancel()
	_, err = db.Metrics(ctx2)
	require.ErrorIs(t, err, context.Canceled)
}

// TestMetricsCounters: the counters the event call sites keep show up in
// Metrics, by level.
func TestMetricsCounters(t *testing.T) {
	db, _ := openTestDB(t, nil)
	ctx := context.Background()
	out := TableInfo{FileNum: 100, Level: 0, Size: 4000}
	db.notifyFlushBegin(FlushInfo{})
	db.notifyFlushEnd(FlushInfo{Output: &out})
	comp := CompactionInfo{Level: 0, OutputLevel: 1,
		Inputs:  []TableInfo{{Level: 0, Size: 4000}, {Level: 1, Size: 6000}},
		Outputs: []TableInfo{{Level: 1, Size: 5000}, {Level: 1, Size: 4500}}}
	db.notifyCompactionBegin(comp)
	m, err := db.Metrics(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, m.Compactions.InProgress)
	db.notifyCompactionEnd(comp)
	db.notifyCompactionBegin(CompactionInfo{})
	db.notifyCompactionEnd(CompactionInfo{Err: context.Canceled}) // a failure moves no bytes
	db.notifyCompactionBegin(CompactionInfo{})
	db.notifyCompactionEnd(CompactionInfo{Level: 1, OutputLevel: 2, TrivialMove: true,
		Inputs: []TableInfo{{Level: 1, Size: 777}}})
	db.notifyStallBegin("x")
	db.notifyStallEnd("x", 3*time.Millisecond)

	m, err = db.Metrics(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(4000), m.Levels[0].BytesFlushed)
	require.Equal(t, uint64(4000), m.Levels[0].BytesRead)
	require.Equal(t, uint64(6000), m.Levels[1].BytesRead, "a trivial move reads nothing")
	require.Equal(t, uint64(9500), m.Levels[1].BytesWritten)
	require.Zero(t, m.Levels[2].BytesWritten)
	require.Equal(t, 0, m.Compactions.InProgress)
	require.Equal(t, uint64(2), m.Compactions.Done)
	require.Equal(t, uint64(1), m.Flushes.Done)
	require.InDelta(t, (4000.0+9500)/4000, m.WriteAmp(), 1e-9)
	require.Equal(t, uint64(1), m.WriteStalls.Count)
	require.Equal(t, 3*time.Millisecond, m.WriteStalls.Duration)
	require.Zero(t, m.WriteStalls.Active)
}

func TestPendingBytes(t *testing.T) {
	opts := compact.Options{L0CompactionTrigger: 4, MaxBytesForLevelBase: 1000, LevelMultiplier: 10}.WithDefaults()
	for _, tc := range []struct {
		level, tables int
		bytes, want   uint64
	}{
		{0, 3, 5000, 0},
		{0, 4, 5000, 5000},
		{1, 9, 900, 0},
		{1, 9, 1500, 500},
		{2, 9, 10500, 500},
		{manifest.NumLevels - 1, 100, 1 << 40, 0},
	} {
		require.Equal(t, tc.want, pendingBytes(tc.level, tc.tables, tc.bytes, opts), "%+v", tc)
	}
}

func TestMetricsClosed(t *testing.T) {
	db, _ := openTestDB(t, nil)
	require.NoError(t, db.Close())
	_, err := db.Metrics(context.Background())
	require.ErrorIs(t, err, ErrClosed)
}

// TestMetricsThroughDriver: the engine's connection reports Metrics to the
// façade.
func TestMetricsThroughDriver(t *testing.T) {
	db := driver.OpenDB(NewConnector(MemoryPath, nil))
	defer db.Close()
	ctx := context.Background()
	require.NoError(t, db.Put(ctx, []byte("k"), []byte("v")))
	require.NoError(t, db.Flush(ctx))
	m, err := db.Metrics(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, m.Levels[0].Tables+m.Levels[6].Tables)
	require.Contains(t, m.String(), "level | tables")
}

// TestMetricsRateLimiter: a limiter that counts by priority shows in
// Metrics, one entry per charged priority; without a limiter there is none.
func TestMetricsRateLimiter(t *testing.T) {
	ctx := context.Background()
	db, _ := openTestDB(t, nil)
	m, err := db.Metrics(ctx)
	require.NoError(t, err)
	require.Nil(t, m.RateLimiter)

	lim := ratelimit.NewGeneric(1<<30, 0, 0, ratelimit.ModeAll)
	opts := smallOptions(nil)
	opts.RateLimiter = lim
	db, _ = openTestDB(t, opts)
	for i := range 100 {
		require.NoError(t, db.Put(ctx, key(i), []byte("value")))
	}
	require.NoError(t, db.Flush(ctx))
	low := ioctx.WithReadOptions(ctx, ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityLow, DontFillCache: true})
	require.NoError(t, db.VerifyChecksum(low))

	m, err = db.Metrics(ctx)
	require.NoError(t, err)
	require.NotNil(t, m.RateLimiter)
	require.Len(t, m.RateLimiter.ByPriority, 4)
	byPri := map[ioctx.Priority]driver.RateLimiterPriorityMetrics{}
	for _, p := range m.RateLimiter.ByPriority {
		byPri[p.Priority] = p
	}
	require.Equal(t, lim.TotalBytesThrough(ioctx.PriorityLow), byPri[ioctx.PriorityLow].Bytes)
	require.Positive(t, byPri[ioctx.PriorityLow].Bytes, "the verification's reads were charged at Low")
	require.Equal(t, lim.TotalRequests(ioctx.PriorityUser), byPri[ioctx.PriorityUser].Requests)
	require.Contains(t, m.String(), "rate limiter: Low ")
}
