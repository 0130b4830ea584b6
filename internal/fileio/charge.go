package fileio

import (
	"context"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/errclass"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/ratelimit"
	"github.com/shaledb/shale/statistics"
)

// charge charges a read of n bytes at off, made with opts, to the rate
// limiter: in pieces of at most the limiter's burst (RequestToken clamps
// each request to it), every method of the Reader the same way. It is the
// only place a read waits for the limiter, so every read's waits are bounded
// alike: by ctx, and together by opts.Timeout, after which it fails with a
// timed-out error (errclass.ErrTimedOut, and context.DeadlineExceeded).
//
// With each nil the whole read is charged before it returns, and the caller
// reads afterwards (MultiRead, ReadAsync, a mapped Read). Otherwise each is
// called after every grant with the piece's position in the read and its
// size, and reads that piece before the next one is requested (RocksDB's
// buffered Read); its error stops the read and is returned as it is. A read
// that is not charged (see charged) calls each once for the whole range.
//
// sw, when not nil, excludes the waits from its latency sample (Read does,
// MultiRead does not, as in RocksDB); obs, when not nil, counts them.
//
// A read whose tag has a budget (ioctx.TagOptions.Budget) is charged to it
// as well, piece by piece, after the database's limiter: every piece the
// database grants is charged in full to the budget before it is read, so
// each limiter is charged exactly the bytes read. The budget is charged at
// the read's priority, or at PriorityUser for a read the database does not
// charge (its priority is Total, or there is no limiter).
func (r *Reader) charge(ctx context.Context, opts ioctx.IOOptions, sw *statistics.StopWatch, obs *observer,
	off int64, n int, each func(pos, size int) error) error {
	budget := opts.Tag.Budget()
	dbCharged := r.charged(opts)
	if !dbCharged && budget == nil {
		if each == nil || n == 0 {
			return nil
		}
		return each(0, n)
	}
	// The wait's own deadline, opts.Timeout from now, needs a context of its
	// own (a timer and a cause), which allocates: it is made only when a
	// piece cannot be granted at once, which is when there is a wait to
	// bound. A grant at once (a limiter with bytes to spare, tryGrant) costs
	// no allocation and no clock read.
	waitCtx := ctx
	var cancel context.CancelFunc
	defer func() {
		if cancel != nil {
			cancel()
		}
	}()
	wait := func() context.Context {
		if cancel == nil && opts.Timeout > 0 {
			waitCtx, cancel = context.WithTimeoutCause(ctx, opts.Timeout, errclass.Timeout("rate limiter wait exceeded the IO timeout"))
		}
		return waitCtx
	}
	for pos := 0; pos < n; {
		if sw != nil {
			sw.DelayStart()
		}
		waitStart := obs.timeWait()
		granted, err := int64(n-pos), error(nil)
		if dbCharged {
			var ok bool
			if granted, ok = r.tryGrant(granted, opts.RateLimiterPriority); !ok {
				granted, err = r.opts.Limiter.RequestToken(wait(), int64(n-pos), 0, opts.RateLimiterPriority, r.opts.Stats, ratelimit.OpRead)
			}
		}
		if err == nil && granted > 0 && budget != nil {
			err = chargeBudget(wait(), budget, granted, opts.RateLimiterPriority)
		}
		obs.endWait(waitStart)
		if sw != nil {
			sw.DelayStop()
		}
		if err != nil {
			return r.limiterError(waitCtx, err, off, n)
		}
		if granted <= 0 {
			return base.AssertionFailedf("fileio: rate limiter granted %d bytes of a request of %d", granted, n-pos)
		}
		if each != nil {
			if err := each(pos, int(granted)); err != nil {
				return err
			}
		}
		pos += int(granted)
	}
	return nil
}

// tryGrant asks the database's limiter for up to n bytes at pri without
// waiting, when it can answer that (ratelimit.Granter): ok reports whether
// it granted them, and a limiter that cannot is asked to wait.
func (r *Reader) tryGrant(n int64, pri ioctx.Priority) (granted int64, ok bool) {
	g, can := r.opts.Limiter.(ratelimit.Granter)
	if !can {
		return 0, false
	}
	return g.TryRequestToken(n, 0, pri, r.opts.Stats, ratelimit.OpRead)
}

// chargeBudget charges n bytes to a tag's budget, in as many grants as it
// takes.
func chargeBudget(ctx context.Context, budget ioctx.Budget, n int64, pri ioctx.Priority) error {
	if !pri.Charged() {
		pri = ioctx.PriorityUser
	}
	for n > 0 {
		got, err := budget.ChargeRead(ctx, n, pri)
		if err != nil {
			return err
		}
		if got <= 0 {
			return base.AssertionFailedf("fileio: tag budget granted %d bytes of a request of %d", got, n)
		}
		n -= got
	}
	return nil
}
