package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// TestPartitionIndexAndFilters: with partition_index_and_filters the tables a
// flush and a compaction write are partitioned (format version 3) with
// partitions of about metadata_block_size; Get, MultiGet and iterators in
// both directions read them, with the partitions in a block cache too small
// to hold them all, and a reopen without the option still reads them.
func TestPartitionIndexAndFilters(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	_, opts, err := ParseDSN(dir + "?partition_index_and_filters=true&metadata_block_size=256" +
		"&cache_index_and_filter_blocks=true&block_cache_size=64KiB&block_size=256&stats_level=all")
	require.NoError(t, err)
	require.Equal(t, 256, opts.MetadataBlockSize)
	db, err := openDatabase(dir, opts)
	require.NoError(t, err)

	rng := rand.New(rand.NewPCG(1, 2))
	model := map[string][]byte{}
	for round := range 3 {
		for range 1500 {
			k := fmt.Sprintf("key%05d", rng.IntN(4000))
			if rng.IntN(6) == 0 {
				require.NoError(t, db.Delete(ctx, []byte(k)))
				delete(model, k)
				continue
			}
			v := fmt.Appendf(nil, "value-%d-%s", round, k)
			require.NoError(t, db.Put(ctx, []byte(k), v))
			model[k] = v
		}
		require.NoError(t, db.Flush(ctx))
	}
	checkPartitionedDB(t, db, model, rng)
	require.NoError(t, db.Compact(ctx, nil, nil))
	checkPartitionedDB(t, db, model, rng)
	requirePartitionedTables(t, dir)
	require.NotZero(t, db.Statistics().TickerCount(statistics.BlockCacheIndexMiss))
	require.NoError(t, db.Close())

	// Reopened without partitioning or the cache option, the tables read
	// the same.
	db, err = openDatabase(dir, &Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	checkPartitionedDB(t, db, model, rng)
}

// requirePartitionedTables checks that every table in dir is partitioned.
func requirePartitionedTables(t *testing.T, dir string) {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	require.NoError(t, err)
	require.NotEmpty(t, names)
	for _, name := range names {
		f, err := fileio.Open(vfs.Default, name, fileio.Options{})
		require.NoError(t, err)
		r, err := sstable.Open(context.Background(), f, sstable.ReadEnv{VerifyChecksums: true}, sstable.ReaderOptions{})
		require.NoError(t, err)
		p := r.Properties()
		require.Equal(t, uint64(sstable.FormatVersionPartitioned), p.FormatVersion, name)
		require.Greater(t, p.IndexPartitions, uint64(1), name)
		require.NoError(t, r.Check(context.Background(), sstable.ReadEnv{VerifyChecksums: true}))
		require.NoError(t, r.Close())
	}
}

// checkPartitionedDB compares db with model: Gets of present and absent
// keys, a MultiGet, full scans both ways and bounded seeks.
func checkPartitionedDB(t *testing.T, db *database, model map[string][]byte, rng *rand.Rand) {
	t.Helper()
	ctx := context.Background()
	keys := make([]string, 0, len(model))
	for k := range model {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var probes [][]byte
	for range 300 {
		probes = append(probes, fmt.Appendf(nil, "key%05d", rng.IntN(4100)))
	}
	for _, k := range probes {
		v, err := db.Get(ctx, k)
		want, ok := model[string(k)]
		if !ok {
			require.True(t, errors.Is(err, ErrNotFound), "Get(%s): %v", k, err)
			continue
		}
		require.NoError(t, err, "Get(%s)", k)
		require.Equal(t, want, v, "Get(%s)", k)
	}
	slices.SortFunc(probes, bytes.Compare)
	probes = slices.CompactFunc(probes, bytes.Equal)
	vals, err := db.MultiGet(ctx, probes)
	require.NoError(t, err)
	for i, k := range probes {
		require.Equal(t, model[string(k)], vals[i], "MultiGet(%s)", k)
	}

	it, err := db.NewIterator(ctx, nil)
	require.NoError(t, err)
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, string(it.Key()))
		require.Equal(t, model[string(it.Key())], it.Value())
	}
	require.Equal(t, keys, got)
	got = got[:0]
	for ok := it.Last(); ok; ok = it.Prev() {
		got = append(got, string(it.Key()))
	}
	slices.Reverse(got)
	require.Equal(t, keys, got)
	for range 50 {
		k := fmt.Sprintf("key%05d", rng.IntN(4100))
		i, _ := slices.BinarySearch(keys, k)
		if it.SeekGE([]byte(k)) {
			require.Equal(t, keys[i], string(it.Key()), "SeekGE(%s)", k)
		} else {
			require.Equal(t, len(keys), i, "SeekGE(%s)", k)
		}
		if it.SeekLT([]byte(k)) {
			require.Equal(t, keys[i-1], string(it.Key()), "SeekLT(%s)", k)
		} else {
			require.Zero(t, i, "SeekLT(%s)", k)
		}
	}
	require.NoError(t, it.Close())
}

// tableVersions returns the number of tables in dir of each format version.
func tableVersions(t *testing.T, dir string) map[uint64]int {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	require.NoError(t, err)
	out := map[uint64]int{}
	for _, name := range names {
		f, err := fileio.Open(vfs.Default, name, fileio.Options{})
		require.NoError(t, err)
		r, err := sstable.Open(context.Background(), f, sstable.ReadEnv{VerifyChecksums: true}, sstable.ReaderOptions{})
		require.NoError(t, err)
		out[r.Properties().FormatVersion]++
		require.NoError(t, r.Close())
	}
	return out
}

// TestPartitionMixedFormats: a DB whose levels hold tables of format
// versions 1 (plain), 2 (range deletions) and 3 (partitioned) reads them
// together, verifies them (VerifyChecksum, VerifyFileChecksums, Check),
// detects a transaction's conflict with a write that went into a
// partitioned table, checkpoints them, and compacts them into tables of the
// options in force: partitioned ones, then, reopened without the option,
// unpartitioned ones again.
func TestPartitionMixedFormats(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func(dsn string) *database {
		t.Helper()
		_, opts, err := ParseDSN(dir + "?block_size=256&stats_level=all&disable_auto_compactions=true" + dsn)
		require.NoError(t, err)
		db, err := openDatabase(dir, opts)
		require.NoError(t, err)
		return db
	}
	const partitioned = "&partition_index_and_filters=true&metadata_block_size=256" +
		"&cache_index_and_filter_blocks=true&block_cache_size=64KiB"
	rng := rand.New(rand.NewPCG(3, 4))
	model := map[string][]byte{}
	write := func(db *database, n int, round string) {
		for range n {
			k := fmt.Sprintf("key%05d", rng.IntN(4000))
			v := fmt.Appendf(nil, "value-%s-%s", round, k)
			require.NoError(t, db.Put(ctx, []byte(k), v))
			model[k] = v
		}
	}
	deleteRange := func(db *database, lo, hi int) {
		start, end := fmt.Sprintf("key%05d", lo), fmt.Sprintf("key%05d", hi)
		require.NoError(t, db.DeleteRange(ctx, []byte(start), []byte(end)))
		for k := range model {
			if k >= start && k < end {
				delete(model, k)
			}
		}
	}

	// Versions 1 and 2, unpartitioned.
	db := open("")
	write(db, 1500, "v1")
	require.NoError(t, db.Flush(ctx))
	write(db, 200, "v2")
	deleteRange(db, 1000, 1300)
	require.NoError(t, db.Flush(ctx))
	require.NoError(t, db.Close())

	// Version 3, with and without a range deletion, over them.
	db = open(partitioned)
	write(db, 1500, "v3")
	require.NoError(t, db.Flush(ctx))
	write(db, 1500, "v3b")
	deleteRange(db, 2000, 2100)
	require.NoError(t, db.Flush(ctx))
	versions := tableVersions(t, dir)
	for _, v := range []uint64{1, 2, 3} {
		require.NotZero(t, versions[v], "format version %d in %v", v, versions)
	}
	checkPartitionedDB(t, db, model, rng)
	require.NoError(t, db.VerifyChecksum(ctx))
	require.NoError(t, db.VerifyFileChecksums(ctx))
	require.NoError(t, db.Check(ctx))

	// A transaction conflicts with a write that a flush put in a
	// partitioned table, and not with one to another key.
	for _, conflict := range []bool{true, false} {
		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		require.NoError(t, db.Put(ctx, []byte("key00007"), []byte("outside")))
		model["key00007"] = []byte("outside")
		write(db, 1200, "tx") // enough for a partitioned table
		require.NoError(t, db.Flush(ctx))
		require.Equal(t, uint64(sstable.FormatVersionPartitioned), newestTableVersion(t, dir))
		k := "key00007"
		if !conflict {
			k = "key99999"
		}
		require.NoError(t, tx.Put(ctx, []byte(k), []byte("tx")))
		err = tx.Commit()
		if conflict {
			require.ErrorIs(t, err, ErrConflict)
			continue
		}
		require.NoError(t, err)
		model[k] = []byte("tx")
	}

	// A checkpoint reads the same, opened without partitioning.
	cpDir := filepath.Join(t.TempDir(), "cp")
	require.NoError(t, db.Checkpoint(ctx, cpDir))
	cp, err := openDatabase(cpDir, &Options{})
	require.NoError(t, err)
	checkPartitionedDB(t, cp, model, rng)
	require.NoError(t, cp.Check(ctx))
	require.NoError(t, cp.Close())

	// Compacting the mixture writes partitioned tables.
	require.NoError(t, db.Compact(ctx, nil, nil))
	checkPartitionedDB(t, db, model, rng)
	require.NoError(t, db.Check(ctx))
	versions = tableVersions(t, dir)
	require.NotZero(t, versions[3], "%v", versions)
	require.Zero(t, versions[1]+versions[2], "%v", versions)
	require.NoError(t, db.Close())

	// And without the option, unpartitioned ones again.
	// (A compaction rewrites a table only with newer data over it.)
	db = open("")
	write(db, 1500, "again")
	require.NoError(t, db.Flush(ctx))
	require.NoError(t, db.Compact(ctx, nil, nil))
	checkPartitionedDB(t, db, model, rng)
	require.NoError(t, db.VerifyChecksum(ctx))
	require.NoError(t, db.VerifyFileChecksums(ctx))
	require.NoError(t, db.Check(ctx))
	versions = tableVersions(t, dir)
	require.Zero(t, versions[3], "%v", versions)
	require.NoError(t, db.Close())
}

// newestTableVersion returns the format version of the table in dir with
// the highest file number.
func newestTableVersion(t *testing.T, dir string) uint64 {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	require.NoError(t, err)
	require.NotEmpty(t, names)
	slices.Sort(names)
	f, err := fileio.Open(vfs.Default, names[len(names)-1], fileio.Options{})
	require.NoError(t, err)
	r, err := sstable.Open(context.Background(), f, sstable.ReadEnv{VerifyChecksums: true}, sstable.ReaderOptions{})
	require.NoError(t, err)
	defer r.Close()
	return r.Properties().FormatVersion
}
