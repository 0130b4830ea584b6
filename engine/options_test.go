package engine

import (
	"context"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/ratelimit"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// TestFormatDSNRoundTripsEveryKey sets every DSN-expressible field of
// Options to a value other than its default and checks that FormatDSN
// prints every DSN key and that ParseDSN gives the same Options back; the
// typed-only fields are left out of the DSN.
func TestFormatDSNRoundTripsEveryKey(t *testing.T) {
	level, mode := statistics.LevelAll, ratelimit.ModeWrites
	o := &Options{
		ErrorIfMissing: true, ReadOnly: true, Secondary: true, StatsLevel: &level,
		BlockCacheSize: -1, WriteBufferSize: 1 << 20, MaxWriteBufferNumber: 3,
		Level0FileNumCompactionTrigger: 2, Level0SlowdownWritesTrigger: 5, Level0StopWritesTrigger: 9,
		MaxBytesForLevelBase: 10 << 20, MaxBytesForLevelMultiplier: 8.5,
		TargetFileSizeBase: 2 << 20, TargetFileSizeMultiplier: 2, MaxOpenFiles: 100,
		DisableAutoCompactions: true, BlockSize: 16 << 10, BlockRestartInterval: 8,
		BloomBitsPerKey: NoBloomFilter, OptimizeFiltersForHits: true,
		Compression: CompressionNone, ChecksumType: ChecksumCRC32C, DisableFileChecksums: true,
		CompressionPerLevel:   []Compression{CompressionNone, CompressionSnappy, CompressionZstd},
		BottommostCompression: CompressionSnappy, ZstdLevel: 9,
		PrefixExtractor: PrefixExtractor{Kind: PrefixCapped, Len: 4},
		Comparer:        ReverseBytewiseComparer,
		WALRecoveryMode: WALRecoveryPointInTime, Sync: true,
		RateLimit: 1 << 20, RateLimitMode: &mode, RateLimitRefillPeriod: 10 * time.Millisecond,
		RateLimitFairness: 5, RateLimitAutoTuned: true,
		MmapReads: true, CacheIndexAndFilterBlocks: true, PartitionIndexAndFilters: true,
		MetadataBlockSize: 8 << 10, HighPriorityPoolRatio: -1, BlockCacheOnGoHeap: true,
		MaxManifestFileSize: 1 << 20, ParanoidFileChecks: true,
	}
	var err error
	o.MergeOperator, err = ParseMergeOperator("stringappend:; &")
	require.NoError(t, err)
	dsn := FormatDSN("/a b/db", o)
	for _, row := range DSNKeys() {
		switch row[0] {
		case "error_if_exists", "statistics":
			// Contradict read_only and stats_level respectively.
			continue
		}
		require.Contains(t, dsn, row[0]+"=", "FormatDSN prints every key set")
	}
	dir, again, err := ParseDSN(dsn)
	require.NoError(t, err, dsn)
	require.Equal(t, "/a b/db", dir)
	require.Equal(t, "stringappend:; &", again.MergeOperator.Name())
	require.Equal(t, o, again, dsn)

	// Typed-only fields have no DSN form.
	typed := &Options{FS: vfs.NewMem(), Logger: slog.Default(), Statistics: statistics.New(statistics.LevelAll),
		RateLimiter: newTestLimiter(t), EventListener: &EventListener{}}
	require.Equal(t, "/db", FormatDSN("/db", typed))
	require.Equal(t, "/db", FormatDSN("/db", nil))
}

// TestOptionsTypedAndDSNFormContradict: a typed field set with its DSN form
// is refused by Validate, naming both, marked ErrInvalidArgument; so is
// opening with such options.
func TestOptionsTypedAndDSNFormContradict(t *testing.T) {
	level, mode := statistics.LevelAll, ratelimit.ModeReads
	lim := newTestLimiter(t)
	for _, tc := range []struct {
		o    Options
		want []string
	}{
		{Options{Statistics: statistics.New(statistics.LevelAll), StatsLevel: &level}, []string{"Statistics and StatsLevel"}},
		{Options{Statistics: statistics.New(statistics.LevelAll), DisableStatistics: true}, []string{"Statistics and DisableStatistics"}},
		{Options{RateLimiter: lim, RateLimit: 1 << 20}, []string{"RateLimiter and RateLimit"}},
		{Options{RateLimiter: lim, RateLimitMode: &mode, RateLimitAutoTuned: true},
			[]string{"RateLimiter and RateLimitMode, RateLimitAutoTuned"}},
		{Options{RateLimit: -1}, []string{"rate_limit -1 (RateLimit) is not within 1 or more"}},
	} {
		err := tc.o.EnsureDefaults().Validate()
		require.ErrorIs(t, err, ErrInvalidArgument)
		require.ErrorIs(t, err, driver.ErrInvalidArgument)
		for _, w := range tc.want {
			require.ErrorContains(t, err, w)
		}
		_, err = openDatabase(t.TempDir(), &tc.o)
		require.ErrorIs(t, err, ErrInvalidArgument)
	}
	// Each form alone is valid.
	for _, o := range []Options{
		{Statistics: statistics.New(statistics.LevelAll)},
		{StatsLevel: &level},
		{RateLimiter: lim},
		{RateLimit: 1 << 20, RateLimitMode: &mode},
	} {
		require.NoError(t, o.EnsureDefaults().Validate())
	}
}

// TestOptionsBuildStatisticsAndLimiter: the database creates its statistics
// at StatsLevel and a limiter from RateLimit, which it closes with itself.
func TestOptionsBuildStatisticsAndLimiter(t *testing.T) {
	level := statistics.LevelDisableAll
	db, err := openDatabase(t.TempDir(), &Options{StatsLevel: &level, RateLimit: 8 << 20})
	require.NoError(t, err)
	require.NotNil(t, db.Statistics())
	require.Equal(t, statistics.LevelDisableAll, db.Statistics().Level())
	g := db.opts.RateLimiter.(*ratelimit.Generic)
	require.Same(t, db.ownedLimiter, g)
	require.True(t, g.IsRateLimited(ratelimit.OpRead), "the default mode is all")
	require.True(t, g.IsRateLimited(ratelimit.OpWrite))
	require.NoError(t, db.Close())

	db, err = openDatabase(t.TempDir(), nil)
	require.NoError(t, err)
	require.Equal(t, statistics.DefaultLevel, db.Statistics().Level())
	require.Nil(t, db.opts.RateLimiter)
	require.NoError(t, db.Close())
}

// TestMemoryReadOnlyRefused: read_only with :memory: could never open a
// database with data in it; the DSN parser and the connector refuse it,
// naming both.
func TestMemoryReadOnlyRefused(t *testing.T) {
	_, _, err := ParseDSN(MemoryPath + "?read_only=true")
	require.ErrorIs(t, err, driver.ErrInvalidArgument)
	require.ErrorContains(t, err, "read_only with :memory:")

	db, err := driver.Open(DriverName, MemoryPath+"?read_only=true")
	require.ErrorIs(t, err, driver.ErrInvalidArgument)
	require.Nil(t, db)

	db = driver.OpenDB(NewConnector(MemoryPath, &Options{ReadOnly: true}))
	err = db.Ping(context.Background())
	require.ErrorIs(t, err, driver.ErrInvalidArgument)
	require.ErrorContains(t, err, "read_only with :memory:")
	_ = db.Close()
}

func newTestLimiter(t *testing.T) *ratelimit.Generic {
	l, err := ratelimit.New(ratelimit.Options{BytesPerSecond: 1 << 20})
	require.NoError(t, err)
	t.Cleanup(l.Close)
	return l
}

// TestOptionsValidateBounds: the DSN's bounds hold for Options set in Go,
// and each refusal names the DSN key, the Go field, the value and the range;
// values at the bounds are valid.
func TestOptionsValidateBounds(t *testing.T) {
	level, mode := statistics.LevelAll, ratelimit.ModeReads
	for _, tc := range []struct {
		o    Options
		want string // "": valid
	}{
		{Options{BlockSize: 64 << 20}, "block_size 64MiB (BlockSize) is not within 256 to 4MiB"},
		{Options{BlockSize: 4 << 20}, ""},
		{Options{TargetFileSizeBase: 7 << 60}, "target_file_size_base 7EiB (TargetFileSizeBase) is not within 1KiB to 1TiB"},
		{Options{BlockRestartInterval: 2147483647}, "block_restart_interval 2147483647 (BlockRestartInterval) is not within 1 to 1048576"},
		{Options{BlockRestartInterval: 1 << 20}, ""},
		{Options{MaxWriteBufferNumber: 1000000}, "max_write_buffer_number 1000000 (MaxWriteBufferNumber) is not within 2 to 64"},
		{Options{MaxWriteBufferNumber: 64}, ""},
		{Options{MaxBytesForLevelMultiplier: math.Inf(1)}, "max_bytes_for_level_multiplier +Inf (MaxBytesForLevelMultiplier)"},
		{Options{MaxBytesForLevelMultiplier: math.NaN()}, "max_bytes_for_level_multiplier NaN (MaxBytesForLevelMultiplier)"},
		{Options{MaxBytesForLevelMultiplier: 0.5}, "max_bytes_for_level_multiplier 0.5 (MaxBytesForLevelMultiplier)"},
		{Options{MaxBytesForLevelMultiplier: 127.9}, ""},
		{Options{MaxBytesForLevelMultiplier: 128}, "(MaxBytesForLevelBase, MaxBytesForLevelMultiplier), the target size of L6, overflows int64"},
		{Options{TargetFileSizeMultiplier: 169}, "(TargetFileSizeBase, TargetFileSizeMultiplier), the target size of L6's tables, overflows int64"},
		{Options{TargetFileSizeMultiplier: 168}, ""},
		{Options{WriteBufferSize: 3584<<20 + 1}, "write_buffer_size 3758096385 (WriteBufferSize) is not within 64KiB to 3584MiB"},
		{Options{WriteBufferSize: 3584 << 20}, ""},
		{Options{BlockCacheSize: 64<<40 + 1}, "block_cache_size 70368744177665 (BlockCacheSize) is not within 1 to 64TiB"},
		{Options{BlockCacheSize: -1}, ""},
		{Options{Level0StopWritesTrigger: 1<<30 + 1}, "level0_stop_writes_trigger 1073741825 (Level0StopWritesTrigger)"},
		{Options{MetadataBlockSize: 4<<20 + 1}, "metadata_block_size 4194305 (MetadataBlockSize) is not within 256 to 4MiB"},
		{Options{BloomBitsPerKey: 65}, "bloom_bits_per_key 65 (BloomBitsPerKey) is not within 1 to 64"},
		{Options{MaxOpenFiles: 7}, "max_open_files 7 (MaxOpenFiles) is not within 8 or more"},
		{Options{MaxManifestFileSize: 1023}, "max_manifest_file_size 1023 (MaxManifestFileSize) is not within 1KiB or more"},
		{Options{RateLimit: 1 << 20, RateLimitFairness: 101}, "rate_limit_fairness 101 (RateLimitFairness) is not within 1 to 100"},
		{Options{RateLimit: 1 << 20, RateLimitRefillPeriod: time.Nanosecond}, "rate_limit_refill_period 1ns (RateLimitRefillPeriod) is not within 1µs to 1h"},
		{Options{RateLimit: 1 << 20, RateLimitRefillPeriod: 2 * time.Hour}, "rate_limit_refill_period 2h0m0s (RateLimitRefillPeriod)"},
		{Options{RateLimit: 1 << 20, RateLimitRefillPeriod: time.Hour, RateLimitFairness: 100}, ""},
		{Options{DisableStatistics: true, StatsLevel: &level}, "statistics=false and stats_level=all (DisableStatistics and StatsLevel) contradict"},
		{Options{RateLimitMode: &mode}, "rate_limit_mode (RateLimitMode) set without rate_limit (RateLimit)"},
		{Options{RateLimitMode: &mode, RateLimiter: newTestLimiter(t)}, "RateLimiter and RateLimitMode are both set"},
	} {
		err := tc.o.EnsureDefaults().Validate()
		if tc.want == "" {
			require.NoError(t, err, "%+v", tc.o)
			continue
		}
		require.ErrorIs(t, err, ErrInvalidArgument, tc.want)
		require.ErrorContains(t, err, tc.want)
	}
	// Every problem in one error.
	err := (&Options{BlockSize: 64 << 20, MaxWriteBufferNumber: 1000000, MaxBytesForLevelMultiplier: math.Inf(1)}).
		EnsureDefaults().Validate()
	for _, w := range []string{"block_size", "max_write_buffer_number", "max_bytes_for_level_multiplier"} {
		require.ErrorContains(t, err, w)
	}
}
