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
// the waits counted on their own). Clock reads cost tens of nanoseconds on
// virtual machines, so the observer reads none of its own when the call's
// StopWatch times it: it takes the StopWatch's sample, in whole
// microseconds, and reads the clock only for the rate-limiter waits, and
// for the whole call when statistics do not time it.
type observer struct {
	ts     *statistics.TagStats
	perf   *ioctx.PerfContext
	active bool
	// own is set when the observer times the call itself, from start.
	own   bool
	start time.Duration
	wait  time.Duration
}

// observe starts observing a call made with opts, timed by sw (nil: by
// nothing).
func (r *Reader) observe(opts ioctx.IOOptions, sw *statistics.StopWatch) observer {
	if opts.Tag == ioctx.TagNone && opts.Perf == nil {
		return observer{}
	}
	return r.observeSlow(opts, sw)
}

func (r *Reader) observeSlow(opts ioctx.IOOptions, sw *statistics.StopWatch) observer {
	o := observer{perf: opts.Perf, ts: TagStats(r.opts.Stats, opts)}
	o.active = o.ts != nil || o.perf != nil
	if o.active && (sw == nil || !sw.Enabled()) {
		o.own = true
		o.start = statistics.MonoNow()
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
func (o *observer) timeWait() time.Duration {
	if o == nil || !o.active {
		return 0
	}
	return statistics.MonoNow()
}

// endWait adds the wait that began at start (from timeWait).
func (o *observer) endWait(start time.Duration) {
	if o != nil && o.active {
		o.wait += statistics.MonoNow() - start
	}
}

// done records the call: n bytes read (0 when it failed), its waits, and
// its time: measured by o itself, or swMicros, the sample of the call's
// StopWatch, which includes the waits when swWaits is set.
func (o *observer) done(n int, swMicros uint64, swWaits bool) {
	if !o.active {
		return
	}
	var d time.Duration
	if o.own {
		d = statistics.MonoNow() - o.start - o.wait
	} else {
		d = time.Duration(swMicros) * time.Microsecond
		if swWaits {
			d -= o.wait
		}
	}
	d = max(d, 0)
	o.ts.RecordRead(uint64(d/time.Microsecond), uint64(n), uint64(o.wait/time.Microsecond))
	if o.perf != nil {
		o.perf.AddFileRead(n, d)
		o.perf.AddRateLimiterWait(o.wait)
	}
}

// NoteCacheHit records a block cache hit of a block of kind k for the tag
// and the sink of opts; NoteCacheMiss a miss. The table reader calls them
// next to its BlockCacheHit and BlockCacheMiss tickers. The sink counts
// every kind, as those tickers do; the tag only data blocks, as its
// block.cache.hit and .miss mirror BlockCacheDataHit and BlockCacheDataMiss.
func NoteCacheHit(st *statistics.Statistics, opts ioctx.IOOptions, k ioctx.BlockKind) {
	if opts.Tag != ioctx.TagNone || opts.Perf != nil {
		noteCache(st, opts, k, true)
	}
}

// NoteCacheMiss: see NoteCacheHit.
func NoteCacheMiss(st *statistics.Statistics, opts ioctx.IOOptions, k ioctx.BlockKind) {
	if opts.Tag != ioctx.TagNone || opts.Perf != nil {
		noteCache(st, opts, k, false)
	}
}

func noteCache(st *statistics.Statistics, opts ioctx.IOOptions, k ioctx.BlockKind, hit bool) {
	if hit {
		opts.Perf.AddBlockCacheHit(k)
	} else {
		opts.Perf.AddBlockCacheMiss(k)
	}
	if k != ioctx.DataBlock {
		return
	}
	if hit {
		TagStats(st, opts).RecordTick(statistics.TagBlockCacheHit, 1)
	} else {
		TagStats(st, opts).RecordTick(statistics.TagBlockCacheMiss, 1)
	}
}
