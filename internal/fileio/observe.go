package fileio

import (
	"time"

	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
)

// observer records what one call of the reader did for the request's tag
// (its statistics in the reader's Statistics) and for the request's
// PerfContext. When the request has neither, it is inactive: it reads no
// clock and records nothing, and the read path pays two compares.
//
// Its sample is the call's time minus the rate-limiter waits, in every
// method (the aggregate histograms exclude the waits only in Read, as
// RocksDB's do; a tag's and a request's figures keep the two apart, with
// the waits counted on their own).
type observer struct {
	ts     *statistics.TagStats
	perf   *ioctx.PerfContext
	active bool
	start  time.Time
	wait   time.Duration
}

// observe starts observing a call made with opts.
func (r *Reader) observe(opts ioctx.IOOptions) observer {
	if opts.Tag == ioctx.TagNone && opts.Perf == nil {
		return observer{}
	}
	return r.observeSlow(opts)
}

func (r *Reader) observeSlow(opts ioctx.IOOptions) observer {
	o := observer{perf: opts.Perf, ts: TagStats(r.opts.Stats, opts)}
	o.active = o.ts != nil || o.perf != nil
	if o.active {
		o.start = time.Now()
	}
	return o
}

// TagStats returns the statistics of the tag of opts in st, nil when opts
// has no tag or st does not record tags at its level. The table reader uses
// it for the tag's block-cache tickers.
func TagStats(st *statistics.Statistics, opts ioctx.IOOptions) *statistics.TagStats {
	if opts.Tag == ioctx.TagNone {
		return nil
	}
	return st.Tag(opts.Tag.RocksDBValue(), opts.Tag.String())
}

// timeWait returns the time to start a rate-limiter wait, zero when o does
// not need it.
func (o *observer) timeWait() time.Time {
	if o == nil || !o.active {
		return time.Time{}
	}
	return time.Now()
}

// endWait adds the wait that began at start (from timeWait).
func (o *observer) endWait(start time.Time) {
	if o != nil && o.active {
		o.wait += time.Since(start)
	}
}

// done records the call: n bytes read (0 when it failed), its time and its
// waits.
func (o *observer) done(n int) {
	if !o.active {
		return
	}
	d := max(time.Since(o.start)-o.wait, 0)
	if o.ts != nil {
		o.ts.RecordReadMicros(uint64(d / time.Microsecond))
		o.ts.RecordTick(statistics.TagBytesRead, uint64(n))
		o.ts.RecordTick(statistics.TagRateLimiterWaitMicros, uint64(o.wait/time.Microsecond))
	}
	if o.perf != nil {
		o.perf.AddFileRead(n, d)
		o.perf.AddRateLimiterWait(o.wait)
	}
}

// NoteCacheHit records a data-block cache hit for the tag and the sink of
// opts; NoteCacheMiss a miss. The table reader calls them next to its
// BlockCacheHit and BlockCacheMiss tickers.
func NoteCacheHit(st *statistics.Statistics, opts ioctx.IOOptions) {
	if opts.Tag != ioctx.TagNone || opts.Perf != nil {
		noteCache(st, opts, statistics.TagBlockCacheHit)
	}
}

// NoteCacheMiss: see NoteCacheHit.
func NoteCacheMiss(st *statistics.Statistics, opts ioctx.IOOptions) {
	if opts.Tag != ioctx.TagNone || opts.Perf != nil {
		noteCache(st, opts, statistics.TagBlockCacheMiss)
	}
}

func noteCache(st *statistics.Statistics, opts ioctx.IOOptions, t statistics.TagTicker) {
	TagStats(st, opts).RecordTick(t, 1)
	if t == statistics.TagBlockCacheHit {
		opts.Perf.AddBlockCacheHit()
	} else {
		opts.Perf.AddBlockCacheMiss()
	}
}
