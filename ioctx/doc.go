// Package ioctx carries per-request read options from a public API call down
// to the file reader: which activity a read serves (its IO activity tag, as
// in RocksDB's Env::IOActivity) and at which priority it is charged to the
// rate limiter.
//
// # Contract
//
// A public read (Get, MultiGet, NewIterator, VerifyChecksum,
// VerifyFileChecksums) is resolved once, at the API boundary, by
// [ResolveRead]: the [ReadOptions] taken from the context (merged over a
// session's defaults), the activity checked and tagged (Unknown becomes the
// API's own activity; another API's is an error), the deadline folded into
// the [IOOptions]. The
// resulting [ReadRequest] is passed down by value to the driver, the engine's
// read path and every table read. Nothing below the API boundary looks in the
// context again: a context lookup walks the context chain, which is too slow
// for a block-read loop.
//
// [ReadOptions] becomes [IOOptions] in exactly one place,
// [ReadOptions.IOOptions], which ResolveRead calls: a deadline already past
// is an error, and the per-IO timeout is the smaller of the time left and
// [ReadOptions.IOTimeout].
//
// # Tags and per-request statistics
//
// Next to its activity, a read may carry a [Tag] ([ReadOptions.Tag]),
// registered once per process with [RegisterTag], which attributes it to a
// tenant or a job: its reads count in the tag's statistics, take the tag's
// default priority, and are charged to the tag's own [Budget] if it has
// one. It may also carry a [PerfContext] ([ReadOptions.Perf]) that the call
// fills in with what it did. Both travel in [IOOptions] down to the file
// reader; a read with neither pays a compare or two.
//
// # Zero values
//
// The zero [ReadOptions] means RocksDB's defaults: activity Unknown,
// priority Total (reads are not charged to the rate limiter), checksums
// verified, blocks added to the cache. For that to hold, the numeric values of
// [Activity] and [Priority] differ from RocksDB's: Unknown and Total are 0
// here. Compare activities by name ([Activity.String]) or with
// [Activity.RocksDBValue], never by number across the two systems.
//
// # Writes
//
// A write carries [WriteOptions] in its context ([WithWriteOptions]): Sync,
// DisableWAL and the rate-limiter priority of its WAL bytes. The façade reads
// them once per call with [WriteOptionsFrom], merges them over a session's
// defaults with [MergeWrite] (a flag set in either applies, a priority other
// than Total overrides), and passes the result by value to the driver, which
// never looks in the context again. The zero value is RocksDB's default
// WriteOptions: not synced, WAL on, not charged.
//
// This package imports only the standard library, so every layer of shale
// may use its types.
package ioctx
