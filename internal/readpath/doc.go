// Package readpath holds shale's read algorithms (the top-level package
// readpath documents the read path as a whole): Get, MultiGet,
// LatestSeqNum, the DB Iterator, VerifyChecksum and VerifyFileChecksums.
// They run over an immutable [View] that the engine hands them (memtables
// newest first, a manifest.Version of the tables, a [TableSource] that opens
// table readers), like pebble's readState: nothing here takes a lock of the
// engine's, changes the View, or waits for writers. The package sits below
// the engine and above internal/*; it never imports engine or driver.
//
// # Contract
//
// Every function takes the caller's context and the call's resolved read
// request (an ioctx.ReadRequest, which sstable calls ReadEnv), made once by
// ioctx.ResolveRead at the API boundary — the façade's, or the engine's own
// public methods: the IO options (activity, rate-limiter priority, timeout),
// checksum verification, cache filling, readahead and async IO. The activity
// arrives checked and tagged (RocksDB's check-then-tag, §3 of the
// IO-activity spec); nothing here checks or changes it, and nothing calls
// ctx.Value. The request goes unchanged to every table access, table opens
// included, so every file read a call causes carries the caller's activity
// and priority.
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
// holds. A deadline of the request that the context does not carry
// (ReadEnv.Deadline) is checked by value at the same places, and before
// every file read (ReadEnv.IO.Deadline); once it has passed the call fails
// with a timed-out error that matches context.DeadlineExceeded.
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
// larger than the limiter's burst. A read here makes, for each table it
// consults, the fileio calls that sstable.Reader documents for the operation
// (Get and LatestSeqNum: Reader.Get or a bounded iterator; MultiGet: one
// Reader.MultiGet per table holding keys still unresolved; the Iterator:
// Reader iterators; VerifyChecksum: a fresh Open and VerifyChecksums;
// VerifyFileChecksums: ceil(size/chunk) Reads, chunk = ReadaheadSize or
// 256 KiB). When the TableSource opens a table on behalf of a read (a table
// cache with max_open_files), the open's reads carry that read's ReadEnv and
// are charged too. TestRateLimiterRequestCounts pins the totals in the setup
// of RocksDB's DBRateLimiterOnReadTest, and notes where they differ from
// RocksDB's.
package readpath
