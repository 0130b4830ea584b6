package fileio

import (
	"context"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/ratelimit"
	"github.com/shaledb/shale/statistics"
)

// charge charges a read of n bytes at off, made with opts, to the rate
// limiter: in pieces of at most the limiter's burst (RequestToken clamps
// each request to it), every method of the Reader the same way. It is the
// only place a read waits for the limiter, so every read's waits are bounded
// alike: by ctx, and together by opts.Timeout, after which it fails with a
// timed-out error (ioctx.ErrTimedOut, and context.DeadlineExceeded).
//
// With each nil the whole read is charged before it returns, and the caller
// reads afterwards (MultiRead, ReadAsync, a mapped Read). Otherwise each is
// called after every grant with the piece's position in the read and its
// size, and reads that piece before the next one is requested (RocksDB's
// buffered Read); its error stops the read and is returned as it is. A read
// that is not charged (see charged) calls each once for the whole range.
//
// sw, when not nil, excludes the waits from its latency sample (Read does,
// MultiRead does not, as in RocksDB).
func (r *Reader) charge(ctx context.Context, opts ioctx.IOOptions, sw *statistics.StopWatch, off int64, n int,
	each func(pos, size int) error) error {
	if !r.charged(opts) {
		if each == nil || n == 0 {
			return nil
		}
		return each(0, n)
	}
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, opts.Timeout, ioctx.TimeoutError("rate limiter wait exceeded the IO timeout"))
		defer cancel()
	}
	for pos := 0; pos < n; {
		if sw != nil {
			sw.DelayStart()
		}
		granted, err := r.opts.Limiter.RequestToken(ctx, int64(n-pos), 0, opts.RateLimiterPriority, r.opts.Stats, ratelimit.OpRead)
		if sw != nil {
			sw.DelayStop()
		}
		if err != nil {
			return r.limiterError(ctx, err, off, n)
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
