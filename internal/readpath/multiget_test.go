package readpath

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// mgOutcome is a MultiGet result without its pin, for comparisons.
type mgOutcome struct {
	found bool
	value string
	err   string
}

func outcomes(out []Result) []mgOutcome {
	res := make([]mgOutcome, len(out))
	for i, r := range out {
		res[i] = mgOutcome{found: r.Found, value: string(r.Value.Data)}
		if r.Err != nil {
			res[i].err = r.Err.Error()
		}
	}
	return res
}

func releaseAll(out []Result) {
	for i := range out {
		out[i].Value.Release()
	}
}

func TestMultiGetAgainstModel(t *testing.T) {
	for seed := range seeds(6) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 3))
			cfg := defaultLSMConfig()
			switch seed % 3 {
			case 1:
				cfg.cacheSize = 0
			case 2:
				// Blocks are evicted while a MultiGet reads others into
				// the cache's buffers (sstable's readsIntoCache).
				cfg.cacheSize = 16 << 10
			}
			db := buildLSM(t, rng, cfg)
			ctx := context.Background()
			for range 60 {
				n := 1 + rng.IntN(40)
				keys := make([][]byte, n)
				for i := range keys {
					if i > 0 && rng.IntN(5) == 0 {
						keys[i] = keys[rng.IntN(i)] // a duplicate
					} else {
						keys[i] = db.randomKey(rng, cfg.keySpace)
					}
				}
				seq := db.randomSeq(rng)
				var results [2][]mgOutcome
				for a, async := range []bool{false, true} {
					env := readEnv()
					env.AsyncIO = async
					out := make([]Result, n)
					out[0].Found = true // stale contents are overwritten
					require.NoError(t, MultiGet(ctx, db.view, env, keys, seq, out))
					for i, k := range keys {
						want, ok := db.model.value(string(k), seq)
						require.NoError(t, out[i].Err)
						require.Equal(t, ok, out[i].Found, "key %d %q@%d async=%t", i, k, seq, async)
						require.Equal(t, string(want), string(out[i].Value.Data), "key %d %q@%d", i, k, seq)
					}
					results[a] = outcomes(out)
					// Release in a random order: duplicates share pins.
					for _, i := range rng.Perm(n) {
						out[i].Value.Release()
					}
				}
				require.Equal(t, results[0], results[1], "AsyncIO changes the results")
			}
		})
	}
}

func TestMultiGetTickersAndTables(t *testing.T) {
	v, src := buildHandLSM(t, vfs.NewMem(), handFiles, handMems, sstable.WriterOptions{BloomBitsPerKey: 10})
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async=%t", async), func(t *testing.T) {
			env := readEnv()
			env.AsyncIO = async
			keys := [][]byte{[]byte("f"), []byte("m"), []byte("q"), []byte("c"), []byte("b"), []byte("f"), []byte("e"), []byte("a"), []byte("z")}
			want := []mgOutcome{
				{found: true, value: "f11"}, {found: true, value: "m51"}, {}, {found: true, value: "c40"}, {},
				{found: true, value: "f11"}, {}, {found: true, value: "a20"}, {found: true, value: "z2"},
			}
			src.resetAcquires()
			before := v.Stats.Snapshot()
			out := make([]Result, len(keys))
			require.NoError(t, MultiGet(context.Background(), v, env, keys, 100, out))
			require.Equal(t, want, outcomes(out))
			releaseAll(out)
			delta := v.Stats.Snapshot().Sub(before)
			require.EqualValues(t, 1, delta[statistics.NumberMultiGetCalls])
			require.EqualValues(t, len(keys), delta[statistics.NumberMultiGetKeysRead])
			require.EqualValues(t, 6, delta[statistics.NumberMultiGetKeysFound])
			require.EqualValues(t, 3*5+2, delta[statistics.NumberMultiGetBytesRead])
			// b (memtable tombstone) and m are resolved by the memtables.
			// L0: file 1 [c, e] resolves c and e (tombstone); file 2 [b,
			// d] holds none of the rest. L1: file 3 [a, c] resolves a;
			// file 4 [e, g] is probed for f. L2: file 5 [a, h] resolves f;
			// L3: file 6 [i, z] gets q and z, in one MultiGet.
			for n, w := range map[manifest.FileNum]int{1: 1, 2: 0, 3: 1, 4: 1, 5: 1, 6: 1} {
				require.Equal(t, w, src.acquired(n), "acquires of file %d", n)
			}
		})
	}
}

func TestMultiGetErrors(t *testing.T) {
	v, src := buildHandLSM(t, vfs.NewMem(), handFiles, handMems, sstable.WriterOptions{})
	keys := [][]byte{[]byte("f"), []byte("m"), []byte("g"), []byte("a"), []byte("z")}

	// out of the wrong length
	err := MultiGet(context.Background(), v, readEnv(), keys, 100, make([]Result, 2))
	require.ErrorIs(t, err, base.ErrInvalidArgument)

	// A failed table fails its keys only.
	boom := base.CorruptionErrorf("boom")
	src.failOpen[4] = boom
	for _, async := range []bool{false, true} {
		env := readEnv()
		env.AsyncIO = async
		out := make([]Result, len(keys))
		require.NoError(t, MultiGet(context.Background(), v, env, keys, 100, out))
		require.ErrorIs(t, out[0].Err, boom)
		require.ErrorIs(t, out[2].Err, boom)
		require.Contains(t, out[0].Err.Error(), "000004")
		require.False(t, out[0].Found)
		require.Equal(t, "m51", string(out[1].Value.Data))
		require.Equal(t, "a20", string(out[3].Value.Data))
		require.Equal(t, "z2", string(out[4].Value.Data))
		releaseAll(out)
	}
	delete(src.failOpen, 4)

	// A done context fails the call and every key that needed a table.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := make([]Result, len(keys))
	err = MultiGet(ctx, v, readEnv(), keys, 100, out)
	require.ErrorIs(t, err, context.Canceled)
	for i := range keys {
		if i == 1 {
			require.NoError(t, out[i].Err)
			require.Equal(t, "m51", string(out[i].Value.Data), "resolved by a memtable")
			continue
		}
		require.ErrorIs(t, out[i].Err, context.Canceled, "key %q", keys[i])
	}
	releaseAll(out)

	// Empty input.
	require.NoError(t, MultiGet(context.Background(), v, readEnv(), nil, 100, nil))
}

// cancelSource cancels a context on the n-th Acquire, so a MultiGet is
// stopped half way.
type cancelSource struct {
	TableSource
	n      int
	cancel context.CancelFunc
}

func (c *cancelSource) Acquire(ctx context.Context, env sstable.ReadEnv, meta *manifest.FileMetadata, level int) (TableRef, error) {
	if c.n--; c.n == 0 {
		c.cancel()
	}
	return c.TableSource.Acquire(ctx, env, meta, level)
}

func TestMultiGetCancelledHalfWay(t *testing.T) {
	v, _ := buildHandLSM(t, vfs.NewMem(), handFiles, handMems, sstable.WriterOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	cv := *v
	// The second table (file 3, L1, for "a") cancels: file 1 (L0) has
	// resolved "c" by then; "a", "f" and "z" are left unresolved.
	cv.Tables = &cancelSource{TableSource: v.Tables, n: 2, cancel: cancel}
	keys := [][]byte{[]byte("z"), []byte("c"), []byte("a"), []byte("f")}
	out := make([]Result, len(keys))
	err := MultiGet(ctx, &cv, readEnv(), keys, 100, out)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, "c40", string(out[1].Value.Data))
	require.NoError(t, out[1].Err)
	for _, i := range []int{0, 2, 3} {
		require.ErrorIs(t, out[i].Err, context.Canceled, "key %q", keys[i])
		require.False(t, out[i].Found)
	}
	releaseAll(out)
}
