// Package driver is shale's façade: the API users program against, and the
// small interfaces a storage engine implements to be used through it. It
// plays the parts of database/sql and database/sql/driver in one package.
//
//	db, err := driver.Open("shale", "/var/lib/app/db?stats_level=all") // parses the DSN
//	if err != nil { ... }
//	defer db.Close()
//	if err := db.Ping(ctx); err != nil { ... } // opens the database
//	ctx = ioctx.WithReadOptions(ctx, ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityLow})
//	v, err := db.Get(ctx, []byte("k"))
//
// As with database/sql, Open only parses: Ping, or the first call, opens
// the database, and a failed open is tried again by the next call (see
// [OpenDB]). Call Ping right after Open to learn at once whether the
// database can be opened.
//
// The package imports only the standard library, [ioctx], [statistics] and
// the module's error classes: it never imports an engine, as database/sql
// never imports a driver (a lint test enforces it). Importing an engine registers it: importing
// github.com/shaledb/shale/engine registers the driver "shale".
//
// # Goals
//
//   - Separate what users hold from what engines implement. Users hold
//     concrete types — [DB], [Conn] (a session), [Tx], [Iterator], [Batch] —
//     whose behaviour is defined here once. Engines implement a few small
//     interfaces and register with [Register] (diagram below).
//   - One read path for every read, so the IO activity tag and the
//     rate-limiter priority a read carries (see "The read path") are right
//     by construction, not by each engine's care.
//   - Keep the required interfaces tiny; offer optional ones for
//     capabilities and fast paths, found by type assertion, each with a
//     fallback or a clear ErrNotSupported. To users, a driver that adds a
//     fast path just gets faster.
//   - Handle concurrency: a DB is shared by every goroutine without extra
//     synchronization, and Close is orderly even while calls are running.
//   - Cost nothing on the hot path: a Get through the façade adds two atomic
//     additions and no allocation to the driver's own.
//
// As in database/sql's doc.txt:
//
//	User code ---> driver (DB, Conn, Tx, Iterator, Batch) ---> driver (DriverConn, DriverTx, Iter, ...)
//	Engine    ---> driver (Register; implement the interfaces)
//
// # The read path
//
// Every read — Get, MultiGet, NewIterator, VerifyChecksum and
// VerifyFileChecksums, on a DB, a Conn or a Tx — runs the same steps:
//
//  1. It returns an error matching ErrClosed if the DB (or Conn, or the Tx's
//     DB) is closed.
//  2. It resolves the call's read options once, with [ioctx.ResolveRead]:
//     ctx.Err() if ctx is already done; the [ioctx.ReadOptions] ctx carries,
//     merged on a Conn over the session's defaults; the activity checked and
//     tagged — the API ("Get", "MultiGet", "NewIterator", "VerifyChecksum",
//     "VerifyFileChecksums") accepts Unknown, which it sets to its own, or
//     its own, and any other activity returns RocksDB's "Can only call …"
//     error, matching ErrInvalidArgument, without calling the driver; the
//     earlier of ctx's and the options' deadline turned into the IO timeout
//     (one already past is an error matching context.DeadlineExceeded).
//  3. It connects the database if this is its first use (see [OpenDB]).
//  4. It calls the driver with the resulting [ioctx.ReadRequest], the only
//     thing the driver receives of the options. Driver read methods are
//     "impl" entry points: they must not check the activity again, and
//     never look in ctx for read options. This is what lets a MultiGet that
//     the driver cannot batch loop the driver's Get with the MultiGet tag —
//     RocksDB PR #11444's lesson, where loops over the public Get either
//     failed the check or relabelled their reads.
//
// A context that is done makes a call return an error for which
// errors.Is(err, ctx.Err()) holds: the façade checks before calling the
// driver, and drivers check while they work.
//
// Reads of a [Snapshot] (from [DB.NewSnapshot]) run the same steps.
//
// # Writes
//
// Every write — Put, Delete, Write, DeleteRange, on a DB or a Conn — takes
// its [ioctx.WriteOptions] from the context (ioctx.WithWriteOptions),
// resolved once by the façade: on a Conn merged over the session's defaults
// with [ioctx.MergeWrite] (Sync or DisableWAL set in either applies; a
// priority other than Total in ctx overrides), and passed by value to the
// driver, which must not look in ctx again. The zero value is RocksDB's
// default: not synced, written to the WAL, not charged to the rate limiter.
//
//   - Sync: the call returns once the write, and every write before it, is on
//     stable storage. Without it an acknowledged write survives a process
//     crash once the engine has handed it to the operating system, and may
//     be lost by a machine crash (see the driver's documentation; the
//     engine's DSN key sync syncs every write).
//   - DisableWAL: the write goes to the memtable only and is lost by any
//     crash until it is flushed ([DB.Flush]); [DB.SyncWAL] does not cover it.
//   - RateLimiterPriority: the WAL bytes are charged to the rate limiter at
//     that priority when its mode covers writes.
//
// A transaction's commit takes the write options resolved at BeginTx
// (TxOptions.WriteOptions merged with BeginTx's ctx and the session's).
// [DB.SyncWAL] makes every acknowledged write durable after the fact.
//
// A [Batch] keeps its writes in a compact encoding; a driver reads it back in
// order with [Batch.Reader], without allocating. A batch holding a range
// deletion is refused with ErrNotSupported, before anything is written, by a
// driver that does not implement [RangeDeleter].
//
// # Writing a driver
//
// A driver implements [Driver] and returns a [DriverConn], which must be
// safe for concurrent use (there is no connection pool: one DriverConn
// serves a whole DB), and whose NewIterator returns an [Iter]. Drivers
// should implement [DriverContext], to parse the DSN once in [Open], and
// offer a [Connector] for typed configuration; a Connector that implements
// io.Closer is closed by [DB.Close].
//
// A DriverConn should implement the optional interfaces it can:
//
//   - [MultiGetter]: batched lookups; without it (or when it returns
//     [ErrSkip]) MultiGet loops Get.
//   - [Verifier], [Flusher], [Compacter]: without them the DB methods return
//     an error matching ErrNotSupported.
//   - [TxBeginner], whose [DriverTx] may implement [TxMultiGetter]: without
//     it BeginTx returns ErrNotSupported.
//   - [StatsReporter]: without it DB.Statistics returns nil.
//   - [RangeDeleter] (DB.DeleteRange, range deletions in a Batch),
//     [TxRangeDeleter] on a DriverTx (Tx.DeleteRange), [WALSyncer]
//     (DB.SyncWAL), [Snapshotter] (DB.NewSnapshot; its [DriverSnapshot] may
//     implement [SnapshotMultiGetter]) and [Checkpointer] (DB.Checkpoint):
//     without them the DB methods return an error matching ErrNotSupported.
//   - [Ingester] (DB.Ingest, a bulk load of table files the driver's own
//     writer made): without it DB.Ingest returns ErrNotSupported.
//
// The façade finds them once, when it connects, and calls them concurrently,
// like the DriverConn's own methods. Drivers return errors that
// match this package's classes (ErrNotFound, ErrCorruption, ErrConflict, …)
// with errors.Is.
//
// # Memory
//
// Slices given to the façade are the caller's: every method that takes a
// key, value or bound copies what it keeps (a [Batch] copies on Put, an
// iterator's bounds are copied by NewIterator) and returns without retaining
// them. Values returned by Get and MultiGet are the caller's to keep and
// modify. Keys and values returned by an [Iterator] belong to it and are
// valid until its next move or Close.
//
// # Concurrency and Close
//
// [DB], [Conn] and [Snapshot] are safe for concurrent use; [Tx], [Iterator]
// and [Batch] are not. [DB.Close] marks the DB closed (later calls return
// ErrClosed), waits for the calls in flight, closes the iterators, rolls
// back the transactions and releases the snapshots still open, then closes
// the driver's connection and Connector. The bookkeeping is an atomic counter of calls in flight and a
// closed bit in the same word: no mutex and no allocation per call.
//
// # Data source names
//
// [ParseDSN] and [FormatDSN] read and write the generic form
// "<path>[?key=value&...]"; [ParseSize], [FormatSize] and [ParseBool] read
// the values. Which keys exist is the driver's business: it reads the ones
// it knows with [DSN.Lookup] and rejects the rest with [DSN.Unused].
package driver
