package sstable

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/bloom"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

// mixedBatch returns a sorted batch of distinct keys: present keys, absent
// ones (between present keys, below and above the table), and runs of
// neighbours that share a block; and, as warm, some of the batch's keys
// whose blocks a Get caches first, so that the batch mixes cached and
// uncached blocks.
func mixedBatch(rng *rand.Rand, es []entry) (batch []MultiGetKey, warm [][]byte) {
	seen := map[string]bool{}
	add := func(k []byte, seq base.SeqNum) {
		if !seen[string(k)] {
			seen[string(k)] = true
			batch = append(batch, MultiGetKey{Key: k, Hash: bloom.Hash(k), Seq: seq})
		}
	}
	for range 4 + rng.IntN(20) {
		i := rng.IntN(len(es))
		seq := base.MaxSeqNum
		if rng.IntN(4) == 0 {
			seq = base.SeqNum(rng.IntN(1100))
		}
		switch rng.IntN(4) {
		case 0: // a run of neighbours, in one block or two
			for j := i; j < min(len(es), i+2+rng.IntN(4)); j++ {
				add(es[j].key.UserKey, seq)
			}
		case 1: // an absent key
			add(randomUserKey(rng, es), seq)
		default:
			add(es[i].key.UserKey, seq)
		}
	}
	if rng.IntN(3) == 0 {
		add([]byte("a"), base.MaxSeqNum)   // below the table
		add([]byte("zzz"), base.MaxSeqNum) // above it
	}
	slices.SortFunc(batch, func(a, b MultiGetKey) int { return bytes.Compare(a.Key, b.Key) })
	for _, k := range batch {
		if rng.IntN(2) == 0 {
			warm = append(warm, k.Key)
		}
	}
	return batch, warm
}

// TestMultiGetMixed runs MultiGets whose batches mix found and absent keys,
// cached and uncached blocks and keys sharing blocks, over plain,
// uncompressed, unfiltered, partitioned and damaged tables. Each key's
// result must be Get's (a damaged block's keys fail with a corruption that
// names the file and offset), and the bloom tickers, counted per batch and
// recorded once, must add up as Get's per key do.
func TestMultiGetMixed(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(51, 52)), 1500, 60)
	for _, tc := range []struct {
		name      string
		opts      WriterOptions
		cacheMeta bool
	}{
		{"snappy", WriterOptions{BlockSize: 512, BloomBitsPerKey: 10, Compression: compress.Snappy, Checksum: checksum.CRC32C}, false},
		{"uncompressed", WriterOptions{BlockSize: 512, BloomBitsPerKey: 10, Checksum: checksum.XXHash64}, false},
		{"nofilter", WriterOptions{BlockSize: 512, Compression: compress.Snappy, Checksum: checksum.CRC32C}, false},
		{"partitioned", WriterOptions{BlockSize: 256, BloomBitsPerKey: 10, Compression: compress.Snappy,
			Checksum: checksum.XXHash64, IndexPartitionSize: 128}, true},
	} {
		data := buildTable(t, tc.opts, es)
		dataEnd := openTable(t, data, openConfig{}).dataEnd
		for _, damaged := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/damaged=%t", tc.name, damaged), func(t *testing.T) {
				file := data
				if damaged {
					file = bytes.Clone(data)
					for _, off := range []uint64{dataEnd / 3, 2 * dataEnd / 3} {
						file[off] ^= 0x40
					}
				}
				ctx := context.Background()
				rng := rand.New(rand.NewPCG(53, 54))
				var mixed, failedKeys int
				for range 30 {
					batch, warm := mixedBatch(rng, es)
					st := statistics.New(statistics.LevelAll)
					r := openTable(t, file, openConfig{cache: cache.New(4 << 20), stats: st, cacheMeta: tc.cacheMeta})
					for _, k := range warm {
						if _, _, _, pin, err := r.Get(ctx, verifyEnv, k, base.MaxSeqNum); err == nil {
							pin.Release()
						}
					}
					before := st.TickerMap()
					keys := slices.Clone(batch)
					require.NoError(t, r.MultiGet(ctx, verifyEnv, keys))
					ticks := tickerDiff(before, st.TickerMap())
					if ticks[statistics.BlockCacheDataHit.String()] > 0 && ticks[statistics.BlockCacheDataMiss.String()] > 0 {
						mixed++
					}
					var found uint64
					for _, k := range keys {
						value, kind, ok, pin, err := r.Get(ctx, verifyEnv, k.Key, k.Seq)
						if k.Err != nil || err != nil {
							require.Error(t, k.Err, "key %q", k.Key)
							require.Error(t, err, "key %q", k.Key)
							require.True(t, base.IsCorruption(k.Err), "%v", k.Err)
							require.Regexp(t, `000001\.sst offset \d+`, k.Err.Error())
							failedKeys++
							continue
						}
						require.Equal(t, ok, k.Found, "key %q", k.Key)
						require.Equal(t, kind, k.Kind, "key %q", k.Key)
						require.True(t, bytes.Equal(value, k.Value), "key %q", k.Key)
						pin.Release()
						if k.Found {
							found++
						}
					}
					if !damaged {
						checkMultiGetResults(t, keys, es)
					}
					if tc.opts.BloomBitsPerKey > 0 {
						require.Equal(t, found, ticks[statistics.BloomFilterFullTruePositive.String()], "true positives")
						require.GreaterOrEqual(t, ticks[statistics.BloomFilterFullPositive.String()], found, "positives")
						require.LessOrEqual(t, ticks[statistics.BloomFilterFullPositive.String()]+
							ticks[statistics.BloomFilterUseful.String()], uint64(len(keys)), "filter checks")
					} else {
						require.Zero(t, ticks[statistics.BloomFilterFullTruePositive.String()])
					}
					releaseKeys(keys)
				}
				require.NotZero(t, mixed, "no batch found some blocks cached and read others")
				require.Equal(t, damaged, failedKeys > 0, "keys failed by damaged blocks")
			})
		}
	}
}

// tickerDiff returns the tickers that changed from before to after, and by
// how much.
func tickerDiff(before, after map[string]uint64) map[string]uint64 {
	d := map[string]uint64{}
	for k, v := range after {
		if v != before[k] {
			d[k] = v - before[k]
		}
	}
	return d
}

// TestMultiGetReadFailure fails the read of the uncached blocks (the
// context is done) of a batch whose other blocks are cached: the call
// fails, and no key keeps a pin (the cache poisons a buffer when its last
// reference goes, in invariants builds).
func TestMultiGetReadFailure(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(55, 56)), 600, 40)
	data := buildTable(t, WriterOptions{BlockSize: 256, BloomBitsPerKey: 10, Compression: compress.Snappy, Checksum: checksum.CRC32C}, es)
	c := cache.New(4 << 20)
	r := openTable(t, data, openConfig{cache: c})
	keys := multiGetKeys(es, base.MaxSeqNum)
	var warmed [][]byte
	for i := 0; i < len(keys); i += 12 {
		value, _, found, pin, err := r.Get(context.Background(), verifyEnv, keys[i].Key, base.MaxSeqNum)
		require.NoError(t, err)
		require.True(t, found)
		warmed = append(warmed, value) // in the cached block
		pin.Release()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := r.MultiGet(ctx, verifyEnv, keys)
	require.ErrorIs(t, err, context.Canceled)
	for _, k := range keys {
		require.False(t, k.Found, "key %q", k.Key)
		require.Equal(t, BlockPin{}, k.Pin, "key %q", k.Key)
	}
	if !invariants.Enabled {
		return
	}
	r.EvictFromCache()
	require.Zero(t, c.Len())
	for _, v := range warmed {
		for _, b := range v {
			if b != 0xDB {
				t.Fatalf("a cached block is still referenced after the failed MultiGet and its file's eviction")
			}
		}
	}
}

// TestMultiGetCachedAllocs: a MultiGet whose blocks are all cached (16 keys
// over distinct blocks and two that share one, statistics on) allocates
// nothing.
func TestMultiGetCachedAllocs(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	es := genEntries(rand.New(rand.NewPCG(57, 58)), 2000, 40)
	data := buildTable(t, WriterOptions{BlockSize: 256, BloomBitsPerKey: 10, Compression: compress.Snappy, Checksum: checksum.XXHash64}, es)
	r := openTable(t, data, openConfig{cache: cache.New(16 << 20), stats: statistics.New(statistics.LevelAll)})
	all := multiGetKeys(es, base.MaxSeqNum)
	var keys []MultiGetKey
	for i := 0; i < len(all) && len(keys) < 16; i += len(all) / 16 {
		keys = append(keys, all[i])
	}
	keys = append(keys, all[len(all)-2], all[len(all)-1])
	ctx := context.Background()
	mget := func() {
		if err := r.MultiGet(ctx, verifyEnv, keys); err != nil {
			t.Fatal(err)
		}
		for i := range keys {
			if !keys[i].Found {
				t.Fatalf("key %q not found", keys[i].Key)
			}
			keys[i].Pin.Release()
		}
	}
	mget() // fill the cache
	require.Zero(t, testing.AllocsPerRun(1000, mget))
}
