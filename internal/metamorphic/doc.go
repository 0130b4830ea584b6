// Package metamorphic is shale's metamorphic test, after Pebble's
// metamorphic package: it draws a random history of every public operation
// of the driver façade, runs it on a database under each of several option
// sets and on an in-memory model, and requires every run to print exactly
// what the model prints.
//
// It uses the façade only — driver.Open with a DSN, *driver.DB, Batch, Tx,
// Snapshot, Iterator, and ioctx.WithWriteOptions for synced and unlogged
// writes — so what it checks is what users see.
//
// # Pieces
//
//   - Generate (generator.go) draws a history from a seed: Put, Delete,
//     DeleteRange (bounded and open at either end), batches small and large with range deletions,
//     transactions that conflict (two writing one key: the second commit
//     must fail with driver.ErrConflict), snapshots read and closed,
//     iterators on the database, a snapshot or a transaction with bounds
//     and, for a third of them ("piter"), an IterOptions.Prefix of 1 to 6
//     bytes (shorter than, as long as and longer than the prefix_extractor
//     of the configs prefix-fixed-zstd, prefix-capped-partitioned-per-level and of random
//     ones, so that prefix filters skip tables), moved both ways (First/Next, Last/Prev, SeekGE, SeekLT), Get,
//     MultiGet, Flush, Compact (whole and bounded), SyncWAL, Checkpoint
//     (the checkpoint is opened and scanned), close-and-reopen, and runs
//     of DisableWAL writes followed by a Flush.
//   - A history is text, one op a line (see Op for the syntax); Write and
//     ParseHistory turn one into the other.
//   - Configs (options.go) are the option sets, as DSN query strings:
//     tiny memtables, caches and blocks, mmap reads, no block cache,
//     partitioned indexes and filters in the cache, no compression with
//     CRC32C checksums, snappy with sync=true, optimize_filters_for_hits
//     with compactions forced by tiny tables and L0 triggers, no bloom
//     filters with few open tables and paranoid checks, manual compactions
//     with a tiny MANIFEST, prefix extractors over zstd tables and over
//     tables whose codec changes with the level (compression_per_level
//     none:snappy, bottommost_compression=zstd). RandomConfig draws one
//     more from each seed, zstd and per-level codecs among its choices.
//   - The model (model.go) is a sorted map with copies for snapshots and
//     transactions; a transaction conflicts when a write committed since it
//     began covers a key (or range) it wrote, as the engine documents.
//   - The runner (runner.go) prints each op's result: values, not-found,
//     iterator positions, whole scans, error classes ("err=conflict");
//     RunAll runs one history under every configuration and compares each
//     with the model, op by op.
//
// # Running
//
// The normal suite runs TestMetamorphic briefly (a few seeds of some
// hundred ops under every configuration; one short seed with -short).
// Longer runs take flags:
//
//	go test ./internal/metamorphic -run TestMetamorphic -seeds 200 -ops 5000
//	go test ./internal/metamorphic -run TestMetamorphic -seed 42 -seeds 1 -ops 20000 -v
//
// The first seed is drawn from the clock unless -seed gives it; the test
// logs it. When a configuration's output differs from the model's, the test
// prints the seed, the configuration, the first differing op with the ops
// before it, and saves the history (with that report as comments) to
// testdata/failures (-save changes the directory). TestReplay runs every
// history in testdata and testdata/failures under every configuration (and
// the random one the history names); keep a fixed failure's history in
// testdata as a regression test. Histories of engine bugs not yet fixed
// live in testdata/open-bugs, replayed with -open-bugs.
package metamorphic
