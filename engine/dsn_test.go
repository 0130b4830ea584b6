package engine

import (
	"context"
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/ratelimit"
	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

func TestParseDSN(t *testing.T) {
	dir, c, err := ParseDSN("/var/lib/app/db?stats_level=all&block_cache_size=32MiB&rate_limit=8MiB")
	require.NoError(t, err)
	require.Equal(t, "/var/lib/app/db", dir)
	require.Equal(t, statistics.LevelAll, *c.StatsLevel)
	require.Equal(t, int64(32<<20), c.BlockCacheSize)
	require.Equal(t, int64(8<<20), c.RateLimit)

	dir, def, err := ParseDSN("/db")
	require.NoError(t, err)
	require.Equal(t, &Options{}, def)
	require.Equal(t, "/db", FormatDSN(dir, def), "default options print no parameters")

	for _, tc := range []struct{ dsn, want string }{
		{"/db?bogus=1", `unknown key "bogus"`},
		{"/db?block_cache_size=lots", "block_cache_size"},
		{"/db?stats_level=verbose", "stats_level"},
		{"/db?compression=zstd", `"zstd" is not snappy or none`},
		{"/db?create_if_missing=maybe", "create_if_missing"},
		{"/db?write_buffer_size=1KiB", "write_buffer_size 1024 is below the minimum"},
		{"/db?rate_limit_mode=sideways", "rate_limit_mode"},
		{"/db?max_open_files=-2", "max_open_files"},
		{"/db?block_size=1KiB&block_size=2KiB", "block_size"},
		{"/db?wal_recovery_mode=best_effort", "bad value for wal_recovery_mode"},
		{"/db?wal_recovery_mode=", "wal_recovery_mode"},
		{"/db?partition_index_and_filters=sometimes", "partition_index_and_filters"},
		{"/db?metadata_block_size=100", `bad value for metadata_block_size: "100" is not between 256 and 64MiB`},
		{"/db?metadata_block_size=128MiB", "metadata_block_size"},
		{"/db?metadata_block_size=0", "metadata_block_size"},
		{"/db?metadata_block_size=four", "metadata_block_size"},
		{"/db?high_pri_pool_ratio=1.5", `bad value for high_pri_pool_ratio: "1.5" is not between 0 and 1`},
		{"/db?high_pri_pool_ratio=-0.1", "high_pri_pool_ratio"},
		{"/db?high_pri_pool_ratio=NaN", "high_pri_pool_ratio"},
		{"/db?high_pri_pool_ratio=half", `"half" is not a number`},
		{"", "path"},
		{":memory:?read_only=true", "read_only with :memory:"},
	} {
		_, _, err := ParseDSN(tc.dsn)
		require.Error(t, err, tc.dsn)
		require.ErrorIs(t, err, ErrInvalidArgument, tc.dsn)
		require.Contains(t, err.Error(), tc.want, tc.dsn)
	}
}

func TestDSNRoundTrip(t *testing.T) {
	for _, dsn := range []string{
		"/db",
		":memory:",
		"/tmp/a b/db?stats_level=all",
		"/db?create_if_missing=false&statistics=false&block_cache_size=0&bloom_bits_per_key=0",
		"/db?write_buffer_size=1MiB&max_write_buffer_number=3&target_file_size_base=2MiB" +
			"&max_bytes_for_level_base=10MiB&max_bytes_for_level_multiplier=8.5&level0_file_num_compaction_trigger=2" +
			"&disable_auto_compactions=true&block_size=16KiB&block_restart_interval=8&compression=none" +
			"&checksum=crc32c&file_checksums=false&sync=true&rate_limit=1MiB&rate_limit_mode=reads" +
			"&rate_limit_refill_period=10ms&rate_limit_fairness=5&rate_limit_auto_tuned=true&max_open_files=100" +
			"&mmap_reads=true&max_manifest_file_size=1MiB&read_only=true",
		"/db?cache_index_and_filter_blocks=true&partition_index_and_filters=true&metadata_block_size=8KiB",
		"/db?partition_index_and_filters=true&metadata_block_size=256",
		"/db?cache_index_and_filter_blocks=true&high_pri_pool_ratio=0.9",
		"/db?high_pri_pool_ratio=0",
		"/db?wal_recovery_mode=tolerate_corrupted_tail_records",
		"/db?wal_recovery_mode=absolute_consistency",
		"/db?wal_recovery_mode=point_in_time_recovery",
		"/db?wal_recovery_mode=skip_any_corrupted_records",
	} {
		dir, c, err := ParseDSN(dsn)
		require.NoError(t, err, dsn)
		againDir, again, err := ParseDSN(FormatDSN(dir, c))
		require.NoError(t, err, FormatDSN(dir, c))
		require.Equal(t, dir, againDir)
		require.Equal(t, c, again, "%s → %s", dsn, FormatDSN(dir, c))
	}
	dir, c, err := ParseDSN("/db?wal_recovery_mode=point_in_time_recovery")
	require.NoError(t, err)
	require.Equal(t, WALRecoveryPointInTime, c.WALRecoveryMode)
	require.Equal(t, "/db?wal_recovery_mode=point_in_time_recovery", FormatDSN(dir, c))
	dir, def, _ := ParseDSN("/db?wal_recovery_mode=tolerate_corrupted_tail_records")
	require.Equal(t, "/db", FormatDSN(dir, def), "the default mode is not printed")

	dir, c, err = ParseDSN("/db?partition_index_and_filters=1&metadata_block_size=16384")
	require.NoError(t, err)
	require.Equal(t, "/db?partition_index_and_filters=true&metadata_block_size=16KiB", FormatDSN(dir, c))
	require.True(t, c.PartitionIndexAndFilters)
	require.Equal(t, 16<<10, c.MetadataBlockSize)
	dir, def, _ = ParseDSN("/db?partition_index_and_filters=false&metadata_block_size=4KiB")
	require.Equal(t, "/db", FormatDSN(dir, def), "the defaults are not printed")

	dir, c, _ = ParseDSN("/db?block_cache_size=33554432")
	require.Equal(t, "/db?block_cache_size=32MiB", FormatDSN(dir, c), "sizes print in the largest exact unit")
}

func TestDSNOptions(t *testing.T) {
	dir, o, err := ParseDSN(t.TempDir() + "?stats_level=all&rate_limit=4MiB&rate_limit_mode=writes&block_cache_size=0&bloom_bits_per_key=0")
	require.NoError(t, err)
	db, err := openDatabase(dir, o)
	require.NoError(t, err)
	require.Equal(t, statistics.LevelAll, db.opts.Statistics.Level())
	g, ok := db.opts.RateLimiter.(*ratelimit.Generic)
	require.True(t, ok)
	require.Equal(t, int64(4<<20), g.BytesPerSecond())
	require.False(t, g.IsRateLimited(ratelimit.OpRead))
	require.Negative(t, o.BlockCacheSize, "0 in the DSN disables the cache")
	require.Negative(t, o.BloomBitsPerKey, "0 in the DSN writes no filter")
	require.NoError(t, db.Close())

	dir, o, _ = ParseDSN(t.TempDir() + "?statistics=false")
	db, err = openDatabase(dir, o)
	require.NoError(t, err)
	require.Nil(t, db.opts.Statistics)
	require.True(t, o.DisableStatistics)
	require.NoError(t, db.Close())
}

// TestDriverRegistered opens databases through the façade, by DSN and by
// connector.
func TestDriverRegistered(t *testing.T) {
	require.Contains(t, driver.Drivers(), DriverName)
	ctx := context.Background()
	for _, dsn := range []string{MemoryPath + "?stats_level=all", t.TempDir() + "/db?block_cache_size=1MiB"} {
		db, err := driver.Open(DriverName, dsn)
		require.NoError(t, err, dsn)
		require.NoError(t, db.Put(ctx, []byte("k"), []byte("v")))
		v, err := db.Get(ctx, []byte("k"))
		require.NoError(t, err)
		require.Equal(t, "v", string(v))
		_, err = db.Get(ctx, []byte("absent"))
		require.True(t, errors.Is(err, driver.ErrNotFound), "engine errors match driver sentinels: %v", err)
		require.NotNil(t, db.Statistics())
		require.NoError(t, db.Close())
	}
	_, err := driver.Open(DriverName, "/db?nope=1")
	require.True(t, errors.Is(err, driver.ErrInvalidArgument))
	require.Contains(t, err.Error(), `unknown key "nope"`)

	db := driver.OpenDB(NewConnector(t.TempDir(), &Options{BlockCacheSize: 1 << 20}))
	require.NoError(t, db.Put(ctx, []byte("a"), []byte("1")))
	// The façade's reads reach the engine tagged: a wrong activity is
	// rejected with RocksDB's message.
	bad := ioctx.WithReadOptions(ctx, ioctx.ReadOptions{Activity: ioctx.ActivityCompaction})
	_, err = db.Get(bad, []byte("a"))
	require.True(t, errors.Is(err, driver.ErrInvalidArgument))
	require.Contains(t, err.Error(), "Can only call Get with")
	require.NoError(t, db.Close())

	// A failed open is reported by every call.
	db = driver.OpenDB(NewConnector(t.TempDir()+"/missing", &Options{ErrorIfMissing: true}))
	_, err = db.Get(ctx, []byte("a"))
	require.ErrorIs(t, err, driver.ErrInvalidArgument)
	require.ErrorIs(t, db.Put(ctx, []byte("a"), nil), driver.ErrInvalidArgument)
	_ = db.Close()
}

func TestDriverOpenOwnsTheDatabase(t *testing.T) {
	dir := t.TempDir()
	c, err := Driver{}.Open(dir)
	require.NoError(t, err)
	require.NoError(t, c.Put(context.Background(), ioctx.WriteOptions{}, []byte("k"), []byte("v")))
	require.NoError(t, c.Close())
	// The database was closed and its lock released: it opens again.
	c, err = Driver{}.Open(dir)
	require.NoError(t, err)
	v, err := c.Get(context.Background(), ioctx.ReadRequest{IO: ioctx.IOOptions{Activity: ioctx.ActivityGet}}, []byte("k"))
	require.NoError(t, err)
	require.Equal(t, "v", string(v))
	require.NoError(t, c.Close())
}

// TestReadmeDSNTable keeps the README's DSN table in step with the parser.
func TestReadmeDSNTable(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if errors.Is(err, os.ErrNotExist) {
		t.Skip("no README")
	}
	require.NoError(t, err)
	readme := string(data)
	for _, row := range DSNKeys() {
		line := "| `" + row[0] + "` | `" + row[1] + "` | " + row[2] + " |"
		require.True(t, strings.Contains(readme, line), "README.md lacks the DSN row:\n%s", line)
	}
}

// TestDSNValuesThatConfigureNothing checks that a value that would silently
// mean the default (0, where Options reads 0 as "default") or nothing at all
// (a negative count) is an error naming the key, while the values that mean
// something stay valid.
func TestDSNValuesThatConfigureNothing(t *testing.T) {
	for _, dsn := range []string{
		"/db?write_buffer_size=0",
		"/db?block_size=0",
		"/db?bloom_bits_per_key=-3",
		"/db?bloom_bits_per_key=-1",
		"/db?target_file_size_base=0",
		"/db?max_write_buffer_number=0",
		"/db?max_write_buffer_number=-2",
		"/db?target_file_size_multiplier=0",
		"/db?max_bytes_for_level_base=0",
		"/db?max_bytes_for_level_multiplier=0",
		"/db?max_bytes_for_level_multiplier=-2",
		"/db?level0_file_num_compaction_trigger=0",
		"/db?level0_slowdown_writes_trigger=0",
		"/db?level0_stop_writes_trigger=0",
		"/db?block_restart_interval=0",
		"/db?max_manifest_file_size=0",
		"/db?rate_limit_fairness=0",
	} {
		key := dsn[len("/db?"):strings.IndexByte(dsn, '=')]
		_, _, err := ParseDSN(dsn)
		require.ErrorIs(t, err, ErrInvalidArgument, dsn)
		require.ErrorContains(t, err, "bad value for "+key, dsn)
	}
	for _, dsn := range []string{
		"/db?block_cache_size=0",
		"/db?bloom_bits_per_key=0",
		"/db?rate_limit=0",
		"/db?max_open_files=0",
		"/db?max_open_files=-1",
		"/db?write_buffer_size=64KiB&block_size=256&target_file_size_base=1KiB&max_write_buffer_number=2",
	} {
		_, _, err := ParseDSN(dsn)
		require.NoError(t, err, dsn)
	}
	dir, c, err := ParseDSN("/db?bloom_bits_per_key=0")
	require.NoError(t, err)
	require.Equal(t, NoBloomFilter, c.BloomBitsPerKey)
	require.Equal(t, "/db?bloom_bits_per_key=0", FormatDSN(dir, c))
}

// TestOptionsValidateValues is the same through Options, whose zero fields
// mean the defaults: negative values fail Validate naming the option, and
// BloomBitsPerKey takes NoBloomFilter (-1) and nothing below it.
func TestOptionsValidateValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(o *Options)
	}{
		{"write_buffer_size", func(o *Options) { o.WriteBufferSize = -1 }},
		{"block_size", func(o *Options) { o.BlockSize = -1 }},
		{"bloom_bits_per_key", func(o *Options) { o.BloomBitsPerKey = -3 }},
		{"target_file_size_base", func(o *Options) { o.TargetFileSizeBase = -1 }},
		{"max_write_buffer_number", func(o *Options) { o.MaxWriteBufferNumber = -1 }},
		{"metadata_block_size", func(o *Options) { o.MetadataBlockSize = -1 }},
		{"metadata_block_size", func(o *Options) { o.MetadataBlockSize = 100 }},
	} {
		o := &Options{}
		tc.set(o)
		err := o.EnsureDefaults().Validate()
		require.ErrorIs(t, err, ErrInvalidArgument, tc.name)
		require.ErrorContains(t, err, tc.name, tc.name)
	}
	o := &Options{BloomBitsPerKey: NoBloomFilter, BlockCacheSize: -1}
	require.NoError(t, o.EnsureDefaults().Validate())
}

// TestHighPriorityPoolRatioOption checks the DSN's high_pri_pool_ratio
// against Options: the DSN's 0 (no pool) is a negative option, the
// option's 0 the default, and a ratio above 1 is refused at Open.
func TestHighPriorityPoolRatioOption(t *testing.T) {
	for _, tc := range []struct {
		dsn  string
		want float64
	}{
		{"/db", DefaultHighPriorityPoolRatio},
		{"/db?high_pri_pool_ratio=0.9", 0.9},
		{"/db?high_pri_pool_ratio=1", 1},
		{"/db?high_pri_pool_ratio=0", -1},
	} {
		_, o, err := ParseDSN(tc.dsn)
		require.NoError(t, err, tc.dsn)
		require.Equal(t, tc.want, o.EnsureDefaults().HighPriorityPoolRatio, tc.dsn)
		require.NoError(t, o.Validate(), tc.dsn)
	}
	require.Equal(t, DefaultHighPriorityPoolRatio, (&Options{}).EnsureDefaults().HighPriorityPoolRatio)

	for _, r := range []float64{1.01, math.NaN()} {
		_, err := openDatabase(t.TempDir(), &Options{HighPriorityPoolRatio: r})
		require.ErrorIs(t, err, ErrInvalidArgument, "%g", r)
		require.ErrorContains(t, err, "high_pri_pool_ratio", "%g", r)
	}
	for _, r := range []float64{-1, 0.25, 1} {
		db, err := openDatabase(t.TempDir(), &Options{HighPriorityPoolRatio: r, CacheIndexAndFilterBlocks: true})
		require.NoError(t, err, "%g", r)
		require.NoError(t, db.Put(context.Background(), []byte("k"), []byte("v")))
		require.NoError(t, db.Close())
	}
}
