package readpath

import (
	"context"
	"fmt"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/bloom"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// statsLSM is two tables with a block cache, L0 [b, h] and L1 [a, i], each
// one data block, whose readers record into tableStats and whose View into
// viewStats (one Statistics, or two).
func statsLSM(t *testing.T, tableStats, viewStats *statistics.Statistics) (*View, *testSource) {
	fs := vfs.NewMem()
	src := newTestSource(t, fs, cache.New(1<<20), tableStats)
	opts := sstable.WriterOptions{BloomBitsPerKey: 10, Checksum: checksum.CRC32C, Compression: compress.Snappy}
	vers := &manifest.Version{}
	for i, tf := range []testFile{
		{level: 0, kvs: []string{"b@20=b20", "d@21=d21", "f@22=f22", "h@23=h23"}},
		{level: 1, kvs: []string{"a@10=a10", "c@11=c11", "e@12=e12", "g@13=g13", "i@14=i14"}},
	} {
		var kvs []tableKV
		for _, s := range tf.kvs {
			k, v := parseKV(t, s)
			kvs = append(kvs, tableKV{k: k, v: v})
		}
		vers.Levels[tf.level] = append(vers.Levels[tf.level], writeTable(t, fs, manifest.FileNum(i+1), opts, kvs))
	}
	src.expectLevels(vers)
	return &View{Version: vers, Tables: src, Stats: viewStats}, src
}

// requireFilter checks a premise of the expected counts: whether table f's
// bloom filter lets key through.
func requireFilter(t *testing.T, v *View, src *testSource, level int, key string, want bool) {
	f := v.Version.Levels[level][0]
	ref, err := src.Acquire(context.Background(), readEnv(), f, level)
	require.NoError(t, err)
	defer ref.Release()
	require.Equal(t, want, ref.Reader.MayContain(bloom.Hash([]byte(key))), "filter of L%d for %q", level, key)
}

// tableTickers are the tickers a table lookup counts in
// statistics.TableTicks for Get to record.
var tableTickers = []statistics.Ticker{
	statistics.BloomFilterUseful, statistics.BloomFilterFullPositive, statistics.BloomFilterFullTruePositive,
	statistics.BlockCacheHit, statistics.BlockCacheDataHit, statistics.BlockCacheBytesRead,
	statistics.BlockCacheMiss, statistics.BlockCacheDataMiss,
}

// getStatsCase is one Get of TestGetTableTickers and the tickers it
// records where tickers are recorded. "blocklen" in a BlockCacheBytesRead
// count stands for the length of the block found, learnt from
// BlockCacheBytesWrite when it was loaded.
type getStatsCase struct {
	key  string
	want string // "" = not found
	// tables are the tickers the table lookups record, the Get's own
	// (NumberKeysRead, ...) the others.
	tables map[statistics.Ticker]uint64
	get    map[statistics.Ticker]uint64
	// hitBlockOf is the level of the table whose cached block is read
	// (BlockCacheBytesRead is its length), -1 for none; loadsBlockOf the
	// level of the table whose block is loaded into the cache, -1 for none.
	hitBlockOf, loadsBlockOf int
}

// getStatsCases run in order: the first Get of a table's block loads it,
// the next ones find it cached. "c" and "ca" are ruled out by L0's filter,
// "ca" by L1's too (requireFilter checks it).
var getStatsCases = []getStatsCase{
	{key: "d", want: "d21", hitBlockOf: -1, loadsBlockOf: 0, tables: map[statistics.Ticker]uint64{
		statistics.BloomFilterFullPositive: 1, statistics.BlockCacheMiss: 1, statistics.BlockCacheDataMiss: 1,
		statistics.BloomFilterFullTruePositive: 1,
	}, get: map[statistics.Ticker]uint64{statistics.GetHitL0: 1, statistics.BytesRead: 3}},
	{key: "d", want: "d21", hitBlockOf: 0, loadsBlockOf: -1, tables: map[statistics.Ticker]uint64{
		statistics.BloomFilterFullPositive: 1, statistics.BlockCacheHit: 1, statistics.BlockCacheDataHit: 1,
		statistics.BloomFilterFullTruePositive: 1,
	}, get: map[statistics.Ticker]uint64{statistics.GetHitL0: 1, statistics.BytesRead: 3}},
	{key: "c", want: "c11", hitBlockOf: -1, loadsBlockOf: 1, tables: map[statistics.Ticker]uint64{
		statistics.BloomFilterUseful:       1, // L0
		statistics.BloomFilterFullPositive: 1, statistics.BlockCacheMiss: 1, statistics.BlockCacheDataMiss: 1,
		statistics.BloomFilterFullTruePositive: 1,
	}, get: map[statistics.Ticker]uint64{statistics.GetHitL1: 1, statistics.BytesRead: 3}},
	{key: "c", want: "c11", hitBlockOf: 1, loadsBlockOf: -1, tables: map[statistics.Ticker]uint64{
		statistics.BloomFilterUseful:       1, // L0
		statistics.BloomFilterFullPositive: 1, statistics.BlockCacheHit: 1, statistics.BlockCacheDataHit: 1,
		statistics.BloomFilterFullTruePositive: 1,
	}, get: map[statistics.Ticker]uint64{statistics.GetHitL1: 1, statistics.BytesRead: 3}},
	{key: "ca", hitBlockOf: -1, loadsBlockOf: -1, tables: map[statistics.Ticker]uint64{statistics.BloomFilterUseful: 2}},
	// A key the filter lets through (it is in the table) but at a
	// sequence number above the Get's, past the table's last entry: a
	// positive, not a true one, and no block read; then L1's filter rules
	// it out.
	{key: "h", hitBlockOf: -1, loadsBlockOf: -1, tables: map[statistics.Ticker]uint64{
		statistics.BloomFilterFullPositive: 1, statistics.BloomFilterUseful: 1,
	}},
}

// getStatsSeq is the sequence number of the Gets of getStatsCases: "h" at
// 19 sees nothing of L0's h@23.
func getStatsSeq(key string) base.SeqNum {
	if key == "h" {
		return 19
	}
	return 100
}

// TestGetTableTickers: a Get through tables records exactly the tickers
// its table lookups recorded one RecordTick at a time before they were
// counted in statistics.TableTicks and recorded with the Get's own, at
// every level, whether the tables record into the View's Statistics or
// into one of their own.
func TestGetTableTickers(t *testing.T) {
	ctx := context.Background()
	for l := statistics.LevelDisableAll; l <= statistics.LevelAll; l++ {
		for _, shared := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/shared=%t", l, shared), func(t *testing.T) {
				viewStats := statistics.New(l)
				tableStats := viewStats
				if !shared {
					tableStats = statistics.New(l)
				}
				v, src := statsLSM(t, tableStats, viewStats)
				requireFilter(t, v, src, 0, "c", false)
				requireFilter(t, v, src, 0, "ca", false)
				requireFilter(t, v, src, 1, "ca", false)
				requireFilter(t, v, src, 1, "h", false)
				recording := l >= statistics.LevelExceptHistogramOrTimers
				blockLen := map[int]uint64{}
				for i, tc := range getStatsCases {
					tb, vb := tableStats.Snapshot(), viewStats.Snapshot()
					timer := viewStats.StartGet()
					val, err := Get(ctx, v, readEnv(), []byte(tc.key), getStatsSeq(tc.key), &timer)
					if tc.want == "" {
						require.ErrorIs(t, err, base.ErrNotFound, "case %d", i)
					} else {
						require.NoError(t, err, "case %d", i)
						require.Equal(t, tc.want, string(val.Data), "case %d", i)
					}
					val.Release()
					td, vd := tableStats.Snapshot().Sub(tb), viewStats.Snapshot().Sub(vb)
					if !shared {
						for _, tk := range tableTickers {
							require.Zero(t, vd[tk], "case %d: %s in the View's Statistics", i, tk)
						}
					}
					if recording && tc.loadsBlockOf >= 0 {
						// Its length is what a later hit reads.
						blockLen[tc.loadsBlockOf] = td[statistics.BlockCacheBytesWrite]
						require.NotZero(t, td[statistics.BlockCacheBytesWrite])
					}
					for _, tk := range tableTickers {
						want := tc.tables[tk]
						if tk == statistics.BlockCacheBytesRead && tc.hitBlockOf >= 0 {
							want = blockLen[tc.hitBlockOf]
						}
						if !recording {
							want = 0
						}
						require.Equal(t, want, td[tk], "case %d (%s): %s", i, tc.key, tk)
					}
					getTickers := []statistics.Ticker{statistics.NumberKeysRead, statistics.MemtableMiss,
						statistics.GetHitL0, statistics.GetHitL1, statistics.GetHitL2AndUp, statistics.BytesRead}
					for _, tk := range getTickers {
						want := tc.get[tk]
						if tk == statistics.NumberKeysRead || tk == statistics.MemtableMiss {
							want = 1
						}
						if !recording {
							want = 0
						}
						require.Equal(t, want, vd[tk], "case %d (%s): %s", i, tc.key, tk)
					}
				}
			})
		}
	}
}
