package ratelimit

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
)

// ErrClosed is returned by a Request that Close woke before it was granted,
// and at once by every Request on a closed limiter. Test with errors.Is.
var ErrClosed = errors.New("ratelimit: closed")

// Defaults of Options, RocksDB's NewGenericRateLimiter defaults.
const (
	// DefaultRefillPeriod is how often the limiter refills when
	// Options.RefillPeriod is zero. It bounds the worst-case wait of a small
	// request (RocksDB #12379 measured a P100 read latency of about one refill
	// period).
	DefaultRefillPeriod = 100 * time.Millisecond
	// DefaultFairness is Options.Fairness when it is zero: High is served
	// after Mid and Low at one refill in ten, and Mid after Low at one in ten.
	DefaultFairness = 10
	// MaxFairness caps Options.Fairness, as RocksDB does.
	MaxFairness = 100
)

// minRefillBytes is RocksDB's kMinRefillBytesPerPeriod. Without a floor a
// tiny rate would refill zero bytes and no request could ever be granted.
const minRefillBytes = 100

// refillsPerTune is RocksDB's kRefillsPerTune: an auto-tuned limiter tunes its
// rate at most once per this many refill periods.
const refillsPerTune = 100

// Limiter is the rate limiter the engine and the file reader charge. *Generic
// implements it. Implementations must be safe for concurrent use.
type Limiter interface {
	// Request blocks until bytes are granted at pri, or until ctx is done, in
	// which case it returns an error for which errors.Is(err, ctx.Err())
	// holds. It returns nil at once, charging and counting nothing, when pri
	// is PriorityTotal or op is not limited in this limiter's mode. bytes
	// must not exceed SingleBurstBytes; a larger request is an error marked
	// errclass.ErrInvalidArgument.
	Request(ctx context.Context, bytes int64, pri ioctx.Priority, stats *statistics.Statistics, op OpType) error
	// RequestToken clamps bytes to SingleBurstBytes and, when alignment > 0,
	// rounds it down to a multiple of alignment but not below alignment
	// (which may exceed the burst: direct IO cannot read less than a page),
	// then requests that many bytes. It returns the size granted, which the
	// caller should read or write; when the request is not charged it returns
	// bytes unchanged, and on error it returns 0.
	RequestToken(ctx context.Context, bytes, alignment int64, pri ioctx.Priority, stats *statistics.Statistics, op OpType) (int64, error)
	// IsRateLimited reports whether requests for op are charged.
	IsRateLimited(op OpType) bool
	// SingleBurstBytes is the largest request Request accepts.
	SingleBurstBytes() int64
}

// Granter is implemented by a Limiter that can grant a request at once or
// decline it without waiting. A reader whose wait is bounded by a timeout
// asks it first and builds the context that bounds the wait only when it
// declines, so a read the limiter has bytes for costs no allocation.
// *Generic implements it.
type Granter interface {
	// TryRequestToken is RequestToken without the wait: it clamps and
	// aligns bytes the same way and, when they can be granted at once,
	// charges and counts them exactly as RequestToken would and returns
	// them with ok true. Otherwise it returns ok false having charged and
	// counted nothing, and the caller requests them with RequestToken. A
	// request that is not charged returns bytes and ok true.
	TryRequestToken(bytes, alignment int64, pri ioctx.Priority, stats *statistics.Statistics, op OpType) (granted int64, ok bool)
}

// RequestBursts charges n bytes to lim at pri for op in requests of at most
// SingleBurstBytes each (a write larger than a burst is charged piece by
// piece, as RocksDB's WritableFileWriter does). It returns the first error,
// nil at once when lim is nil or does not limit op.
func RequestBursts(ctx context.Context, lim Limiter, n int64, pri ioctx.Priority, stats *statistics.Statistics, op OpType) error {
	if lim == nil || !lim.IsRateLimited(op) {
		return nil
	}
	burst := lim.SingleBurstBytes()
	for rest := n; rest > 0; rest -= burst {
		if err := lim.Request(ctx, min(rest, burst), pri, stats, op); err != nil {
			return err
		}
	}
	return nil
}

// Options configure a Generic limiter. Only BytesPerSecond is required; the
// zero value of every other field means RocksDB's default.
type Options struct {
	// BytesPerSecond is the rate, in bytes per second. It must be positive.
	// With AutoTuned it is the ceiling of the tuned rate.
	BytesPerSecond int64
	// RefillPeriod is how often the budget is refilled. A shorter period
	// smooths the flow and shortens the longest wait, at the cost of more
	// wake-ups. Zero means DefaultRefillPeriod (100 ms); otherwise it must be
	// at least a microsecond, RocksDB's unit.
	RefillPeriod time.Duration
	// Fairness sets how often lower priorities go first: at each refill, with
	// probability 1/Fairness High is served after Mid and Low, and
	// (independently) with probability 1/Fairness Mid after Low. User is
	// always served first. Zero means DefaultFairness (10); values above
	// MaxFairness (100) are lowered to it; negative values are an error.
	Fairness int
	// Mode says which requests are charged. The zero value is ModeReads.
	Mode Mode
	// AutoTuned makes the limiter start at BytesPerSecond/2 and, every 100
	// refill periods, move its rate within [BytesPerSecond/20,
	// BytesPerSecond]: down 5% when fewer than half of the periods ran dry
	// (to the floor when none did), up 5% when more than 90% did. It is
	// RocksDB's auto_tuned.
	AutoTuned bool
	// SingleBurstBytes is the largest single request (RocksDB #12379). Zero
	// means the bytes of one refill period, which follow the rate when it
	// changes. A larger value lets a request span several refills; the rate
	// does not change.
	SingleBurstBytes int64
}

// Generic is a priority-aware token bucket with RocksDB's GenericRateLimiter
// semantics. Every refill period it sets its budget to one period's bytes
// (unused bytes do not carry over) and grants queued requests in priority
// order, User first, then High, Mid and Low with the fairness coin. Requests
// that fit the budget left in the current period are granted at once without
// waiting; others wait in their priority's FIFO queue.
//
// A Generic is safe for concurrent use. It starts no goroutines: the waiting
// requests themselves take turns to wait for the next refill and hand out the
// budget.
type Generic struct {
	mode         Mode
	refillPeriod time.Duration
	periodMicros int64
	fairness     int
	autoTuned    bool
	// maxBytesPerSec is the ceiling of auto-tuning (RocksDB's
	// max_bytes_per_sec_), Options.BytesPerSecond.
	maxBytesPerSec int64
	// burstBytes is Options.SingleBurstBytes; zero means refillBytes.
	burstBytes int64

	// rate and refillBytes change under mu (SetBytesPerSecond, tuning) but
	// are read without it.
	rate        atomic.Int64
	refillBytes atomic.Int64

	// epoch is the origin of the limiter's monotonic clock (now).
	epoch time.Time

	// timer is the timer of the one waiter that holds the refill-wait duty
	// (mu.refillWaiter); only that waiter resets or reads it.
	timer *time.Timer

	// oneIn(n) reports true with probability 1/n: the fairness coin. Tests
	// replace it to force an iteration order.
	oneIn func(n int) bool

	mu struct {
		sync.Mutex
		closed bool
		// available is the budget left in the current period. It is
		// non-zero only while every queue is empty: an arrival that does not
		// fit takes what is left before it queues.
		available int64
		// nextRefill is when the next refill is due, on the now clock.
		nextRefill time.Duration
		// refillWaiter is the queued request whose goroutine sleeps until
		// nextRefill (RocksDB's wait_until_refill_pending_); nil when none.
		// The other waiters sleep on their own signal channel until a
		// grant, Close, or a hand-over of this duty wakes them.
		refillWaiter *request
		queues       [ioctx.NumPriorities]queue
		// numDrains counts the times a waiter took the refill-wait duty since
		// the last tune; tunedAt is when that tune ran.
		numDrains int64
		tunedAt   time.Duration
		// The per-priority counters, indexed by ioctx.Priority (the Total
		// slot is unused). They are plain integers because every request
		// already holds mu when it counts; queries are rare.
		totalRequests [ioctx.NumPriorities]int64
		totalBytes    [ioctx.NumPriorities]int64
	}
}

var _ Limiter = (*Generic)(nil)

// New returns a limiter configured by opts: every setting, auto-tuning and
// the burst size included. An invalid field is an error matching
// driver.ErrInvalidArgument that names it. It is the constructor for
// settings that come from configuration; [NewGeneric] is the shorthand with
// RocksDB's signature.
func New(opts Options) (*Generic, error) {
	if opts.BytesPerSecond <= 0 {
		return nil, invalidf("Options.BytesPerSecond must be positive, got %d", opts.BytesPerSecond)
	}
	switch {
	case opts.RefillPeriod == 0:
		opts.RefillPeriod = DefaultRefillPeriod
	case opts.RefillPeriod < time.Microsecond:
		return nil, invalidf("Options.RefillPeriod must be zero or at least 1µs, got %s", opts.RefillPeriod)
	}
	switch {
	case opts.Fairness == 0:
		opts.Fairness = DefaultFairness
	case opts.Fairness < 0:
		return nil, invalidf("Options.Fairness must not be negative, got %d", opts.Fairness)
	case opts.Fairness > MaxFairness:
		opts.Fairness = MaxFairness
	}
	if opts.Mode >= numModes {
		return nil, invalidf("Options.Mode is invalid: %s", opts.Mode)
	}
	if opts.SingleBurstBytes < 0 {
		return nil, invalidf("Options.SingleBurstBytes must not be negative, got %d", opts.SingleBurstBytes)
	}

	g := &Generic{
		mode:           opts.Mode,
		refillPeriod:   opts.RefillPeriod,
		periodMicros:   opts.RefillPeriod.Microseconds(),
		fairness:       opts.Fairness,
		autoTuned:      opts.AutoTuned,
		maxBytesPerSec: opts.BytesPerSecond,
		burstBytes:     opts.SingleBurstBytes,
		epoch:          time.Now(),
		oneIn:          oneIn,
	}
	rate := opts.BytesPerSecond
	if opts.AutoTuned {
		rate = max(1, rate/2)
	}
	g.setBytesPerSecondLocked(rate)
	g.timer = time.NewTimer(time.Hour)
	g.timer.Stop()
	// The first refill is due at once (RocksDB's next_refill_us_ starts at
	// "now"), so the first request is served from a fresh period.
	g.mu.nextRefill = 0
	return g, nil
}

// NewGeneric returns a limiter of bytesPerSec bytes per second: [New] with
// RocksDB's NewGenericRateLimiter signature, so that code and settings
// ported from RocksDB read the same (the DESIGN's public surface names it).
// A zero refill period or fairness means RocksDB's default (100 ms, 10);
// auto-tuning is off and the burst is one period's bytes. Like RocksDB's, it
// panics when bytesPerSec is not positive or refill or fairness is negative,
// so it is for constants in code; use New for settings that come from
// configuration, to get an error instead.
func NewGeneric(bytesPerSec int64, refill time.Duration, fairness int, mode Mode) *Generic {
	g, err := New(Options{BytesPerSecond: bytesPerSec, RefillPeriod: refill, Fairness: fairness, Mode: mode})
	if err != nil {
		panic(err)
	}
	return g
}

func invalidf(format string, args ...any) error {
	return base.InvalidArgumentf("ratelimit: "+format, args...)
}

// oneIn is the default fairness coin. math/rand/v2's global source is
// goroutine-safe, allocation-free and randomly seeded, as RocksDB seeds its
// Random from the time.
func oneIn(n int) bool { return rand.IntN(n) == 0 }

// now reads the limiter's monotonic clock.
func (g *Generic) now() time.Duration { return time.Since(g.epoch) }

// IsRateLimited reports whether requests for op are charged in the limiter's
// mode: reads unless the mode is ModeWrites, writes unless it is ModeReads.
func (g *Generic) IsRateLimited(op OpType) bool {
	switch g.mode {
	case ModeReads:
		return op == OpRead
	case ModeWrites:
		return op == OpWrite
	}
	return true
}

// SingleBurstBytes returns the largest request Request accepts:
// Options.SingleBurstBytes, or the bytes of one refill period at the current
// rate when that is zero.
func (g *Generic) SingleBurstBytes() int64 {
	if g.burstBytes != 0 {
		return g.burstBytes
	}
	return g.refillBytes.Load()
}

// BytesPerSecond returns the current rate: the configured one, the last one
// set with SetBytesPerSecond, or the tuned one.
func (g *Generic) BytesPerSecond() int64 { return g.rate.Load() }

// SetBytesPerSecond changes the rate from the next refill on. Requests
// already queued keep their size; one larger than the new refill is served
// by partial grants over several refills. A rate that is not positive is an
// error marked errclass.ErrInvalidArgument. On an auto-tuned limiter the next
// tune moves the rate back within [BytesPerSecond/20, BytesPerSecond] of
// Options, as in RocksDB.
func (g *Generic) SetBytesPerSecond(bps int64) error {
	if bps <= 0 {
		return invalidf("bytes per second must be positive, got %d", bps)
	}
	g.mu.Lock()
	g.setBytesPerSecondLocked(bps)
	g.mu.Unlock()
	return nil
}

func (g *Generic) setBytesPerSecondLocked(bps int64) {
	g.rate.Store(bps)
	g.refillBytes.Store(g.refillBytesFor(bps))
}

// refillBytesFor is RocksDB's CalculateRefillBytesPerPeriod, in its units
// (microseconds) so that the sizes match RocksDB's byte for byte.
func (g *Generic) refillBytesFor(bps int64) int64 {
	if math.MaxInt64/bps < g.periodMicros {
		// rate*period overflows; any large number will do.
		return math.MaxInt64 / 1_000_000
	}
	return max(minRefillBytes, bps*g.periodMicros/1_000_000)
}

// Request blocks until bytes are granted at pri or ctx is done; see
// Limiter.Request.
//
// Semantics, following RocksDB's GenericRateLimiter::Request:
//   - Every call at a charged priority counts in TotalRequests(pri), whether
//     or not it waits (calls rejected as invalid, and calls on a closed
//     limiter, do not count).
//   - Bytes left in the current period are taken first, and count in
//     TotalBytesThrough at once. When they cover the request it returns
//     without waiting, even if ctx is already done.
//   - Otherwise, if ctx is already done and no refill is due, it returns
//     ctx's error having taken nothing. Else it takes what is left, queues
//     the rest at pri and waits. A refill grants queue fronts in the
//     fairness order, partially when a front needs more than is left; the
//     queued bytes count in TotalBytesThrough when the request is granted in
//     full.
//   - If ctx is done while it waits, it leaves its queue and returns an error
//     for which errors.Is(err, ctx.Err()) holds. Bytes it took or was
//     partially granted are spent: they do not return to the budget, and
//     only those taken before it queued count in TotalBytesThrough. A grant
//     (or a refill that is due) wins over a done ctx.
//   - A negative size is taken as zero; a size larger than SingleBurstBytes
//     is an error marked errclass.ErrInvalidArgument.
//
// stats may be nil. A waiter that takes the refill-wait duty ticks
// NumberRateLimiterDrains in it, and a request that had to sleep records the
// time from queueing to leaving (granted or not) in RateLimiterWaitMicros.
func (g *Generic) Request(
	ctx context.Context, bytes int64, pri ioctx.Priority, stats *statistics.Statistics, op OpType,
) error {
	if pri == ioctx.PriorityTotal || !g.IsRateLimited(op) {
		return nil
	}
	if bytes > g.SingleBurstBytes() {
		return invalidf("request of %d bytes exceeds the single burst of %d bytes", bytes, g.SingleBurstBytes())
	}
	return g.request(ctx, bytes, pri, stats, op)
}

// RequestToken clamps and aligns bytes, then requests them; see
// Limiter.RequestToken. An aligned size above the burst is allowed here: it
// is granted over several refills.
func (g *Generic) RequestToken(
	ctx context.Context, bytes, alignment int64, pri ioctx.Priority, stats *statistics.Statistics, op OpType,
) (int64, error) {
	if pri == ioctx.PriorityTotal || !g.IsRateLimited(op) {
		return bytes, nil
	}
	bytes = g.clampAlign(bytes, alignment)
	if err := g.request(ctx, bytes, pri, stats, op); err != nil {
		return 0, err
	}
	return bytes, nil
}

// clampAlign is what RequestToken and TryRequestToken ask for: bytes
// clamped to [0, the single burst] and rounded down to a multiple of
// alignment, at least one alignment.
func (g *Generic) clampAlign(bytes, alignment int64) int64 {
	bytes = max(0, min(bytes, g.SingleBurstBytes()))
	if alignment > 0 {
		bytes = max(alignment, bytes/alignment*alignment)
	}
	return bytes
}

// TryRequestToken grants bytes at once or declines without waiting; see
// Granter. It declines an invalid priority and a closed limiter, whose
// errors RequestToken reports.
func (g *Generic) TryRequestToken(
	bytes, alignment int64, pri ioctx.Priority, stats *statistics.Statistics, op OpType,
) (int64, bool) {
	if pri == ioctx.PriorityTotal || !g.IsRateLimited(op) {
		return bytes, true
	}
	bytes = g.clampAlign(bytes, alignment)
	if pri >= ioctx.NumPriorities {
		return 0, false
	}
	g.mu.Lock()
	if g.autoTuned {
		if now := g.now(); now-g.mu.tunedAt >= refillsPerTune*g.refillPeriod {
			g.tuneLocked(now)
		}
	}
	if !g.mu.closed && g.mu.available < bytes {
		// A due refill is every caller's duty (see waitLocked); Request
		// would do it before granting without a wait.
		if now := g.now(); g.mu.nextRefill <= now {
			g.refillAndGrantLocked(now)
		}
	}
	if g.mu.closed || g.mu.available < bytes {
		g.mu.Unlock()
		return 0, false
	}
	g.mu.totalRequests[pri]++
	g.mu.available -= bytes
	g.mu.totalBytes[pri] += bytes
	g.mu.Unlock()
	tickers := &opTickers[op&1]
	stats.RecordTick(tickers[0], 1)
	stats.RecordTick(tickers[1], uint64(bytes))
	return bytes, true
}

// opTickers are the charged-request tickers of each operation type:
// requests, bytes and requests that waited.
var opTickers = [2][3]statistics.Ticker{
	OpRead:  {statistics.RateLimiterRequestsRead, statistics.RateLimiterBytesRead, statistics.RateLimiterDelayedRequestsRead},
	OpWrite: {statistics.RateLimiterRequestsWrite, statistics.RateLimiterBytesWrite, statistics.RateLimiterDelayedRequestsWrite},
}

// request is Request after the mode and burst checks. It records the
// charged-request tickers of op (RocksDB HEAD's rate.limiter.*.read/write).
func (g *Generic) request(ctx context.Context, bytes int64, pri ioctx.Priority, stats *statistics.Statistics, op OpType) error {
	if pri >= ioctx.NumPriorities {
		return invalidf("invalid priority %s", pri)
	}
	bytes = max(bytes, 0)
	tickers := &opTickers[op&1]
	stats.RecordTick(tickers[0], 1)
	stats.RecordTick(tickers[1], uint64(bytes))

	g.mu.Lock()
	if g.autoTuned {
		if now := g.now(); now-g.mu.tunedAt >= refillsPerTune*g.refillPeriod {
			g.tuneLocked(now)
		}
	}
	if g.mu.closed {
		g.mu.Unlock()
		return ErrClosed
	}
	g.mu.totalRequests[pri]++
	if g.mu.available >= bytes {
		g.mu.available -= bytes
		g.mu.totalBytes[pri] += bytes
		g.mu.Unlock()
		return nil
	}
	if ctx.Err() != nil && g.mu.nextRefill > g.now() {
		// It would have to wait: fail without taking anything.
		err := g.ctxError(ctx, bytes, pri)
		g.mu.Unlock()
		return err
	}
	if t := g.mu.available; t > 0 {
		g.mu.totalBytes[pri] += t
		bytes -= t
		g.mu.available = 0
	}

	r := getRequest(bytes, pri)
	g.mu.queues[pri].pushBack(r)
	var start time.Time
	timed := stats.HistogramEnabled(statistics.RateLimiterWaitMicros)
	if timed {
		start = time.Now()
	}
	waited, err := g.waitLocked(ctx, r, stats)
	g.mu.Unlock()
	if waited {
		stats.RecordTick(tickers[2], 1)
		if timed {
			stats.ReportTimeToHistogram(statistics.RateLimiterWaitMicros, uint64(time.Since(start).Microseconds()))
		}
	}
	putRequest(r)
	return err
}

func (g *Generic) ctxError(ctx context.Context, bytes int64, pri ioctx.Priority) error {
	return errors.Wrapf(ctx.Err(), "ratelimit: %d-byte request at priority %s", bytes, pri)
}

// waitLocked waits until r is granted, ctx is done or the limiter closes, and
// takes r out of its queue; waited reports whether it had to sleep. It is
// RocksDB's wait loop. Each waiter, whenever it runs, does whichever duty is
// due: if the refill is due, it refills and grants; if not and no one is
// waiting for it, it waits for it (holding the refill-wait duty); if another
// waiter holds that duty, it sleeps on its own channel. A waiter that leaves
// makes sure some waiter is awake to carry on the duties (see
// wakeDutyLocked), which is what RocksDB #11763 fixed.
//
// ctx is checked only when the waiter is about to sleep, so a grant or a due
// refill wins over a done context.
func (g *Generic) waitLocked(ctx context.Context, r *request, stats *statistics.Statistics) (waited bool, err error) {
	done := ctx.Done()
	for {
		if r.remaining == 0 {
			g.wakeDutyLocked()
			return waited, nil
		}
		if g.mu.closed {
			g.mu.queues[r.pri].remove(r)
			return waited, ErrClosed
		}
		now := g.now()
		until := g.mu.nextRefill - now
		if until <= 0 {
			g.refillAndGrantLocked(now)
			continue
		}
		if ctx.Err() != nil {
			g.mu.queues[r.pri].remove(r)
			// This waiter may have been woken to take the refill-wait duty,
			// or have just given it up: pass it on.
			g.wakeDutyLocked()
			return waited, g.ctxError(ctx, r.bytes, r.pri)
		}
		waited = true
		if g.mu.refillWaiter != nil {
			g.mu.Unlock()
			select {
			case <-r.signal:
			case <-done:
			}
			g.mu.Lock()
			continue
		}
		stats.RecordTick(statistics.NumberRateLimiterDrains, 1)
		g.mu.numDrains++
		g.mu.refillWaiter = r
		g.timer.Reset(until)
		g.mu.Unlock()
		select {
		case <-g.timer.C:
		case <-r.signal:
		case <-done:
		}
		g.mu.Lock()
		g.timer.Stop()
		g.mu.refillWaiter = nil
	}
}

// wakeDutyLocked makes sure that, while requests are queued, one of them is
// awake or waiting for the refill: unless a waiter holds the refill-wait
// duty, it wakes the front request of the highest non-empty queue (User,
// High, Mid, Low), which takes the duty when it runs. RocksDB signals the
// front even when the duty is held; that wake-up would find the duty taken
// and sleep again, so it is skipped. It cannot be needed then: the holder
// wakes at the refill, or hands the duty on itself if it leaves first.
func (g *Generic) wakeDutyLocked() {
	if g.mu.refillWaiter != nil {
		return
	}
	for pri := ioctx.PriorityUser; pri >= ioctx.PriorityLow; pri-- {
		if r := g.mu.queues[pri].front(); r != nil {
			r.wake()
			return
		}
	}
}

// refillAndGrantLocked is RocksDB's RefillBytesAndGrantRequestsLocked. It
// starts a new period whose budget is one refill (nothing carries over: the
// budget is always zero when a refill is due with requests queued) and
// grants queue fronts in the priority iteration order, the last one partially
// when the budget runs out. Refills are only ever performed by a queued
// waiter, so nothing happens while no request waits.
func (g *Generic) refillAndGrantLocked(now time.Duration) {
	// RocksDB sets the next refill one period after now. Every late wake-up
	// (timer slack, scheduling) then stretches a period and the rate falls
	// short: by 5-12% at 10 ms periods on a loaded machine. Keep refills on a
	// fixed grid instead, and restart the grid when a whole period went by
	// unrefilled, so an idle limiter does not catch up either.
	next := g.mu.nextRefill + g.refillPeriod
	if next <= now {
		next = now + g.refillPeriod
	}
	g.mu.nextRefill = next
	g.mu.available = g.refillBytes.Load()

	for _, pri := range g.priorityOrderLocked() {
		q := &g.mu.queues[pri]
		for r := q.front(); r != nil; r = q.front() {
			if g.mu.available < r.remaining {
				r.remaining -= g.mu.available
				g.mu.available = 0
				break
			}
			g.mu.available -= r.remaining
			r.remaining = 0
			g.mu.totalBytes[pri] += r.bytes
			q.remove(r)
			r.wake()
		}
	}
}

// priorityOrderLocked is RocksDB's GeneratePriorityIterationOrderLocked: User
// first; then High, Mid, Low, except that with probability 1/fairness High
// goes last and, independently, with probability 1/fairness Mid goes after
// Low. The coins are tossed in RocksDB's order, High's first.
func (g *Generic) priorityOrderLocked() [ioctx.NumPriorities - 1]ioctx.Priority {
	highLast := g.oneIn(g.fairness)
	midAfterLow := g.oneIn(g.fairness)
	const (
		u, h, m, l = ioctx.PriorityUser, ioctx.PriorityHigh, ioctx.PriorityMid, ioctx.PriorityLow
	)
	switch {
	case !highLast && !midAfterLow:
		return [...]ioctx.Priority{u, h, m, l}
	case !highLast && midAfterLow:
		return [...]ioctx.Priority{u, h, l, m}
	case highLast && !midAfterLow:
		return [...]ioctx.Priority{u, m, l, h}
	default:
		return [...]ioctx.Priority{u, l, m, h}
	}
}

// tuneLocked is RocksDB's TuneLocked. It looks at the share of refill
// periods since the last tune in which a waiter had to wait for the refill
// (a "drain"), and moves the rate within [max/20, max]: to the floor when no
// period drained, down 5% below 50%, up 5% above 90%.
func (g *Generic) tuneLocked(now time.Duration) {
	const (
		lowWatermarkPct    = 50
		highWatermarkPct   = 90
		adjustFactorPct    = 5
		allowedRangeFactor = 20
	)
	prev := g.mu.tunedAt
	g.mu.tunedAt = now
	// Round up to whole periods, in RocksDB's microseconds.
	elapsed := ((now - prev).Microseconds() + g.periodMicros - 1) / g.periodMicros
	if elapsed <= 0 {
		// Tuning runs at most once per refillsPerTune periods, so this is
		// unreachable; guard the division anyway.
		return
	}
	drainedPct := g.mu.numDrains * 100 / elapsed
	floor := max(1, g.maxBytesPerSec/allowedRangeFactor)

	prevRate := g.rate.Load()
	newRate := prevRate
	switch {
	case drainedPct == 0:
		newRate = floor
	case drainedPct < lowWatermarkPct:
		newRate = max(floor, min(prevRate, math.MaxInt64/100)*100/(100+adjustFactorPct))
	case drainedPct > highWatermarkPct:
		newRate = min(g.maxBytesPerSec, min(prevRate, math.MaxInt64/(100+adjustFactorPct))*(100+adjustFactorPct)/100)
	}
	if newRate != prevRate {
		g.setBytesPerSecondLocked(newRate)
	}
	g.mu.numDrains = 0
}

// TotalRequests returns the number of Request calls counted at pri since the
// limiter was made; PriorityTotal gives the sum over Low, Mid, High and User.
func (g *Generic) TotalRequests(pri ioctx.Priority) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return sumOver(&g.mu.totalRequests, pri)
}

// TotalBytesThrough returns the bytes granted at pri since the limiter was
// made; PriorityTotal gives the sum over Low, Mid, High and User.
func (g *Generic) TotalBytesThrough(pri ioctx.Priority) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return sumOver(&g.mu.totalBytes, pri)
}

func sumOver(c *[ioctx.NumPriorities]int64, pri ioctx.Priority) int64 {
	if pri != ioctx.PriorityTotal {
		if pri >= ioctx.NumPriorities {
			return 0
		}
		return c[pri]
	}
	var n int64
	for p := ioctx.PriorityLow; p < ioctx.NumPriorities; p++ {
		n += c[p]
	}
	return n
}

// TotalPendingRequests returns the number of requests queued at pri now;
// PriorityTotal gives the sum over all queues.
func (g *Generic) TotalPendingRequests(pri ioctx.Priority) int64 {
	if pri >= ioctx.NumPriorities {
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if pri != ioctx.PriorityTotal {
		return int64(g.mu.queues[pri].n)
	}
	var n int64
	for p := ioctx.PriorityLow; p < ioctx.NumPriorities; p++ {
		n += int64(g.mu.queues[p].n)
	}
	return n
}

// Close wakes every queued request; those not yet granted leave their queue
// and return ErrClosed. Later requests at a charged priority return ErrClosed
// at once, uncounted. Close does not wait for the woken requests to return.
// Calling it again does nothing.
func (g *Generic) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mu.closed {
		return
	}
	g.mu.closed = true
	for pri := range g.mu.queues {
		for r := g.mu.queues[pri].front(); r != nil; r = r.next {
			r.wake()
		}
	}
}

// ChargeRead makes a Generic usable as a tag's own read budget
// (ioctx.TagOptions.Budget): it is RequestToken for a read, with no
// alignment and no statistics (the reads are counted in the database's).
// A Generic in ModeWrites limits no reads and grants every request at once.
func (g *Generic) ChargeRead(ctx context.Context, bytes int64, pri ioctx.Priority) (int64, error) {
	return g.RequestToken(ctx, bytes, 0, pri, nil, OpRead)
}

// Generic is an ioctx.Budget.
var _ ioctx.Budget = (*Generic)(nil)
