package engine

import (
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/wal"
	"github.com/shaledb/shale/ratelimit"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
)

// Compression selects the block compression of new tables. The zero value is
// the default: Snappy for Options.Compression, "as the other options say"
// for CompressionPerLevel's entries and BottommostCompression.
type Compression uint8

// Compressions.
const (
	CompressionDefault Compression = iota
	CompressionSnappy
	CompressionNone
	// CompressionZstd compresses blocks with zstd (RocksDB's kZSTD) at
	// Options.ZstdLevel. Tables with zstd blocks cannot be read by
	// releases before it (see FORMAT.md).
	CompressionZstd
)

// String returns the DSN spelling: "snappy", "none" or "zstd" ("default"
// for the zero value).
func (c Compression) String() string {
	switch c {
	case CompressionSnappy:
		return "snappy"
	case CompressionNone:
		return "none"
	case CompressionZstd:
		return "zstd"
	case CompressionDefault:
		return "default"
	}
	return "invalid"
}

// parseCompression parses a DSN spelling of a codec: shale's ("none",
// "snappy", "zstd") or RocksDB's (kNoCompression, kSnappyCompression,
// kZSTD).
func parseCompression(v string) (Compression, bool) {
	switch v {
	case "snappy", "kSnappyCompression":
		return CompressionSnappy, true
	case "none", "kNoCompression":
		return CompressionNone, true
	case "zstd", "kZSTD":
		return CompressionZstd, true
	}
	return 0, false
}

func (c Compression) internal() compress.Type {
	switch c {
	case CompressionNone:
		return compress.None
	case CompressionZstd:
		return compress.Zstd
	}
	return compress.Snappy
}

// valid reports whether c is a codec, or with dflt also CompressionDefault.
func (c Compression) valid(dflt bool) bool {
	return c == CompressionSnappy || c == CompressionNone || c == CompressionZstd || (dflt && c == CompressionDefault)
}

// compressionFor returns the compression of new tables of level:
// BottommostCompression for the last level when set, else
// CompressionPerLevel's entry for level (its last entry for the levels
// beyond it) when set, else Compression. o has its defaults.
func (o *Options) compressionFor(level int) Compression {
	if level == manifest.NumLevels-1 && o.BottommostCompression != CompressionDefault {
		return o.BottommostCompression
	}
	if n := len(o.CompressionPerLevel); n > 0 {
		if c := o.CompressionPerLevel[min(level, n-1)]; c != CompressionDefault {
			return c
		}
	}
	return o.Compression
}

// ChecksumType selects the checksum in the trailer of every block of new
// tables. The zero value is the default, XXH64.
type ChecksumType uint8

// Checksum types.
const (
	ChecksumDefault ChecksumType = iota
	// ChecksumXXH64 is the low 32 bits of xxHash64, RocksDB's kxxHash64.
	ChecksumXXH64
	// ChecksumCRC32C is the masked CRC32-C of RocksDB's kCRC32c.
	ChecksumCRC32C
)

// String returns the DSN spelling: "xxh64" or "crc32c".
func (c ChecksumType) String() string {
	switch c {
	case ChecksumXXH64:
		return "xxh64"
	case ChecksumCRC32C:
		return "crc32c"
	case ChecksumDefault:
		return "default"
	}
	return "invalid"
}

func (c ChecksumType) internal() checksum.Type {
	if c == ChecksumCRC32C {
		return checksum.CRC32C
	}
	return checksum.XXHash64
}

// WALRecoveryMode says what Open does with damage in the WAL files it
// replays: RocksDB's WALRecoveryMode, with the same four values. The zero
// value is the default, WALRecoveryTolerateCorruptedTailRecords.
//
// In every mode the records before the first damage are replayed. What a
// mode drops because of damage (anything but an incomplete final record of
// the newest WAL, which is the normal trace of a crash) is counted in the
// tickers WALRecoveryDroppedRecords and WALRecoveryDroppedBytes, reported to
// Options.Logger, and the WAL is kept as NNNNNN.log.corrupt (a WAL that
// point-in-time recovery did not reach as NNNNNN.log.skipped), names that no
// later Open replays or deletes.
type WALRecoveryMode uint8

// WAL recovery modes.
const (
	// WALRecoveryTolerateCorruptedTailRecords (RocksDB's
	// kTolerateCorruptedTailRecords, DSN tolerate_corrupted_tail_records)
	// drops only an incomplete final record of the newest WAL: a record cut
	// short by EOF, or zeros to EOF, as a crash during a write leaves. Any
	// other damage (a checksum mismatch in a complete record, overwritten
	// blocks, damage followed by more records, or any damage in an older WAL)
	// fails the open with an error matching driver.ErrCorruption that names
	// the file and offset, and changes nothing.
	WALRecoveryTolerateCorruptedTailRecords WALRecoveryMode = iota
	// WALRecoveryAbsoluteConsistency (kAbsoluteConsistency, DSN
	// absolute_consistency) fails Open on any damage, even an incomplete
	// final record: for databases that are only ever closed cleanly.
	WALRecoveryAbsoluteConsistency
	// WALRecoveryPointInTime (kPointInTimeRecovery, DSN
	// point_in_time_recovery) stops replaying at the first damage: the
	// rest of that WAL and every later WAL are dropped, so the database
	// opens at a consistent point in time, without the writes after it.
	WALRecoveryPointInTime
	// WALRecoverySkipAnyCorruptedRecords (kSkipAnyCorruptedRecords, DSN
	// skip_any_corrupted_records) skips damaged records and replays
	// everything else: salvage, at the price of holes in the history.
	WALRecoverySkipAnyCorruptedRecords
)

// walRecoveryModeNames are the DSN spellings, in value order.
var walRecoveryModeNames = [...]string{
	WALRecoveryTolerateCorruptedTailRecords: "tolerate_corrupted_tail_records",
	WALRecoveryAbsoluteConsistency:          "absolute_consistency",
	WALRecoveryPointInTime:                  "point_in_time_recovery",
	WALRecoverySkipAnyCorruptedRecords:      "skip_any_corrupted_records",
}

// String returns the DSN spelling, such as "point_in_time_recovery".
func (m WALRecoveryMode) String() string {
	if int(m) < len(walRecoveryModeNames) {
		return walRecoveryModeNames[m]
	}
	return "invalid"
}

// ParseWALRecoveryMode parses a DSN spelling of a WALRecoveryMode.
func ParseWALRecoveryMode(s string) (WALRecoveryMode, error) {
	for i, n := range walRecoveryModeNames {
		if s == n {
			return WALRecoveryMode(i), nil
		}
	}
	return 0, base.InvalidArgumentf("%q is not tolerate_corrupted_tail_records, absolute_consistency, "+
		"point_in_time_recovery or skip_any_corrupted_records", s)
}

// internal returns the wal package's mode that reads the WALs for m.
func (m WALRecoveryMode) internal() wal.RecoveryMode {
	switch m {
	case WALRecoveryAbsoluteConsistency:
		return wal.AbsoluteConsistency
	case WALRecoveryPointInTime:
		return wal.PointInTime
	case WALRecoverySkipAnyCorruptedRecords:
		return wal.SkipAnyCorrupted
	}
	return wal.TolerateCorruptedTailRecords
}

// NoBloomFilter is the BloomBitsPerKey that writes tables without a filter
// (DSN bloom_bits_per_key=0).
const NoBloomFilter = -1

// Options configure a database: the one options type of the engine, for
// NewConnector and, parsed from a DSN, for driver.Open. A nil *Options and a
// zero Options mean the defaults; each field's default is given in its
// comment. Opening resolves a copy with EnsureDefaults and checks it with
// Validate; the caller's value is not modified.
//
// Most fields are the DSN keys in Go case (see DSNKeys); ParseDSN and
// FormatDSN convert between the two. Where a DSN key's default is "true" or
// its zero value is meaningful, the field is inverted, signed or a pointer so
// that the zero Options stays the default: DSN create_if_missing=false is
// ErrorIfMissing, statistics=false is DisableStatistics, file_checksums=false
// is DisableFileChecksums, block_cache_size=0 is BlockCacheSize < 0,
// high_pri_pool_ratio=0 is HighPriorityPoolRatio < 0,
// bloom_bits_per_key=0 is BloomBitsPerKey = NoBloomFilter, and stats_level
// and rate_limit_mode are pointers, nil for the default.
//
// FS, Logger, Statistics, RateLimiter and EventListener are typed-only: a
// DSN cannot carry them, and FormatDSN leaves them out. Statistics and
// RateLimiter have DSN forms that make the database create its own
// (StatsLevel, DisableStatistics; RateLimit and its settings); setting a
// typed field with its DSN form is a contradiction that Validate refuses.
type Options struct {
	// FS is the filesystem; nil means the operating system's.
	FS vfs.FS

	// ErrorIfMissing makes Open fail when the database does not exist
	// (DSN create_if_missing=false). By default a missing database is created.
	ErrorIfMissing bool
	// ErrorIfExists makes Open fail when the database already exists.
	ErrorIfExists bool
	// ReadOnly opens the database without writing to it: no WAL replay into
	// new tables, no flushes, no compactions; writes fail with
	// driver.ErrInvalidArgument.
	ReadOnly bool
	// Secondary opens the database as a secondary instance (DSN
	// secondary=true; RocksDB's DB::OpenAsSecondary): a read-only view of
	// a database another process, the primary, holds open and writes. It
	// takes no LOCK and writes nothing in the directory; it replays the
	// primary's WALs into memory, and CatchUp (driver.DB.CatchUp) brings it
	// up to what the primary has written since. Writes, Flush and Compact
	// fail with driver.ErrInvalidArgument, as with ReadOnly.
	Secondary bool

	// Statistics receives the database's tickers and histograms, for a
	// program that shares one Statistics between databases or keeps it. Nil
	// means the database creates its own at StatsLevel, unless
	// DisableStatistics is set. A DSN cannot set it; Validate refuses it
	// together with StatsLevel or DisableStatistics, which describe the
	// statistics the database would create.
	Statistics *statistics.Statistics
	// StatsLevel is the level of the statistics the database creates (DSN
	// stats_level). Nil means statistics.DefaultLevel
	// (LevelExceptDetailedTimers). It is a pointer because the zero Level,
	// LevelDisableAll, is a level a DSN can ask for (a statistics object that
	// records nothing until its level is raised); statistics=false, which
	// creates none, is DisableStatistics.
	StatsLevel *statistics.Level
	// DisableStatistics records no statistics at all (DSN statistics=false).
	// Validate refuses it with StatsLevel, the level of statistics it says
	// not to create.
	DisableStatistics bool

	// BlockCacheSize is the block cache's capacity in bytes. Default 8 MiB;
	// negative disables the cache (DSN block_cache_size=0).
	BlockCacheSize int64
	// WriteBufferSize is the size a memtable grows to before it is flushed.
	// Default 4 MiB, Pebble's and LevelDB's: up to MaxWriteBufferNumber
	// memtables of 9/8 of it are resident, so RocksDB's 64 MiB made a
	// database of a few hundred MiB take 3.7 times Pebble's memory. A
	// larger write buffer (RocksDB's 64 MiB) fills several times faster
	// once the data outgrows it, at that memory.
	WriteBufferSize int64
	// MaxWriteBufferNumber bounds the memtables in memory, the mutable one
	// included; writes stall when flushes fall that far behind. Default 2.
	MaxWriteBufferNumber int
	// Level0FileNumCompactionTrigger is the number of L0 tables that starts an
	// L0 compaction. Default 4.
	Level0FileNumCompactionTrigger int
	// Level0SlowdownWritesTrigger is the number of L0 tables at which each
	// write is delayed by a millisecond. Default 20.
	Level0SlowdownWritesTrigger int
	// Level0StopWritesTrigger is the number of L0 tables at which writes wait
	// for compaction. Default 36.
	Level0StopWritesTrigger int
	// MaxBytesForLevelBase is the target size of L1. Default 256 MiB.
	MaxBytesForLevelBase int64
	// MaxBytesForLevelMultiplier is the growth factor between levels.
	// Default 10.
	MaxBytesForLevelMultiplier float64
	// TargetFileSizeBase is the size at which compaction cuts an output table
	// in L1. Default 64 MiB.
	TargetFileSizeBase int64
	// TargetFileSizeMultiplier scales the target file size per level below
	// L1. Default 1.
	TargetFileSizeMultiplier int
	// MaxOpenFiles bounds the table readers kept open; 0, the default, keeps
	// every table open (RocksDB's -1). A bound below the number of tables
	// makes reads reopen tables, and those open reads carry the read's tag.
	MaxOpenFiles int
	// DisableAutoCompactions stops background compactions; Compact still
	// works.
	DisableAutoCompactions bool

	// BlockSize is the target uncompressed size of a data block. Default 4096.
	BlockSize int
	// BlockRestartInterval is the number of keys between restart points in a
	// data block. Default 16.
	BlockRestartInterval int
	// BloomBitsPerKey sizes each table's bloom filter. Default 10 (about 1%
	// false positives); NoBloomFilter (-1) writes no filter (DSN
	// bloom_bits_per_key=0). Other negative values are invalid.
	BloomBitsPerKey int
	// OptimizeFiltersForHits writes the tables of the last level (L6,
	// which holds most of the data once it is compacted down) without a
	// bloom filter, as RocksDB's optimize_filters_for_hits does. For reads
	// that mostly find their key it saves about nine tenths of the
	// filters' memory, and, when the filters do not fit the block cache
	// with cache_index_and_filter_blocks, the read of a filter partition
	// a Get of a key in L6 would otherwise make; a Get of a key that is
	// absent from L6 but within one of its tables' ranges then reads that
	// table's index and a data block instead of being ruled out by the
	// filter. Tables flushed or compacted into L0 to L5 keep their
	// filters. Default false.
	OptimizeFiltersForHits bool
	// Compression of new data and index blocks, at every level that
	// CompressionPerLevel and BottommostCompression leave to it (DSN
	// compression). Default Snappy.
	Compression Compression
	// CompressionPerLevel is the compression of each level's new tables,
	// L0 first (RocksDB's compression_per_level; DSN
	// compression_per_level=none:none:snappy:zstd). A flush writes L0's, a
	// compaction its output level's. With fewer entries than levels, the
	// last entry applies to the levels beyond it, as in RocksDB; more
	// entries than the 7 levels are refused. A CompressionDefault entry, and
	// a nil slice, mean Compression.
	CompressionPerLevel []Compression
	// BottommostCompression is the compression of the last level's (L6's)
	// tables, whatever Compression and CompressionPerLevel say (RocksDB's
	// bottommost_compression). RocksDB applies it to the lowest level that
	// holds data; shale to L6 only, so a database whose data has not
	// reached L6 writes none. Default: as the other two say.
	BottommostCompression Compression
	// ZstdLevel is the zstd level of zstd blocks, 1 (fastest) to 22
	// (smallest), as RocksDB's compression_opts level and the zstd tool
	// number them (DSN zstd_level). The encoder has four speeds: 1-2, 3-5,
	// 6-9 and 10-22 each encode alike. Default 3.
	ZstdLevel int
	// PrefixExtractor adds the prefixes of keys to new tables' bloom
	// filters, so that an iterator with driver.IterOptions.Prefix skips
	// the tables holding no key of its prefix (see [PrefixExtractor]).
	// Default none.
	PrefixExtractor PrefixExtractor
	// MergeOperator combines the operands of driver.DB.Merge into values
	// (DSN merge_operator; see [MergeOperator] and
	// [ParseMergeOperator]). Default none: a merge fails with
	// ErrInvalidArgument. A database that holds merge operands must be
	// opened with an operator of the same name.
	MergeOperator MergeOperator
	// Comparer is the order of keys (DSN comparator, for the built-in
	// ones; FormatDSN writes a custom one's name, which ParseDSN refuses);
	// persisted, see [Comparer]. Default nil, [DefaultComparer].
	Comparer *Comparer
	// ChecksumType of new blocks. Default XXH64.
	ChecksumType ChecksumType
	// DisableFileChecksums stops recording each table's whole-file CRC32C in
	// the MANIFEST (DSN file_checksums=false); VerifyFileChecksums then skips
	// those tables, as RocksDB does for an unknown checksum.
	DisableFileChecksums bool

	// WALRecoveryMode says what Open does with damaged WAL files. Default
	// WALRecoveryTolerateCorruptedTailRecords.
	WALRecoveryMode WALRecoveryMode

	// Logger receives messages an operator should see, such as what a
	// recovery dropped or kept aside. Nil means slog.Default().
	Logger *slog.Logger

	// Sync makes every write wait until its WAL record is durable (fsync),
	// as if each asked for ioctx.WriteOptions.Sync (DisableWAL writes excepted).
	// Without it, only writes that ask for Sync, and the writes before them,
	// are durable when acknowledged: a crash can lose the latest other
	// acknowledged writes, never older ones. driver.DB.SyncWAL syncs on demand.
	Sync bool

	// RateLimiter is charged for file reads made at a priority other than
	// PriorityTotal: user reads that ask for it and compaction reads (at
	// PriorityLow); and, when its mode covers writes, for table writes and
	// for the WAL bytes of writes whose WriteOptions.RateLimiterPriority is
	// not Total. Nil means the limiter RateLimit describes, if any. A DSN
	// cannot set it (it can be shared between databases, and the caller
	// closes it); Validate refuses it together with any of the RateLimit
	// fields, which describe the limiter the database would create.
	RateLimiter ratelimit.Limiter

	// RateLimit, when positive, makes the database create a
	// ratelimit.Generic of RateLimit bytes per second, configured by the
	// four fields below, and close it when the database closes (DSN
	// rate_limit). 0, the default, creates none; negative is invalid, and
	// so is setting one of the four fields below with neither RateLimit
	// nor RateLimiter (they would configure no limiter).
	RateLimit int64
	// RateLimitMode is what the created limiter charges (DSN
	// rate_limit_mode). Nil means ratelimit.ModeAll, reads and writes. It is
	// a pointer because the zero Mode, ratelimit.ModeReads, is not the
	// default.
	RateLimitMode *ratelimit.Mode
	// RateLimitRefillPeriod is the created limiter's refill period (DSN
	// rate_limit_refill_period). 0 means ratelimit.DefaultRefillPeriod
	// (100ms).
	RateLimitRefillPeriod time.Duration
	// RateLimitFairness is the created limiter's 1-in-N chance that lower
	// priorities go first (DSN rate_limit_fairness). 0 means
	// ratelimit.DefaultFairness (10).
	RateLimitFairness int
	// RateLimitAutoTuned lets the created limiter tune its rate between
	// RateLimit/20 and RateLimit (DSN rate_limit_auto_tuned).
	RateLimitAutoTuned bool

	// EventListener, when not nil, is told about flushes, compactions,
	// tables created and deleted, WALs created, write stalls and background
	// errors, off the database's goroutines (see EventListener). A DSN
	// cannot set it.
	EventListener *EventListener

	// MmapReads maps table files read-only and serves block reads by slicing
	// the mapping (RocksDB's allow_mmap_reads). Reads are still tagged,
	// charged and timed.
	MmapReads bool

	// CacheIndexAndFilterBlocks keeps each table's index and filter in the
	// block cache, charged at their decoded size and evicted like data
	// blocks, instead of on the heap for as long as the table is open
	// (RocksDB's BlockBasedTableOptions.cache_index_and_filter_blocks,
	// Pebble's only behaviour). Memory then stays within BlockCacheSize
	// however much data the database holds, for one or two more cache
	// lookups per table a read consults, and a file read when an evicted
	// index or filter is needed again. It has no effect without a block
	// cache. Default false, as in RocksDB.
	//
	// When the indexes and filters of the data exceed the cache, each miss
	// reads, verifies and decodes a whole table's index or filter (hundreds
	// of KiB for a 64 MiB table of small keys); set
	// PartitionIndexAndFilters too, so that a miss loads one partition.
	CacheIndexAndFilterBlocks bool

	// PartitionIndexAndFilters writes each new table's index and bloom
	// filter as partitions under a small top-level index (RocksDB's
	// BlockBasedTableOptions.index_type = kTwoLevelIndexSearch with
	// partition_filters = true): an index partition is cut once it reaches
	// about MetadataBlockSize bytes, with a filter partition over the keys
	// of the same data blocks. A reader keeps only the top-level index
	// pinned; with CacheIndexAndFilterBlocks the partitions live in the
	// block cache, and a Get loads at most one index and one filter
	// partition, so its cost and the memory used stay flat however far the
	// data's metadata exceeds the cache. Without CacheIndexAndFilterBlocks
	// it changes little: every partition is loaded at open and kept.
	// Tables whose index fits one partition, and tables written without
	// it, keep the unpartitioned format; partitioned tables need a reader
	// that knows table format version 3. Default false.
	PartitionIndexAndFilters bool

	// MetadataBlockSize is the target size of an index partition, with
	// PartitionIndexAndFilters (RocksDB's metadata_block_size). Filter
	// partitions follow the index partitions, so their size is about
	// BloomBitsPerKey/8 bytes per key of the partition's data blocks.
	// Default 4096.
	MetadataBlockSize int

	// HighPriorityPoolRatio is the share of the block cache that index and
	// filter blocks kept there (CacheIndexAndFilterBlocks) hold ahead of
	// data blocks: within it they are evicted only after every data block,
	// beyond it they compete with them (RocksDB's high_pri_pool_ratio, with
	// cache_index_and_filter_blocks_with_high_priority). When the data's
	// index and filter partitions exceed the cache, this keeps the
	// partitions every read needs from being evicted by the data blocks
	// each read brings in once. Default 0.5, RocksDB's; at most 1; negative
	// turns the pool off, so they are evicted like data blocks (DSN
	// high_pri_pool_ratio=0).
	HighPriorityPoolRatio float64

	// BlockCacheOnGoHeap keeps the block cache's blocks on the Go heap.
	// By default (false), on 64-bit unix, they live in memory mapped
	// outside it, reserved per cache and released once the cache is
	// unreachable (Pebble does the same by hand): the garbage collector
	// lets the Go heap grow to about twice what it finds live, so a cache
	// on the heap costs about twice its size in memory. The price is a
	// copy: keys and values an iterator or GetPinned hands out from a
	// cached block are copied into Go heap buffers first (about 10-20 ns
	// for a 256-byte value), since a caller may keep them after the cache
	// is gone; a GetPinned copy of more than 64 KiB is also an allocation.
	// Set it (DSN block_cache_off_heap=false) to trade memory for those
	// copies.
	BlockCacheOnGoHeap bool

	// MaxManifestFileSize is the size at which the MANIFEST is rewritten as a
	// snapshot. Default 4 MiB.
	MaxManifestFileSize int64

	// ParanoidFileChecks reads back every block of every table a flush or
	// compaction writes and verifies its checksum before installing it.
	// Without it (RocksDB's default) a new table is opened, which reads and
	// verifies its footer, index, filter and properties, and its data blocks
	// are verified when they are read.
	ParanoidFileChecks bool
}

// Defaults, with units.
const (
	DefaultBlockCacheSize                 = 8 << 20 // 8 MiB
	DefaultWriteBufferSize                = 4 << 20 // 4 MiB
	DefaultMaxWriteBufferNumber           = 2
	DefaultLevel0FileNumCompactionTrigger = 4
	DefaultLevel0SlowdownWritesTrigger    = 20
	DefaultLevel0StopWritesTrigger        = 36
	DefaultMaxBytesForLevelBase           = 256 << 20 // 256 MiB
	DefaultMaxBytesForLevelMultiplier     = 10
	DefaultTargetFileSizeBase             = 64 << 20 // 64 MiB
	DefaultBlockSize                      = 4096
	DefaultBlockRestartInterval           = 16
	DefaultMetadataBlockSize              = 4096
	DefaultHighPriorityPoolRatio          = cache.DefaultHighPriorityPoolRatio
	DefaultBloomBitsPerKey                = 10
	DefaultMaxManifestFileSize            = 4 << 20 // 4 MiB
)

// DefaultOptions returns the default options, resolved.
func DefaultOptions() *Options {
	o := &Options{}
	o.EnsureDefaults()
	return o
}

// EnsureDefaults sets every zero field to its default and returns o. It does
// not create the statistics object or the filesystem; Open does, so that an
// Options value can be reused for several databases.
func (o *Options) EnsureDefaults() *Options {
	if o.BlockCacheSize == 0 {
		o.BlockCacheSize = DefaultBlockCacheSize
	}
	if o.WriteBufferSize == 0 {
		o.WriteBufferSize = DefaultWriteBufferSize
	}
	if o.MaxWriteBufferNumber == 0 {
		o.MaxWriteBufferNumber = DefaultMaxWriteBufferNumber
	}
	if o.Level0FileNumCompactionTrigger == 0 {
		o.Level0FileNumCompactionTrigger = DefaultLevel0FileNumCompactionTrigger
	}
	if o.Level0SlowdownWritesTrigger == 0 {
		o.Level0SlowdownWritesTrigger = max(DefaultLevel0SlowdownWritesTrigger, o.Level0FileNumCompactionTrigger)
	}
	if o.Level0StopWritesTrigger == 0 {
		o.Level0StopWritesTrigger = max(DefaultLevel0StopWritesTrigger, o.Level0SlowdownWritesTrigger)
	}
	if o.MaxBytesForLevelBase == 0 {
		o.MaxBytesForLevelBase = DefaultMaxBytesForLevelBase
	}
	if o.MaxBytesForLevelMultiplier == 0 {
		o.MaxBytesForLevelMultiplier = DefaultMaxBytesForLevelMultiplier
	}
	if o.TargetFileSizeBase == 0 {
		o.TargetFileSizeBase = DefaultTargetFileSizeBase
	}
	if o.TargetFileSizeMultiplier == 0 {
		o.TargetFileSizeMultiplier = 1
	}
	if o.BlockSize == 0 {
		o.BlockSize = DefaultBlockSize
	}
	if o.BlockRestartInterval == 0 {
		o.BlockRestartInterval = DefaultBlockRestartInterval
	}
	if o.BloomBitsPerKey == 0 {
		o.BloomBitsPerKey = DefaultBloomBitsPerKey
	}
	if o.MetadataBlockSize == 0 {
		o.MetadataBlockSize = DefaultMetadataBlockSize
	}
	if o.HighPriorityPoolRatio == 0 {
		o.HighPriorityPoolRatio = DefaultHighPriorityPoolRatio
	}
	if o.Compression == CompressionDefault {
		o.Compression = CompressionSnappy
	}
	if o.ZstdLevel == 0 {
		o.ZstdLevel = compress.DefaultZstdLevel
	}
	if o.ChecksumType == ChecksumDefault {
		o.ChecksumType = ChecksumXXH64
	}
	if o.MaxManifestFileSize == 0 {
		o.MaxManifestFileSize = DefaultMaxManifestFileSize
	}
	return o
}

// bound is the range of a numeric option, lo to hi inclusive: the values the
// engine can address or use. ParseDSN and Validate check the same bounds, and
// the DSN table (DSNKeys, the README) lists them. Sizes print with units.
type bound struct {
	lo, hi int64
	size   bool
}

func (b bound) format(n int64) string {
	if b.size {
		return driver.FormatSize(n)
	}
	return strconv.FormatInt(n, 10)
}

// String is the range as the DSN table and the errors print it: "256 to
// 4MiB", or "1KiB or more" when only int64 bounds it above.
func (b bound) String() string {
	if b.hi == math.MaxInt64 {
		return b.format(b.lo) + " or more"
	}
	return b.format(b.lo) + " to " + b.format(b.hi)
}

func (b bound) holds(n int64) bool { return b.lo <= n && n <= b.hi }

// The bounds of the numeric options, with why. Where 0 or a negative value
// has a meaning of its own (no cache, no filter, no limiter, every table
// open), the bound is that of the other values.
var (
	// A block cache reserves its off-heap region (a quarter more than its
	// capacity) up front, and a 64-bit Linux process has 128TiB of address
	// space.
	blockCacheSizeBound = bound{1, 64 << 40, true}
	// A memtable's arena is write_buffer_size plus an eighth (skiplist
	// nodes), and arena offsets are 32-bit: 3.5GiB × 9/8 is just under
	// 4GiB. Below 64KiB a memtable holds too few entries to be worth a
	// table.
	writeBufferSizeBound = bound{64 << 10, 3584 << 20, true}
	// One mutable memtable and at least one being flushed; every read
	// merges all of them, and each may hold write_buffer_size × 9/8 of
	// memory: 64 of the largest is already 252GiB.
	maxWriteBufferNumberBound = bound{2, 64, false}
	// A compaction output table is written by one writer that keeps its
	// whole index and filter in memory; beyond 1TiB a table's index alone
	// outgrows any memory and the reader's 256MiB block limit. Below 1KiB
	// a table is mostly footer.
	targetFileSizeBaseBound = bound{1 << 10, 1 << 40, true}
	// The products with the level multipliers bound these further.
	targetFileSizeMultiplierBound = bound{1, math.MaxInt64, false}
	maxBytesForLevelBaseBound     = bound{1 << 10, math.MaxInt64, true}
	// RocksDB's PrepareForBulkLoad uses 1<<30 L0 tables to mean "never";
	// more L0 tables than that cannot exist (their metadata alone would
	// take hundreds of GiB).
	level0TriggerBound = bound{1, 1 << 30, false}
	// A block is the unit of every read, checksum and cache entry: a Get
	// reads, verifies and decompresses a whole block, and the block cache
	// keeps no block larger than a shard (1 to 2MiB for the default 8MiB
	// cache). The reader refuses blocks above 256MiB as corrupt, and a
	// block exceeds block_size by up to one entry.
	blockSizeBound = bound{256, 4 << 20, true}
	// An entry takes at least 4 bytes, so a block of the largest
	// block_size holds at most 2^20 of them: a longer interval cannot be
	// reached.
	blockRestartIntervalBound = bound{1, 1 << 20, false}
	// RocksDB caps bits per key at 100; 64 bits already give a false
	// positive rate near 10^-14.
	bloomBitsPerKeyBound = bound{1, 64, false}
	// A filter partition covers the keys of its index partition's data
	// blocks; with index partitions above 4MiB it can outgrow the reader's
	// 256MiB block limit.
	metadataBlockSizeBound = bound{256, 4 << 20, true}
	// Any MANIFEST size can be reached; RocksDB's default is 1GiB.
	maxManifestFileSizeBound = bound{1 << 10, math.MaxInt64, true}
	// The limiter saturates rate × period; any positive rate is a rate.
	rateLimitBound = bound{1, math.MaxInt64, true}
	// RocksDB's GenericRateLimiter caps fairness at 100 (ratelimit lowers
	// larger values to it silently); Validate refuses them instead.
	rateLimitFairnessBound = bound{1, ratelimit.MaxFairness, false}
	// A limiter needs at least 8 tables open.
	maxOpenFilesBound = bound{8, math.MaxInt64, false}
	// zstd's levels (negative "fast" levels are not offered).
	zstdLevelBound = bound{compress.MinZstdLevel, compress.MaxZstdLevel, false}
)

// rateLimitRefillPeriod bounds: the limiter counts periods in microseconds
// (ratelimit.New refuses less than 1µs); at one refill an hour a write
// already waits up to an hour for its bytes (the hard limit, 100 periods as a
// time.Duration for the auto-tuner, is about 2.9 years).
const (
	minRateLimitRefillPeriod = time.Microsecond
	maxRateLimitRefillPeriod = time.Hour
	refillPeriodRange        = "1µs to 1h"
)

// levelExponent is the power of the multipliers at the deepest level: L1's
// target times multiplier^(NumLevels-2) is L6's.
const levelExponent = manifest.NumLevels - 2

// overflowsLevels reports whether base × multiplier^levelExponent, the
// target of the deepest level, does not fit an int64 (or is not a number).
func overflowsLevels(base int64, multiplier float64) bool {
	p := float64(base) * math.Pow(multiplier, levelExponent)
	return !(p < 0x1p63)
}

// Validate checks options that EnsureDefaults has resolved and returns every
// problem in one error matching driver.ErrInvalidArgument. Each names the
// DSN key and the Go field, the value and the allowed range (the DSN table,
// DSNKeys, lists the ranges: what the engine can address or use), and
// settings that contradict each other are named both. Settings that one
// merely makes moot are accepted, as RocksDB accepts them:
// OptimizeFiltersForHits without a bloom filter, CacheIndexAndFilterBlocks,
// HighPriorityPoolRatio or BlockCacheOnGoHeap without a block cache,
// MetadataBlockSize without PartitionIndexAndFilters, HighPriorityPoolRatio
// without CacheIndexAndFilterBlocks, compaction settings with ReadOnly or
// DisableAutoCompactions.
func (o *Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, errors.Newf(format, args...))
	}
	// check refuses n outside b, for key (Go field) with note appended.
	check := func(key, field string, b bound, n int64, note string) bool {
		if b.holds(n) {
			return true
		}
		bad("%s %s (%s) is not within %s%s", key, b.format(n), field, b.String(), note)
		return false
	}
	if o.BlockCacheSize > 0 {
		check("block_cache_size", "BlockCacheSize", blockCacheSizeBound, o.BlockCacheSize,
			"; DSN 0 (a negative BlockCacheSize) disables the cache")
	}
	check("write_buffer_size", "WriteBufferSize", writeBufferSizeBound, o.WriteBufferSize, "")
	check("max_write_buffer_number", "MaxWriteBufferNumber", maxWriteBufferNumberBound, int64(o.MaxWriteBufferNumber), "")
	l0ok := check("level0_file_num_compaction_trigger", "Level0FileNumCompactionTrigger", level0TriggerBound,
		int64(o.Level0FileNumCompactionTrigger), "")
	l0ok = check("level0_slowdown_writes_trigger", "Level0SlowdownWritesTrigger", level0TriggerBound,
		int64(o.Level0SlowdownWritesTrigger), "") && l0ok
	l0ok = check("level0_stop_writes_trigger", "Level0StopWritesTrigger", level0TriggerBound,
		int64(o.Level0StopWritesTrigger), "") && l0ok
	if l0ok && o.Level0SlowdownWritesTrigger < o.Level0FileNumCompactionTrigger {
		bad("level0_slowdown_writes_trigger %d is below level0_file_num_compaction_trigger %d "+
			"(Level0SlowdownWritesTrigger, Level0FileNumCompactionTrigger)",
			o.Level0SlowdownWritesTrigger, o.Level0FileNumCompactionTrigger)
	}
	if l0ok && o.Level0StopWritesTrigger < o.Level0SlowdownWritesTrigger {
		bad("level0_stop_writes_trigger %d is below level0_slowdown_writes_trigger %d "+
			"(Level0StopWritesTrigger, Level0SlowdownWritesTrigger)",
			o.Level0StopWritesTrigger, o.Level0SlowdownWritesTrigger)
	}
	baseOK := check("max_bytes_for_level_base", "MaxBytesForLevelBase", maxBytesForLevelBaseBound, o.MaxBytesForLevelBase, "")
	multOK := o.MaxBytesForLevelMultiplier >= 1 && !math.IsInf(o.MaxBytesForLevelMultiplier, 1)
	if !multOK { // NaN too
		bad("max_bytes_for_level_multiplier %g (MaxBytesForLevelMultiplier) is not within 1 or more (a finite number)",
			o.MaxBytesForLevelMultiplier)
	}
	if baseOK && multOK && overflowsLevels(o.MaxBytesForLevelBase, o.MaxBytesForLevelMultiplier) {
		bad("max_bytes_for_level_base %s × max_bytes_for_level_multiplier %g^%d (MaxBytesForLevelBase, "+
			"MaxBytesForLevelMultiplier), the target size of L%d, overflows int64 (8EiB)",
			driver.FormatSize(o.MaxBytesForLevelBase), o.MaxBytesForLevelMultiplier, levelExponent,
			manifest.NumLevels-1)
	}
	baseOK = check("target_file_size_base", "TargetFileSizeBase", targetFileSizeBaseBound, o.TargetFileSizeBase, "")
	multOK = check("target_file_size_multiplier", "TargetFileSizeMultiplier", targetFileSizeMultiplierBound,
		int64(o.TargetFileSizeMultiplier), "")
	if baseOK && multOK && overflowsLevels(o.TargetFileSizeBase, float64(o.TargetFileSizeMultiplier)) {
		bad("target_file_size_base %s × target_file_size_multiplier %d^%d (TargetFileSizeBase, "+
			"TargetFileSizeMultiplier), the target size of L%d's tables, overflows int64 (8EiB)",
			driver.FormatSize(o.TargetFileSizeBase), o.TargetFileSizeMultiplier, levelExponent,
			manifest.NumLevels-1)
	}
	check("block_size", "BlockSize", blockSizeBound, int64(o.BlockSize), "")
	if !(o.HighPriorityPoolRatio <= 1) { // NaN too
		bad("high_pri_pool_ratio %g (HighPriorityPoolRatio) is not within 0 to 1", o.HighPriorityPoolRatio)
	}
	check("metadata_block_size", "MetadataBlockSize", metadataBlockSizeBound, int64(o.MetadataBlockSize), "")
	check("block_restart_interval", "BlockRestartInterval", blockRestartIntervalBound, int64(o.BlockRestartInterval), "")
	if o.BloomBitsPerKey != NoBloomFilter {
		check("bloom_bits_per_key", "BloomBitsPerKey", bloomBitsPerKeyBound, int64(o.BloomBitsPerKey),
			"; NoBloomFilter (-1, DSN 0) writes no filter")
	}
	if err := o.PrefixExtractor.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := validateComparer(o.Comparer); err != nil {
		errs = append(errs, err)
	}
	if o.WALRecoveryMode > WALRecoverySkipAnyCorruptedRecords {
		bad("wal_recovery_mode %d (WALRecoveryMode) is not one of the four WALRecoveryMode values", o.WALRecoveryMode)
	}
	if !o.Compression.valid(false) {
		bad("compression %d (Compression) is not snappy, none or zstd", o.Compression)
	}
	if len(o.CompressionPerLevel) > manifest.NumLevels {
		bad("compression_per_level has %d entries (CompressionPerLevel), more than the %d levels",
			len(o.CompressionPerLevel), manifest.NumLevels)
	}
	for i, c := range o.CompressionPerLevel {
		if !c.valid(true) {
			bad("compression_per_level entry %d, %d (CompressionPerLevel[%d]), is not default, snappy, none or zstd", i, c, i)
		}
	}
	if !o.BottommostCompression.valid(true) {
		bad("bottommost_compression %d (BottommostCompression) is not default, snappy, none or zstd", o.BottommostCompression)
	}
	check("zstd_level", "ZstdLevel", zstdLevelBound, int64(o.ZstdLevel), "")
	if o.ChecksumType != ChecksumXXH64 && o.ChecksumType != ChecksumCRC32C {
		bad("checksum %d (ChecksumType) is not xxh64 or crc32c", o.ChecksumType)
	}
	if o.MaxOpenFiles != 0 {
		check("max_open_files", "MaxOpenFiles", maxOpenFilesBound, int64(o.MaxOpenFiles), "; 0 keeps every table open")
	}
	if o.ErrorIfMissing && o.ErrorIfExists {
		bad("error_if_exists and create_if_missing=false (ErrorIfExists and ErrorIfMissing) together admit no database")
	}
	if o.ReadOnly && o.ErrorIfExists {
		bad("read_only with error_if_exists (ReadOnly and ErrorIfExists) can never open a database")
	}
	if o.Secondary && o.ErrorIfExists {
		bad("secondary with error_if_exists (Secondary and ErrorIfExists) can never open a database")
	}
	check("max_manifest_file_size", "MaxManifestFileSize", maxManifestFileSizeBound, o.MaxManifestFileSize, "")
	if o.StatsLevel != nil && (*o.StatsLevel < statistics.LevelDisableAll || *o.StatsLevel > statistics.LevelAll) {
		bad("stats_level %s (StatsLevel) is not a level", *o.StatsLevel)
	}
	if o.Statistics != nil && o.StatsLevel != nil {
		bad("Statistics and StatsLevel are both set: StatsLevel is the level of the statistics the database " +
			"creates when Statistics is nil (set the level on Statistics instead)")
	}
	if o.Statistics != nil && o.DisableStatistics {
		bad("Statistics and DisableStatistics are both set: record into Statistics or into nothing")
	}
	if o.DisableStatistics && o.StatsLevel != nil {
		bad("statistics=false and stats_level=%s (DisableStatistics and StatsLevel) contradict: statistics=false "+
			"creates no statistics, stats_level is the level of the ones the database creates", *o.StatsLevel)
	}
	if o.RateLimit != 0 {
		check("rate_limit", "RateLimit", rateLimitBound, o.RateLimit, "; 0 means no limiter")
	}
	if o.RateLimitMode != nil && *o.RateLimitMode > ratelimit.ModeAll {
		bad("rate_limit_mode %d (RateLimitMode) is not reads, writes or all", *o.RateLimitMode)
	}
	if p := o.RateLimitRefillPeriod; p != 0 && (p < minRateLimitRefillPeriod || p > maxRateLimitRefillPeriod) {
		bad("rate_limit_refill_period %s (RateLimitRefillPeriod) is not within %s", p, refillPeriodRange)
	}
	if o.RateLimitFairness != 0 {
		check("rate_limit_fairness", "RateLimitFairness", rateLimitFairnessBound, int64(o.RateLimitFairness), "")
	}
	if o.RateLimiter == nil && o.RateLimit == 0 {
		if set := o.rateLimitFieldsSet(true); len(set) > 0 {
			bad("%s set without rate_limit (RateLimit): they configure the limiter rate_limit creates, "+
				"and there is none", strings.Join(set, ", "))
		}
	}
	if o.RateLimiter != nil {
		if set := o.rateLimitFieldsSet(false); len(set) > 0 {
			bad("RateLimiter and %s are both set: the RateLimit fields configure the limiter the database "+
				"creates when RateLimiter is nil (configure RateLimiter itself instead)", strings.Join(set, ", "))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return base.Mark(errors.Wrap(errors.Join(errs...), "engine: invalid options"), base.ErrInvalidArgument)
}

// rateLimitFieldsSet names the RateLimit fields set: Go names, or, with dsn,
// the DSN keys followed by the Go names.
func (o *Options) rateLimitFieldsSet(dsn bool) []string {
	var set []string
	for _, f := range []struct {
		key, name string
		set       bool
	}{
		{"rate_limit", "RateLimit", o.RateLimit != 0},
		{"rate_limit_mode", "RateLimitMode", o.RateLimitMode != nil},
		{"rate_limit_refill_period", "RateLimitRefillPeriod", o.RateLimitRefillPeriod != 0},
		{"rate_limit_fairness", "RateLimitFairness", o.RateLimitFairness != 0},
		{"rate_limit_auto_tuned", "RateLimitAutoTuned", o.RateLimitAutoTuned},
	} {
		switch {
		case !f.set:
		case dsn:
			set = append(set, f.key+" ("+f.name+")")
		default:
			set = append(set, f.name)
		}
	}
	return set
}
