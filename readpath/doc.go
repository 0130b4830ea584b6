// Package readpath documents shale's read path: how the options of a read
// travel from the call a program makes down to the file reader. It holds no
// code a program calls. The user's vocabulary is in package ioctx, the calls
// are the façade's (package driver), and the implementation is the engine's
// (its algorithms live in the module's internal/readpath, below the engine,
// where Go's internal rule lets the engine import them and nothing outside
// the module can). Its example shows the path from a program's side, through
// the façade and the "shale" engine alone.
//
// # The read path, as data flows through it
//
//  1. A program calls a read of the façade — [driver.DB.Get], MultiGet,
//     NewIterator, VerifyChecksum, VerifyFileChecksums, or the same on a
//     Conn, a Tx or a Snapshot — with a context that may carry
//     [ioctx.ReadOptions] ([ioctx.WithReadOptions]): an IO activity tag, a
//     rate-limiter priority, a deadline, a tag, a per-request statistics
//     sink.
//  2. The façade resolves them once, with [ioctx.ResolveRead]: merged over
//     the session's defaults (a Conn's), the activity checked and tagged —
//     Unknown becomes the API's own activity, the API's own is kept, any
//     other is an error matching driver.ErrInvalidArgument whose text is
//     RocksDB's "Can only call Get with `ReadOptions::io_activity` is …" —
//     and the earlier deadline folded into the IO timeout. The result, an
//     [ioctx.ReadRequest], is all a driver receives of the options; nothing
//     below looks in the context again.
//  3. The engine passes the request by value to its read algorithms, which
//     pass its [ioctx.IOOptions] unchanged to every table read, table opens
//     included. Internal readers tag their own reads: flush (Flush),
//     compaction (Compaction, charged at PriorityLow), table opens at DB
//     open (DBOpen); a transaction's MultiGet reads are MultiGet reads all
//     the way down.
//  4. The file reader charges the rate limiter when the priority is not
//     PriorityTotal and a limiter is set, and records one sample per read in
//     shale.sst.read.micros and in the activity's histogram
//     (shale.file.read.get.micros, …). Flush, compaction and DB-open
//     histograms record from the default statistics level; the five
//     user-read histograms only above LevelExceptDetailedTimers, as RocksDB
//     does since its PR #11288. Where statistics are off, no clock is read.
//
// The behavioural spec, taken from RocksDB (enum values, the check-then-tag
// rule, the gating table, histogram buckets, the file reader's and the rate
// limiter's algorithms), is the project's reference/rocksdb-io-activity.md.
package readpath
