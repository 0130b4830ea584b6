// Package readpath holds shale's read algorithms: Get, MultiGet,
// LatestSeqNum, the DB Iterator, VerifyChecksum and VerifyFileChecksums.
// They run over an immutable [View] that the engine hands them (memtables
// newest first, a manifest.Version of the tables, a [TableSource] that opens
// table readers), like pebble's readState: nothing here takes a lock of the
// engine's, changes the View, or waits for writers. The package sits below
// the engine and above internal/*; it never imports engine or driver.
//
// # Contract
//
// Every function takes the caller's context and an sstable.ReadEnv that the
// engine resolved once, at its API boundary, from the context's
// ReadOptions: the IO options (activity, rate-limiter priority, timeout),
// checksum verification, cache filling, readahead and async IO. The options
// arrive already checked and tagged (RocksDB's check-then-tag happens in the
// engine's public methods, §3 of the IO-activity spec); nothing here checks
// or changes the activity, and nothing calls ctx.Value. The ReadEnv goes
// unchanged to every table access, table opens included, so every file read
// a call causes carries the caller's activity and priority.
//
// Visibility: a read at sequence number seq sees the entries with sequence
// numbers <= seq (a seq above base.MaxSeqNum sees everything). The sources
// are consulted newest first: the memtables in View order, the L0 tables
// newest first, then L1, L2, ... (each level's tables are disjoint); the
// first entry of a key decides, and a tombstone means "not found".
//
// Contexts: ctx.Err() is checked before every table is acquired; the layers
// below check it before every block read. A done context fails the call (or
// stops the Iterator) with an error for which errors.Is(err, ctx.Err())
// holds.
//
// Memory: keys passed in are only read during the call. Values point into
// memtables (valid while the View's memtables are) or into table blocks
// pinned until [Value.Release]; Iterator keys and values are valid until the
// Iterator's next move. A Get whose block is cached, and an Iterator's Next
// or Prev over cached blocks within its current tables, allocate nothing.
//
// Concurrency: the functions are safe for concurrent use, also on one View,
// provided the TableSource is; an Iterator and a Value belong to one
// goroutine (a Value may be released on another).
//
// Errors: a missing key is an error marked base.ErrNotFound (Get) or
// Found=false (MultiGet); corruption found below (a block checksum, a bad
// table) stays marked base.ErrCorruption and is wrapped with the table's
// number or path; a done context is as above.
//
// # Statistics
//
// Get, MultiGet and the Iterator record into View.Stats: Get ticks
// NumberKeysRead, MemtableHit or MemtableMiss, GetHitL0/GetHitL1/
// GetHitL2AndUp, BytesRead and the BytesPerRead histogram; MultiGet ticks
// NumberMultiGetCalls, NumberMultiGetKeysRead, NumberMultiGetKeysFound,
// NumberMultiGetBytesRead and the BytesPerMultiGet histogram; the Iterator
// ticks NumberDBSeek(Found) and IterBytesRead at each seek, times SeekGE and
// SeekLT in DBSeek, and counts NumberDBNext(Found), NumberDBPrev(Found) and
// their IterBytesRead locally, adding them at Close (as RocksDB's DBIter).
// The verifications tick VerifyChecksumReadBytes in Env.Stats after each
// file. Block cache, bloom filter, checksum and file-read statistics come
// from the layers below.
//
// # File reads and rate-limiter requests
//
// Each file read below is one fileio call, which charges the rate limiter
// when the priority is not ioctx.PriorityTotal: one request per read no
// larger than the limiter's burst (a Read of n bytes is charged in
// ceil(n/burst) requests, a MultiRead for its total in burst-sized pieces).
// These counts are what RocksDB's DBRateLimiterOnReadTest observes; the
// figures in brackets are for its setup (three tables of one key each in
// L1, opened beforehand without charge, default table options: a bloom
// filter, one data block), and RocksDB's own where they differ.
//
//	API                 reads
//	Get                 per table consulted whose filter does not rule the key out: 1 Read
//	                    of the data block unless cached [first Get 1; again: 0 with a
//	                    block cache, 1 without]
//	MultiGet            per table holding keys still unresolved: 1 MultiRead of all its
//	                    uncached blocks (adjacent ones coalesced), none if all are cached
//	                    or filtered out [3 keys in 3 tables: 3]
//	Iterator            per data block entered that is neither cached nor in the
//	                    readahead buffer: 1 Read (readahead starts at the second
//	                    sequential block read, 8 KiB doubling to 256 KiB, or is
//	                    ReadaheadSize), plus 1 ReadAsync of the next chunk with AsyncIO
//	                    [forward scan: 1 per step; a reverse scan after it: 0 with a
//	                    block cache, 2 without, as the block the forward scan ended in
//	                    is still held (RocksDB: 3)]
//	LatestSeqNum        as Get
//	VerifyChecksum      per table, opened anew: the open reads the footer, metaindex,
//	                    properties, filter (if any) and index (4 Reads, 5 with a
//	                    filter); then VerifyChecksums reads the metaindex, each meta
//	                    block and the index (3 Reads, 4 with a filter), and the data
//	                    blocks through readahead of ReadaheadSize (256 KiB when 0), one
//	                    Read per refill, about ceil(data size/readahead) [10 per table,
//	                    8 without a filter; 30 in all (RocksDB: 7 per table, 21)]
//	VerifyFileChecksums per table with a recorded checksum: ceil(size/chunk) Reads, chunk
//	                    = ReadaheadSize or 256 KiB [1 per table, 3 in all]
//
// When the TableSource opens a table on behalf of a Get, MultiGet, LatestSeqNum or
// Iterator (a table cache with max_open_files), the open's 4 Reads (5 with a
// filter) are made with that call's ReadEnv and charged too.
package readpath
