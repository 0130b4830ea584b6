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
		{"/db?compression=lz4", `"lz4" is not snappy, none or zstd`},
		{"/db?create_if_missing=maybe", "create_if_missing"},
		{"/db?write_buffer_size=1KiB", `bad value for write_buffer_size: "1KiB" is not within 64KiB to 3584MiB`},
		{"/db?rate_limit_mode=sideways", "rate_limit_mode"},
		{"/db?max_open_files=-2", "max_open_files"},
		{"/db?block_size=1KiB&block_size=2KiB", "block_size"},
		{"/db?wal_recovery_mode=best_effort", "bad value for wal_recovery_mode"},
		{"/db?wal_recovery_mode=", "wal_recovery_mode"},
		{"/db?partition_index_and_filters=sometimes", "partition_index_and_filters"},
		{"/db?metadata_block_size=100", `bad value for metadata_block_size: "100" is not within 256 to 4MiB`},
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

// TestDSNBounds checks every numeric DSN key just inside and just outside
// its bounds, the contradictions refused naming both keys, the moot
// combinations accepted, and issue 26's examples verbatim: a refusal matches
// ErrInvalidArgument and names the key, the value and the range.
func TestDSNBounds(t *testing.T) {
	for _, tc := range []struct {
		params string
		want   []string // nil: accepted
	}{
		// Issue 26's examples.
		{"max_bytes_for_level_multiplier=Inf", []string{"bad value for max_bytes_for_level_multiplier", `"Inf"`, "1 or more"}},
		{"statistics=false&stats_level=all", []string{"statistics=false and stats_level=all"}},
		{"block_size=64MiB", []string{"bad value for block_size", `"64MiB" is not within 256 to 4MiB`}},
		{"target_file_size_base=7EiB", []string{"bad value for target_file_size_base", `"7EiB" is not within 1KiB to 1TiB`}},
		{"block_restart_interval=2147483647", []string{"bad value for block_restart_interval", `"2147483647" is not within 1 to 1048576`}},
		{"max_write_buffer_number=1000000", []string{"bad value for max_write_buffer_number", `"1000000" is not within 2 to 64`}},

		{"block_cache_size=1", nil},
		{"block_cache_size=64TiB", nil},
		{"block_cache_size=70368744177665", []string{"block_cache_size", "1 to 64TiB"}},
		{"write_buffer_size=64KiB", nil},
		{"write_buffer_size=65535", []string{"write_buffer_size", `"65535"`, "64KiB to 3584MiB"}},
		{"write_buffer_size=3584MiB", nil},
		{"write_buffer_size=3758096385", []string{"write_buffer_size", "64KiB to 3584MiB"}},
		{"max_write_buffer_number=2", nil},
		{"max_write_buffer_number=1", []string{"max_write_buffer_number", "2 to 64"}},
		{"max_write_buffer_number=64", nil},
		{"max_write_buffer_number=65", []string{"max_write_buffer_number", "2 to 64"}},
		{"target_file_size_base=1KiB", nil},
		{"target_file_size_base=1023", []string{"target_file_size_base", "1KiB to 1TiB"}},
		{"target_file_size_base=1TiB", nil},
		{"target_file_size_base=1099511627777", []string{"target_file_size_base", "1KiB to 1TiB"}},
		// 64MiB × 168^5 fits an int64; × 169^5 does not.
		{"target_file_size_multiplier=168", nil},
		{"target_file_size_multiplier=169", []string{"target_file_size_base 64MiB × target_file_size_multiplier 169^5", "overflows int64"}},
		// 1TiB × 24^5 fits; × 25^5 does not.
		{"target_file_size_base=1TiB&target_file_size_multiplier=24", nil},
		{"target_file_size_base=1TiB&target_file_size_multiplier=25", []string{"target_file_size_base 1TiB × target_file_size_multiplier 25^5"}},
		{"max_bytes_for_level_base=1KiB", nil},
		{"max_bytes_for_level_base=1023", []string{"max_bytes_for_level_base", "1KiB or more"}},
		// 83TiB × 10^5 fits an int64; 84TiB × 10^5 does not.
		{"max_bytes_for_level_base=83TiB", nil},
		{"max_bytes_for_level_base=84TiB", []string{"max_bytes_for_level_base 84TiB × max_bytes_for_level_multiplier 10^5", "overflows int64"}},
		{"max_bytes_for_level_multiplier=1", nil},
		{"max_bytes_for_level_multiplier=0.99", []string{"max_bytes_for_level_multiplier", `"0.99"`}},
		// 256MiB × 127.9^5 fits an int64; × 128^5 = 2^63 does not.
		{"max_bytes_for_level_multiplier=127.9", nil},
		{"max_bytes_for_level_multiplier=128", []string{"max_bytes_for_level_base 256MiB × max_bytes_for_level_multiplier 128^5"}},
		{"max_bytes_for_level_multiplier=NaN", []string{"max_bytes_for_level_multiplier", `"NaN"`}},
		{"max_bytes_for_level_multiplier=-Inf", []string{"max_bytes_for_level_multiplier", `"-Inf"`}},
		{"level0_file_num_compaction_trigger=1", nil},
		{"level0_file_num_compaction_trigger=1073741824", nil},
		{"level0_file_num_compaction_trigger=1073741825", []string{"level0_file_num_compaction_trigger", "1 to 1073741824"}},
		{"level0_slowdown_writes_trigger=1073741824", nil},
		{"level0_slowdown_writes_trigger=1073741825", []string{"level0_slowdown_writes_trigger", "1 to 1073741824"}},
		{"level0_slowdown_writes_trigger=3", []string{"level0_slowdown_writes_trigger 3 is below level0_file_num_compaction_trigger 4"}},
		{"level0_stop_writes_trigger=1073741824", nil},
		{"level0_stop_writes_trigger=1073741825", []string{"level0_stop_writes_trigger", "1 to 1073741824"}},
		{"level0_stop_writes_trigger=19", []string{"level0_stop_writes_trigger 19 is below level0_slowdown_writes_trigger 20"}},
		{"block_size=256", nil},
		{"block_size=255", []string{"block_size", `"255" is not within 256 to 4MiB`}},
		{"block_size=4MiB", nil},
		{"block_size=4194305", []string{"block_size", `"4194305" is not within 256 to 4MiB`}},
		{"block_restart_interval=1", nil},
		{"block_restart_interval=1048576", nil},
		{"block_restart_interval=1048577", []string{"block_restart_interval", "1 to 1048576"}},
		{"bloom_bits_per_key=0", nil},
		{"bloom_bits_per_key=1", nil},
		{"bloom_bits_per_key=64", nil},
		{"bloom_bits_per_key=65", []string{"bloom_bits_per_key", `"65" is not within 1 to 64`}},
		{"metadata_block_size=256", nil},
		{"metadata_block_size=255", []string{"metadata_block_size", "256 to 4MiB"}},
		{"metadata_block_size=4MiB", nil},
		{"metadata_block_size=4194305", []string{"metadata_block_size", "256 to 4MiB"}},
		{"high_pri_pool_ratio=1", nil},
		{"high_pri_pool_ratio=1.0001", []string{"high_pri_pool_ratio", "0 and 1"}},
		{"max_manifest_file_size=1KiB", nil},
		{"max_manifest_file_size=1023", []string{"max_manifest_file_size", "1KiB or more"}},
		{"max_manifest_file_size=9223372036854775807", nil},
		{"rate_limit=1", nil},
		{"rate_limit=9223372036854775807", nil},
		{"rate_limit=1MiB&rate_limit_refill_period=1us", nil},
		{"rate_limit=1MiB&rate_limit_refill_period=999ns", []string{"rate_limit_refill_period", `"999ns" is not within 1µs to 1h`}},
		{"rate_limit=1MiB&rate_limit_refill_period=1h", nil},
		{"rate_limit=1MiB&rate_limit_refill_period=3600001ms", []string{"rate_limit_refill_period", "1µs to 1h"}},
		{"rate_limit=1MiB&rate_limit_fairness=1", nil},
		{"rate_limit=1MiB&rate_limit_fairness=100", nil},
		{"rate_limit=1MiB&rate_limit_fairness=101", []string{"rate_limit_fairness", `"101" is not within 1 to 100`}},
		{"max_open_files=-1", nil},
		{"max_open_files=0", nil},
		{"max_open_files=8", nil},
		{"max_open_files=7", []string{"max_open_files", `"7" is not within 8 or more`}},
		{"max_open_files=2147483647", nil},

		// Contradictions, named both.
		{"statistics=false&stats_level=disable_all", []string{"statistics=false and stats_level=disable_all"}},
		{"statistics=false", nil},
		{"statistics=true&stats_level=all", nil},
		{"rate_limit_mode=reads", []string{"rate_limit_mode (RateLimitMode) set without rate_limit (RateLimit)"}},
		{"rate_limit=0&rate_limit_fairness=5&rate_limit_auto_tuned=true",
			[]string{"rate_limit_fairness (RateLimitFairness), rate_limit_auto_tuned (RateLimitAutoTuned) set without rate_limit"}},
		{"rate_limit_refill_period=10ms", []string{"rate_limit_refill_period (RateLimitRefillPeriod) set without rate_limit"}},
		{"error_if_exists=true&create_if_missing=false", []string{"error_if_exists and create_if_missing=false"}},
		{"read_only=true&error_if_exists=true", []string{"read_only with error_if_exists"}},
		// Moot, accepted as RocksDB accepts them.
		{"optimize_filters_for_hits=true&bloom_bits_per_key=0", nil},
		{"block_cache_size=0&cache_index_and_filter_blocks=true&high_pri_pool_ratio=0.9&block_cache_off_heap=false", nil},
		{"metadata_block_size=8KiB", nil},
		{"read_only=true&disable_auto_compactions=true&level0_file_num_compaction_trigger=2", nil},
	} {
		dsn := "/db?" + tc.params
		_, o, err := ParseDSN(dsn)
		if tc.want == nil {
			require.NoError(t, err, dsn)
			require.NoError(t, o.EnsureDefaults().Validate(), dsn)
			continue
		}
		require.ErrorIs(t, err, ErrInvalidArgument, dsn)
		require.ErrorIs(t, err, driver.ErrInvalidArgument, dsn)
		for _, w := range tc.want {
			require.ErrorContains(t, err, w, dsn)
		}
	}
}
