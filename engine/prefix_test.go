package engine

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

func TestParsePrefixExtractor(t *testing.T) {
	for _, s := range []string{"none", "fixed:1", "fixed:8", "capped:8", "capped:255"} {
		p, err := ParsePrefixExtractor(s)
		require.NoError(t, err, s)
		require.Equal(t, s, p.String())
		require.NoError(t, p.validate())
	}
	for _, s := range []string{"", "fixed", "fixed:", "fixed:0", "fixed:256", "capped:-1", "fixed:x", "prefix:8", "none:1"} {
		_, err := ParsePrefixExtractor(s)
		require.Error(t, err, s)
	}
	require.Error(t, (&Options{PrefixExtractor: PrefixExtractor{Kind: PrefixFixed}}).Validate())
	require.Error(t, (&Options{PrefixExtractor: PrefixExtractor{Kind: 9, Len: 3}}).Validate())
	_, o, err := ParseDSN("/db?prefix_extractor=capped:3")
	require.NoError(t, err)
	require.Equal(t, PrefixExtractor{Kind: PrefixCapped, Len: 3}, o.PrefixExtractor)
	_, _, err = ParseDSN("/db?prefix_extractor=fixed:0")
	require.Error(t, err)

	fixed, capped := PrefixExtractor{PrefixFixed, 3}, PrefixExtractor{PrefixCapped, 3}
	require.Nil(t, fixed.prefix([]byte("ab")))
	require.Equal(t, "abc", string(fixed.prefix([]byte("abcd"))))
	require.Equal(t, "ab", string(capped.prefix([]byte("ab"))))
	require.Nil(t, capped.filterPrefix([]byte("ab")), "keys with prefix ab have capped prefixes ab, abX")
	require.Equal(t, "abc", string(capped.filterPrefix([]byte("abcd"))))
	require.Nil(t, PrefixExtractor{}.filterPrefix([]byte("abcd")))
}

// prefixTestDB opens, through the façade, a database on fs whose tables
// each hold a few of the key prefixes: 40 L0 tables (no compactions) whose
// key ranges all overlap, so that bounds alone rule none of them out for a
// prefix scan; only prefix filters can.
func prefixTestOptions(fs vfs.FS, st *statistics.Statistics, pe PrefixExtractor) *Options {
	return &Options{FS: fs, Statistics: st, PrefixExtractor: pe, DisableAutoCompactions: true,
		Level0FileNumCompactionTrigger: 1000, Level0SlowdownWritesTrigger: 1000, Level0StopWritesTrigger: 1000,
		BlockSize: 512, BlockCacheSize: 1 << 20, WriteBufferSize: 1 << 20}
}

// prefixKey is key i of prefix p: "pNNN" (fixed:4) then a suffix.
func prefixKey(p, i int) []byte { return fmt.Appendf(nil, "p%03d/%05d", p, i) }

func fillPrefixDB(t testing.TB, ctx context.Context, db *driver.DB, m map[string]string, pad int) {
	for table := range 40 {
		for p := table; p < 400; p += 40 { // table t holds prefixes t, t+40, ...
			for i := range 5 {
				k, v := prefixKey(p, i), fmt.Sprintf("v%d.%d%*s", p, i, pad, "")
				require.NoError(t, db.Put(ctx, k, []byte(v)))
				m[string(k)] = v
			}
		}
		// A couple of keys in every table sharing one prefix and short keys
		// that a fixed:4 extractor leaves out of the filter.
		k := fmt.Appendf(nil, "p999/%05d", table)
		require.NoError(t, db.Put(ctx, k, []byte("shared")))
		m[string(k)] = "shared"
		require.NoError(t, db.Put(ctx, []byte{'p', byte('0' + table%10)}, []byte("short")))
		m[string([]byte{'p', byte('0' + table%10)})] = "short"
		require.NoError(t, db.Flush(ctx))
	}
}

// writeFixed4PrefixDB writes fillPrefixDB's tables (no padding) to /db on
// a fresh MemFS, with prefix_extractor=fixed:4, and closes the database;
// it returns the MemFS and the model of what the database holds.
func writeFixed4PrefixDB(t testing.TB, ctx context.Context) (*vfs.MemFS, map[string]string) {
	t.Helper()
	m := map[string]string{}
	fs := vfs.NewMem()
	db := driver.OpenDB(NewConnector("/db", prefixTestOptions(fs, nil, PrefixExtractor{PrefixFixed, 4})))
	fillPrefixDB(t, ctx, db, m, 0)
	require.NoError(t, db.Close())
	return fs, m
}

func scanPrefix(t testing.TB, ctx context.Context, db *driver.DB, o *driver.IterOptions, reverse bool) []string {
	t.Helper()
	it, err := db.NewIterator(ctx, o)
	require.NoError(t, err)
	var out []string
	if reverse {
		for ok := it.Last(); ok; ok = it.Prev() {
			out = append(out, string(it.Key())+"="+string(it.Value()))
		}
	} else {
		for ok := it.First(); ok; ok = it.Next() {
			out = append(out, string(it.Key())+"="+string(it.Value()))
		}
	}
	require.NoError(t, it.Error())
	require.NoError(t, it.Close())
	return out
}

func modelPrefixScan(m map[string]string, o *driver.IterOptions, reverse bool) []string {
	var out []string
	for k, v := range m {
		kb := []byte(k)
		if bytes.HasPrefix(kb, o.Prefix) && (o.LowerBound == nil || bytes.Compare(kb, o.LowerBound) >= 0) &&
			(o.UpperBound == nil || bytes.Compare(kb, o.UpperBound) < 0) {
			out = append(out, k+"="+v)
		}
	}
	slicesSortFunc(out, reverse)
	return out
}

func slicesSortFunc(s []string, reverse bool) {
	for i := 1; i < len(s); i++ { // insertion sort: small results
		for j := i; j > 0 && (s[j] < s[j-1]) != reverse; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// TestPrefixScanSkipsTables: with prefix_extractor=fixed:4 a scan of one
// prefix asks the filters of the 40 overlapping tables and skips the 39
// without the prefix, reading far fewer data blocks, and every scan (random
// prefixes, bounds, both directions) returns what a model and the same
// database without an extractor return.
func TestPrefixScanSkipsTables(t *testing.T) {
	ctx := context.Background()
	fs, m := writeFixed4PrefixDB(t, ctx)
	dataBlocks := func(st *statistics.Statistics) uint64 {
		return st.TickerCount(statistics.BlockCacheDataMiss) + st.TickerCount(statistics.BlockCacheDataHit)
	}
	var blocks [2]uint64
	for i, pe := range []PrefixExtractor{{}, {PrefixFixed, 4}} {
		st := statistics.New(statistics.LevelAll)
		db := driver.OpenDB(NewConnector("/db", prefixTestOptions(fs, st, pe)))
		o := &driver.IterOptions{Prefix: []byte("p123")}
		want := modelPrefixScan(m, o, false)
		require.Len(t, want, 5)
		before := dataBlocks(st)
		require.Equal(t, want, scanPrefix(t, ctx, db, o, false), "extractor %s", pe)
		blocks[i] = dataBlocks(st) - before
		checked, useful := st.TickerCount(statistics.BloomFilterPrefixChecked), st.TickerCount(statistics.BloomFilterPrefixUseful)
		if pe.Kind == PrefixNone {
			require.Zero(t, checked)
			require.Zero(t, useful)
		} else {
			require.Equal(t, uint64(40), checked, "every overlapping table asked")
			require.GreaterOrEqual(t, useful, uint64(36), "the tables without p123 skipped (a few false positives allowed)")
		}

		checkRandomPrefixScans(t, ctx, db, m, rand.New(rand.NewPCG(7, uint64(i))), pe.String())
		require.NoError(t, db.Close())
	}
	t.Logf("data blocks read scanning p123: %d without an extractor, %d with fixed:4", blocks[0], blocks[1])
	require.Less(t, blocks[1]*4, blocks[0], "prefix filters spare most data block reads")
}

// checkRandomPrefixScans compares 300 scans of random prefixes (of the
// extractor's length, longer, shorter, shared by every table, absent), with
// random bounds, both ways, against the model m.
func checkRandomPrefixScans(t *testing.T, ctx context.Context, db *driver.DB, m map[string]string, rng *rand.Rand, what string) {
	t.Helper()
	for range 300 {
		var p []byte
		switch rng.IntN(5) {
		case 0:
			p = fmt.Appendf(nil, "p%03d", rng.IntN(1000)) // exactly the extractor's length
		case 1:
			p = fmt.Appendf(nil, "p%03d/%05d", rng.IntN(400), rng.IntN(6)) // longer: one key or none
		case 2:
			p = fmt.Appendf(nil, "p%02d", rng.IntN(40)) // shorter: no filter
		case 3:
			p = []byte("p999")
		default:
			p = fmt.Appendf(nil, "p%03d/", rng.IntN(400))
		}
		o := &driver.IterOptions{Prefix: p}
		if rng.IntN(3) == 0 {
			o.LowerBound = append(bytes.Clone(p), byte('0'+rng.IntN(3)))
		}
		if rng.IntN(3) == 0 {
			o.UpperBound = fmt.Appendf(nil, "%s/%05d", p, rng.IntN(6))
		}
		for _, rev := range []bool{false, true} {
			require.Equal(t, modelPrefixScan(m, o, rev), scanPrefix(t, ctx, db, o, rev),
				"%s, prefix %q [%q, %q) reverse %t", what, o.Prefix, o.LowerBound, o.UpperBound, rev)
		}
	}
}

// TestPrefixExtractorChange: a database written with fixed:4 reopens with
// another extractor, or none, and reads the same; the old tables' filters
// are then not asked about prefixes (their extractor differs), and new
// tables' are. Reopening with fixed:4 again uses the old filters.
func TestPrefixExtractorChange(t *testing.T) {
	ctx := context.Background()
	fs, m := writeFixed4PrefixDB(t, ctx)
	o := &driver.IterOptions{Prefix: []byte("p123/")}
	for _, tc := range []struct {
		pe            PrefixExtractor
		wantChecked   uint64
		writeNewTable bool
	}{
		{PrefixExtractor{PrefixCapped, 4}, 0, false},
		{PrefixExtractor{PrefixFixed, 5}, 0, true}, // one new table, written with fixed:5
		{PrefixExtractor{}, 0, false},
		{PrefixExtractor{PrefixFixed, 4}, 40, false},
	} {
		st := statistics.New(statistics.LevelAll)
		db := driver.OpenDB(NewConnector("/db", prefixTestOptions(fs, st, tc.pe)))
		if tc.writeNewTable {
			require.NoError(t, db.Put(ctx, []byte("p123/99999"), []byte("new")))
			m["p123/99999"] = "new"
			require.NoError(t, db.Flush(ctx))
			tc.wantChecked = 1
		}
		tc.wantChecked *= 2 // two scans
		require.Equal(t, modelPrefixScan(m, o, false), scanPrefix(t, ctx, db, o, false), "extractor %s", tc.pe)
		require.Equal(t, modelPrefixScan(m, o, true), scanPrefix(t, ctx, db, o, true), "extractor %s", tc.pe)
		require.Equal(t, tc.wantChecked, st.TickerCount(statistics.BloomFilterPrefixChecked), "extractor %s", tc.pe)
		require.NoError(t, db.Close())
	}
}

// TestPrefixPartitioned: tables with partitioned filters hold each prefix
// in the partitions of its keys, and a prefix scan asks the partitions of
// its range and skips the tables they rule out, as with full filters.
func TestPrefixPartitioned(t *testing.T) {
	ctx := context.Background()
	m := map[string]string{}
	st := statistics.New(statistics.LevelAll)
	opts := prefixTestOptions(vfs.NewMem(), st, PrefixExtractor{PrefixFixed, 4})
	opts.PartitionIndexAndFilters, opts.MetadataBlockSize, opts.BlockSize = true, 256, 256
	db := driver.OpenDB(NewConnector("/db", opts))
	defer db.Close()
	fillPrefixDB(t, ctx, db, m, 200)
	for _, p := range []string{"p123", "p999", "p000/", "p7", "p401", "p\xff\xff\xff"} {
		o := &driver.IterOptions{Prefix: []byte(p)}
		require.Equal(t, modelPrefixScan(m, o, false), scanPrefix(t, ctx, db, o, false), "prefix %q", p)
		require.Equal(t, modelPrefixScan(m, o, true), scanPrefix(t, ctx, db, o, true), "prefix %q", p)
	}
	// Per scan: p123 (in one table), p999 (in all 40), p401 (in none): 40
	// tables asked; p000/ (in table 0): the 4 tables whose range reaches
	// it (0 and the three whose short key "p0" comes first); p7 is shorter
	// than the extractor's length and p\xff\xff\xff above every table.
	require.Equal(t, uint64(2*(40+40+4+40)), st.TickerCount(statistics.BloomFilterPrefixChecked))
	require.GreaterOrEqual(t, st.TickerCount(statistics.BloomFilterPrefixUseful), uint64(2*(39+0+3+40)-6))
	checkRandomPrefixScans(t, ctx, db, m, rand.New(rand.NewPCG(8, 9)), "partitioned")
	names, err := opts.FS.List("/db")
	require.NoError(t, err)
	tables, partitioned := 0, 0
	for _, name := range names {
		if !strings.HasSuffix(name, ".sst") {
			continue
		}
		tables++
		f, err := fileio.Open(opts.FS, "/db/"+name, fileio.Options{})
		require.NoError(t, err)
		r, err := sstable.Open(ctx, f, sstable.ReadEnv{VerifyChecksums: true}, sstable.ReaderOptions{})
		require.NoError(t, err)
		if r.Properties().IndexPartitions > 1 {
			partitioned++
		}
		require.NoError(t, r.Close())
	}
	require.Equal(t, 40, tables)
	require.Equal(t, tables, partitioned, "every table's filter is partitioned")
}

// TestPrefixRangeDeletionKept: a table whose filter rules the prefix out
// but which holds a range tombstone over it is not skipped: the tombstone
// still hides the older keys.
func TestPrefixRangeDeletionKept(t *testing.T) {
	ctx := context.Background()
	db := driver.OpenDB(NewConnector("/db", prefixTestOptions(vfs.NewMem(), nil, PrefixExtractor{PrefixFixed, 4})))
	defer db.Close()
	require.NoError(t, db.Put(ctx, []byte("p123/1"), []byte("old")))
	require.NoError(t, db.Flush(ctx))
	require.NoError(t, db.DeleteRange(ctx, []byte("p100"), []byte("p200")))
	require.NoError(t, db.Put(ctx, []byte("p555/1"), []byte("other"))) // the table's only key
	require.NoError(t, db.Flush(ctx))
	require.Empty(t, scanPrefix(t, ctx, db, &driver.IterOptions{Prefix: []byte("p123")}, false))
}

// TestBoundsWithin: the engine consults prefix filters only when every key
// in the bounds starts with the filter prefix, whatever the caller passed.
func TestBoundsWithin(t *testing.T) {
	b := func(s string) []byte { return []byte(s) }
	for _, tc := range []struct {
		prefix, lower, upper []byte
		want                 bool
	}{
		{b("ab"), b("ab"), b("ac"), true},
		{b("ab"), b("abc"), b("abd"), true},
		{b("ab"), b("a"), b("ac"), false},  // lower below the prefix
		{b("ab"), b("ab"), b("ad"), false}, // upper past its end
		{b("ab"), b("ab"), nil, false},
		{b("ab"), nil, b("ac"), false},
		{b("a\xff"), b("a\xff"), b("b"), true},
		{b("\xff\xff"), b("\xff\xff"), nil, true}, // no successor: every key above starts with it
		{b("\xff\xff"), b("\xff"), nil, false},
	} {
		require.Equal(t, tc.want, boundsWithin(tc.prefix, tc.lower, tc.upper), "%q [%q, %q)", tc.prefix, tc.lower, tc.upper)
	}
}
