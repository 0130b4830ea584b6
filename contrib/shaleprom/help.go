package shaleprom

import "github.com/shaledb/shale/statistics"

// How each statistic is exported: its family name and HELP, written from
// what the statistic counts (RocksDB's meaning of the same suffix, and
// where shale records it). The tables are keyed by the statistics enums;
// TestHelpTables fails for a ticker or histogram without an entry, and says
// what to add, so a new statistic cannot arrive without a name and a HELP.
//
// Names follow Prometheus's conventions: base units (seconds, bytes) at the
// end, "_total" only on counters and only once. Renamed families are in
// the README's renames table (TestREADMERenames).

// spec is how one statistic is exported. An empty name means the statistic
// is not exported, for the reason in help (another family exports the same
// fact).
type spec struct {
	name, help string
}

// tickerSpecs are the tickers' counters. Time tickers are converted to
// seconds.
var tickerSpecs = map[statistics.Ticker]spec{
	statistics.BlockCacheMiss: {"shale_block_cache_miss_total", "Block cache lookups that missed, of every block kind: data blocks, and index and filter blocks when cache_index_and_filter_blocks is set. Each miss reads the block from its table file."},
	statistics.BlockCacheHit:  {"shale_block_cache_hit_total", "Block cache lookups that found the block, of every block kind: data blocks, and index and filter blocks when cache_index_and_filter_blocks is set."},
	statistics.BlockCacheAdd:  {"shale_block_cache_add_total", "Blocks inserted into the block cache after a miss read them from a table file."},
	statistics.BlockCacheAddFailures: {"shale_block_cache_add_failures_total",
		"Blocks that could not be inserted into the block cache. shale's cache never refuses an insert, so this stays 0; kept for RocksDB's rocksdb.block.cache.add.failures."},
	statistics.BlockCacheBytesRead:         {"shale_block_cache_read_bytes_total", "Bytes of the data blocks that block cache hits served."},
	statistics.BlockCacheBytesWrite:        {"shale_block_cache_write_bytes_total", "Bytes of the blocks inserted into the block cache."},
	statistics.BlockCacheIndexHit:          {"shale_block_cache_index_hit_total", "Block cache lookups of index blocks that found them (only with cache_index_and_filter_blocks)."},
	statistics.BlockCacheDataMiss:          {"shale_block_cache_data_miss_total", "Block cache lookups of data blocks that missed; each reads the block from its table file."},
	statistics.BlockCacheDataHit:           {"shale_block_cache_data_hit_total", "Block cache lookups of data blocks that found them."},
	statistics.BloomFilterUseful:           {"shale_bloom_filter_useful_total", "Point lookups a table's bloom filter answered \"not here\", sparing the read of the table's index and data blocks."},
	statistics.BloomFilterFullPositive:     {"shale_bloom_filter_full_positive_total", "Point lookups a table's bloom filter answered \"maybe here\" (true and false positives), so the table was read."},
	statistics.BloomFilterFullTruePositive: {"shale_bloom_filter_full_true_positive_total", "Point lookups a table's bloom filter answered \"maybe here\" that did find the key in the table; full_positive less this is the filter's false positives."},
	statistics.MemtableHit:                 {"shale_memtable_hit_total", "Point lookups a memtable answered (a value or a deletion), without reading any table."},
	statistics.MemtableMiss:                {"shale_memtable_miss_total", "Point lookups no memtable answered, which went on to the tables."},
	statistics.GetHitL0:                    {"shale_l0_hit_total", "Point lookups answered by a table in level 0."},
	statistics.GetHitL1:                    {"shale_l1_hit_total", "Point lookups answered by a table in level 1."},
	statistics.GetHitL2AndUp:               {"shale_l2andup_hit_total", "Point lookups answered by a table in level 2 or below."},
	statistics.NumberKeysWritten:           {"shale_keys_written_total", "Keys written by Put, Delete, Merge and the like, each key of a batch counted once."},
	statistics.NumberKeysRead:              {"shale_keys_read_total", "Keys read by point lookups (Get)."},
	statistics.BytesWritten:                {"shale_write_bytes_total", "Bytes of the write batches the database committed (keys, values and batch framing)."},
	statistics.BytesRead:                   {"shale_read_bytes_total", "Bytes of the values point lookups (Get) returned."},
	statistics.NumberDBSeek:                {"shale_db_seek_total", "Iterator seeks (First, Last, SeekGE, SeekLT and the like)."},
	statistics.NumberDBNext:                {"shale_db_next_total", "Iterator Next calls."},
	statistics.NumberDBPrev:                {"shale_db_prev_total", "Iterator Prev calls."},
	statistics.NumberDBSeekFound:           {"shale_db_seek_found_total", "Iterator seeks that landed on a key."},
	statistics.NumberDBNextFound:           {"shale_db_next_found_total", "Iterator Next calls that landed on a key."},
	statistics.NumberDBPrevFound:           {"shale_db_prev_found_total", "Iterator Prev calls that landed on a key."},
	statistics.IterBytesRead:               {"shale_db_iter_read_bytes_total", "Bytes of the keys and values iterators returned."},
	statistics.NumberMultiGetCalls:         {"shale_multiget_calls_total", "MultiGet calls, each of any number of keys."},
	statistics.NumberMultiGetKeysRead:      {"shale_multiget_keys_read_total", "Keys MultiGet calls looked up."},
	statistics.NumberMultiGetBytesRead:     {"shale_multiget_read_bytes_total", "Bytes of the values MultiGet calls returned."},
	statistics.NumberMultiGetKeysFound:     {"shale_multiget_keys_found_total", "Keys MultiGet calls found."},
	statistics.WALFileSynced:               {"shale_wal_syncs_total", "Syncs (fsync) of the write-ahead log."},
	statistics.WALFileBytes:                {"shale_wal_write_bytes_total", "Bytes written to the write-ahead log."},
	statistics.WriteDoneBySelf:             {"shale_write_self_total", "Write batches their own caller committed, as the leader of a write group."},
	statistics.WriteDoneByOther:            {"shale_write_other_total", "Write batches another caller committed for them, as a follower in its write group."},
	statistics.WriteWithWAL:                {"shale_write_wal_total", "Write batches committed with the write-ahead log."},
	statistics.CompactReadBytes:            {"shale_compact_read_bytes_total", "Bytes compactions read from table files."},
	statistics.CompactWriteBytes:           {"shale_compact_write_bytes_total", "Bytes compactions wrote to new table files."},
	statistics.FlushWriteBytes:             {"shale_flush_write_bytes_total", "Bytes flushes wrote to new table files."},
	statistics.CompactionKeyDropNewerEntry: {"shale_compaction_key_drop_new_total", "Entries compactions dropped because a newer entry of the same key hid them from every snapshot."},
	statistics.CompactionKeyDropObsolete:   {"shale_compaction_key_drop_obsolete_total", "Deletions compactions dropped at the bottom of the tree, where no older entry remains for them to hide."},
	statistics.NoFileOpens:                 {"shale_table_file_opens_total", "Table files opened into the table cache."},
	statistics.NoFileErrors:                {"shale_table_file_open_errors_total", "Table file opens that failed (missing, unreadable or malformed file, or a size other than the MANIFEST's)."},
	statistics.StallMicros: {"", "Not exported: write-stall time is exported once, as shale_write_stall_seconds (a histogram: _sum is the time, _count the stalls). " +
		"shale.stall.micros adds 1 ms for each write delayed by the L0 slowdown trigger; it stays in the statistics' own output."},
	statistics.BlockChecksumComputeCount:  {"shale_block_checksum_compute_total", "Block checksums computed, when reading blocks and verifying files."},
	statistics.BlockChecksumMismatchCount: {"shale_block_checksum_mismatch_total", "Blocks whose checksum did not match: corruption found on read or verification."},
	statistics.VerifyChecksumReadBytes:    {"shale_verify_checksum_read_bytes_total", "Bytes VerifyChecksum and VerifyFileChecksums read from files."},
	statistics.NumberRateLimiterDrains:    {"shale_rate_limiter_drains_total", "Times a request found the rate limiter's budget for the period used up and had to wait for the next refill."},
	statistics.LastLevelReadBytes:         {"shale_last_level_read_bytes_total", "Bytes read from table files of the last level."},
	statistics.LastLevelReadCount:         {"shale_last_level_reads_total", "Reads of table files of the last level."},
	statistics.NonLastLevelReadBytes:      {"shale_non_last_level_read_bytes_total", "Bytes read from table files of levels above the last."},
	statistics.NonLastLevelReadCount:      {"shale_non_last_level_reads_total", "Reads of table files of levels above the last."},
	statistics.ReadAsyncMicros:            {"shale_read_async_seconds_total", "Time spent submitting asynchronous table reads (MultiGet's batched reads), in seconds (recorded in microseconds)."},
	statistics.AsyncReadErrorCount:        {"shale_async_read_errors_total", "Asynchronous table reads that failed."},
	statistics.NumberBlockCompressed:      {"shale_blocks_compressed_total", "Blocks compressed while writing table files."},
	statistics.NumberBlockDecompressed:    {"shale_blocks_decompressed_total", "Blocks decompressed after reading them from table files."},
	statistics.DBMutexWaitMicros:          {"shale_db_mutex_wait_seconds_total", "Time spent waiting for the database mutex, in seconds (recorded in microseconds; only at stats_level=all)."},
	statistics.TxnConflicts:               {"shale_txn_conflicts_total", "Transactions that failed to commit because another transaction wrote one of their keys first."},

	statistics.RateLimiterRequestsRead:         {"shale_rate_limiter_read_requests_total", "Read requests charged to the rate limiter, every priority together (by priority: shale_rate_limiter_priority_requests_total)."},
	statistics.RateLimiterBytesRead:            {"shale_rate_limiter_read_bytes_total", "Bytes of read requests charged to the rate limiter, every priority together."},
	statistics.RateLimiterDelayedRequestsRead:  {"shale_rate_limiter_delayed_read_requests_total", "Read requests that had to wait for the rate limiter."},
	statistics.RateLimiterRequestsWrite:        {"shale_rate_limiter_write_requests_total", "Write requests (flush and compaction output) charged to the rate limiter, every priority together."},
	statistics.RateLimiterBytesWrite:           {"shale_rate_limiter_write_bytes_total", "Bytes of write requests charged to the rate limiter, every priority together."},
	statistics.RateLimiterDelayedRequestsWrite: {"shale_rate_limiter_delayed_write_requests_total", "Write requests that had to wait for the rate limiter."},

	statistics.WALRecoveryDroppedRecords: {"shale_wal_recovery_dropped_records_total", "WAL records (write batches) opening the database dropped because of damage, under a lenient wal_recovery_mode."},
	statistics.WALRecoveryDroppedBytes:   {"shale_wal_recovery_dropped_bytes_total", "Bytes of WAL opening the database did not replay because of damage, under a lenient wal_recovery_mode."},
	statistics.BlockCacheIndexMiss:       {"shale_block_cache_index_miss_total", "Block cache lookups of index blocks that missed (only with cache_index_and_filter_blocks)."},
	statistics.BlockCacheFilterMiss:      {"shale_block_cache_filter_miss_total", "Block cache lookups of filter blocks that missed (only with cache_index_and_filter_blocks)."},
	statistics.BlockCacheFilterHit:       {"shale_block_cache_filter_hit_total", "Block cache lookups of filter blocks that found them (only with cache_index_and_filter_blocks)."},
	statistics.BloomFilterPrefixChecked:  {"shale_bloom_filter_prefix_checked_total", "Prefix-filter checks: a prefix iterator asked a table's filter whether it holds the prefix."},
	statistics.BloomFilterPrefixUseful:   {"shale_bloom_filter_prefix_useful_total", "Prefix-filter checks answered \"not here\", letting the iterator skip the table."},
	statistics.IngestBytes:               {"shale_ingest_bytes_total", "Bytes of the table files that ingests (DB.Ingest, a bulk load) added to the database."},
	statistics.IngestFiles:               {"shale_ingest_files_total", "Table files that ingests (DB.Ingest, a bulk load) added to the database."},
	statistics.MergeOperationTimeNanos:   {"shale_merge_operation_seconds_total", "Time spent in the merge operator's FullMerge, by reads and by flushes and compactions, in seconds (measured from stats_level except_time_for_mutex up)."},
	statistics.NumberMergeFailures:       {"shale_merge_failures_total", "FullMerge calls of the merge operator that failed (a read of the key returns the error; a compaction keeps the operands)."},
}

// histogramSpecs are the histograms. Time histograms are in seconds; the
// eight per-activity file-read histograms share fileReadFamily and its
// HELP.
var histogramSpecs = map[statistics.Histogram]spec{
	statistics.DBGet:             {"shale_db_get_seconds", "Latency of point lookups (Get), in seconds."},
	statistics.DBWrite:           {"shale_db_write_seconds", "Latency of writes (a batch commit, including any wait for room), in seconds."},
	statistics.CompactionTime:    {"shale_compaction_seconds", "Duration of compactions, from start to installation of their output, in seconds."},
	statistics.TableOpenIOMicros: {"shale_table_open_io_seconds", "Time to open a table file and read its footer, index and metadata, in seconds."},
	statistics.DBMultiGet:        {"shale_db_multiget_seconds", "Latency of MultiGet calls, in seconds."},
	statistics.DBSeek:            {"shale_db_seek_seconds", "Latency of iterator seeks, in seconds."},
	statistics.WriteStall:        {"shale_write_stall_seconds", "Duration of write stalls: waits of a write for a flush or compaction (too many memtables or L0 tables), in seconds; _count is the number of stalls, _sum the time stalled."},
	statistics.SSTReadMicros:     {"shale_sst_read_seconds", "Latency of table file reads, whatever the activity (shale_file_read_seconds breaks most of them down), in seconds."},
	statistics.SSTWriteMicros:    {"shale_sst_write_seconds", "Latency of table file writes by flushes and compactions, in seconds."},
	statistics.WALFileSyncMicros: {"shale_wal_file_sync_seconds", "Latency of write-ahead log syncs (fsync), in seconds."},
	statistics.FlushTime:         {"shale_flush_seconds", "Duration of flushes, from start to installation of their table, in seconds."},
	statistics.BytesPerRead:      {"shale_read_size_bytes", "Size of the values point lookups (Get) returned (0 for a key not found), in bytes."},
	statistics.BytesPerWrite: {"shale_write_size_bytes",
		"Size of write batches, in bytes. shale does not record it (RocksDB's rocksdb.bytes.per.write); shale_write_bytes_total counts the bytes written."},
	statistics.BytesPerMultiGet:           {"shale_multiget_size_bytes", "Size of the values one MultiGet call returned in all, in bytes."},
	statistics.NumFilesInSingleCompaction: {"shale_compaction_input_files", "Table files one compaction read (a count, not a size)."},
	statistics.MultiGetIOBatchSize:        {"shale_multiget_io_batch_reads", "Block reads MultiGet issued together in one batched table read (a count)."},
	statistics.AsyncReadBytes:             {"shale_async_read_size_bytes", "Size of each asynchronous table read MultiGet issued, in bytes."},
	statistics.CompressionTimesNanos:      {"shale_compression_seconds", "Time to compress one block, in seconds (recorded in nanoseconds)."},
	statistics.DecompressionTimesNanos:    {"shale_decompression_seconds", "Time to decompress one block, in seconds (recorded in nanoseconds)."},
	statistics.RateLimiterWaitMicros:      {"shale_rate_limiter_wait_seconds", "Time a read or write waited for the rate limiter, in seconds."},
}

// fileReadHelp is the HELP of fileReadFamily.
const fileReadHelp = "Latency of table file reads by the IO activity they served (label activity: flush, compaction, db_open, get, multiget, db_iterator, " +
	"verify_db_checksum, verify_file_checksums), in seconds. The user-read activities are recorded from stats_level=except_time_for_mutex up."
