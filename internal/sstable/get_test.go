package sstable

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/cpubench"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

// TestGetVersions reads a key with many versions, spread over several
// blocks, at every sequence number around them.
func TestGetVersions(t *testing.T) {
	var es []entry
	es = append(es, entry{base.MakeInternalKey([]byte("a"), 5, base.KindSet), []byte("a5")})
	for seq := base.SeqNum(200); seq >= 100; seq -= 2 {
		kind := base.KindSet
		if seq%10 == 0 {
			kind = base.KindDelete
		}
		var value []byte
		if kind == base.KindSet {
			value = fmt.Appendf(nil, "m%d", seq)
		}
		es = append(es, entry{base.MakeInternalKey([]byte("m"), seq, kind), value})
	}
	es = append(es, entry{base.MakeInternalKey([]byte("z"), 1, base.KindSet), []byte("z1")})
	for _, bs := range []int{64, 4096} {
		data := buildTable(t, WriterOptions{BlockSize: bs, BloomBitsPerKey: 10, Checksum: checksum.CRC32C}, es)
		r := openTable(t, data, openConfig{cache: cache.New(1 << 20)})
		if bs == 64 {
			require.Greater(t, r.props.NumDataBlocks, uint64(5), "the versions span blocks")
		}
		for seq := base.SeqNum(0); seq <= 210; seq++ {
			for _, k := range []string{"a", "m", "z", "b", "zz", ""} {
				checkGet(t, r, verifyEnv, es, []byte(k), seq)
			}
		}
		checkGet(t, r, verifyEnv, es, []byte("m"), base.MaxSeqNum+100) // clamped
	}
}

// TestGetPinOwnsBlock checks that a value read without the cache stays valid
// while pinned, even as other Gets run.
func TestGetPinOwnsBlock(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(41, 42)), 300, 50)
	for _, comp := range []compress.Type{compress.None, compress.Snappy, compress.Zstd} {
		data := buildTable(t, WriterOptions{BlockSize: 256, Compression: comp, Checksum: checksum.CRC32C}, es)
		r := openTable(t, data, openConfig{})
		type held struct {
			e     entry
			value []byte
			pin   BlockPin
		}
		var hs []held
		for i := 0; i < len(es); i += 7 {
			e := es[i]
			v, _, found, pin, err := r.Get(context.Background(), verifyEnv, e.key.UserKey, e.key.SeqNum())
			require.NoError(t, err)
			require.True(t, found)
			hs = append(hs, held{e, v, pin})
		}
		for _, h := range hs {
			require.Equal(t, string(h.e.value), string(h.value), "%s", h.e.key)
			h.pin.Release()
		}
	}
}

// TestGetCachedBlockOwnsMemory checks that a block a Get or MultiGet loads
// into the cache, which for an uncompressed block is the buffer it was read
// into (see exchangeBuf), is not overwritten by later reads into the same
// pooled buffers, while pinned and after being evicted and reloaded.
func TestGetCachedBlockOwnsMemory(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(47, 48)), 3000, 100)
	for _, comp := range []compress.Type{compress.None, compress.Snappy, compress.Zstd} {
		t.Run(comp.String(), func(t *testing.T) {
			data := buildTable(t, WriterOptions{BlockSize: 512, Compression: comp, Checksum: checksum.XXHash64}, es)
			// A cache of a few blocks: most Gets load and evict.
			c := cache.New(8 << 10)
			r := openTable(t, data, openConfig{cache: c})
			type held struct {
				e     entry
				value []byte
				pin   BlockPin
			}
			var hs []held
			rng := rand.New(rand.NewPCG(49, 50))
			for range 3000 {
				e := es[rng.IntN(len(es))]
				v, _, found, pin, err := r.Get(context.Background(), verifyEnv, e.key.UserKey, e.key.SeqNum())
				require.NoError(t, err)
				require.True(t, found)
				require.Equal(t, string(e.value), string(v), "%s", e.key)
				if len(hs) < 20 {
					hs = append(hs, held{e, v, pin})
				} else {
					pin.Release()
				}
			}
			// MultiGets of sparse keys: most blocks are alone in their
			// read request, and go to the cache the same way.
			all := multiGetKeys(es, base.MaxSeqNum)
			var heldKeys [][]MultiGetKey
			for range 200 {
				var keys []MultiGetKey
				for i := rng.IntN(40); i < len(all); i += 20 + rng.IntN(40) {
					keys = append(keys, all[i])
				}
				require.NoError(t, r.MultiGet(context.Background(), verifyEnv, keys))
				checkMultiGetResults(t, keys, es)
				if len(heldKeys) < 5 {
					heldKeys = append(heldKeys, keys)
				} else {
					releaseKeys(keys)
				}
			}
			for _, h := range hs {
				require.Equal(t, string(h.e.value), string(h.value), "%s, held across other Gets", h.e.key)
				h.pin.Release()
			}
			for _, keys := range heldKeys {
				checkMultiGetResults(t, keys, es)
				releaseKeys(keys)
			}
			require.LessOrEqual(t, c.Size(), int64(8<<10))
		})
	}
}

// TestGetAllocs checks that a Get whose block is cached allocates nothing,
// found or not, filtered or not.
func TestGetAllocs(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	es := genEntries(rand.New(rand.NewPCG(43, 44)), 2000, 50)
	data := buildTable(t, WriterOptions{BloomBitsPerKey: 10, Compression: compress.Snappy, Checksum: checksum.XXHash64}, es)
	r := openTable(t, data, openConfig{cache: cache.New(16 << 20), stats: statistics.New(statistics.LevelAll)})
	checkGetAllocs(t, r, es)
}

// checkGetAllocs checks that a Get of r, a table of es, allocates nothing
// once its block is cached: found, absent, and filtered out, each in a
// subtest.
func checkGetAllocs(t *testing.T, r *Reader, es []entry) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		key   []byte
		found bool
	}{
		{"found", es[1000].key.UserKey, true},
		{"absent", []byte("key000999x"), false},
		{"filtered", []byte("nothing-like-it"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			get := func() {
				_, _, found, pin, err := r.Get(ctx, verifyEnv, tc.key, base.MaxSeqNum)
				if err != nil || found != tc.found {
					t.Fatalf("Get(%q) = %t, %v", tc.key, found, err)
				}
				pin.Release()
			}
			get() // load the block
			require.Zero(t, testing.AllocsPerRun(1000, get))
		})
	}
}

// TestConcurrentGets runs Gets, iterators and MultiGets on one Reader from
// several goroutines (run with -race).
func TestConcurrentGets(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(45, 46)), 1000, 50)
	for _, tc := range []struct {
		name      string
		partition int
		cacheMeta bool
	}{
		{"flat", 0, false},
		// Index and filter partitions in the small cache too, evicted
		// and reloaded while iterators pin theirs.
		{"partitioned", 256, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := buildTable(t, WriterOptions{BlockSize: 512, BloomBitsPerKey: 10, Compression: compress.Snappy,
				Checksum: checksum.XXHash64, IndexPartitionSize: tc.partition}, es)
			// A small cache, so that blocks are evicted and reloaded meanwhile.
			r := openTable(t, data, openConfig{cache: cache.New(8 << 10), cacheMeta: tc.cacheMeta})
			testConcurrentGets(t, r, es)
		})
	}
}

func testConcurrentGets(t *testing.T, r *Reader, es []entry) {
	done := make(chan error)
	for g := range 4 {
		go func() {
			done <- func() error {
				rng := rand.New(rand.NewPCG(47, uint64(g)))
				env := ReadEnv{VerifyChecksums: true, FillCache: g%2 == 0}
				for range 200 {
					e := es[rng.IntN(len(es))]
					v, _, found, pin, err := r.Get(context.Background(), env, e.key.UserKey, e.key.SeqNum())
					if err != nil {
						return err
					}
					if !found || string(v) != string(e.value) {
						return fmt.Errorf("Get(%s) = %q, %t", e.key, v, found)
					}
					pin.Release()
				}
				it, err := r.NewIter(context.Background(), env, nil, nil)
				if err != nil {
					return err
				}
				got, err := scan(it, g%2 == 1)
				if err != nil {
					return err
				}
				if !sameEntries(es, got) {
					return fmt.Errorf("scan differs")
				}
				if err := it.Close(); err != nil {
					return err
				}
				keys := multiGetKeys(es, base.MaxSeqNum)
				if err := r.MultiGet(context.Background(), env, keys); err != nil {
					return err
				}
				for _, k := range keys {
					want, ok := modelGet(es, k.Key, k.Seq)
					if k.Err != nil || k.Found != ok || string(k.Value) != string(want.value) {
						return fmt.Errorf("MultiGet(%q) = %q, %t, %v", k.Key, k.Value, k.Found, k.Err)
					}
				}
				releaseKeys(keys)
				return nil
			}()
		}()
	}
	for range 4 {
		require.NoError(t, <-done)
	}
}

// BenchmarkGet measures point lookups of present keys: cache=hit finds every
// block in the cache; cache=miss has no cache, so each Get reads (from a
// MemFS), verifies and decompresses its block.
func BenchmarkGet(b *testing.B) {
	es := genEntries(rand.New(rand.NewPCG(1, 2)), 20000, 100)
	data := buildTable(b, WriterOptions{BloomBitsPerKey: 10, Compression: compress.Snappy,
		Checksum: checksum.XXHash64}, es)
	for _, tc := range []struct {
		name  string
		cache *cache.Cache
		mmap  bool
	}{
		{"cache=hit", cache.New(64 << 20), false},
		{"cache=miss", nil, false},
		{"cache=miss/mmap=true", nil, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r := openTable(b, data, openConfig{cache: tc.cache, mmap: tc.mmap})
			rng := rand.New(rand.NewPCG(1, 2))
			keys := make([][]byte, 4096)
			for i := range keys {
				keys[i] = es[rng.IntN(len(es))].key.UserKey
			}
			ctx := context.Background()
			for _, k := range keys { // warm the cache
				_, _, _, pin, _ := r.Get(ctx, verifyEnv, k, base.MaxSeqNum)
				pin.Release()
			}
			b.ReportAllocs()
			defer cpubench.Start(b)()
			loopGets(b, r, verifyEnv, keys)
		})
	}
}

// loopGets is a benchmark's timed loop: Gets with env of keys in turn,
// each of which must be found.
func loopGets(b *testing.B, r *Reader, env ReadEnv, keys [][]byte) {
	ctx := context.Background()
	i := 0
	for b.Loop() {
		_, _, found, pin, err := r.Get(ctx, env, keys[i%len(keys)], base.MaxSeqNum)
		if err != nil || !found {
			b.Fatal(err)
		}
		pin.Release()
		i++
	}
}
