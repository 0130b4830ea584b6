package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

// TestPerfContextMatchesStatistics: what a request's PerfContext and its
// tag count is what the database's statistics count for that request, as
// their docs say: for Get, MultiGet (sync and AsyncIO) and an iterator,
// with index and filter blocks in the cache or held by the tables, on a
// cold cache and then a warm one. The database is otherwise idle, so the
// tickers' deltas are the request's. (Opening a table loads its index and
// filter into the cache, so "cold" is cold for data blocks only.)
func TestPerfContextMatchesStatistics(t *testing.T) {
	const n = 3000
	reads := []struct {
		name string
		ro   ioctx.ReadOptions
		read func(t *testing.T, db *database, ctx context.Context)
		// point reads consult tables and their filters; scans do not
		point bool
	}{
		{name: "get", point: true, read: func(t *testing.T, db *database, ctx context.Context) {
			for i := 0; i < n; i += 97 {
				_, err := db.Get(ctx, key(i))
				require.NoError(t, err)
			}
			_, err := db.Get(ctx, []byte("key-absent"))
			require.ErrorIs(t, err, ErrNotFound)
		}},
		{name: "multiget", point: true, read: multiGetSome},
		{name: "multiget-async", point: true, ro: ioctx.ReadOptions{AsyncIO: true}, read: multiGetSome},
		{name: "iterator", read: scanEvery},
		{name: "iterator-async", ro: ioctx.ReadOptions{AsyncIO: true}, read: scanEvery},
	}
	for _, rd := range reads {
		for _, cacheMeta := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/cache_index_and_filter_blocks=%t", rd.name, cacheMeta), func(t *testing.T) {
				opts := smallOptions(nil)
				opts.BlockCacheSize = 16 << 20 // warm stays warm
				// The newer writes below make one L0 table, whatever a
				// memtable entry's overhead: two would stay above the L0
				// trigger with auto compactions off, never idle.
				opts.WriteBufferSize = 256 << 10
				opts.CacheIndexAndFilterBlocks = cacheMeta
				opts.DisableAutoCompactions = true
				st := statistics.New(statistics.LevelAll)
				opts.Statistics = st
				db, _ := openTestDB(t, opts)
				ctx := context.Background()
				rng := rand.New(rand.NewPCG(11, 12))
				for i := range n {
					require.NoError(t, db.Put(ctx, key(i), value(rng, 100)))
				}
				require.NoError(t, db.Flush(ctx))
				require.NoError(t, db.Compact(ctx, nil, nil))
				// A newer table over some of the keys, so that reads
				// consult an L0 table before the bottom level's.
				for i := 0; i < n; i += 7 {
					require.NoError(t, db.Put(ctx, key(i), value(rng, 100)))
				}
				require.NoError(t, db.Flush(ctx))
				require.Eventually(t, func() bool { return backgroundIdle(db) }, 2*time.Minute, 5*time.Millisecond)
				m, err := db.Metrics(ctx)
				require.NoError(t, err)
				require.Greater(t, m.Levels[len(m.Levels)-1].Tables, 1, "AsyncIO needs several tables in a level")

				tag := testTag(t, "engine-test-perfstats", ioctx.TagOptions{})
				for _, phase := range []string{"cold", "warm"} {
					perf := &ioctx.PerfContext{}
					ro := rd.ro
					ro.Tag, ro.Perf = tag, perf
					before := tickerSnapshot(st, tag)
					rd.read(t, db, ioctx.WithReadOptions(ctx, ro))
					d := tickerSnapshot(st, tag).minus(before)
					c := perf.Counts()
					msg := fmt.Sprintf("%s: perf %s; statistics delta %+v", phase, c, d)

					require.Equal(t, d.hit, c.BlockCacheHits, msg)
					require.Equal(t, d.miss, c.BlockCacheMisses, msg)
					require.Equal(t, d.indexHit, c.BlockCacheIndexHits, msg)
					require.Equal(t, d.indexMiss, c.BlockCacheIndexMisses, msg)
					require.Equal(t, d.filterHit, c.BlockCacheFilterHits, msg)
					require.Equal(t, d.filterMiss, c.BlockCacheFilterMisses, msg)
					require.Equal(t, d.dataHit, d.tagHit, "the tag's hits are the data blocks'; "+msg)
					require.Equal(t, d.dataMiss, d.tagMiss, "the tag's misses are the data blocks'; "+msg)
					require.Equal(t, c.BlockCacheHits-c.BlockCacheIndexHits-c.BlockCacheFilterHits, d.tagHit, msg)
					require.Equal(t, c.BlockCacheMisses-c.BlockCacheIndexMisses-c.BlockCacheFilterMisses, d.tagMiss, msg)
					if !cacheMeta {
						require.Zero(t, c.BlockCacheIndexHits+c.BlockCacheIndexMisses+c.BlockCacheFilterHits+c.BlockCacheFilterMisses, msg)
					}

					// Every miss was read from the file, by this request.
					require.Equal(t, c.BlockCacheMisses, c.BlocksRead, msg)
					require.LessOrEqual(t, c.BlockReadBytes, c.FileReadBytes, msg)
					require.Equal(t, d.tagBytes, c.FileReadBytes, msg)
					require.Equal(t, d.levelBytes, c.FileReadBytes, msg)
					if phase == "cold" {
						require.Positive(t, c.BlocksRead, msg)
						require.Positive(t, c.BlockReadBytes, msg)
					} else {
						require.Zero(t, c.BlockCacheMisses, msg)
						require.Zero(t, c.FileReads, msg)
					}

					if rd.point {
						require.Equal(t, d.bloomUseful, c.FilterChecks-c.FilterHits, "skipped by the filter; "+msg)
						require.Equal(t, d.bloomPositive, c.FilterHits, msg)
						require.Equal(t, c.FilterChecks, c.TablesConsulted, "every table has a filter; "+msg)
						require.Positive(t, c.FilterChecks-c.FilterHits, msg)
					} else {
						require.Zero(t, c.TablesConsulted+c.FilterChecks, msg)
					}
				}
			})
		}
	}
}

// scanEvery reads every key with an iterator.
func scanEvery(t *testing.T, db *database, ctx context.Context) {
	it, err := db.NewIterator(ctx, nil)
	require.NoError(t, err)
	got := 0
	for ok := it.First(); ok; ok = it.Next() {
		got++
	}
	require.NoError(t, it.Close())
	require.Equal(t, 3000, got)
}

// multiGetSome reads every 97th key and one absent key in one MultiGet.
func multiGetSome(t *testing.T, db *database, ctx context.Context) {
	var keys [][]byte
	for i := 0; i < 3000; i += 97 {
		keys = append(keys, key(i))
	}
	keys = append(keys, []byte("key-absent"))
	vals, err := db.MultiGet(ctx, keys)
	require.NoError(t, err)
	require.Len(t, vals, len(keys))
	require.NotNil(t, vals[0])
}

// tickers are the statistics a PerfContext and a tag are compared with.
type tickers struct {
	hit, miss, indexHit, indexMiss, filterHit, filterMiss uint64
	dataHit, dataMiss, tagHit, tagMiss                    uint64
	tagBytes, levelBytes, bloomUseful, bloomPositive      uint64
}

func tickerSnapshot(st *statistics.Statistics, tag ioctx.Tag) tickers {
	ts := st.Tag(tag.RocksDBValue(), tag.String())
	return tickers{
		hit:           st.TickerCount(statistics.BlockCacheHit),
		miss:          st.TickerCount(statistics.BlockCacheMiss),
		indexHit:      st.TickerCount(statistics.BlockCacheIndexHit),
		indexMiss:     st.TickerCount(statistics.BlockCacheIndexMiss),
		filterHit:     st.TickerCount(statistics.BlockCacheFilterHit),
		filterMiss:    st.TickerCount(statistics.BlockCacheFilterMiss),
		dataHit:       st.TickerCount(statistics.BlockCacheDataHit),
		dataMiss:      st.TickerCount(statistics.BlockCacheDataMiss),
		tagHit:        ts.TickerCount(statistics.TagBlockCacheHit),
		tagMiss:       ts.TickerCount(statistics.TagBlockCacheMiss),
		tagBytes:      ts.TickerCount(statistics.TagBytesRead),
		levelBytes:    st.TickerCount(statistics.LastLevelReadBytes) + st.TickerCount(statistics.NonLastLevelReadBytes),
		bloomUseful:   st.TickerCount(statistics.BloomFilterUseful),
		bloomPositive: st.TickerCount(statistics.BloomFilterFullPositive),
	}
}

func (a tickers) minus(b tickers) tickers {
	return tickers{
		a.hit - b.hit, a.miss - b.miss, a.indexHit - b.indexHit, a.indexMiss - b.indexMiss,
		a.filterHit - b.filterHit, a.filterMiss - b.filterMiss, a.dataHit - b.dataHit, a.dataMiss - b.dataMiss,
		a.tagHit - b.tagHit, a.tagMiss - b.tagMiss, a.tagBytes - b.tagBytes, a.levelBytes - b.levelBytes,
		a.bloomUseful - b.bloomUseful, a.bloomPositive - b.bloomPositive,
	}
}
