package sstable

import (
	"bytes"
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
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// randomUserKey returns a user key of genEntries' key space (present or
// absent), or one beyond either end.
func randomUserKey(rng *rand.Rand, es []entry) []byte {
	switch rng.IntN(20) {
	case 0:
		return []byte("")
	case 1:
		return []byte("zzz")
	}
	last := es[len(es)-1].key.UserKey
	var maxN int
	fmt.Sscanf(string(last), "key%06d", &maxN)
	return fmt.Appendf(nil, "key%06d", rng.IntN(maxN+3))
}

// randomBounds returns nil bounds or random ones with lower < upper.
func randomBounds(rng *rand.Rand, es []entry) (lower, upper []byte) {
	if rng.IntN(4) != 0 {
		lower = randomUserKey(rng, es)
	}
	if rng.IntN(4) != 0 {
		upper = randomUserKey(rng, es)
	}
	if lower != nil && upper != nil && bytes.Compare(lower, upper) >= 0 {
		lower, upper = upper, append(bytes.Clone(lower), 0)
	}
	return lower, upper
}

// checkIterOps runs random iterator operations under random bounds and
// compares every result with a model: a position in the entries in range.
func checkIterOps(t *testing.T, r *Reader, env ReadEnv, es []entry, rng *rand.Rand, ops int) {
	t.Helper()
	for round := 0; round < 4; round++ {
		lower, upper := randomBounds(rng, es)
		if round == 0 {
			lower, upper = nil, nil
		}
		want := inRange(es, lower, upper)
		it, err := r.NewIter(context.Background(), env, lower, upper)
		require.NoError(t, err)
		pos := -1 // -1: exhausted
		var trace []string
		for range ops {
			var kv *base.InternalKV
			var op string
			switch rng.IntN(6) {
			case 0:
				op, kv = "First", it.First()
				pos = 0
			case 1:
				op, kv = "Last", it.Last()
				pos = len(want) - 1
			case 2:
				k := randomUserKey(rng, es)
				op, kv = fmt.Sprintf("SeekGE(%s)", k), it.SeekGE(k)
				pos = searchGE(want, k)
			case 3:
				k := randomUserKey(rng, es)
				op, kv = fmt.Sprintf("SeekLT(%s)", k), it.SeekLT(k)
				pos = searchGE(want, k)
				pos--
			case 4:
				op, kv = "Next", it.Next()
				if pos >= 0 {
					pos++
				}
			case 5:
				op, kv = "Prev", it.Prev()
				if pos >= 0 {
					pos--
				}
			}
			if pos >= len(want) {
				pos = -1
			}
			trace = append(trace, op)
			require.NoError(t, it.Error(), "bounds [%q, %q) after %v", lower, upper, trace)
			if pos < 0 {
				require.Nil(t, kv, "bounds [%q, %q) after %v", lower, upper, trace)
				continue
			}
			require.NotNil(t, kv, "bounds [%q, %q) after %v: want %s", lower, upper, trace, want[pos].key)
			require.Equal(t, want[pos].key.String(), kv.K.String(), "bounds [%q, %q) after %v", lower, upper, trace)
			require.True(t, bytes.Equal(want[pos].value, kv.V), "bounds [%q, %q) after %v", lower, upper, trace)
		}
		// Full scans within the bounds.
		for _, backward := range []bool{false, true} {
			got, err := scan(it, backward)
			require.NoError(t, err)
			requireSameEntries(t, want, got, "bounds [%q, %q) backward=%t", lower, upper, backward)
		}
		require.NoError(t, it.Close())
	}
}

// TestIterBoundsSkipBlocks checks that bounded iteration does not read the
// data blocks beyond the bounds.
func TestIterBoundsSkipBlocks(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(21, 22)), 400, 40)
	data := buildTable(t, WriterOptions{BlockSize: 256, Checksum: checksum.CRC32C}, es)
	var reads int
	r := openTable(t, data, openConfig{wrap: func(fs vfs.FS) vfs.FS {
		return errorfs.WrapObserver(fs, func(op errorfs.Op) {
			if op.Kind == errorfs.OpFileRead {
				reads++
			}
		})
	}})
	// Each block holds a few entries; a range inside one block reads that
	// block only, whichever way it is scanned.
	for _, backward := range []bool{false, true} {
		lower := es[len(es)/2].key.UserKey
		upper := append(bytes.Clone(lower), 0)
		reads = 0
		it, err := r.NewIter(context.Background(), ReadEnv{VerifyChecksums: true}, lower, upper)
		require.NoError(t, err)
		got, err := scan(it, backward)
		require.NoError(t, err)
		requireSameEntries(t, inRange(es, lower, upper), got)
		require.NoError(t, it.Close())
		require.LessOrEqual(t, reads, 2, "backward=%t", backward)
	}
}

// TestIterCorruptBlockStops checks that a corrupt data block stops the
// iterator with a corruption error that names the block, in both
// directions.
func TestIterCorruptBlockStops(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(23, 24)), 300, 40)
	data := buildTable(t, WriterOptions{BlockSize: 512, Checksum: checksum.CRC32C}, es)
	r0 := openTable(t, data, openConfig{})
	// Corrupt the middle of the file, within the data blocks.
	bad := bytes.Clone(data)
	off := int(r0.dataEnd / 2)
	bad[off] ^= 0x10
	r := openTable(t, bad, openConfig{})
	for _, backward := range []bool{false, true} {
		it, err := r.NewIter(context.Background(), verifyEnv, nil, nil)
		require.NoError(t, err)
		got, err := scan(it, backward)
		require.True(t, base.IsCorruption(err), "%v", err)
		require.Contains(t, err.Error(), "block checksum mismatch")
		require.Contains(t, err.Error(), testFile)
		require.Less(t, len(got), len(es))
		// A stopped iterator stays stopped.
		require.Nil(t, it.First())
		require.Nil(t, it.SeekGE(es[0].key.UserKey))
		require.Nil(t, it.Next())
		require.Equal(t, err, it.Close())
	}
}

// TestIterAllocs checks that Next allocates nothing, within a block and
// across cached blocks.
func TestIterAllocs(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	es := genEntries(rand.New(rand.NewPCG(25, 26)), 2000, 20)
	data := buildTable(t, WriterOptions{BlockSize: 1024, BloomBitsPerKey: 10, Compression: compress.Snappy,
		Checksum: checksum.XXHash64}, es)
	r := openTable(t, data, openConfig{cache: cache.New(16 << 20), stats: statistics.New(statistics.LevelAll)})
	for _, tc := range []struct {
		name         string
		lower, upper []byte
		backward     bool
	}{
		{"forward", nil, nil, false},
		{"backward", nil, nil, true},
		{"bounded", es[100].key.UserKey, es[1500].key.UserKey, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it, err := r.NewIter(context.Background(), verifyEnv, tc.lower, tc.upper)
			require.NoError(t, err)
			defer it.Close()
			_, err = scan(it, tc.backward) // warm the cache
			require.NoError(t, err)
			first := it.First
			if tc.backward {
				first = it.Last
			}
			require.NotNil(t, first())
			steps := 0
			allocs := testing.AllocsPerRun(5000, func() {
				if next(it, tc.backward) == nil {
					first()
				}
				steps++
			})
			require.Zero(t, allocs)
			require.NoError(t, it.Error())
			require.Greater(t, steps, len(es)/2, "the loop crosses blocks")
		})
	}
}

// BenchmarkIterNext measures a full scan per op divided into Next calls.
func BenchmarkIterNext(b *testing.B) {
	es := genEntries(rand.New(rand.NewPCG(1, 2)), 20000, 100)
	data := buildTable(b, WriterOptions{BloomBitsPerKey: 10, Compression: compress.Snappy,
		Checksum: checksum.XXHash64}, es)
	for _, tc := range []struct {
		name  string
		cache *cache.Cache
		env   ReadEnv
	}{
		{"cache=hit", cache.New(64 << 20), verifyEnv},
		{"cache=none", nil, ReadEnv{VerifyChecksums: true}},
		{"cache=none/async=true", nil, ReadEnv{VerifyChecksums: true, AsyncIO: true}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r := openTable(b, data, openConfig{cache: tc.cache})
			it, err := r.NewIter(context.Background(), tc.env, nil, nil)
			require.NoError(b, err)
			defer it.Close()
			for kv := it.First(); kv != nil; kv = it.Next() {
			}
			it.First()
			b.ReportAllocs()
			defer cpubench.Start(b)()
			b.SetBytes(int64(len(data) / len(es)))
			for b.Loop() {
				if it.Next() == nil {
					it.First()
				}
			}
		})
	}
}

// BenchmarkIterSeekGE measures seeks to random keys of a cached table.
func BenchmarkIterSeekGE(b *testing.B) {
	es := genEntries(rand.New(rand.NewPCG(1, 2)), 20000, 100)
	data := buildTable(b, WriterOptions{BloomBitsPerKey: 10, Compression: compress.Snappy,
		Checksum: checksum.XXHash64}, es)
	r := openTable(b, data, openConfig{cache: cache.New(64 << 20)})
	it, err := r.NewIter(context.Background(), verifyEnv, nil, nil)
	require.NoError(b, err)
	defer it.Close()
	for kv := it.First(); kv != nil; kv = it.Next() {
	}
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = es[rng.IntN(len(es))].key.UserKey
	}
	b.ReportAllocs()
	defer cpubench.Start(b)()
	i := 0
	for b.Loop() {
		if it.SeekGE(keys[i%len(keys)]) == nil {
			b.Fatal("not found")
		}
		i++
	}
}
