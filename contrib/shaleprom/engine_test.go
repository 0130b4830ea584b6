package shaleprom

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/shaledb/shale/driver"
	_ "github.com/shaledb/shale/engine" // registers the "shale" driver
	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

// useDB writes keys, flushes them to tables, compacts them and reads them
// back through every read API, so every per-activity file-read histogram but
// DB open's gets samples.
func useDB(t *testing.T, db *driver.DB) {
	t.Helper()
	ctx := context.Background()
	var keys [][]byte
	for i := range 200 {
		k := fmt.Appendf(nil, "key%04d", i)
		keys = append(keys, k)
		require.NoError(t, db.Put(ctx, k, fmt.Appendf(nil, "value%d", i)))
	}
	require.NoError(t, db.Flush(ctx))
	// A second table over the same keys, and a compaction that reads both.
	for _, k := range keys[:100] {
		require.NoError(t, db.Put(ctx, k, []byte("again")))
	}
	require.NoError(t, db.Flush(ctx))
	require.NoError(t, db.Compact(ctx, nil, nil))
	for _, k := range keys[:20] {
		_, err := db.Get(ctx, k)
		require.NoError(t, err)
	}
	_, err := db.MultiGet(ctx, keys[50:60])
	require.NoError(t, err)
	it, err := db.NewIterator(ctx, nil)
	require.NoError(t, err)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	require.NoError(t, it.Close())
	require.Equal(t, len(keys), n)
	require.NoError(t, db.VerifyChecksum(ctx))
	require.NoError(t, db.VerifyFileChecksums(ctx))
}

// serve scrapes a promhttp server of the collector of db once.
func serveAndScrape(t *testing.T, db *driver.DB) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(db, nil))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer srv.Close()
	return scrape(t, srv.URL)
}

func histCount(mfs map[string]*dto.MetricFamily, name string, labels ...string) (uint64, bool) {
	m := metric(mfs, name, labels...)
	return m.GetHistogram().GetSampleCount(), m != nil
}

// TestEngine exports a real database's statistics: at stats_level=all every
// API's file reads land in its activity's series; at the default level the
// user-read activities are absent and flush's is present.
func TestEngine(t *testing.T) {
	dsn := t.TempDir() + "?stats_level=all&block_cache_size=0"
	db, err := driver.Open("shale", dsn)
	require.NoError(t, err)
	useDB(t, db)
	require.NoError(t, db.Close())
	// Reopened, the database reads its tables' metadata: activity db_open.
	db, err = driver.Open("shale", dsn)
	require.NoError(t, err)
	defer db.Close()
	useDB(t, db)
	mfs := serveAndScrape(t, db)

	require.Equal(t, 5.0, metric(mfs, levelFamily).GetGauge().GetValue())
	var activities uint64
	for a := range reverse(fileReadActivity) {
		n, ok := histCount(mfs, fileReadFamily, activityLabel, a)
		require.True(t, ok, "activity %s exported", a)
		require.Positive(t, n, "shale_file_read_seconds_count{activity=%q}", a)
		activities += n
	}
	sst, _ := histCount(mfs, "shale_sst_read_seconds")
	require.GreaterOrEqual(t, sst, activities, "the aggregate counts every activity's reads")
	get, _ := histCount(mfs, "shale_db_get_seconds")
	require.Equal(t, uint64(20), get)
	require.Equal(t, 300.0, metric(mfs, "shale_keys_written_total").GetCounter().GetValue())
	require.Positive(t, metric(mfs, "shale_read_bytes_total").GetCounter().GetValue())
	require.NotNil(t, metric(mfs, "shale_db_mutex_wait_seconds_total"), "a LevelAll ticker")

	def, err := driver.Open("shale", t.TempDir())
	require.NoError(t, err)
	defer def.Close()
	useDB(t, def)
	mfs = serveAndScrape(t, def)
	require.Equal(t, 3.0, metric(mfs, levelFamily).GetGauge().GetValue())
	n, ok := histCount(mfs, fileReadFamily, activityLabel, "flush")
	require.True(t, ok)
	require.Positive(t, n)
	_, ok = histCount(mfs, fileReadFamily, activityLabel, "get")
	require.False(t, ok, "the user-read activities are gated off at the default level")
	require.Nil(t, metric(mfs, "shale_db_mutex_wait_seconds_total"))
}

// reverse maps the activity label values to their histograms.
func reverse(m map[statistics.Histogram]string) map[string]statistics.Histogram {
	r := make(map[string]statistics.Histogram, len(m))
	for h, a := range m {
		r[a] = h
	}
	return r
}
