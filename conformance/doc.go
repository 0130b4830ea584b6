// Package conformance is the conformance suite of shale's façade: a library
// that a driver's tests call to check, through package driver, that the
// driver keeps the contract package driver documents. It does for a driver
// what testing/fstest does for an fs.FS and testing/slogtest for a
// slog.Handler:
//
//	import (
//		"testing"
//
//		"github.com/shaledb/shale/conformance"
//		_ "example.com/mydriver" // registers "mydriver"
//	)
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, "mydriver", func(t *testing.T) string { return t.TempDir() })
//	}
//
// [Run] runs every case as a subtest named after it ([CaseNames] lists
// them); [RunWith] takes a [Config] that can skip cases by name and say how
// the driver provides each [Capability]. newDSN must
// return the data source name of a fresh, empty database on every call: the
// suite opens several databases per case, adds parameters to the DSN (with
// [driver.ParseDSN] and [driver.FormatDSN]), and reopens a DSN to check that
// data outlives Close.
//
// Everything goes through the façade (driver.Open, *driver.DB, Conn, Tx,
// Iterator), so the suite checks the façade and the driver together, as
// users meet them: a failure may be the driver's or the façade's, and the
// message says what was observed and what the contract requires, in those
// terms ("Get(\"empty\") returned a nil slice for an empty value; a found
// empty value must be a non-nil empty slice …"). A failing case also logs
// the sentence that explains what it checks.
//
// # Capabilities, skips and DSN keys
//
// A case skips, rather than fails, when it needs something the driver may
// legitimately lack, and says what:
//
//   - an optional interface of package driver: Flush (driver.Flusher),
//     Compact (driver.Compacter), VerifyChecksum and VerifyFileChecksums
//     (driver.Verifier), BeginTx (driver.TxBeginner), Statistics
//     (driver.StatsReporter). Where a case only uses a capability in
//     passing (a Flush to move data into table files, a Tx variant of a
//     read), it goes on without it and logs so.
//   - a [Capability]: reads that reach the driver's IO (ColdReads), a
//     statistics level (StatsLevel), a rate limiter (RateLimit), reads the
//     driver makes on its own (BackgroundReads of Flush, Compaction,
//     DBOpen). The suite asks the driver's harness, [Config.Capabilities],
//     for the DSN parameters that give a database each one; a harness that
//     cannot provide one returns an error, and the case (or, for
//     BackgroundReads, the check) skips with "the driver's harness cannot
//     provide capability …" and that error. A parameter the harness gave
//     that the driver rejects skips the case naming the capability and the
//     key. A nil Config.Capabilities is [DSNCapabilities], shale's
//     engine's DSN keys (block_cache_size=0 and disable_auto_compactions
//     for ColdReads, stats_level, rate_limit and rate_limit_mode=reads); a
//     driver whose every read is an RPC provides ColdReads with no
//     parameter at all. So the statistics and rate-limiter cases run for
//     any driver that records its IO and charges it, whatever its DSN.
//   - a DSN hint: write_buffer_size, disable_auto_compactions and (for
//     reopening a corrupt database) block_cache_size are dropped when the
//     driver rejects them, and the open retried.
//   - a database that outlives Close: with the path ":memory:" the Reopen
//     and Corruption cases skip, and the checks of other cases that reopen
//     are left out.
//   - table files: Corruption flips bytes in the *.sst files of the DSN's
//     directory and skips if there are none.
//
// # The cases
//
// In the order Run runs them, with what each needs beyond DriverConn:
//
//   - CRUD: Put, Get, Delete and overwrite; an absent key is an error
//     matching driver.ErrNotFound; an empty value (Put of []byte{} or nil)
//     reads back as a non-nil empty slice; binary keys and values with zero
//     and 0xff bytes, keys that are prefixes of one another; a 1 MiB value;
//     1000 keys; the slice Get returns is the caller's, and Put copies its
//     arguments.
//   - Batch: within one Write the last write of a key wins (put then
//     delete, delete then put, put twice); an empty (or reset) batch is a
//     no-op; a 500-write batch, written twice.
//   - BatchAtomicity: a writer writes 16 keys per batch, all with one
//     generation number, while one goroutine reads them with MultiGet and
//     another with bounded iterators; no read may mix generations. So
//     MultiGet must read one snapshot: the façade's fallback (a loop of Get
//     for a driver without driver.MultiGetter) does not. Uses Flush if
//     available.
//   - MultiGet: one entry per key in the caller's order, duplicates
//     included; nil for an absent key, a non-nil empty slice for an empty
//     value; copies; no keys (nil or empty) gives no values; 400 keys at
//     once.
//   - IteratorModel: 2000 random puts, deletes and batches (with a Flush
//     every 400, if available) checked against a sorted map: full scans in
//     both directions, SeekGE and SeekLT to every present and absent key and
//     beyond both ends, each followed by steps both ways, then 3000 random
//     moves; an empty database.
//   - IteratorBounds: eleven bound pairs (lower only, upper only, both,
//     between keys, empty lower bound, one key, lower = upper, ranges with
//     no keys, before and after every key): scans, seeks outside the
//     bounds, random moves; bounds the caller changes after NewIterator.
//   - IteratorPrefix: twelve IterOptions.Prefix cases over keys sharing
//     prefixes (some ending in 0xff) written across a Flush: a prefix, one
//     holding no key, the empty prefix, all-0xff prefixes (no successor),
//     prefixes combined with bounds inside, around and apart from them:
//     scans both ways, SeekGE and SeekLT inside and outside the prefix,
//     random moves; a prefix the caller changes after NewIterator.
//   - IteratorPrefixFilters (capability PrefixFilters, fixed:3 and
//     capped:3): keys under twelve 3-byte prefixes written in four rounds,
//     three flushed into tables of their own (deletions, overwrites and a
//     prefix deleted whole among them), one left in memory, plus keys
//     shorter than the extractor and under all-0xff prefixes; 34 prefix
//     queries (present, absent between present ones, shorter, longer,
//     empty, all-0xff, with bounds): scans both ways, seeks, random moves,
//     before and after Compact and after a reopen with a 2-byte extractor;
//     with statistics, BloomFilterPrefixUseful must grow.
//   - IteratorSnapshot: writes, a batch and a Flush after NewIterator are
//     invisible to the iterator, whether it is positioned yet or not; the
//     Key and Value of an iterator that did not move do not change.
//   - IteratorClose: an exhausted iterator has no error; after Close moves
//     return false, Error matches driver.ErrClosed, as does a second Close.
//   - FlushCompact (driver.Flusher or driver.Compacter; skips with neither):
//     three overlapping rounds of writes and deletes and a 1 MiB value,
//     each flushed (with Flush); unflushed writes over tables; Compact
//     (with Compact) of a sub-range, of everything, of half-open and empty
//     ranges, none of which may lose, change or resurrect a key; Get and
//     scans after each; then (a DSN that outlives Close) a Close and a
//     reopen read exactly what was flushed and compacted. A driver whose
//     Flush does nothing (its writes are durable when they return) is
//     still checked on Compact and on the reopen.
//   - Reopen (a directory DSN; Flush if available): flushed and unflushed
//     writes survive Close and a reopen of the same DSN, twice.
//   - TxSnapshot (driver.TxBeginner): a transaction reads its BeginTx
//     snapshot (writes and a Flush by others after it are invisible) merged
//     with its own puts and deletes, through Get, MultiGet and bounded and
//     unbounded iterators; nobody else sees its writes before Commit.
//   - TxCommitAtomicity (driver.TxBeginner): BatchAtomicity with each
//     generation committed by a transaction.
//   - TxRollback (driver.TxBeginner): Rollback discards the writes, which
//     then cause no conflict.
//   - TxConflict (driver.TxBeginner): two transactions write a key, the
//     first commits, the second's Commit matches driver.ErrConflict and
//     applies none of its writes; likewise after a plain Put, and for a
//     delete; disjoint transactions, and a key last written before the
//     transaction began, commit.
//   - TxDone (driver.TxBeginner): after Commit or Rollback every call
//     matches driver.ErrTxDone and the transaction's iterators stop; a
//     read-only transaction's Put and Delete match driver.ErrInvalidArgument.
//   - ActivityCheck: each read API of DB, Conn and Tx (Get, MultiGet,
//     NewIterator, VerifyChecksum, VerifyFileChecksums; the last two may be
//     unsupported) is called with ReadOptions{Activity: a} for every named
//     ioctx.Activity a: its own activity and Unknown are accepted; every
//     other fails with an error matching driver.ErrInvalidArgument whose
//     message starts with RocksDB's exact text, "Can only call <API> with
//     `ReadOptions::io_activity` is `Env::IOActivity::kUnknown` or
//     `Env::IOActivity::k<own>`", and names the activity given
//     (Env::IOActivity::k<a>). An iterator may report the error from
//     NewIterator or from its first move.
//   - StatisticsPerActivity (statistics; capabilities ColdReads and
//     StatsLevel(all); Flush if available): with the data where reads reach
//     the driver's IO, each read (DB's five read APIs, Conn's Get and
//     MultiGet, a read-only Tx's Get, MultiGet and iterator) grows its own
//     FileRead*Micros histogram, no other user-read one, and SSTReadMicros
//     by exactly as many samples.
//   - StatisticsGating (statistics; ColdReads, StatsLevel of each level
//     below; BackgroundReads for the background checks): at
//     except_detailed_timers (the default) Statistics().Level() says so,
//     Flush fills FileReadFlushMicros, Compact FileReadCompactionMicros
//     and a reopen FileReadDBOpenMicros (each only for a driver whose
//     harness has BackgroundReads of that activity), the reads grow
//     SSTReadMicros and the five user-read histograms stay empty; at
//     except_timers no time histogram records and tickers count; at
//     except_histogram_or_timers no histogram records and tickers count;
//     at disable_all nothing records (or Statistics is nil).
//   - RateLimiterCharging (statistics; ColdReads, StatsLevel(all),
//     RateLimit(1 GiB/s)): each read of StatisticsPerActivity at the
//     default priority (PriorityTotal) charges nothing, and with
//     ReadOptions{RateLimiterPriority: PriorityUser} charges requests and
//     bytes, as the tickers RateLimiterRequestsRead and
//     RateLimiterBytesRead count them.
//   - RateLimiterThrottling (ColdReads, RateLimit(256 KiB/s)): about 320
//     KiB of incompressible values are written (and flushed); on a database
//     at 1 GiB/s with statistics, the DB read that charges the most bytes
//     (a full scan, VerifyChecksum, VerifyFileChecksums, …) is picked, and
//     the database reopened at 256 KiB/s; that read then takes at least a
//     quarter of the time its charge takes at that rate, and three times as
//     long, at PriorityLow as at PriorityTotal. Without statistics, or with
//     a DSN that does not outlive Close, the timed read is a full scan.
//   - Corruption (a directory DSN; Flush; *.sst files): after a byte in the
//     middle of every table file is flipped, a reopen either fails with an
//     error matching driver.ErrCorruption, or VerifyChecksum and
//     VerifyFileChecksums (where supported) fail with one that names a
//     corrupt file; every Get, a MultiGet of every key and a full scan
//     return the right values or fail with driver.ErrCorruption, never a
//     wrong value or a missing key.
//   - ContextCancel: every method of DB, Conn and Tx that takes a context
//     fails, given a cancelled or an expired one, with an error matching
//     ctx.Err(), and writes nothing; every read given ReadOptions{Deadline:
//     a second ago} fails with an error matching context.DeadlineExceeded;
//     cancelling an iterator's context stops its next move with
//     context.Canceled.
//   - Close: after DB.Close every call on the DB, its Conns and its Txs
//     matches driver.ErrClosed, iterators left open are closed (moves
//     false, Error and Close match ErrClosed), a second Close matches
//     ErrClosed, and a transaction left open was rolled back (checked by
//     reopening); Close stops an iterator another goroutine is scanning
//     with.
//   - CloseConcurrent: goroutines calling Get, MultiGet, Put and scanning
//     while DB.Close runs each get correct results until a call fails with
//     driver.ErrClosed; Close returns, and no goroutine is left calling.
//   - HeldSlices: a key and value an iterator returned, held across DB.Close
//     and the opening and writing of another database, still read their own
//     bytes: a driver never frees memory it handed out.
//   - ConnSession: DB.Conn takes the context's ReadOptions as the session's
//     defaults; a default activity limits the session to its API, a call's
//     own activity overrides it, and SetReadOptions replaces it; a session
//     deadline and a call's deadline both apply; writes through a Conn are
//     the DB's; Conn.Close ends the session only. With RateLimiterCharging's
//     capabilities and statistics, a session with default priority User has its
//     reads charged, a call's priority overrides a session's Total, and the
//     DB's own reads are not charged.
//   - DeleteRange (driver.RangeDeleter; without it, checks that
//     DeleteRange and a Write of a batch holding a range deletion fail with
//     ErrNotSupported having written nothing, then skips): keys that are
//     prefixes of one another; empty and inverted ranges; [b, c) keeps c;
//     a range from the empty key; a batch mixing puts, deletes and
//     overlapping range deletions, applied in order; Get, MultiGet and
//     bounded scans both ways after each, and after a Flush; 30 random
//     batches with range deletions, flushes and compactions against the
//     model; a reopen.
//   - DeleteRangeOpen (driver.RangeDeleter; skips as DeleteRange does):
//     DeleteRange(start, nil) deletes every key from start on (keys up to
//     0xff 0xff 0xff included), DeleteRange(nil, end) every key before end,
//     DeleteRange(nil, nil) every key, while an empty non-nil end is an
//     empty range that deletes nothing; the same in a batch, in order with
//     its other writes (a put after an open range stands); Get, MultiGet
//     and scans with open and bounded bounds after each, after Flush and
//     Compact, and after a reopen; then, where transactions have range
//     deletions (driver.TxRangeDeleter; otherwise logged and left out), a
//     transaction's open ranges hide keys from its reads, not from others',
//     until Commit applies them.
//   - TxDeleteRange (driver.TxBeginner, driver.TxRangeDeleter): a
//     transaction's DeleteRange hides [b, d) from its Get, MultiGet and
//     scans, erases its put of b made before it, keeps its put of c made
//     after it, is invisible to others until Commit and applied by it; a
//     put by another writer into the range after BeginTx makes Commit fail
//     with ErrConflict applying nothing, a put outside it does not.
//   - WriteOptions: Put, Delete, Write and DeleteRange (if available) with
//     WriteOptions{Sync: true} in the context, through a Conn whose
//     defaults carry it, and a transaction begun with it, succeed and are
//     visible; a Put with DisableWAL succeeds, or fails with
//     ErrNotSupported having written nothing.
//   - SyncWAL (driver.WALSyncer): returns nil after writes, twice; fails
//     with a cancelled context; the writes survive a reopen.
//   - Snapshot (driver.Snapshotter): a snapshot of 100 keys reads them,
//     through Get, MultiGet (duplicates included) and bounded and
//     unbounded scans both ways, after a later batch, a range deletion (if
//     available), Flush and Compact, which the DB itself sees; an iterator
//     opened before Snapshot.Close reads the snapshot after it; after
//     Close, Get, NewIterator and a second Close match ErrClosed; a
//     snapshot left open is closed by DB.Close.
//   - Checkpoint (driver.Checkpointer): after flushed and unflushed
//     writes, Checkpoint("") is refused, Checkpoint(dir) succeeds, and a
//     second one into the now used dir fails; when the DSN's path is a
//     directory, the DSN pointed at dir opens a database holding exactly
//     the writes before the checkpoint, which shares nothing with the
//     original.
//   - Lookup: Has, ValueSize and GetPinned (which every driver offers:
//     the façade falls back to Get for a driver without driver.ValueSizer
//     or driver.PinnedGetter) on DB and Conn, Tx (Has and ValueSize; skipped
//     without driver.TxBeginner) and Snapshot (skipped without
//     driver.Snapshotter) agree with Get for present, empty, 1 MiB, binary
//     and absent keys: Has is false and nil for an absent key, ValueSize
//     and GetPinned an error matching driver.ErrNotFound. A transaction
//     sees its own writes, a snapshot the database as of NewSnapshot. The
//     suite requires of a GetPinned closer that its first Close returns nil,
//     and accepts from a second Close either nil (a closer with nothing to
//     release, as the façade's copying fallback gives) or an error matching
//     driver.ErrClosed (a driver's closer that released its pin). A pinned
//     value stays valid and unchanged until its Close across other
//     GetPinned calls, overwrites of its key, Flush, Compact, DB.Close and
//     the writes of another database. The reads are Gets: ReadOptions{Activity:
//     Get} is accepted, MultiGet's is refused with driver.ErrInvalidArgument.
//   - BatchReadBack: a Batch's Reader and Replay give its writes back in
//     order with their kinds, keys and values (an empty DeleteRange is
//     not recorded), Len and Size count them, a batch replayed into another
//     has the same Len and Size and writes the same (without its range
//     deletion, for a driver that has none), and Reset empties it.
//   - Sizes: 500 KiB written into [m, n) show in ApproximateSize's OnDisk
//     plus InMemory within a factor of two, before and after Flush; after
//     Flush a range outside the keys is under a tenth of that, the whole
//     database at least [m, n), and an inverted range zero; DiskUsage is
//     positive and grows by at least half the bytes written and flushed;
//     Property("shale.no-such-property") is an error matching
//     driver.ErrNotFound. Each query is skipped on driver.ErrNotSupported
//     (driver.ApproximateSizer, driver.DiskUsager, driver.PropertyReader),
//     the case when all three are.
//   - Ingest: DB.Ingest of no files is an error matching
//     driver.ErrInvalidArgument; of a missing file, an error naming it, after
//     which the database is unchanged (skipped on driver.ErrNotSupported).
//     Table files come from the driver's own writer, which the façade does
//     not know: with Config.WriteTable the case writes two tables, checks
//     that a table given twice (overlapping itself) is refused, ingests both
//     (an older key replaced, new keys added), that a snapshot taken before
//     sees none of it, and that a later Put wins.
//   - Merge (driver.Merger, capability MergeOperator): a driver whose
//     Merge is ErrNotSupported writes nothing of a batch holding a merge,
//     and the case is skipped; otherwise, with merge_operator=stringappend,
//     DB.Merge and Batch.Merge give the existing value and the operands
//     joined with ',' (none after a Delete or for a new key; an empty
//     operand counts) to Get, MultiGet, scans both ways and bounded, a
//     snapshot (which keeps what it saw), a transaction, across Flush,
//     Compact and a reopen.
//   - Concurrency: four goroutines mix puts, deletes, batches, transactions
//     (if available), Gets (reading their own writes), MultiGets, bounded
//     scans and Flushes (if available) on keys of their own; every value
//     read was written to its key, scans are ordered and bounded, and the
//     final state is the union of what each goroutine wrote.
//
// # Concurrency, time and the race detector
//
// The cases that start goroutines (BatchAtomicity, TxCommitAtomicity,
// Close, CloseConcurrent, Concurrency) are meant to run under the race
// detector as well. Cases run one after another, never in parallel: the
// statistics cases compare counts exactly, and RateLimiterThrottling
// measures time. The whole suite takes a few seconds against an in-memory
// driver; RateLimiterThrottling alone waits about 1.3 s by design.
//
// This package imports only the standard library, driver, ioctx and
// statistics (a test enforces it), so any driver's tests can import it.
// Its own tests run it against an in-memory model driver, against shale's
// engine, and against deliberately broken drivers that it must fail.
package conformance
