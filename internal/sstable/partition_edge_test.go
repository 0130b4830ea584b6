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
	"github.com/stretchr/testify/require"
)

// This file is an adversarial review of partitioned tables: tables cut into
// a partition per data block, keys whose versions run over many blocks and
// partitions, keys with 0xff bytes and the empty key, and reads whose keys
// and bounds sit exactly on the partitions' edges.

// edgeEntries returns sorted entries whose user keys stress separators:
// the empty key, keys sharing long prefixes, keys of 0xff bytes (which
// LevelDB's shortening cannot shorten), and one key with many versions, so
// that a cut after every block falls inside one user key's versions.
func edgeEntries(rng *rand.Rand) []entry {
	userKeys := [][]byte{
		{}, {0x00}, {0x00, 0x00}, []byte("a"), []byte("a\xff"), []byte("a\xff\xff"), []byte("ab"),
		[]byte("abc"), []byte("abd"), []byte("b"), []byte("many"), []byte("manz"),
		bytes.Repeat([]byte("p"), 40), append(bytes.Repeat([]byte("p"), 40), 'q'),
		[]byte("z"), []byte("z\xff"), {0xff}, {0xff, 0x00}, {0xff, 0xff}, {0xff, 0xff, 0xff},
	}
	for i := range 60 {
		userKeys = append(userKeys, fmt.Appendf(nil, "k%03d", i))
	}
	slices.SortFunc(userKeys, bytes.Compare)
	userKeys = slices.CompactFunc(userKeys, bytes.Equal)
	var es []entry
	for _, uk := range userKeys {
		versions := 1 + rng.IntN(3)
		if string(uk) == "many" || string(uk) == "k030" {
			versions = 40
		}
		for v := versions; v >= 1; v-- {
			seq := base.SeqNum(100 + 7*v)
			if rng.IntN(6) == 0 {
				es = append(es, entry{base.MakeInternalKey(uk, seq, base.KindDelete), nil})
				continue
			}
			value := bytes.Repeat([]byte{byte('a' + v%3)}, rng.IntN(24))
			es = append(es, entry{base.MakeInternalKey(uk, seq, base.KindSet), value})
		}
	}
	return es
}

// edgeKeys returns the user keys a test should read at: every user key of
// the table and its neighbours, every index separator's user key (of every
// partition) and its neighbours, and keys beyond both ends.
func edgeKeys(t *testing.T, r *Reader, es []entry) [][]byte {
	t.Helper()
	keys := [][]byte{{}, {0x00}, {0xff, 0xff, 0xff, 0xff}, []byte("zzz")}
	add := func(k []byte) {
		keys = append(keys, bytes.Clone(k), append(bytes.Clone(k), 0x00))
		if n := len(k); n > 0 {
			keys = append(keys, bytes.Clone(k[:n-1]))
		}
	}
	for _, e := range es {
		add(e.key.UserKey)
	}
	require.NotNil(t, r.top)
	for p := range r.top.len() {
		add(r.top.x.userKey(p))
		x := &r.parts[p]
		for b := range x.len() {
			add(sepUserKey(x, b))
		}
	}
	slices.SortFunc(keys, bytes.Compare)
	return slices.CompactFunc(keys, bytes.Equal)
}

// edgeWriterOptions are writer options that give edgeEntries many
// partitions: a partition per data block (IndexPartitionSize 1), a data
// block per entry, and sizes in between.
func edgeWriterOptions() []WriterOptions {
	var out []WriterOptions
	for _, bs := range []int{1, 48, 200} {
		for _, ps := range []int{1, 40, 100} {
			for _, bits := range []int{0, 10} {
				comp := compress.None
				if ps == 40 {
					comp = compress.Snappy
				}
				out = append(out, WriterOptions{BlockSize: bs, IndexPartitionSize: ps, BloomBitsPerKey: bits,
					Compression: comp, Checksum: checksum.CRC32C, BlockRestartInterval: 1 + bs%5})
			}
		}
	}
	return out
}

// TestPartitionEdges reads partitioned tables at and around every key and
// separator: Get at several sequence numbers, MultiGet of every edge key
// (some Done), seeks, and iterators bounded exactly at the edges with
// direction switches, with the partitions in memory and in a cache too
// small to keep them.
func TestPartitionEdges(t *testing.T) {
	ctx := context.Background()
	for oi, opts := range edgeWriterOptions() {
		name := fmt.Sprintf("block=%d/part=%d/bloom=%d/%s", opts.BlockSize, opts.IndexPartitionSize,
			opts.BloomBitsPerKey, opts.Compression)
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(91, uint64(oi)))
			es := edgeEntries(rng)
			data := buildTable(t, opts, es)
			flat := requirePartitioned(t, data, 2)
			keys := edgeKeys(t, flat, es)
			checkFiltersHoldPartitionKeys(t, flat)
			for _, cfg := range []openConfig{
				{},
				{cache: cache.New(1 << 20), cacheMeta: true},
				{cache: cache.New(2 << 10), cacheMeta: true},
				{mmap: true, cache: cache.New(2 << 10), cacheMeta: true, env: ReadEnv{VerifyChecksums: true}},
			} {
				t.Run(cfg.String(), func(t *testing.T) {
					r := openTable(t, data, cfg)
					env := cfg.env
					if env == (ReadEnv{}) {
						env = verifyEnv
					}
					for _, k := range keys {
						for _, seq := range []base.SeqNum{0, 100, 107, 150, 250, 300, base.MaxSeqNum} {
							checkGet(t, r, env, es, k, seq)
						}
					}
					checkEdgeMultiGet(t, r, env, es, keys, rng)
					checkEdgeIters(t, r, env, es, keys, rng)
					require.NoError(t, r.Check(ctx, env))
				})
			}
		})
	}
}

// checkFiltersHoldPartitionKeys checks the writer's filter rule: every user
// key of the data blocks that index partition p lists is in filter
// partition p.
func checkFiltersHoldPartitionKeys(t *testing.T, r *Reader) {
	t.Helper()
	if !r.hasFilter {
		return
	}
	for p := range r.top.len() {
		x := &r.parts[p]
		for b := range x.len() {
			it := dataIter(t, r, x.handle(b))
			for ok := it.First(); ok; ok = it.Next() {
				ik, _ := base.DecodeInternalKey(it.Key())
				require.True(t, bloom.MayContainHash(r.filterParts[p], bloom.Hash(ik.UserKey)),
					"key %q of partition %d's block %d is not in its filter", ik.UserKey, p, b)
			}
		}
	}
}

// checkEdgeMultiGet looks up all edge keys at once, and random subsets of
// them with some keys Done, at several sequence numbers.
func checkEdgeMultiGet(t *testing.T, r *Reader, env ReadEnv, es []entry, keys [][]byte, rng *rand.Rand) {
	t.Helper()
	for round := range 12 {
		var mk []MultiGetKey
		for _, k := range keys {
			if round > 0 && rng.IntN(3) == 0 {
				continue
			}
			seq := base.MaxSeqNum
			if round > 0 {
				seq = base.SeqNum(90 + rng.IntN(300))
			}
			mk = append(mk, MultiGetKey{Key: k, Hash: bloom.Hash(k), Seq: seq, Done: round > 0 && rng.IntN(4) == 0})
		}
		require.NoError(t, r.MultiGet(context.Background(), env, mk))
		checkMultiGetResults(t, mk, es)
		releaseKeys(mk)
	}
}

// checkEdgeIters runs iterators bounded by pairs of edge keys through every
// kind of move, with direction switches after every step, and compares
// them with the model.
func checkEdgeIters(t *testing.T, r *Reader, env ReadEnv, es []entry, keys [][]byte, rng *rand.Rand) {
	t.Helper()
	ctx := context.Background()
	// Full scans in both directions, with a direction switch at every entry.
	it, err := r.NewIter(ctx, env, nil, nil)
	require.NoError(t, err)
	got, err := scan(it, false)
	require.NoError(t, err)
	requireSameEntries(t, es, got)
	got, err = scan(it, true)
	require.NoError(t, err)
	requireSameEntries(t, es, got)
	kv := it.First()
	for i := range es {
		require.NotNil(t, kv, "entry %d", i)
		require.Equal(t, es[i].key.String(), kv.K.String())
		if i > 0 {
			kv = it.Prev()
			require.NotNil(t, kv, "Prev after Next at entry %d", i)
			require.Equal(t, es[i-1].key.String(), kv.K.String())
			kv = it.Next()
			require.NotNil(t, kv, "Next after Prev at entry %d", i)
			require.Equal(t, es[i].key.String(), kv.K.String(), "Next after Prev at entry %d", i)
		}
		kv = it.Next()
	}
	require.Nil(t, kv)
	require.NoError(t, it.Close())

	for range 60 {
		lower, upper := keys[rng.IntN(len(keys))], keys[rng.IntN(len(keys))]
		switch rng.IntN(4) {
		case 0:
			lower = nil
		case 1:
			upper = nil
		}
		if lower != nil && upper != nil && bytes.Compare(lower, upper) > 0 {
			lower, upper = upper, lower
		}
		want := inRange(es, lower, upper)
		it, err := r.NewIter(ctx, env, lower, upper)
		require.NoError(t, err)
		for _, backward := range []bool{false, true} {
			got, err := scan(it, backward)
			require.NoError(t, err)
			requireSameEntries(t, want, got, "bounds [%q, %q) backward=%t", lower, upper, backward)
		}
		for range 20 {
			k := keys[rng.IntN(len(keys))]
			ge := searchGE(want, k)
			kv := it.SeekGE(k)
			requireAt(t, want, ge, kv, "SeekGE(%q) in [%q, %q)", k, lower, upper)
			if kv != nil {
				requireAt(t, want, ge-1, it.Prev(), "Prev after SeekGE(%q) in [%q, %q)", k, lower, upper)
			}
			kv = it.SeekLT(k)
			requireAt(t, want, ge-1, kv, "SeekLT(%q) in [%q, %q)", k, lower, upper)
			if kv != nil {
				requireAt(t, want, ge, it.Next(), "Next after SeekLT(%q) in [%q, %q)", k, lower, upper)
			}
		}
		require.NoError(t, it.Close())
	}
}

// searchGE returns the position in want of the first entry whose user key
// is >= k.
func searchGE(want []entry, k []byte) int {
	i, _ := slices.BinarySearchFunc(want, k, func(e entry, k []byte) int {
		if bytes.Compare(e.key.UserKey, k) < 0 {
			return -1
		}
		return 1
	})
	return i
}

// requireAt checks that kv is want[pos], or nil when pos is out of range.
func requireAt(t *testing.T, want []entry, pos int, kv *base.InternalKV, msg string, args ...any) {
	t.Helper()
	what := fmt.Sprintf(msg, args...)
	if pos < 0 || pos >= len(want) {
		require.Nil(t, kv, what)
		return
	}
	require.NotNil(t, kv, "%s: want %s", what, want[pos].key)
	require.Equal(t, want[pos].key.String(), kv.K.String(), what)
	require.True(t, bytes.Equal(want[pos].value, kv.V), what)
}
