// Package ratelimit is shale's priority-aware IO rate limiter, a Go port of
// the semantics of RocksDB's GenericRateLimiter (util/rate_limiter.cc, as of
// RocksDB 8.6, plus the decoupled burst size of RocksDB #12379). The file
// reader charges it for reads made at a priority other than
// ioctx.PriorityTotal; flush and compaction charge it for writes.
//
// # Contract
//
// A [Generic] limiter lets BytesPerSecond bytes through per second, handed
// out in refills of BytesPerSecond×RefillPeriod bytes (at least 100 bytes)
// every RefillPeriod (default 100 ms):
//
//   - A request is granted at once from the bytes left in the current
//     period when they suffice; otherwise it takes what is left and queues
//     the rest on its priority's FIFO queue.
//   - At each refill the budget is set to one refill's bytes (unused bytes
//     do not carry over, so the burst is one refill) and queue fronts are
//     granted in this order: User always first; then High, Mid, Low, except
//     that with probability 1/Fairness (default 10) High goes after Mid and
//     Low, and independently with probability 1/Fairness Mid goes after Low.
//     A front that needs more than is left gets a partial grant, and the
//     rest of the budget goes to no one (RocksDB's rule, which bounds the
//     refill's work and keeps big requests from starving).
//   - No request may exceed SingleBurstBytes (by default one refill);
//     [Limiter.RequestToken] clamps to it.
//   - PriorityTotal is never charged, and in ModeReads (ModeWrites) writes
//     (reads) are not charged; such requests return at once and count
//     nowhere.
//   - [Generic.TotalRequests] counts every charged Request call, including
//     those granted without waiting; [Generic.TotalBytesThrough] counts the
//     bytes granted. For both, PriorityTotal means the sum over Low, Mid,
//     High and User.
//
// The limiter starts no goroutines. Waiting requests take turns: one of them
// sleeps until the next refill and then refills and grants (ticking
// statistics.NumberRateLimiterDrains each time one takes that turn); the
// others sleep until they are granted or handed the turn. A waiter that
// leaves, granted or cancelled, hands the turn on, so no queued request is
// left asleep with nobody to wake it (the class of hang RocksDB #11763
// fixed).
//
// Waits honour a context: a request whose context is done leaves its queue
// and returns an error for which errors.Is(err, ctx.Err()) holds; bytes it
// had been partially granted are spent. [Generic.Close] wakes every waiter
// with [ErrClosed].
//
// # Differences from RocksDB
//
//   - Refills keep to a fixed schedule. RocksDB sets the next refill one
//     period after the moment the refill ran, so each late wake-up of the
//     waiter lengthens a period and the rate falls short (by 5-12% at 10 ms
//     periods, measured on a loaded machine). shale sets it one period after
//     the previous due time, unless a whole period was missed; then the
//     schedule restarts from now, without catching up.
//   - Priorities are numbered as in package ioctx (Total is 0, User is 4),
//     so PriorityTotal is the zero value. The zero [Mode] is ModeReads
//     (RocksDB defaults to kWritesOnly).
//   - A request larger than the burst is an error marked
//     errclass.ErrInvalidArgument instead of a debug assertion.
//   - Requests wait on a context (see above), and Close does not wait for
//     the woken requests to return.
//   - A request that had to sleep records its wait in
//     statistics.RateLimiterWaitMicros (RocksDB later added similar
//     histograms in #14884).
//   - An auto-tuned limiter never tunes its rate below one byte per second.
package ratelimit
