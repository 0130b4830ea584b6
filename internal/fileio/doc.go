// Package fileio reads table files on behalf of the engine. Its [Reader] is
// the analogue of RocksDB's RandomAccessFileReader: the single place where a
// read's IO options take effect.
//
// # Contract
//
// Every method that reads takes the caller's context and [ioctx.IOOptions]
// (derived from ReadOptions once, at the API boundary). For each call the
// reader
//
//  1. fails at once if the context is done, with an error for which
//     errors.Is(err, ctx.Err()) holds, or if the request's deadline
//     (IOOptions.Deadline, carried by value) has passed, with a timed-out
//     error (errclass.ErrTimedOut, matching context.DeadlineExceeded);
//     otherwise it lowers IOOptions.Timeout to the time left before that
//     deadline, as RocksDB's file reader does;
//  2. charges the rate limiter at IOOptions.RateLimiterPriority, unless the
//     priority is PriorityTotal, no limiter is set, or the limiter does not
//     limit reads;
//  3. reads the bytes (from the file, or by slicing its memory mapping);
//  4. records one latency sample, in microseconds, into
//     statistics.SSTReadMicros and into the file-read histogram of
//     IOOptions.Activity (see [statistics.FileReadHistogram]); the
//     statistics level gates both, and when nothing would be recorded no
//     clock is read;
//  5. fails the read with a timed-out error if it took longer than
//     IOOptions.Timeout (the operating system's read is not interrupted, but
//     its result is not used late);
//  6. counts the bytes read;
//  7. for a read with a tag (IOOptions.Tag) or a sink (IOOptions.Perf),
//     records its time (rate-limiter waits excluded), bytes and waits in
//     the tag's statistics (from statistics.TagMinLevel up) and in the
//     sink; a tag's own budget is charged in step 2 next to the limiter.
//     A read with neither reads no extra clock.
//
// Read excludes the time spent waiting for the rate limiter from its sample
// (RocksDB's buffered read path); MultiRead includes it, and ReadAsync
// records the time to submit the read, as RocksDB does since its PR #11444.
// Prefetch is a hint to the operating system and records nothing.
//
// A short read (fewer bytes than asked, because the file is shorter) is an
// error marked corruption: callers only read ranges the file's own metadata
// says exist.
package fileio
