package sstable

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/bloom"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/cpubench"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// multiGetKeys returns one MultiGetKey per distinct user key of es, read at
// seq.
func multiGetKeys(es []entry, seq base.SeqNum) []MultiGetKey {
	var keys []MultiGetKey
	for _, e := range es {
		if n := len(keys); n > 0 && bytes.Equal(keys[n-1].Key, e.key.UserKey) {
			continue
		}
		keys = append(keys, MultiGetKey{Key: e.key.UserKey, Hash: bloom.Hash(e.key.UserKey), Seq: seq})
	}
	return keys
}

func releaseKeys(keys []MultiGetKey) {
	for i := range keys {
		if !keys[i].Done {
			keys[i].Pin.Release()
			keys[i].Pin = BlockPin{}
		}
	}
}

// checkMultiGetResults compares the outputs of keys that are not Done with
// the model.
func checkMultiGetResults(t testing.TB, keys []MultiGetKey, es []entry) {
	t.Helper()
	for _, k := range keys {
		if k.Done {
			continue
		}
		require.NoError(t, k.Err, "key %q", k.Key)
		want, ok := modelGet(es, k.Key, k.Seq)
		require.Equal(t, ok, k.Found, "key %q at %d", k.Key, k.Seq)
		if ok {
			require.Equal(t, want.key.Kind(), k.Kind, "key %q at %d", k.Key, k.Seq)
			require.True(t, bytes.Equal(want.value, k.Value), "key %q at %d: %q, want %q", k.Key, k.Seq, k.Value, want.value)
		}
	}
}

// checkMultiGet runs MultiGets of random key sets (present and absent keys,
// random sequence numbers, some keys Done) and compares them with the
// model and with Get.
func checkMultiGet(t *testing.T, r *Reader, env ReadEnv, es []entry, rng *rand.Rand) {
	t.Helper()
	for range 10 {
		var keys []MultiGetKey
		seen := map[string]bool{}
		for range 1 + rng.IntN(40) {
			k := randomUserKey(rng, es)
			if seen[string(k)] {
				continue
			}
			seen[string(k)] = true
			keys = append(keys, MultiGetKey{Key: k, Hash: bloom.Hash(k), Seq: base.SeqNum(rng.IntN(1100))})
		}
		slices.SortFunc(keys, func(a, b MultiGetKey) int { return bytes.Compare(a.Key, b.Key) })
		sentinel := []byte("sentinel")
		for i := range keys {
			if rng.IntN(5) == 0 {
				keys[i].Done, keys[i].Found, keys[i].Value = true, true, sentinel
			} else {
				// Stale outputs that MultiGet must overwrite.
				keys[i].Found, keys[i].Value = true, sentinel
			}
		}
		require.NoError(t, r.MultiGet(context.Background(), env, keys))
		checkMultiGetResults(t, keys, es)
		for _, k := range keys {
			if k.Done {
				require.True(t, k.Found)
				require.Equal(t, sentinel, k.Value, "a Done key is left alone")
				continue
			}
			value, kind, found, pin, err := r.Get(context.Background(), env, k.Key, k.Seq)
			require.NoError(t, err)
			require.Equal(t, found, k.Found)
			require.Equal(t, kind, k.Kind)
			require.True(t, bytes.Equal(value, k.Value))
			pin.Release()
		}
		releaseKeys(keys)
	}
}

// TestMultiGetCoalesces counts the requests of MultiGet's one MultiRead:
// blocks adjacent on disk share a request, and cached blocks are not read.
func TestMultiGetCoalesces(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(31, 32)), 400, 40)
	data := buildTable(t, WriterOptions{BlockSize: 256, Compression: compress.Snappy, Checksum: checksum.XXHash64}, es)
	var mu sync.Mutex
	var reads []errorfs.Op
	c := cache.New(1 << 20)
	r := openTable(t, data, openConfig{cache: c, wrap: func(fs vfs.FS) vfs.FS {
		return errorfs.WrapObserver(fs, func(op errorfs.Op) {
			if op.Kind == errorfs.OpFileRead {
				mu.Lock()
				reads = append(reads, op)
				mu.Unlock()
			}
		})
	}})
	// The first key of each data block.
	var firsts [][]byte
	it, err := r.NewIter(context.Background(), ReadEnv{VerifyChecksums: true}, nil, nil)
	require.NoError(t, err)
	for it.ib = 0; it.ib < r.index.len(); it.ib++ {
		require.True(t, it.loadBlock())
		require.True(t, it.data.First())
		firsts = append(firsts, bytes.Clone(it.data.Key()[:len(it.data.Key())-base.TrailerLen]))
	}
	require.NoError(t, it.Close())
	require.Greater(t, len(firsts), 10)

	keysOf := func(blocks ...int) []MultiGetKey {
		var keys []MultiGetKey
		for _, b := range blocks {
			keys = append(keys, MultiGetKey{Key: firsts[b], Hash: bloom.Hash(firsts[b]), Seq: base.MaxSeqNum})
		}
		return keys
	}
	for _, tc := range []struct {
		name     string
		blocks   []int
		env      ReadEnv
		requests int
	}{
		{"one block", []int{3}, ReadEnv{VerifyChecksums: true}, 1},
		{"adjacent blocks", []int{3, 4, 5}, ReadEnv{VerifyChecksums: true}, 1},
		{"two runs", []int{3, 4, 7, 8}, ReadEnv{VerifyChecksums: true}, 2},
		{"three runs", []int{1, 3, 5}, ReadEnv{VerifyChecksums: true}, 3},
		{"fill the cache", []int{2, 3, 9}, verifyEnv, 2},
		{"cached blocks are not read", []int{2, 3, 9}, verifyEnv, 0},
		{"cached block splits a run", []int{8, 9, 10}, verifyEnv, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			reads = nil
			mu.Unlock()
			keys := keysOf(tc.blocks...)
			require.NoError(t, r.MultiGet(context.Background(), tc.env, keys))
			for _, k := range keys {
				require.NoError(t, k.Err)
				require.True(t, k.Found, "%q", k.Key)
			}
			checkMultiGetResults(t, keys, es)
			releaseKeys(keys)
			mu.Lock()
			defer mu.Unlock()
			require.Len(t, reads, tc.requests, "%v", reads)
		})
	}
}

// TestMultiGetSharedBlock checks that several keys of one block each hold a
// reference: the block stays valid until the last pin is released, in any
// order, whether it is cached, owned or in the read buffer.
func TestMultiGetSharedBlock(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(33, 34)), 100, 40)
	for _, comp := range []compress.Type{compress.None, compress.Snappy, compress.Zstd} {
		data := buildTable(t, WriterOptions{BlockSize: 4096, Compression: comp, Checksum: checksum.CRC32C}, es)
		for _, cfg := range []openConfig{{}, {cache: cache.New(1 << 20)}, {cache: cache.New(1 << 20), env: ReadEnv{VerifyChecksums: true}}} {
			t.Run(fmt.Sprintf("%s/%s/fill=%t", comp, cfg, cfg.env.FillCache), func(t *testing.T) {
				r := openTable(t, data, cfg)
				env := cfg.env
				if env == (ReadEnv{}) {
					env = verifyEnv
				}
				keys := multiGetKeys(es, base.MaxSeqNum)
				require.NoError(t, r.MultiGet(context.Background(), env, keys))
				checkMultiGetResults(t, keys, es)
				// Evict, then release in a shuffled order, checking the
				// values of the keys still pinned each time.
				r.EvictFromCache()
				order := rand.New(rand.NewPCG(1, 2)).Perm(len(keys))
				for n, i := range order {
					keys[i].Pin.Release()
					keys[i].Pin = BlockPin{}
					keys[i].Done = true
					if n%10 == 0 {
						checkMultiGetResults(t, keys, es)
					}
				}
			})
		}
	}
}

// TestMultiGetErrors checks per-key and whole-call failures.
func TestMultiGetErrors(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(35, 36)), 300, 40)
	data := buildTable(t, WriterOptions{BlockSize: 256, Checksum: checksum.CRC32C}, es)

	// A corrupt block fails its keys only.
	r0 := openTable(t, data, openConfig{})
	bad := bytes.Clone(data)
	bad[r0.dataEnd/2] ^= 1
	r := openTable(t, bad, openConfig{})
	keys := multiGetKeys(es, base.MaxSeqNum)
	require.NoError(t, r.MultiGet(context.Background(), verifyEnv, keys))
	var failed, ok int
	for _, k := range keys {
		if k.Err != nil {
			require.True(t, base.IsCorruption(k.Err), "%v", k.Err)
			require.Contains(t, k.Err.Error(), "block checksum mismatch")
			require.False(t, k.Found)
			failed++
		} else {
			ok++
		}
	}
	require.NotZero(t, failed)
	require.NotZero(t, ok)
	releaseKeys(keys)

	// A failed read of one request fails the keys it covers. (MultiRead
	// may read requests in parallel: the count is atomic, and which
	// request is the second read is not known.)
	var reads atomic.Int32
	r = openTable(t, data, openConfig{wrap: func(fs vfs.FS) vfs.FS {
		return errorfs.Wrap(fs, errorfs.And(errorfs.OnKind(errorfs.OpFileRead), errorfs.PredicateFunc("2nd data read",
			func(op errorfs.Op) bool {
				if op.Offset >= int64(r0.dataEnd) {
					return false
				}
				return reads.Add(1) == 2
			})))
	}})
	keys = multiGetKeys(es, base.MaxSeqNum)
	// Every other block: separate requests.
	var sparse []MultiGetKey
	for i := 0; i < len(keys); i += 15 {
		sparse = append(sparse, keys[i])
	}
	require.NoError(t, r.MultiGet(context.Background(), verifyEnv, sparse))
	failed = 0
	for _, k := range sparse {
		if k.Err != nil {
			require.ErrorIs(t, k.Err, errorfs.ErrInjected)
			failed++
		}
	}
	require.Equal(t, 1, failed)
	releaseKeys(sparse)

	// Unsorted keys are a bug of the caller.
	if !invariants.Enabled {
		keys = multiGetKeys(es[:10], base.MaxSeqNum)
		keys[0], keys[1] = keys[1], keys[0]
		require.Error(t, r.MultiGet(context.Background(), verifyEnv, keys))
	}
}

// BenchmarkMultiGet measures a MultiGet of 16 keys spread over a table.
func BenchmarkMultiGet(b *testing.B) {
	es := genEntries(rand.New(rand.NewPCG(1, 2)), 20000, 100)
	data := buildTable(b, WriterOptions{BloomBitsPerKey: 10, Compression: compress.Snappy,
		Checksum: checksum.XXHash64}, es)
	all := multiGetKeys(es, base.MaxSeqNum)
	for _, tc := range []struct {
		name  string
		cache *cache.Cache
		env   ReadEnv
	}{
		{"cache=hit", cache.New(64 << 20), verifyEnv},
		{"cache=miss", nil, verifyEnv},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r := openTable(b, data, openConfig{cache: tc.cache})
			rng := rand.New(rand.NewPCG(1, 2))
			keys := make([]MultiGetKey, 16)
			b.ReportAllocs()
			defer cpubench.Start(b)()
			for b.Loop() {
				start := rng.IntN(len(all) - 16*50)
				for i := range keys {
					keys[i] = all[start+i*50]
				}
				if err := r.MultiGet(context.Background(), tc.env, keys); err != nil {
					b.Fatal(err)
				}
				releaseKeys(keys)
			}
		})
	}
}
