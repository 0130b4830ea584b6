package engine

import (
	"strconv"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/ratelimit"
	"github.com/shaledb/shale/statistics"
)

// MemoryPath is the DSN path of an in-memory database: it lives in a fresh
// in-memory filesystem and disappears when closed.
const MemoryPath = ":memory:"

// Config is a parsed DSN: the directory and every setting a DSN can carry.
// ParseDSN and (*Config).String round-trip. Options builds the engine options
// from it (creating the statistics object and the rate limiter it names).
type Config struct {
	// Dir is the database directory, or MemoryPath.
	Dir string

	ErrorIfMissing, ErrorIfExists, ReadOnly bool
	DisableStatistics                       bool
	StatsLevel                              statistics.Level

	BlockCacheSize                 int64 // negative: no cache
	WriteBufferSize                int64
	MaxWriteBufferNumber           int
	TargetFileSizeBase             int64
	TargetFileSizeMultiplier       int
	MaxBytesForLevelBase           int64
	MaxBytesForLevelMultiplier     float64
	Level0FileNumCompactionTrigger int
	Level0SlowdownWritesTrigger    int
	Level0StopWritesTrigger        int
	DisableAutoCompactions         bool
	BlockSize                      int
	BlockRestartInterval           int
	BloomBitsPerKey                int // NoBloomFilter: no filter
	OptimizeFiltersForHits         bool
	Compression                    Compression
	ChecksumType                   ChecksumType
	DisableFileChecksums           bool
	Sync                           bool
	MaxOpenFiles                   int
	MmapReads                      bool
	CacheIndexAndFilterBlocks      bool
	PartitionIndexAndFilters       bool
	MetadataBlockSize              int
	HighPriorityPoolRatio          float64 // 0: no pool
	BlockCacheOnGoHeap             bool
	MaxManifestFileSize            int64
	ParanoidFileChecks             bool
	WALRecoveryMode                WALRecoveryMode

	// RateLimit is the rate limiter's bytes per second; 0 means none.
	RateLimit             int64
	RateLimitMode         ratelimit.Mode
	RateLimitRefillPeriod time.Duration
	RateLimitFairness     int
	RateLimitAutoTuned    bool
}

// DefaultConfig returns the configuration of a DSN with no parameters.
func DefaultConfig(dir string) *Config {
	o := DefaultOptions()
	return &Config{
		Dir:                            dir,
		StatsLevel:                     statistics.DefaultLevel,
		BlockCacheSize:                 o.BlockCacheSize,
		WriteBufferSize:                o.WriteBufferSize,
		MaxWriteBufferNumber:           o.MaxWriteBufferNumber,
		TargetFileSizeBase:             o.TargetFileSizeBase,
		TargetFileSizeMultiplier:       o.TargetFileSizeMultiplier,
		MaxBytesForLevelBase:           o.MaxBytesForLevelBase,
		MaxBytesForLevelMultiplier:     o.MaxBytesForLevelMultiplier,
		Level0FileNumCompactionTrigger: o.Level0FileNumCompactionTrigger,
		Level0SlowdownWritesTrigger:    o.Level0SlowdownWritesTrigger,
		Level0StopWritesTrigger:        o.Level0StopWritesTrigger,
		BlockSize:                      o.BlockSize,
		BlockRestartInterval:           o.BlockRestartInterval,
		BloomBitsPerKey:                o.BloomBitsPerKey,
		OptimizeFiltersForHits:         o.OptimizeFiltersForHits,
		MetadataBlockSize:              o.MetadataBlockSize,
		HighPriorityPoolRatio:          o.HighPriorityPoolRatio,
		Compression:                    o.Compression,
		ChecksumType:                   o.ChecksumType,
		MaxManifestFileSize:            o.MaxManifestFileSize,
		RateLimitMode:                  ratelimit.ModeAll,
		RateLimitRefillPeriod:          100 * time.Millisecond,
		RateLimitFairness:              10,
	}
}

// dsnKey is one DSN parameter: its name and documentation, how to parse it
// into a Config, and how to print a Config's value in DSN form (which, for
// the default Config, is the default the documentation shows).
type dsnKey struct {
	name, doc string
	parse     func(c *Config, v string) error
	get       func(c *Config) string
}

// zeroMeans says what a numeric key does with 0 and negative values.
type zeroMeans uint8

const (
	// positive: only positive values configure anything. 0 is refused
	// rather than silently taken for the default, as Options takes it.
	positive zeroMeans = iota
	// none: 0 turns the feature off (stored as -1); negative values are
	// refused.
	none
	// zeroIsOff: 0 turns the feature off and is stored as 0; negative
	// values are refused.
	zeroIsOff
)

func sizeKey(name, doc string, field func(c *Config) *int64, zero zeroMeans) dsnKey {
	return dsnKey{
		name: name, doc: doc,
		parse: func(c *Config, v string) error {
			n, err := driver.ParseSize(v)
			if err != nil {
				return err
			}
			switch {
			case n == 0 && zero == none:
				n = -1
			case n == 0 && zero == zeroIsOff:
			case n <= 0:
				return errors.Newf("%q is not a positive size", v)
			}
			*field(c) = n
			return nil
		},
		get: func(c *Config) string {
			if n := *field(c); n > 0 {
				return driver.FormatSize(n)
			}
			return "0"
		},
	}
}

func intKey(name, doc string, field func(c *Config) *int, zero zeroMeans) dsnKey {
	return dsnKey{
		name: name, doc: doc,
		parse: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil {
				return errors.Newf("%q is not an integer", v)
			}
			switch {
			case n == 0 && zero == none:
				n = -1
			case n < 0 && zero == none:
				return errors.Newf("%q is negative; 0 turns it off", v)
			case n <= 0 && zero == positive:
				return errors.Newf("%q is not a positive integer", v)
			}
			*field(c) = n
			return nil
		},
		get: func(c *Config) string {
			if n := *field(c); zero != none || n >= 0 {
				return strconv.Itoa(n)
			}
			return "0"
		},
	}
}

// boolKey is a boolean key; inverted keys are stored negated (DSN
// create_if_missing is Config.ErrorIfMissing).
func boolKey(name, doc string, field func(c *Config) *bool, inverted bool) dsnKey {
	return dsnKey{
		name: name, doc: doc,
		parse: func(c *Config, v string) error {
			b, err := driver.ParseBool(v)
			if err != nil {
				return err
			}
			*field(c) = b != inverted
			return nil
		},
		get: func(c *Config) string { return strconv.FormatBool(*field(c) != inverted) },
	}
}

// dsnKeys is the DSN's parameter table, in documentation order.
var dsnKeys = []dsnKey{
	boolKey("create_if_missing", "create the database if the directory holds none",
		func(c *Config) *bool { return &c.ErrorIfMissing }, true),
	boolKey("error_if_exists", "fail if the database already exists",
		func(c *Config) *bool { return &c.ErrorIfExists }, false),
	boolKey("read_only", "open without writing: no WAL replay into tables, no flush or compaction; writes fail",
		func(c *Config) *bool { return &c.ReadOnly }, false),
	boolKey("statistics", "collect statistics (tickers and histograms)",
		func(c *Config) *bool { return &c.DisableStatistics }, true),
	{
		name: "stats_level", doc: "what statistics record: disable_all, except_histogram_or_timers, except_timers, " +
			"except_detailed_timers, except_time_for_mutex, all",
		parse: func(c *Config, v string) error {
			l, err := statistics.ParseLevel(v)
			c.StatsLevel = l
			return err
		},
		get: func(c *Config) string { return c.StatsLevel.String() },
	},
	sizeKey("block_cache_size", "block cache capacity; 0 disables the cache",
		func(c *Config) *int64 { return &c.BlockCacheSize }, none),
	sizeKey("write_buffer_size", "memtable size before a flush", func(c *Config) *int64 { return &c.WriteBufferSize }, positive),
	intKey("max_write_buffer_number", "memtables in memory before writes stall",
		func(c *Config) *int { return &c.MaxWriteBufferNumber }, positive),
	sizeKey("target_file_size_base", "size of compaction output tables in L1",
		func(c *Config) *int64 { return &c.TargetFileSizeBase }, positive),
	intKey("target_file_size_multiplier", "growth of the target table size per level",
		func(c *Config) *int { return &c.TargetFileSizeMultiplier }, positive),
	sizeKey("max_bytes_for_level_base", "target size of L1", func(c *Config) *int64 { return &c.MaxBytesForLevelBase }, positive),
	{
		name: "max_bytes_for_level_multiplier", doc: "growth of the target size per level",
		parse: func(c *Config, v string) error {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return errors.Newf("%q is not a number", v)
			}
			if !(f > 0) {
				return errors.Newf("%q is not a positive number", v)
			}
			c.MaxBytesForLevelMultiplier = f
			return nil
		},
		get: func(c *Config) string { return strconv.FormatFloat(c.MaxBytesForLevelMultiplier, 'g', -1, 64) },
	},
	intKey("level0_file_num_compaction_trigger", "L0 tables that start an L0 compaction",
		func(c *Config) *int { return &c.Level0FileNumCompactionTrigger }, positive),
	intKey("level0_slowdown_writes_trigger", "L0 tables at which writes are delayed",
		func(c *Config) *int { return &c.Level0SlowdownWritesTrigger }, positive),
	intKey("level0_stop_writes_trigger", "L0 tables at which writes wait",
		func(c *Config) *int { return &c.Level0StopWritesTrigger }, positive),
	boolKey("disable_auto_compactions", "run no background compactions (Compact still works)",
		func(c *Config) *bool { return &c.DisableAutoCompactions }, false),
	{
		name: "block_size", doc: "target uncompressed data block size",
		parse: func(c *Config, v string) error {
			n, err := driver.ParseSize(v)
			switch {
			case err != nil:
			case n > 1<<30:
				err = errors.Newf("%q is too large", v)
			case n <= 0:
				err = errors.Newf("%q is not a positive size", v)
			}
			c.BlockSize = int(n)
			return err
		},
		get: func(c *Config) string { return driver.FormatSize(int64(c.BlockSize)) },
	},
	intKey("block_restart_interval", "keys between restart points in a data block",
		func(c *Config) *int { return &c.BlockRestartInterval }, positive),
	intKey("bloom_bits_per_key", "bloom filter bits per key; 0 writes no filter",
		func(c *Config) *int { return &c.BloomBitsPerKey }, none),
	boolKey("optimize_filters_for_hits", "write the last level's tables (L6, most of the data) without a bloom "+
		"filter (RocksDB's optimize_filters_for_hits): for reads that mostly find their key, nine tenths of the "+
		"filters' memory and cache reads saved; a Get of a key absent from L6 but within its tables' ranges "+
		"reads an index and a data block there instead",
		func(c *Config) *bool { return &c.OptimizeFiltersForHits }, false),
	{
		name: "compression", doc: "block compression: snappy or none",
		parse: func(c *Config, v string) error {
			switch v {
			case "snappy":
				c.Compression = CompressionSnappy
			case "none":
				c.Compression = CompressionNone
			default:
				return errors.Newf("%q is not snappy or none", v)
			}
			return nil
		},
		get: func(c *Config) string { return c.Compression.String() },
	},
	{
		name: "checksum", doc: "block checksum: xxh64 or crc32c",
		parse: func(c *Config, v string) error {
			switch v {
			case "xxh64":
				c.ChecksumType = ChecksumXXH64
			case "crc32c":
				c.ChecksumType = ChecksumCRC32C
			default:
				return errors.Newf("%q is not xxh64 or crc32c", v)
			}
			return nil
		},
		get: func(c *Config) string { return c.ChecksumType.String() },
	},
	boolKey("file_checksums", "record each table's whole-file CRC32C for VerifyFileChecksums",
		func(c *Config) *bool { return &c.DisableFileChecksums }, true),
	boolKey("sync", "sync the WAL on every write", func(c *Config) *bool { return &c.Sync }, false),
	sizeKey("rate_limit", "rate limiter bytes per second; 0 means no limiter",
		func(c *Config) *int64 { return &c.RateLimit }, zeroIsOff),
	{
		name: "rate_limit_mode", doc: "what the rate limiter limits: reads, writes or all",
		parse: func(c *Config, v string) error {
			m, err := ratelimit.ParseMode(v)
			c.RateLimitMode = m
			return err
		},
		get: func(c *Config) string { return c.RateLimitMode.String() },
	},
	{
		name: "rate_limit_refill_period", doc: "rate limiter refill period (a Go duration)",
		parse: func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return errors.Newf("%q is not a positive duration", v)
			}
			c.RateLimitRefillPeriod = d
			return nil
		},
		get: func(c *Config) string { return c.RateLimitRefillPeriod.String() },
	},
	intKey("rate_limit_fairness", "1-in-N chance that lower priorities go first",
		func(c *Config) *int { return &c.RateLimitFairness }, positive),
	boolKey("rate_limit_auto_tuned", "let the rate limiter tune its rate between rate_limit/20 and rate_limit",
		func(c *Config) *bool { return &c.RateLimitAutoTuned }, false),
	{
		name: "max_open_files", doc: "table readers kept open; -1 or 0 keeps every table open",
		parse: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < -1 {
				return errors.Newf("%q is not -1 or a non-negative integer", v)
			}
			c.MaxOpenFiles = max(n, 0)
			return nil
		},
		get: func(c *Config) string { return strconv.Itoa(c.MaxOpenFiles) },
	},
	boolKey("mmap_reads", "memory-map table files and read blocks from the mapping",
		func(c *Config) *bool { return &c.MmapReads }, false),
	boolKey("block_cache_off_heap", "keep the block cache's blocks outside the Go heap (64-bit unix), where the "+
		"garbage collector's headroom does not double them; keys and values iterators hand out from them are copied",
		func(c *Config) *bool { return &c.BlockCacheOnGoHeap }, true),
	boolKey("cache_index_and_filter_blocks", "keep table index and filter blocks in the block cache, "+
		"charged to block_cache_size, instead of in memory for as long as a table is open; "+
		"when the data's index and filter blocks exceed the cache, a miss rereads a table's whole index "+
		"or filter unless partition_index_and_filters is set",
		func(c *Config) *bool { return &c.CacheIndexAndFilterBlocks }, false),
	boolKey("partition_index_and_filters", "write each new table's index and bloom filter as partitions of "+
		"about metadata_block_size under a small top-level index (RocksDB's kTwoLevelIndexSearch with "+
		"partition_filters), so that with cache_index_and_filter_blocks a read loads one partition, not a "+
		"table's whole index and filter; such tables need table format version 3",
		func(c *Config) *bool { return &c.PartitionIndexAndFilters }, false),
	{
		name: "metadata_block_size", doc: "target size of an index partition, with partition_index_and_filters " +
			"(256 to 64MiB)",
		parse: func(c *Config, v string) error {
			n, err := driver.ParseSize(v)
			switch {
			case err != nil:
			case n < 256 || n > 64<<20:
				err = errors.Newf("%q is not between 256 and 64MiB", v)
			}
			c.MetadataBlockSize = int(n)
			return err
		},
		get: func(c *Config) string { return driver.FormatSize(int64(c.MetadataBlockSize)) },
	},
	{
		name: "high_pri_pool_ratio", doc: "share of the block cache (0 to 1) that index and filter blocks, with " +
			"cache_index_and_filter_blocks, keep ahead of data blocks (RocksDB's high_pri_pool_ratio); 0: none",
		parse: func(c *Config, v string) error {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return errors.Newf("%q is not a number", v)
			}
			if !(f >= 0 && f <= 1) {
				return errors.Newf("%q is not between 0 and 1", v)
			}
			c.HighPriorityPoolRatio = f
			return nil
		},
		get: func(c *Config) string { return strconv.FormatFloat(c.HighPriorityPoolRatio, 'g', -1, 64) },
	},
	sizeKey("max_manifest_file_size", "MANIFEST size at which it is rewritten",
		func(c *Config) *int64 { return &c.MaxManifestFileSize }, positive),
	boolKey("paranoid_file_checks", "read back and verify every block of each new table before installing it",
		func(c *Config) *bool { return &c.ParanoidFileChecks }, false),
	{
		name: "wal_recovery_mode", doc: "what Open does with a damaged WAL: tolerate_corrupted_tail_records, " +
			"absolute_consistency, point_in_time_recovery, skip_any_corrupted_records",
		parse: func(c *Config, v string) error {
			m, err := ParseWALRecoveryMode(v)
			c.WALRecoveryMode = m
			return err
		},
		get: func(c *Config) string { return c.WALRecoveryMode.String() },
	},
}

// ParseDSN parses a DSN: a directory path (or ":memory:") with URL-style
// parameters named after RocksDB's options, for example
// "/var/lib/app/db?stats_level=all&block_cache_size=32MiB&rate_limit=8MiB".
// An unknown key, a bad value or an invalid combination is an error marked
// ErrInvalidArgument that names it. See DSNKeys for the table.
func ParseDSN(dsn string) (*Config, error) {
	d, err := driver.ParseDSN(dsn)
	if err != nil {
		return nil, base.Mark(errors.Wrap(err, "engine: bad DSN"), ErrInvalidArgument)
	}
	c := DefaultConfig(d.Path)
	known := make(map[string]*dsnKey, len(dsnKeys))
	for i := range dsnKeys {
		known[dsnKeys[i].name] = &dsnKeys[i]
	}
	var errs []error
	for _, p := range d.Params {
		k, ok := known[p.Key]
		if !ok {
			errs = append(errs, errors.Newf("unknown key %q", p.Key))
			continue
		}
		if err := k.parse(c, p.Value); err != nil {
			errs = append(errs, errors.Wrapf(err, "bad value for %s", p.Key))
		}
	}
	if len(errs) == 0 {
		o := c.options()
		o.EnsureDefaults()
		if err := o.Validate(); err != nil {
			errs = append(errs, err)
		}
		if c.RateLimit < 0 {
			errs = append(errs, errors.Newf("rate_limit %d is negative", c.RateLimit))
		}
	}
	if len(errs) > 0 {
		return nil, base.Mark(errors.Wrapf(errors.Join(errs...), "engine: DSN %q", dsn), ErrInvalidArgument)
	}
	return c, nil
}

// String formats c as a DSN that ParseDSN parses back to c, listing only the
// settings that differ from the defaults, in table order.
func (c *Config) String() string {
	def := DefaultConfig(c.Dir)
	var params []driver.Param
	for _, k := range dsnKeys {
		if v := k.get(c); v != k.get(def) {
			params = append(params, driver.Param{Key: k.name, Value: v})
		}
	}
	return driver.FormatDSN(c.Dir, params)
}

// options returns the Options c describes, without creating statistics or a
// rate limiter.
func (c *Config) options() Options {
	return Options{
		ErrorIfMissing: c.ErrorIfMissing, ErrorIfExists: c.ErrorIfExists, ReadOnly: c.ReadOnly,
		DisableStatistics: c.DisableStatistics,
		BlockCacheSize:    c.BlockCacheSize, WriteBufferSize: c.WriteBufferSize,
		MaxWriteBufferNumber: c.MaxWriteBufferNumber, TargetFileSizeBase: c.TargetFileSizeBase,
		TargetFileSizeMultiplier: c.TargetFileSizeMultiplier, MaxBytesForLevelBase: c.MaxBytesForLevelBase,
		MaxBytesForLevelMultiplier:     c.MaxBytesForLevelMultiplier,
		Level0FileNumCompactionTrigger: c.Level0FileNumCompactionTrigger,
		Level0SlowdownWritesTrigger:    c.Level0SlowdownWritesTrigger,
		Level0StopWritesTrigger:        c.Level0StopWritesTrigger,
		DisableAutoCompactions:         c.DisableAutoCompactions,
		BlockSize:                      c.BlockSize, BlockRestartInterval: c.BlockRestartInterval,
		BloomBitsPerKey: c.BloomBitsPerKey, OptimizeFiltersForHits: c.OptimizeFiltersForHits,
		Compression: c.Compression, ChecksumType: c.ChecksumType,
		DisableFileChecksums: c.DisableFileChecksums, Sync: c.Sync, MaxOpenFiles: c.MaxOpenFiles,
		MmapReads: c.MmapReads, BlockCacheOnGoHeap: c.BlockCacheOnGoHeap, MaxManifestFileSize: c.MaxManifestFileSize,
		CacheIndexAndFilterBlocks: c.CacheIndexAndFilterBlocks,
		PartitionIndexAndFilters:  c.PartitionIndexAndFilters, MetadataBlockSize: c.MetadataBlockSize,
		HighPriorityPoolRatio: poolRatioOption(c.HighPriorityPoolRatio),
		ParanoidFileChecks:    c.ParanoidFileChecks, WALRecoveryMode: c.WALRecoveryMode,
	}
}

// Options returns the engine options c describes, with a new statistics
// object at c's level (unless disabled) and a new rate limiter (when
// RateLimit is set).
func (c *Config) Options() (*Options, error) {
	o := c.options()
	if !c.DisableStatistics {
		o.Statistics = statistics.New(c.StatsLevel)
	}
	if c.RateLimit > 0 {
		l, err := ratelimit.New(ratelimit.Options{
			BytesPerSecond: c.RateLimit, RefillPeriod: c.RateLimitRefillPeriod, Fairness: c.RateLimitFairness,
			Mode: c.RateLimitMode, AutoTuned: c.RateLimitAutoTuned,
		})
		if err != nil {
			return nil, base.Mark(errors.Wrap(err, "engine: DSN rate limiter"), ErrInvalidArgument)
		}
		o.RateLimiter = l
	}
	return &o, nil
}

// DSNKeys returns the DSN parameter table as {key, default, meaning} rows, in
// documentation order, for the README and the command-line tool.
func DSNKeys() [][3]string {
	def := DefaultConfig("")
	rows := make([][3]string, 0, len(dsnKeys))
	for _, k := range dsnKeys {
		rows = append(rows, [3]string{k.name, k.get(def), k.doc})
	}
	return rows
}

// poolRatioOption maps the DSN's high_pri_pool_ratio, where 0 means no
// pool, to Options.HighPriorityPoolRatio, where 0 means the default.
func poolRatioOption(r float64) float64 {
	if r == 0 {
		return -1
	}
	return r
}
