package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/shaledb/shale/driver"
	"github.com/stretchr/testify/require"
)

// sizesKeys is the number of keys of each prefix the size tests write, and
// sizesValue their values' size: random, so that compression keeps them
// whole and a range's true size is its keys' and values' bytes.
const (
	sizesKeys  = 3000
	sizesValue = 200
)

// tableOverhead is what a table adds to an entry of the size tests: the
// internal key's 8-byte trailer, three length varints and a share of the
// index and filter.
const tableOverhead = 12

func sizesKey(prefix byte, i int) []byte { return fmt.Appendf(nil, "%c%06d", prefix, i) }

// addSizesRange adds sizesKeys keys under prefix to b and returns their raw
// bytes (keys and values) plus tableOverhead for each. The tests write the
// ranges in one batch: memtables start small and grow, so puts one by one
// would fill several and flush some before the test looks.
func addSizesRange(b *driver.Batch, rng *rand.Rand, prefix byte) uint64 {
	var raw uint64 // plus tableOverhead per entry
	v := make([]byte, sizesValue)
	for i := range sizesKeys {
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		k := sizesKey(prefix, i)
		b.Put(k, v)
		raw += uint64(len(k) + len(v) + tableOverhead)
	}
	return raw
}

// requireWithin checks got against want within frac of want, plus slack
// bytes.
func requireWithin(t *testing.T, want, got uint64, frac float64, slack uint64, what string) {
	t.Helper()
	d := float64(got) - float64(want)
	if d < 0 {
		d = -d
	}
	require.LessOrEqualf(t, d, frac*float64(want)+float64(slack), "%s: got %d, want %d (±%.0f%% + %d)", what, got, want, 100*frac, slack)
	t.Logf("%s: got %d, want %d (%+.2f%%)", what, got, want, 100*(float64(got)-float64(want))/float64(want))
}

// TestApproximateSize checks DB.ApproximateSize against the true sizes of
// the keys written: in the memtable before a flush, in L0 tables after it,
// and in tables that a compaction split so that they straddle the range's
// bounds. On disk, against the keys' and values' bytes plus 12 bytes an entry
// (the trailer, the varints and a share of index and filter), the tolerance
// is 3% plus two 4 KiB blocks for each table
// a bound cuts (the index locates a bound to its block); in memory, exact
// below 512 entries and 25% (four standard deviations of the sample) above.
func TestApproximateSize(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"default", Options{}},
		{"partitioned", Options{PartitionIndexAndFilters: true, MetadataBlockSize: 256, CacheIndexAndFilterBlocks: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			opts := tc.opts
			opts.WriteBufferSize = 8 << 20
			opts.TargetFileSizeBase = 256 << 10
			opts.DisableAutoCompactions = true
			db := driver.OpenDB(NewConnector(t.TempDir(), &opts))
			defer func() { require.NoError(t, db.Close()) }()
			rng := rand.New(rand.NewPCG(1, 2))

			var b driver.Batch
			rawA := addSizesRange(&b, rng, 'a')
			rawB := addSizesRange(&b, rng, 'b')
			rawC := addSizesRange(&b, rng, 'c')
			require.NoError(t, db.Write(ctx, &b))
			entry := uint64(len(sizesKey('a', 0)) + sizesValue + tableOverhead)

			// In the memtable: InMemory counts arena bytes, a node more
			// than the raw bytes for each entry.
			s, err := db.ApproximateSize(ctx, []byte("b"), []byte("c"))
			require.NoError(t, err)
			require.Zero(t, s.OnDisk)
			// 3000 entries are sampled (about 6% standard deviation):
			// allow four.
			requireWithin(t, sizesKeys, s.InMemoryEntries, 0.25, 0, "InMemoryEntries of b")
			requireWithin(t, rawB+sizesKeys*(40-tableOverhead), s.InMemory, 0.25, 0, "InMemory of b (raw bytes and 40-byte nodes)")
			// A range of fewer than 512 entries is counted exactly.
			s, err = db.ApproximateSize(ctx, sizesKey('a', 100), sizesKey('a', 200))
			require.NoError(t, err)
			require.Equal(t, uint64(100), s.InMemoryEntries)
			all, err := db.ApproximateSize(ctx, nil, nil)
			require.NoError(t, err)
			requireWithin(t, 3*sizesKeys, all.InMemoryEntries, 0.25, 0, "InMemoryEntries of everything")

			require.NoError(t, db.Flush(ctx))
			s, err = db.ApproximateSize(ctx, []byte("b"), []byte("c"))
			require.NoError(t, err)
			require.Zero(t, s.InMemory)
			require.Zero(t, s.InMemoryEntries)
			// One L0 table holds all three ranges: both bounds cut it.
			requireWithin(t, rawB, s.OnDisk, 0.03, 2*4096, "OnDisk of b in one L0 table")
			s, err = db.ApproximateSize(ctx, []byte("d"), nil)
			require.NoError(t, err)
			require.Zero(t, s.OnDisk, "after every key")
			s, err = db.ApproximateSize(ctx, nil, []byte("a"))
			require.NoError(t, err)
			require.Zero(t, s.OnDisk, "before every key")
			s, err = db.ApproximateSize(ctx, []byte("c"), []byte("b"))
			require.NoError(t, err)
			require.Zero(t, s, "an inverted range")

			// Split into 256 KiB tables by a compaction: the bounds fall
			// inside tables of L1 or below.
			require.NoError(t, db.Compact(ctx, nil, nil))
			m, err := db.Metrics(ctx)
			require.NoError(t, err)
			require.Greater(t, m.Total().Tables, 3, "the compaction split the keys")
			for _, r := range []struct {
				lo, hi []byte
				want   uint64
				what   string
			}{
				{[]byte("a"), []byte("b"), rawA, "a"},
				{[]byte("b"), []byte("c"), rawB, "b"},
				{[]byte("c"), nil, rawC, "c"},
				{nil, nil, rawA + rawB + rawC, "everything"},
				{sizesKey('b', 1000), sizesKey('b', 2000), 1000 * entry, "a third of b"},
			} {
				s, err = db.ApproximateSize(ctx, r.lo, r.hi)
				require.NoError(t, err)
				requireWithin(t, r.want, s.OnDisk, 0.03, 2*2*4096, "OnDisk of "+r.what+" after compaction")
			}
			// The whole database is its tables, exactly.
			s, err = db.ApproximateSize(ctx, nil, nil)
			require.NoError(t, err)
			require.Equal(t, m.Total().Bytes, s.OnDisk)
		})
	}
}

// TestDiskUsage checks DB.DiskUsage against the sizes of the files in the
// database's directory, MANIFEST, WAL and any file recovery set aside
// included.
func TestDiskUsage(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := driver.OpenDB(NewConnector(dir, &Options{WriteBufferSize: 1 << 20}))
	defer func() { require.NoError(t, db.Close()) }()
	dirSize := func() uint64 {
		ents, err := os.ReadDir(dir)
		require.NoError(t, err)
		var n uint64
		for _, e := range ents {
			info, err := e.Info()
			require.NoError(t, err)
			if !info.IsDir() {
				n += uint64(info.Size())
			}
		}
		return n
	}
	u0, err := db.DiskUsage(ctx)
	require.NoError(t, err)
	require.Positive(t, u0)
	require.Equal(t, dirSize(), u0)

	rng := rand.New(rand.NewPCG(3, 4))
	var b driver.Batch
	addSizesRange(&b, rng, 'a')
	require.NoError(t, db.Write(ctx, &b))
	require.NoError(t, db.Flush(ctx))
	u1, err := db.DiskUsage(ctx)
	require.NoError(t, err)
	require.Equal(t, dirSize(), u1)
	require.Greater(t, u1, u0+sizesKeys*sizesValue/2, "a flushed table")

	// A file set aside by recovery is on disk: it counts.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "000999.sst.orphan"), make([]byte, 12345), 0o644))
	u2, err := db.DiskUsage(ctx)
	require.NoError(t, err)
	require.Equal(t, dirSize(), u2)
	require.Equal(t, u1+12345, u2)

	// DiskUsage covers more than Metrics' tables and WAL: the MANIFEST,
	// CURRENT and the rest.
	m, err := db.Metrics(ctx)
	require.NoError(t, err)
	require.Greater(t, u1, m.Total().Bytes+m.WAL.Bytes)
}
