package driver

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var updateMetricsGolden = flag.Bool("update-metrics", false, "rewrite testdata/metrics.golden")

// sampleMetrics is a database with tables in L0, L1 and L6, after some
// flushes and compactions.
func sampleMetrics() *Metrics {
	return &Metrics{
		Levels: []LevelMetrics{
			{Level: 0, Tables: 3, Bytes: 3 << 20, Score: 0.75, BytesFlushed: 40 << 20},
			{Level: 1, Tables: 4, Bytes: 9 << 20, Score: 0.9, BytesRead: 30 << 20, BytesWritten: 36 << 20},
			{Level: 2}, {Level: 3}, {Level: 4}, {Level: 5},
			{Level: 6, Tables: 20, Bytes: 300 << 20, BytesRead: 20 << 20, BytesWritten: 24<<20 + 512<<10},
		},
		MemTables:   &MemTableMetrics{Count: 2, Bytes: 1536 << 10},
		BlockCache:  &CacheMetrics{Capacity: 32 << 20, Usage: 12<<20 + 300<<10, Hits: 9500, Misses: 500},
		TableCache:  &TableCacheMetrics{Open: 27},
		Compactions: &CompactionMetrics{InProgress: 1, Done: 12, PendingBytes: 1 << 20},
		Flushes:     &FlushMetrics{Done: 10},
		WAL:         &WALMetrics{Files: 2, Bytes: 700},
		WriteStalls: &WriteStallMetrics{Count: 3, Duration: 1500 * time.Millisecond},
	}
}

// TestMetricsString compares the per-level table with a golden file (run
// with -update-metrics to rewrite it after a deliberate change).
func TestMetricsString(t *testing.T) {
	got := sampleMetrics().String()
	path := filepath.Join("testdata", "metrics.golden")
	if *updateMetricsGolden {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), got)
}

func TestMetricsDerived(t *testing.T) {
	m := sampleMetrics()
	require.Equal(t, 3+1+1, m.ReadAmp(), "three L0 tables, L1, L6")
	tot := m.Total()
	require.Equal(t, 27, tot.Tables)
	require.Equal(t, uint64(312<<20), tot.Bytes)
	// (40 flushed + 60.5 compacted) / 40 flushed.
	require.InDelta(t, (40.0+60.5)/40.0, m.WriteAmp(), 1e-9)
	require.InDelta(t, 0.95, m.BlockCache.HitRate(), 1e-9)

	empty := &Metrics{}
	require.Zero(t, empty.ReadAmp())
	require.Zero(t, empty.WriteAmp())
	require.Equal(t, "", empty.String(), "what a driver does not report is absent")
	require.Zero(t, (&CacheMetrics{}).HitRate())
}

type metricsConn struct {
	*fakeConn
	m *Metrics
}

func (c *metricsConn) Metrics(ctx context.Context) (*Metrics, error) { return c.m, ctx.Err() }

func TestDBMetrics(t *testing.T) {
	db := openFake(t, newFakeConn())
	_, err := db.Metrics(context.Background())
	require.ErrorIs(t, err, ErrNotSupported)
	require.Contains(t, err.Error(), "MetricsReporter")

	want := sampleMetrics()
	db = openFake(t, &metricsConn{fakeConn: newFakeConn(), m: want})
	got, err := db.Metrics(context.Background())
	require.NoError(t, err)
	require.Same(t, want, got)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = db.Metrics(ctx)
	require.ErrorIs(t, err, context.Canceled)

	require.NoError(t, db.Close())
	_, err = db.Metrics(context.Background())
	require.ErrorIs(t, err, ErrClosed)
}
