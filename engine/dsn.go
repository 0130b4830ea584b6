package engine

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/ratelimit"
	"github.com/shaledb/shale/statistics"
)

// MemoryPath is the DSN path of an in-memory database: it lives in a fresh
// in-memory filesystem and disappears when closed.
const MemoryPath = ":memory:"

// dsnDefaults returns o (nil for the zero Options) with every default
// resolved, the DSN-only settings included: the values a DSN prints.
func dsnDefaults(o *Options) *Options {
	r := &Options{}
	if o != nil {
		*r = *o
	}
	r.EnsureDefaults()
	if r.StatsLevel == nil {
		l := statistics.DefaultLevel
		r.StatsLevel = &l
	}
	if r.RateLimitMode == nil {
		m := ratelimit.ModeAll
		r.RateLimitMode = &m
	}
	if r.RateLimitRefillPeriod == 0 {
		r.RateLimitRefillPeriod = ratelimit.DefaultRefillPeriod
	}
	if r.RateLimitFairness == 0 {
		r.RateLimitFairness = ratelimit.DefaultFairness
	}
	return r
}

// dsnKey is one DSN parameter: its name and documentation, how to parse it
// into Options, and how to print the value of Options that dsnDefaults has
// resolved in DSN form (which, for the zero Options, is the default the
// documentation shows).
type dsnKey struct {
	name, doc string
	parse     func(c *Options, v string) error
	get       func(c *Options) string
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

// sizeKey is a size key of an int64 or int field whose values other than 0
// lie within b; zero says what 0 and negative sizes mean.
func sizeKey[T int | int64](name, doc string, field func(c *Options) *T, zero zeroMeans, b bound) dsnKey {
	return dsnKey{
		name: name, doc: doc,
		parse: func(c *Options, v string) error {
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
			case !b.holds(n):
				return errors.Newf("%q is not within %s", v, b)
			}
			*field(c) = T(n)
			return nil
		},
		get: func(c *Options) string {
			if n := *field(c); n > 0 {
				return driver.FormatSize(int64(n))
			}
			return "0"
		},
	}
}

// intKey is an integer key whose values other than 0 lie within b; zero
// says what 0 and negative values mean.
func intKey(name, doc string, field func(c *Options) *int, zero zeroMeans, b bound) dsnKey {
	return dsnKey{
		name: name, doc: doc,
		parse: func(c *Options, v string) error {
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
			case n != 0 && !b.holds(int64(n)):
				return errors.Newf("%q is not within %s", v, b)
			}
			*field(c) = n
			return nil
		},
		get: func(c *Options) string {
			if n := *field(c); zero != none || n >= 0 {
				return strconv.Itoa(n)
			}
			return "0"
		},
	}
}

// boolKey is a boolean key; inverted keys are stored negated (DSN
// create_if_missing is Options.ErrorIfMissing).
func boolKey(name, doc string, field func(c *Options) *bool, inverted bool) dsnKey {
	return dsnKey{
		name: name, doc: doc,
		parse: func(c *Options, v string) error {
			b, err := driver.ParseBool(v)
			if err != nil {
				return err
			}
			*field(c) = b != inverted
			return nil
		},
		get: func(c *Options) string { return strconv.FormatBool(*field(c) != inverted) },
	}
}

// dsnKeys is the DSN's parameter table, in documentation order.
var dsnKeys = []dsnKey{
	boolKey("create_if_missing", "create the database if the directory holds none",
		func(c *Options) *bool { return &c.ErrorIfMissing }, true),
	boolKey("error_if_exists", "fail if the database already exists",
		func(c *Options) *bool { return &c.ErrorIfExists }, false),
	boolKey("read_only", "open without writing: no WAL replay into tables, no flush or compaction; writes fail",
		func(c *Options) *bool { return &c.ReadOnly }, false),
	boolKey("secondary", "open as a secondary instance: a read-only view of a database another process holds open, "+
		"without its LOCK; CatchUp follows that process's writes",
		func(c *Options) *bool { return &c.Secondary }, false),
	boolKey("statistics", "collect statistics (tickers and histograms); false with a stats_level is refused",
		func(c *Options) *bool { return &c.DisableStatistics }, true),
	{
		name: "stats_level", doc: "what statistics record: disable_all, except_histogram_or_timers, except_timers, " +
			"except_detailed_timers, except_time_for_mutex, all",
		parse: func(c *Options, v string) error {
			l, err := statistics.ParseLevel(v)
			c.StatsLevel = &l
			return err
		},
		get: func(c *Options) string { return c.StatsLevel.String() },
	},
	sizeKey("block_cache_size", "block cache capacity ("+blockCacheSizeBound.String()+"); 0 disables the cache",
		func(c *Options) *int64 { return &c.BlockCacheSize }, none, blockCacheSizeBound),
	sizeKey("write_buffer_size", "memtable size before a flush ("+writeBufferSizeBound.String()+")",
		func(c *Options) *int64 { return &c.WriteBufferSize }, positive, writeBufferSizeBound),
	intKey("max_write_buffer_number", "memtables in memory before writes stall ("+
		maxWriteBufferNumberBound.String()+")",
		func(c *Options) *int { return &c.MaxWriteBufferNumber }, positive, maxWriteBufferNumberBound),
	sizeKey("target_file_size_base", "size of compaction output tables in L1 ("+
		targetFileSizeBaseBound.String()+"; times target_file_size_multiplier^5, L6's, at most 8EiB)",
		func(c *Options) *int64 { return &c.TargetFileSizeBase }, positive, targetFileSizeBaseBound),
	intKey("target_file_size_multiplier", "growth of the target table size per level (1 or more; "+
		"target_file_size_base times it^5 at most 8EiB)",
		func(c *Options) *int { return &c.TargetFileSizeMultiplier }, positive, targetFileSizeMultiplierBound),
	sizeKey("max_bytes_for_level_base", "target size of L1 ("+maxBytesForLevelBaseBound.String()+
		"; times max_bytes_for_level_multiplier^5, L6's, at most 8EiB)",
		func(c *Options) *int64 { return &c.MaxBytesForLevelBase }, positive, maxBytesForLevelBaseBound),
	{
		name: "max_bytes_for_level_multiplier", doc: "growth of the target size per level (a finite number, " +
			"1 or more; max_bytes_for_level_base times it^5 at most 8EiB)",
		parse: func(c *Options, v string) error {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return errors.Newf("%q is not a number", v)
			}
			if !(f >= 1) || math.IsInf(f, 1) {
				return errors.Newf("%q is not within 1 or more (a finite number)", v)
			}
			c.MaxBytesForLevelMultiplier = f
			return nil
		},
		get: func(c *Options) string { return strconv.FormatFloat(c.MaxBytesForLevelMultiplier, 'g', -1, 64) },
	},
	intKey("level0_file_num_compaction_trigger", "L0 tables that start an L0 compaction ("+
		level0TriggerBound.String()+")",
		func(c *Options) *int { return &c.Level0FileNumCompactionTrigger }, positive, level0TriggerBound),
	intKey("level0_slowdown_writes_trigger", "L0 tables at which writes are delayed (up to "+
		level0TriggerBound.format(level0TriggerBound.hi)+", at least level0_file_num_compaction_trigger)",
		func(c *Options) *int { return &c.Level0SlowdownWritesTrigger }, positive, level0TriggerBound),
	intKey("level0_stop_writes_trigger", "L0 tables at which writes wait (up to "+
		level0TriggerBound.format(level0TriggerBound.hi)+", at least level0_slowdown_writes_trigger)",
		func(c *Options) *int { return &c.Level0StopWritesTrigger }, positive, level0TriggerBound),
	boolKey("disable_auto_compactions", "run no background compactions (Compact still works)",
		func(c *Options) *bool { return &c.DisableAutoCompactions }, false),
	sizeKey("block_size", "target uncompressed data block size ("+blockSizeBound.String()+")",
		func(c *Options) *int { return &c.BlockSize }, positive, blockSizeBound),
	intKey("block_restart_interval", "keys between restart points in a data block ("+
		blockRestartIntervalBound.String()+")",
		func(c *Options) *int { return &c.BlockRestartInterval }, positive, blockRestartIntervalBound),
	intKey("bloom_bits_per_key", "bloom filter bits per key ("+bloomBitsPerKeyBound.String()+"); 0 writes no filter",
		func(c *Options) *int { return &c.BloomBitsPerKey }, none, bloomBitsPerKeyBound),
	boolKey("optimize_filters_for_hits", "write the last level's tables (L6, most of the data) without a bloom "+
		"filter (RocksDB's optimize_filters_for_hits): for reads that mostly find their key, nine tenths of the "+
		"filters' memory and cache reads saved; a Get of a key absent from L6 but within its tables' ranges "+
		"reads an index and a data block there instead (with bloom_bits_per_key=0 there are no filters to leave out)",
		func(c *Options) *bool { return &c.OptimizeFiltersForHits }, false),
	{
		name: "compression", doc: "block compression of every level that compression_per_level and " +
			"bottommost_compression leave to it: snappy, none or zstd (RocksDB's kSnappyCompression, " +
			"kNoCompression and kZSTD are accepted too); zstd tables need a release that reads zstd",
		parse: func(c *Options, v string) error {
			cc, ok := parseCompression(v)
			if !ok {
				return errors.Newf("%q is not snappy, none or zstd", v)
			}
			c.Compression = cc
			return nil
		},
		get: func(c *Options) string { return c.Compression.String() },
	},
	{
		name: "compression_per_level", doc: "compression of each level's new tables, L0 first, separated " +
			"by colons (RocksDB's compression_per_level), e.g. none:none:snappy:snappy:zstd; with fewer " +
			"entries than the 7 levels the last applies to the rest; default: compression at every level",
		parse: func(c *Options, v string) error {
			if v == "default" {
				c.CompressionPerLevel = nil
				return nil
			}
			parts := strings.Split(v, ":")
			if len(parts) > manifest.NumLevels {
				return errors.Newf("%q has %d entries, more than the %d levels", v, len(parts), manifest.NumLevels)
			}
			per := make([]Compression, len(parts))
			for i, p := range parts {
				cc, ok := parseCompression(p)
				if p == "default" { // as compression; only FormatDSN of typed Options writes it
					cc, ok = CompressionDefault, true
				}
				if !ok {
					return errors.Newf("entry %d of %q, %q, is not snappy, none or zstd", i, v, p)
				}
				per[i] = cc
			}
			c.CompressionPerLevel = per
			return nil
		},
		get: func(c *Options) string {
			if len(c.CompressionPerLevel) == 0 {
				return "default"
			}
			parts := make([]string, len(c.CompressionPerLevel))
			for i, cc := range c.CompressionPerLevel {
				parts[i] = cc.String()
			}
			return strings.Join(parts, ":")
		},
	},
	{
		name: "bottommost_compression", doc: "compression of the last level's (L6's) new tables, over " +
			"compression and compression_per_level: snappy, none or zstd (RocksDB's bottommost_compression, " +
			"which applies to the lowest level holding data); default: as those say",
		parse: func(c *Options, v string) error {
			if v == "default" {
				c.BottommostCompression = CompressionDefault
				return nil
			}
			cc, ok := parseCompression(v)
			if !ok {
				return errors.Newf("%q is not default, snappy, none or zstd", v)
			}
			c.BottommostCompression = cc
			return nil
		},
		get: func(c *Options) string { return c.BottommostCompression.String() },
	},
	intKey("zstd_level", "zstd level of zstd blocks ("+zstdLevelBound.String()+", RocksDB's compression_opts "+
		"level); 1-2, 3-5, 6-9 and 10-22 each encode alike",
		func(c *Options) *int { return &c.ZstdLevel }, positive, zstdLevelBound),
	{
		name: "prefix_extractor", doc: "RocksDB's prefix_extractor: none, fixed:N or capped:N (N within " +
			prefixExtractorLenBound.String() + "); new tables' bloom filters also hold their keys' N-byte " +
			"prefixes, so an iterator with IterOptions.Prefix of at least N bytes skips the tables holding " +
			"none of its keys; may change between opens (tables written with another extractor are not skipped)",
		parse: func(c *Options, v string) error {
			p, err := ParsePrefixExtractor(v)
			if err != nil {
				return err
			}
			c.PrefixExtractor = p
			return nil
		},
		get: func(c *Options) string { return c.PrefixExtractor.String() },
	},
	{
		name: "merge_operator", doc: "RocksDB's merge_operator, one of its built-in ones: none, stringappend " +
			"(operands joined with ','), stringappend:DELIM (joined with DELIM), uint64add (8-byte little-endian " +
			"counters) or max (bytewise largest); recorded by the first merge and checked at every open",
		parse: func(c *Options, v string) error {
			op, err := ParseMergeOperator(v)
			if err != nil {
				return err
			}
			c.MergeOperator = op
			return nil
		},
		get: func(c *Options) string { return mergeOperatorName(c.MergeOperator) },
	},
	{
		name: "comparator", doc: "RocksDB's comparator: the order of keys, " + base.BytewiseName + " or " +
			base.ReverseBytewiseName + " (others through Options.Comparer); recorded when the database is " +
			"created, and an open with another fails",
		parse: func(c *Options, v string) error {
			cmp, err := ParseComparer(v)
			if err != nil {
				return err
			}
			c.Comparer = cmp
			return nil
		},
		get: func(c *Options) string { return comparerName(c.Comparer) },
	},
	{
		name: "checksum", doc: "block checksum: xxh64 or crc32c",
		parse: func(c *Options, v string) error {
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
		get: func(c *Options) string { return c.ChecksumType.String() },
	},
	boolKey("file_checksums", "record each table's whole-file CRC32C for VerifyFileChecksums",
		func(c *Options) *bool { return &c.DisableFileChecksums }, true),
	boolKey("sync", "sync the WAL on every write", func(c *Options) *bool { return &c.Sync }, false),
	sizeKey("rate_limit", "rate limiter bytes per second ("+rateLimitBound.String()+"); 0 means no limiter, "+
		"and then the other rate_limit keys are refused",
		func(c *Options) *int64 { return &c.RateLimit }, zeroIsOff, rateLimitBound),
	{
		name: "rate_limit_mode", doc: "what the rate limiter limits: reads, writes or all",
		parse: func(c *Options, v string) error {
			m, err := ratelimit.ParseMode(v)
			c.RateLimitMode = &m
			return err
		},
		get: func(c *Options) string { return c.RateLimitMode.String() },
	},
	{
		name: "rate_limit_refill_period", doc: "rate limiter refill period (a Go duration, " + refillPeriodRange + ")",
		parse: func(c *Options, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return errors.Newf("%q is not a positive duration", v)
			}
			if d < minRateLimitRefillPeriod || d > maxRateLimitRefillPeriod {
				return errors.Newf("%q is not within %s", v, refillPeriodRange)
			}
			c.RateLimitRefillPeriod = d
			return nil
		},
		get: func(c *Options) string { return c.RateLimitRefillPeriod.String() },
	},
	intKey("rate_limit_fairness", "1-in-N chance that lower priorities go first ("+
		rateLimitFairnessBound.String()+")",
		func(c *Options) *int { return &c.RateLimitFairness }, positive, rateLimitFairnessBound),
	boolKey("rate_limit_auto_tuned", "let the rate limiter tune its rate between rate_limit/20 and rate_limit",
		func(c *Options) *bool { return &c.RateLimitAutoTuned }, false),
	{
		name: "max_open_files", doc: "table readers kept open (" + maxOpenFilesBound.String() +
			"); -1 or 0 keeps every table open",
		parse: func(c *Options, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < -1 {
				return errors.Newf("%q is not -1 or a non-negative integer", v)
			}
			if n > 0 && !maxOpenFilesBound.holds(int64(n)) {
				return errors.Newf("%q is not within %s; -1 or 0 keeps every table open", v, maxOpenFilesBound)
			}
			c.MaxOpenFiles = max(n, 0)
			return nil
		},
		get: func(c *Options) string { return strconv.Itoa(c.MaxOpenFiles) },
	},
	boolKey("mmap_reads", "memory-map table files and read blocks from the mapping",
		func(c *Options) *bool { return &c.MmapReads }, false),
	boolKey("block_cache_off_heap", "keep the block cache's blocks outside the Go heap (64-bit unix), where the "+
		"garbage collector's headroom does not double them; keys and values iterators hand out from them are copied",
		func(c *Options) *bool { return &c.BlockCacheOnGoHeap }, true),
	boolKey("cache_index_and_filter_blocks", "keep table index and filter blocks in the block cache, "+
		"charged to block_cache_size, instead of in memory for as long as a table is open; "+
		"when the data's index and filter blocks exceed the cache, a miss rereads a table's whole index "+
		"or filter unless partition_index_and_filters is set",
		func(c *Options) *bool { return &c.CacheIndexAndFilterBlocks }, false),
	boolKey("partition_index_and_filters", "write each new table's index and bloom filter as partitions of "+
		"about metadata_block_size under a small top-level index (RocksDB's kTwoLevelIndexSearch with "+
		"partition_filters), so that with cache_index_and_filter_blocks a read loads one partition, not a "+
		"table's whole index and filter; such tables need table format version 3",
		func(c *Options) *bool { return &c.PartitionIndexAndFilters }, false),
	sizeKey("metadata_block_size", "target size of an index partition, with partition_index_and_filters ("+
		metadataBlockSizeBound.String()+")",
		func(c *Options) *int { return &c.MetadataBlockSize }, positive, metadataBlockSizeBound),
	{
		name: "high_pri_pool_ratio", doc: "share of the block cache (0 to 1) that index and filter blocks, with " +
			"cache_index_and_filter_blocks, keep ahead of data blocks (RocksDB's high_pri_pool_ratio); 0: none",
		parse: func(c *Options, v string) error {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return errors.Newf("%q is not a number", v)
			}
			if !(f >= 0 && f <= 1) {
				return errors.Newf("%q is not between 0 and 1", v)
			}
			if f == 0 { // no pool: Options reads 0 as the default
				f = -1
			}
			c.HighPriorityPoolRatio = f
			return nil
		},
		get: func(c *Options) string { return strconv.FormatFloat(max(c.HighPriorityPoolRatio, 0), 'g', -1, 64) },
	},
	sizeKey("max_manifest_file_size", "MANIFEST size at which it is rewritten ("+
		maxManifestFileSizeBound.String()+")",
		func(c *Options) *int64 { return &c.MaxManifestFileSize }, positive, maxManifestFileSizeBound),
	boolKey("paranoid_file_checks", "read back and verify every block of each new table before installing it",
		func(c *Options) *bool { return &c.ParanoidFileChecks }, false),
	{
		name: "wal_recovery_mode", doc: "what Open does with a damaged WAL: tolerate_corrupted_tail_records, " +
			"absolute_consistency, point_in_time_recovery, skip_any_corrupted_records",
		parse: func(c *Options, v string) error {
			m, err := ParseWALRecoveryMode(v)
			c.WALRecoveryMode = m
			return err
		},
		get: func(c *Options) string { return c.WALRecoveryMode.String() },
	},
}

// ParseDSN parses a DSN: a directory path (or MemoryPath, ":memory:") with
// URL-style parameters named after RocksDB's options, for example
// "/var/lib/app/db?stats_level=all&block_cache_size=32MiB&rate_limit=8MiB".
// It returns the directory and the Options the parameters set, every other
// field zero (the default): ParseDSN("/db") returns a zero Options. An
// unknown key, a bad value or an invalid combination (read_only with
// :memory:, which would open an empty database that can never be written)
// is an error matching driver.ErrInvalidArgument that names it. See DSNKeys
// for the table.
func ParseDSN(dsn string) (dir string, opts *Options, err error) {
	d, err := driver.ParseDSN(dsn)
	if err != nil {
		return "", nil, base.Mark(errors.Wrap(err, "engine: bad DSN"), ErrInvalidArgument)
	}
	o := &Options{}
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
		if err := k.parse(o, p.Value); err != nil {
			errs = append(errs, errors.Wrapf(err, "bad value for %s", p.Key))
		}
	}
	if len(errs) == 0 {
		if err := o.validateFor(d.Path); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return "", nil, base.Mark(errors.Wrapf(errors.Join(errs...), "engine: DSN %q", dsn), ErrInvalidArgument)
	}
	return d.Path, o, nil
}

// validateFor validates a resolved copy of o for the database in dir.
func (o *Options) validateFor(dir string) error {
	r := *o
	if err := r.EnsureDefaults().Validate(); err != nil {
		return err
	}
	if dir == MemoryPath && o.Secondary {
		return base.InvalidArgumentf("engine: secondary with %s can never open a database: "+
			"an in-memory database has no other process to follow", MemoryPath)
	}
	if dir == MemoryPath && o.ReadOnly {
		return base.InvalidArgumentf("engine: read_only with %s can never open a database: "+
			"an in-memory database starts empty and read-only could never write to it", MemoryPath)
	}
	return nil
}

// FormatDSN formats dir and opts (nil for the defaults) as a DSN that
// ParseDSN parses back to options equivalent to opts, listing only the
// settings that differ from the defaults, in DSNKeys order. It covers every
// DSN key; the typed-only fields (FS, Logger, Statistics, RateLimiter,
// EventListener) have no DSN form and are left out.
func FormatDSN(dir string, opts *Options) string {
	o, def := dsnDefaults(opts), dsnDefaults(nil)
	var params []driver.Param
	for _, k := range dsnKeys {
		if v := k.get(o); v != k.get(def) {
			params = append(params, driver.Param{Key: k.name, Value: v})
		}
	}
	return driver.FormatDSN(dir, params)
}

// DSNKeys returns the DSN parameter table as {key, default, meaning} rows, in
// documentation order, for the README and the command-line tool.
func DSNKeys() [][3]string {
	def := dsnDefaults(nil)
	rows := make([][3]string, 0, len(dsnKeys))
	for _, k := range dsnKeys {
		rows = append(rows, [3]string{k.name, k.get(def), k.doc})
	}
	return rows
}
