// Command shale is the command-line tool of the shale key-value engine: a
// benchmark that shows the per-activity read statistics at work, a checksum
// verifier, a statistics reader, a checkpoint (backup) writer and dumpers for
// the table and log formats.
//
// Usage:
//
//	shale <command> [flags] [args]
//
// The commands:
//
//	bench      fill a database, compact it, then time Get, Get of missing
//	           keys, MultiGet, Seek, Next, VerifyChecksum and
//	           VerifyFileChecksums, and print the per-activity read histograms
//	stats      open a database read-only and print its statistics
//	verify     verify every block checksum (and, with -files, every whole-file
//	           checksum) of a database, optionally rate-limited
//	checkpoint write a consistent, openable copy of a database into a new
//	           directory: tables hard-linked where the filesystem allows,
//	           copied otherwise (DB.Checkpoint)
//	sst dump   print a table file's footer, properties, index and entries
//	wal dump   print a write-ahead log's records and their operations
//	dsn        print the table of DSN parameters
//	version    print the shale release, the Go release, the platform and the
//	           on-disk format versions the binary reads and writes
//	help       print this usage, or a command's with "shale help <command>"
//
// With no flags, "shale bench" runs on a temporary directory that it removes
// at the end; the whole run takes well under a minute on two cores.
//
// # Output and exit codes
//
// Data goes to standard output; errors go to standard error as
// "shale <command>: <message>". Progress bars are drawn on standard error,
// and only when it is a terminal. The exit code is one a script can rely on:
//
//	0  success
//	1  the operation found a problem: corruption (verify, sst dump,
//	   wal dump, stats -scan), or a bench read that returned a wrong result
//	2  usage error: unknown command or flag, bad flag value, bad DSN (the
//	   message names the offending key or value)
//	3  runtime failure: the database cannot be opened, an IO error, an
//	   interrupt
//
// # Statistics
//
// bench and stats print the per-activity table: the aggregate
// shale.sst.read.micros histogram and its eight shale.file.read.*
// breakdowns (flush, compaction, DB open, Get, MultiGet, iterator and the two
// verifications) with count, P50, P99 and max in microseconds, followed by the
// key tickers (block cache, bloom filter, bytes read, checksum verification
// and rate limiter), then the LSM's shape (DB.Metrics): a table per level. The five user-read breakdowns are recorded only at
// stats_level except_time_for_mutex or all, which is why bench and stats
// default to all.
//
// "shale stats -json" prints one object whose keys are snake_case; a size's
// key ends in "bytes" (in bytes) and a duration's in "micros" (whole
// microseconds). "shale help stats" describes every key, and a golden test
// (testdata/stats-json-shape.golden) pins the shape.
package main
