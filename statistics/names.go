package statistics

import "strconv"

// Ticker names a counter. Tickers only grow (until [Statistics.Reset]) and are
// recorded from [LevelExceptHistogramOrTimers] up; [DBMutexWaitMicros] is a
// timer and needs [LevelAll].
type Ticker uint32

// The tickers, in the order [Statistics.String] and [Statistics.TickerMap]
// list them. Each one's name is "shale." plus the suffix of RocksDB's ticker
// of the same meaning (BlockCacheMiss is "shale.block.cache.miss", as RocksDB's
// BLOCK_CACHE_MISS is "rocksdb.block.cache.miss"), so output can be compared
// line by line. The numeric values are shale's own.
const (
	BlockCacheMiss Ticker = iota
	BlockCacheHit
	BlockCacheAdd
	BlockCacheAddFailures
	BlockCacheBytesRead
	BlockCacheBytesWrite
	BlockCacheIndexHit
	BlockCacheDataMiss
	BlockCacheDataHit
	BloomFilterUseful
	BloomFilterFullPositive
	BloomFilterFullTruePositive
	MemtableHit
	MemtableMiss
	GetHitL0
	GetHitL1
	GetHitL2AndUp
	NumberKeysWritten
	NumberKeysRead
	BytesWritten
	BytesRead
	NumberDBSeek
	NumberDBNext
	NumberDBPrev
	NumberDBSeekFound
	NumberDBNextFound
	NumberDBPrevFound
	IterBytesRead
	NumberMultiGetCalls
	NumberMultiGetKeysRead
	NumberMultiGetBytesRead
	NumberMultiGetKeysFound
	WALFileSynced
	WALFileBytes
	WriteDoneBySelf
	WriteDoneByOther
	WriteWithWAL
	CompactReadBytes
	CompactWriteBytes
	FlushWriteBytes
	CompactionKeyDropNewerEntry
	CompactionKeyDropObsolete
	NoFileOpens
	NoFileErrors
	StallMicros
	BlockChecksumComputeCount
	BlockChecksumMismatchCount
	VerifyChecksumReadBytes
	NumberRateLimiterDrains
	LastLevelReadBytes
	LastLevelReadCount
	NonLastLevelReadBytes
	NonLastLevelReadCount
	ReadAsyncMicros
	AsyncReadErrorCount
	NumberBlockCompressed
	NumberBlockDecompressed
	// DBMutexWaitMicros is the time spent waiting for the DB mutex. Timing a
	// mutex is costly, so it is recorded only at LevelAll (RocksDB records it
	// only above kExceptTimeForMutex).
	DBMutexWaitMicros
	// TxnConflicts counts transactions that failed to commit because another
	// transaction wrote one of their keys first. It is shale's own ticker;
	// RocksDB has none of that name.
	TxnConflicts
	// RateLimiterRequestsRead and the five tickers after it count what the
	// rate limiter charged (RocksDB HEAD's #14884 names): requests, bytes
	// and requests that had to wait, for reads and for writes. They are
	// recorded when the charging caller passes its statistics.
	RateLimiterRequestsRead
	RateLimiterBytesRead
	RateLimiterDelayedRequestsRead
	RateLimiterRequestsWrite
	RateLimiterBytesWrite
	RateLimiterDelayedRequestsWrite
	// WALRecoveryDroppedRecords and WALRecoveryDroppedBytes count what
	// opening the database dropped from its WALs because of damage, under a
	// lenient wal_recovery_mode: WAL records (each one write batch, of any
	// number of keys) and bytes of WAL not replayed. Point-in-time recovery
	// counts every record from the damage on, including those after it that
	// it does not replay and those of every later WAL. The record count is
	// exact where the framing after the damage holds (a damaged payload) and
	// a lower bound where a damaged header hides how many records there
	// were: each region that cannot be framed counts as one. An incomplete
	// final record, the trace of a crash during a write, is not counted.
	// They are shale's own; RocksDB has no such tickers.
	WALRecoveryDroppedRecords
	WALRecoveryDroppedBytes
	// BlockCacheIndexMiss, BlockCacheFilterMiss and BlockCacheFilterHit
	// count block cache lookups of index and filter blocks, which go
	// through the cache only with cache_index_and_filter_blocks (RocksDB's
	// BLOCK_CACHE_INDEX_MISS, BLOCK_CACHE_FILTER_MISS, BLOCK_CACHE_FILTER_HIT;
	// BlockCacheIndexHit is above). Such lookups also count in BlockCacheMiss
	// and BlockCacheHit, as in RocksDB.
	BlockCacheIndexMiss
	BlockCacheFilterMiss
	BlockCacheFilterHit
	// BloomFilterPrefixChecked and BloomFilterPrefixUseful count prefix
	// filter checks (RocksDB's BLOOM_FILTER_PREFIX_CHECKED and
	// BLOOM_FILTER_PREFIX_USEFUL): an iterator with IterOptions.Prefix
	// whose prefix the database's prefix_extractor covers asks each table's
	// filter, built with that extractor, for the extractor's prefix of it;
	// checked counts the questions, useful the answers that let the
	// iterator skip the table without reading its index or data.
	BloomFilterPrefixChecked
	BloomFilterPrefixUseful
	// IngestBytes and IngestFiles count the bytes and the table files
	// that ingests (DB.Ingest) added to the database; RocksDB has no
	// ticker for them.
	IngestBytes
	IngestFiles
	// MergeOperationTimeNanos is the time spent in the merge operator's
	// FullMerge, by reads and by flushes and compactions (RocksDB's
	// MERGE_OPERATION_TOTAL_TIME, rocksdb.merge.operation.time.nanos);
	// NumberMergeFailures counts the FullMerge calls that failed
	// (NUMBER_MERGE_FAILURES, rocksdb.number.merge.failures). Time is
	// measured only from LevelExceptTimeForMutex up, as RocksDB's
	// detailed timers are.
	MergeOperationTimeNanos
	NumberMergeFailures

	// NumTickers bounds the tickers; arrays indexed by Ticker have this
	// length.
	NumTickers
)

var tickerNames = [NumTickers]string{
	BlockCacheMiss:              "shale.block.cache.miss",
	BlockCacheHit:               "shale.block.cache.hit",
	BlockCacheAdd:               "shale.block.cache.add",
	BlockCacheAddFailures:       "shale.block.cache.add.failures",
	BlockCacheBytesRead:         "shale.block.cache.bytes.read",
	BlockCacheBytesWrite:        "shale.block.cache.bytes.write",
	BlockCacheIndexHit:          "shale.block.cache.index.hit",
	BlockCacheDataMiss:          "shale.block.cache.data.miss",
	BlockCacheDataHit:           "shale.block.cache.data.hit",
	BloomFilterUseful:           "shale.bloom.filter.useful",
	BloomFilterFullPositive:     "shale.bloom.filter.full.positive",
	BloomFilterFullTruePositive: "shale.bloom.filter.full.true.positive",
	MemtableHit:                 "shale.memtable.hit",
	MemtableMiss:                "shale.memtable.miss",
	GetHitL0:                    "shale.l0.hit",
	GetHitL1:                    "shale.l1.hit",
	GetHitL2AndUp:               "shale.l2andup.hit",
	NumberKeysWritten:           "shale.number.keys.written",
	NumberKeysRead:              "shale.number.keys.read",
	BytesWritten:                "shale.bytes.written",
	BytesRead:                   "shale.bytes.read",
	NumberDBSeek:                "shale.number.db.seek",
	NumberDBNext:                "shale.number.db.next",
	NumberDBPrev:                "shale.number.db.prev",
	NumberDBSeekFound:           "shale.number.db.seek.found",
	NumberDBNextFound:           "shale.number.db.next.found",
	NumberDBPrevFound:           "shale.number.db.prev.found",
	IterBytesRead:               "shale.db.iter.bytes.read",
	NumberMultiGetCalls:         "shale.number.multiget.get",
	NumberMultiGetKeysRead:      "shale.number.multiget.keys.read",
	NumberMultiGetBytesRead:     "shale.number.multiget.bytes.read",
	NumberMultiGetKeysFound:     "shale.number.multiget.keys.found",
	WALFileSynced:               "shale.wal.synced",
	WALFileBytes:                "shale.wal.bytes",
	WriteDoneBySelf:             "shale.write.self",
	WriteDoneByOther:            "shale.write.other",
	WriteWithWAL:                "shale.write.wal",
	CompactReadBytes:            "shale.compact.read.bytes",
	CompactWriteBytes:           "shale.compact.write.bytes",
	FlushWriteBytes:             "shale.flush.write.bytes",
	CompactionKeyDropNewerEntry: "shale.compaction.key.drop.new",
	CompactionKeyDropObsolete:   "shale.compaction.key.drop.obsolete",
	NoFileOpens:                 "shale.no.file.opens",
	NoFileErrors:                "shale.no.file.errors",
	StallMicros:                 "shale.stall.micros",
	BlockChecksumComputeCount:   "shale.block.checksum.compute.count",
	BlockChecksumMismatchCount:  "shale.block.checksum.mismatch.count",
	VerifyChecksumReadBytes:     "shale.verify_checksum.read.bytes",
	NumberRateLimiterDrains:     "shale.number.rate_limiter.drains",
	LastLevelReadBytes:          "shale.last.level.read.bytes",
	LastLevelReadCount:          "shale.last.level.read.count",
	NonLastLevelReadBytes:       "shale.non.last.level.read.bytes",
	NonLastLevelReadCount:       "shale.non.last.level.read.count",
	ReadAsyncMicros:             "shale.read.async.micros",
	AsyncReadErrorCount:         "shale.async.read.error.count",
	NumberBlockCompressed:       "shale.number.block.compressed",
	NumberBlockDecompressed:     "shale.number.block.decompressed",
	DBMutexWaitMicros:           "shale.db.mutex.wait.micros",
	TxnConflicts:                "shale.txn.conflicts",

	RateLimiterRequestsRead:         "shale.rate.limiter.requests.read",
	RateLimiterBytesRead:            "shale.rate.limiter.bytes.read",
	RateLimiterDelayedRequestsRead:  "shale.rate.limiter.delayed.requests.read",
	RateLimiterRequestsWrite:        "shale.rate.limiter.requests.write",
	RateLimiterBytesWrite:           "shale.rate.limiter.bytes.write",
	RateLimiterDelayedRequestsWrite: "shale.rate.limiter.delayed.requests.write",

	WALRecoveryDroppedRecords: "shale.wal.recovery.dropped.records",
	WALRecoveryDroppedBytes:   "shale.wal.recovery.dropped.bytes",
	BlockCacheIndexMiss:       "shale.block.cache.index.miss",
	BlockCacheFilterMiss:      "shale.block.cache.filter.miss",
	BlockCacheFilterHit:       "shale.block.cache.filter.hit",
	BloomFilterPrefixChecked:  "shale.bloom.filter.prefix.checked",
	BloomFilterPrefixUseful:   "shale.bloom.filter.prefix.useful",
	IngestBytes:               "shale.ingest.bytes",
	IngestFiles:               "shale.ingest.files",
	MergeOperationTimeNanos:   "shale.merge.operation.time.nanos",
	NumberMergeFailures:       "shale.number.merge.failures",
}

// String returns the ticker's name, "shale." plus RocksDB's suffix, for
// example "shale.block.cache.hit"; "shale.ticker(N)" for a value that names
// no ticker.
func (t Ticker) String() string {
	if t < NumTickers {
		return tickerNames[t]
	}
	return "shale.ticker(" + strconv.FormatUint(uint64(t), 10) + ")"
}

// MinLevel returns the lowest level at which the ticker is recorded:
// LevelExceptHistogramOrTimers for every ticker but DBMutexWaitMicros, which
// needs LevelAll. A value that names no ticker is never recorded (the result
// is above LevelAll).
func (t Ticker) MinLevel() Level {
	if t < NumTickers {
		return tickerMinLevel[t]
	}
	return levelNever
}

// tickerMinLevel is the gating table for tickers (a table, not a branch, so
// that RecordTick's gate stays small enough to inline).
var tickerMinLevel = func() (l [NumTickers]Level) {
	for t := range l {
		l[t] = LevelExceptHistogramOrTimers
	}
	l[DBMutexWaitMicros] = LevelAll
	return l
}()

// Histogram names a distribution of samples (latencies or sizes), kept in
// RocksDB's 109 buckets (see [HistogramStat]).
type Histogram uint32

// The histograms, in the order [Statistics.String] lists them. Names are
// "shale." plus RocksDB's suffix (SSTReadMicros is "shale.sst.read.micros"),
// numeric values are shale's own.
//
// Time histograms hold microseconds, except CompressionTimesNanos and
// DecompressionTimesNanos, which hold nanoseconds. They are recorded with
// [Statistics.ReportTimeToHistogram] or a [StopWatch] from
// LevelExceptDetailedTimers up; the detailed ones (the five user-read
// FileRead* histograms and the two (de)compression timers) only from
// LevelExceptTimeForMutex up. The others (BytesPer*,
// NumFilesInSingleCompaction, MultiGetIOBatchSize, AsyncReadBytes) are
// recorded with [Statistics.RecordInHistogram] from LevelExceptTimers up.
const (
	DBGet Histogram = iota
	DBWrite
	CompactionTime
	TableOpenIOMicros
	DBMultiGet
	DBSeek
	WriteStall
	// SSTReadMicros is the time of every table file read, whatever its
	// activity: the aggregate the FileRead* histograms break down.
	SSTReadMicros
	FileReadFlushMicros
	FileReadCompactionMicros
	FileReadDBOpenMicros
	FileReadGetMicros
	FileReadMultiGetMicros
	FileReadDBIteratorMicros
	FileReadVerifyDBChecksumMicros
	FileReadVerifyFileChecksumsMicros
	SSTWriteMicros
	WALFileSyncMicros
	FlushTime
	BytesPerRead
	BytesPerWrite
	BytesPerMultiGet
	NumFilesInSingleCompaction
	MultiGetIOBatchSize
	AsyncReadBytes
	CompressionTimesNanos
	DecompressionTimesNanos
	// RateLimiterWaitMicros is the time a read or write waited for the rate
	// limiter. It is shale's own histogram; RocksDB has none of that name.
	RateLimiterWaitMicros

	// NumHistograms bounds the histograms; arrays indexed by Histogram have
	// this length.
	NumHistograms
)

// HistogramNone means "no histogram" (RocksDB's HISTOGRAM_ENUM_MAX): a
// StopWatch slot given it records nothing.
const HistogramNone Histogram = NumHistograms

var histogramNames = [NumHistograms]string{
	DBGet:                             "shale.db.get.micros",
	DBWrite:                           "shale.db.write.micros",
	CompactionTime:                    "shale.compaction.times.micros",
	TableOpenIOMicros:                 "shale.table.open.io.micros",
	DBMultiGet:                        "shale.db.multiget.micros",
	DBSeek:                            "shale.db.seek.micros",
	WriteStall:                        "shale.db.write.stall",
	SSTReadMicros:                     "shale.sst.read.micros",
	FileReadFlushMicros:               "shale.file.read.flush.micros",
	FileReadCompactionMicros:          "shale.file.read.compaction.micros",
	FileReadDBOpenMicros:              "shale.file.read.db.open.micros",
	FileReadGetMicros:                 "shale.file.read.get.micros",
	FileReadMultiGetMicros:            "shale.file.read.multiget.micros",
	FileReadDBIteratorMicros:          "shale.file.read.db.iterator.micros",
	FileReadVerifyDBChecksumMicros:    "shale.file.read.verify.db.checksum.micros",
	FileReadVerifyFileChecksumsMicros: "shale.file.read.verify.file.checksums.micros",
	SSTWriteMicros:                    "shale.sst.write.micros",
	WALFileSyncMicros:                 "shale.wal.file.sync.micros",
	FlushTime:                         "shale.db.flush.micros",
	BytesPerRead:                      "shale.bytes.per.read",
	BytesPerWrite:                     "shale.bytes.per.write",
	BytesPerMultiGet:                  "shale.bytes.per.multiget",
	NumFilesInSingleCompaction:        "shale.numfiles.in.singlecompaction",
	MultiGetIOBatchSize:               "shale.multiget.io.batch.size",
	AsyncReadBytes:                    "shale.async.read.bytes",
	CompressionTimesNanos:             "shale.compression.times.nanos",
	DecompressionTimesNanos:           "shale.decompression.times.nanos",
	RateLimiterWaitMicros:             "shale.rate.limiter.wait.micros",
}

// String returns the histogram's name, "shale." plus RocksDB's suffix, for
// example "shale.sst.read.micros"; "shale.histogram(N)" for a value that
// names no histogram (HistogramNone included).
func (h Histogram) String() string {
	if h < NumHistograms {
		return histogramNames[h]
	}
	return "shale.histogram(" + strconv.FormatUint(uint64(h), 10) + ")"
}

// IsUserFileRead reports whether h is one of the five per-activity histograms
// of user reads (FileReadGetMicros, FileReadMultiGetMicros,
// FileReadDBIteratorMicros, FileReadVerifyDBChecksumMicros,
// FileReadVerifyFileChecksumsMicros). RocksDB measured a 4–5% slowdown of
// Get from recording them, so they need a level above the default.
func (h Histogram) IsUserFileRead() bool {
	return h >= FileReadGetMicros && h <= FileReadVerifyFileChecksumsMicros
}

// IsTime reports whether h holds durations (microseconds, or nanoseconds for
// the two *Nanos histograms) rather than sizes or counts.
func (h Histogram) IsTime() bool {
	return h < NumHistograms && histogramMinLevel[h] >= LevelExceptDetailedTimers
}

// MinLevel returns the lowest level at which a sample of h is recorded (see
// the gating table in the package doc). A value that names no histogram is
// never recorded (the result is above LevelAll).
func (h Histogram) MinLevel() Level {
	if h < NumHistograms {
		return histogramMinLevel[h]
	}
	return levelNever
}

// levelNever is above every level a Statistics can have, so gating on it
// records nothing.
const levelNever Level = LevelAll + 1

// histogramMinLevel is the gating table for histograms: time histograms from
// ExceptDetailedTimers, detailed timers above it, the rest (sizes and counts)
// from ExceptTimers.
var histogramMinLevel = [NumHistograms]Level{
	DBGet:                             LevelExceptDetailedTimers,
	DBWrite:                           LevelExceptDetailedTimers,
	CompactionTime:                    LevelExceptDetailedTimers,
	TableOpenIOMicros:                 LevelExceptDetailedTimers,
	DBMultiGet:                        LevelExceptDetailedTimers,
	DBSeek:                            LevelExceptDetailedTimers,
	WriteStall:                        LevelExceptDetailedTimers,
	SSTReadMicros:                     LevelExceptDetailedTimers,
	FileReadFlushMicros:               LevelExceptDetailedTimers,
	FileReadCompactionMicros:          LevelExceptDetailedTimers,
	FileReadDBOpenMicros:              LevelExceptDetailedTimers,
	FileReadGetMicros:                 LevelExceptTimeForMutex,
	FileReadMultiGetMicros:            LevelExceptTimeForMutex,
	FileReadDBIteratorMicros:          LevelExceptTimeForMutex,
	FileReadVerifyDBChecksumMicros:    LevelExceptTimeForMutex,
	FileReadVerifyFileChecksumsMicros: LevelExceptTimeForMutex,
	SSTWriteMicros:                    LevelExceptDetailedTimers,
	WALFileSyncMicros:                 LevelExceptDetailedTimers,
	FlushTime:                         LevelExceptDetailedTimers,
	BytesPerRead:                      LevelExceptTimers,
	BytesPerWrite:                     LevelExceptTimers,
	BytesPerMultiGet:                  LevelExceptTimers,
	NumFilesInSingleCompaction:        LevelExceptTimers,
	MultiGetIOBatchSize:               LevelExceptTimers,
	AsyncReadBytes:                    LevelExceptTimers,
	CompressionTimesNanos:             LevelExceptTimeForMutex,
	DecompressionTimesNanos:           LevelExceptTimeForMutex,
	RateLimiterWaitMicros:             LevelExceptDetailedTimers,
}

// isNanos reports whether h's unit is nanoseconds; a StopWatch converts for
// it.
func (h Histogram) isNanos() bool {
	return h == CompressionTimesNanos || h == DecompressionTimesNanos
}
