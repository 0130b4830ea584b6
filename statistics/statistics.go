package statistics

import (
	"fmt"
	"math/bits"
	"runtime"
	"strings"
	"sync/atomic"
)

// Statistics holds a database's tickers and histograms, gated by a [Level]
// that may change at run time.
//
// Statistics is safe for concurrent use. Recording is lock-free and
// allocation-free and never serialises concurrent recorders on one cache
// line: the counters are striped over shards (see [New]), and readers sum the
// shards. Every count is exact under concurrency.
//
// All methods are nil-safe: a nil *Statistics records nothing and reads as an
// empty Statistics at LevelDisableAll, so code can hold a nil one when
// statistics are disabled and call it unconditionally.
type Statistics struct {
	level  atomic.Int32
	mask   uint32 // len(shards)-1; len(shards) is a power of two
	shards []shard
	// tags holds the statistics of each tag seen, by value - 0x80; see
	// [Statistics.Tag].
	tags [numTagSlots]atomic.Pointer[TagStats]
}

// shardData is everything one shard counts: every ticker and every
// histogram.
type shardData struct {
	tickers [NumTickers]atomic.Uint64
	hists   [NumHistograms]HistogramStat
}

// cacheLinePair is two cache lines: padding shards to a multiple of it keeps
// two shards from sharing a line, and from sharing a pair of lines that the
// adjacent-line prefetcher of x86 CPUs fetches together.
const cacheLinePair = 128

// shard is one stripe of a Statistics, about 26 KiB. New makes at least four,
// over 100 KiB, which the Go allocator page-aligns (it does so for every
// object above 32 KiB); with the size a multiple of cacheLinePair, every
// shard then starts on a fresh pair of lines.
type shard struct {
	shardData
	_ [cacheLinePair - shardDataSize%cacheLinePair]byte
}

// shardDataSize is the size of shardData: a word per ticker, and per
// histogram a word per bucket plus four (TestShardLayout checks it against
// unsafe.Sizeof).
const shardDataSize = 8 * (int(NumTickers) + int(NumHistograms)*(numBuckets+4))

const (
	minShards = 4
	maxShards = 64
)

// shardCount returns 4 × GOMAXPROCS rounded up to a power of two and clamped
// to [4, 64]. Recorders pick the stripe of their P (see pin), so
// GOMAXPROCS stripes would do today; the spare ones keep Ps apart if
// GOMAXPROCS grows after New (the runtime raises it itself when a
// container's CPU limit does), and 64 at most keeps reads, which sum every
// stripe, cheap.
func shardCount(procs int) int {
	n := 4 * procs
	if n <= minShards {
		return minShards
	}
	if n >= maxShards {
		return maxShards
	}
	return 1 << bits.Len(uint(n-1))
}

// New returns an empty Statistics recording at level l (clamped into
// [LevelDisableAll, LevelAll]). The number of shards is fixed here, from
// GOMAXPROCS (see shardCount): 4 to 64 shards of about 26 KiB each.
func New(l Level) *Statistics {
	return newWithShards(l, shardCount(runtime.GOMAXPROCS(0)))
}

// newWithShards is New with a given shard count (a power of two), for tests
// and the benchmarks that show what striping buys.
func newWithShards(l Level, n int) *Statistics {
	startClock() // the first time: calibrates the stopwatch clock
	// One more stripe than the Ps own, for Ps above the mask (see pin).
	s := &Statistics{mask: uint32(n - 1), shards: make([]shard, n+1)}
	s.level.Store(int32(clampLevel(l)))
	return s
}

// pin returns the stripe of the P the caller runs on, so recorders on
// different Ps write different cache lines, and each P keeps writing lines
// its core already holds. (With a random stripe per call, two busy Ps would
// write a line the other wrote last about half the time.) The goroutine
// stays on its P until the caller calls procUnpin, right after its writes.
//
// own reports that the P owns the stripe: no other goroutine writes it
// while the caller is pinned, so, where ownedStripes allows, the caller
// writes it with plain adds (addOwned). A P whose ID is above the mask
// (GOMAXPROCS raised after New) owns no stripe: such Ps share the spare
// stripe after the owned ones, and write it with atomic adds.
func (s *Statistics) pin() (sh *shardData, own bool) {
	p := uint32(procPin())
	if !ownedStripes {
		return &s.shards[p&s.mask].shardData, false
	}
	// Written without branches to fit the inliner's budget: a tick is a
	// call fewer.
	return &s.shards[min(p, s.mask+1)].shardData, p <= s.mask
}

// Level returns the current level; LevelDisableAll for a nil Statistics.
func (s *Statistics) Level() Level {
	if s == nil {
		return LevelDisableAll
	}
	return Level(s.level.Load())
}

// SetLevel changes the level. It is atomic and takes effect for the next
// record; a StopWatch already running checks the level again when it stops.
// A value outside [LevelDisableAll, LevelAll] is clamped into it.
func (s *Statistics) SetLevel(l Level) {
	if s != nil {
		s.level.Store(int32(clampLevel(l)))
	}
}

// clampLevel keeps the stored level a real one, and below levelNever, so the
// Enabled predicates never report true for a value that names nothing.
func clampLevel(l Level) Level {
	return min(max(l, LevelDisableAll), LevelAll)
}

// RecordTick adds n to ticker t, if the level is at least t.MinLevel()
// (LevelExceptHistogramOrTimers for all but DBMutexWaitMicros). A value of t
// that names no ticker is ignored.
func (s *Statistics) RecordTick(t Ticker, n uint64) {
	// The gate is a few instructions the compiler inlines into the caller,
	// so a disabled tick costs no call.
	if s != nil && t < NumTickers && Level(s.level.Load()) >= tickerMinLevel[t] {
		s.tick(t, n)
	}
}

// tick and add are kept out of line so that the gates calling them stay
// within the inliner's budget; inlined, shard's two runtime calls would push
// RecordTick and RecordInHistogram over it and put a call on the disabled path.
//
//go:noinline
func (s *Statistics) tick(t Ticker, n uint64) {
	// Callers tick counts that are often 0 (an iterator that never stepped
	// back); that is no write at all.
	if n == 0 {
		return
	}
	sh, own := s.pin()
	addIn(&sh.tickers[t], n, own)
	procUnpin()
}

// addIn adds n to a of the stripe pin returned: with a plain add where the
// caller's P owns the stripe (own), else a locked one.
func addIn(a *atomic.Uint64, n uint64, own bool) {
	if own {
		addOwned(a, n)
	} else {
		a.Add(n)
	}
}

// TickerEnabled reports whether RecordTick(t, ...) would record now, so a
// caller can skip measuring what would be dropped (DBMutexWaitMicros is only
// worth timing at LevelAll).
func (s *Statistics) TickerEnabled(t Ticker) bool {
	return s != nil && Level(s.level.Load()) >= t.MinLevel()
}

// TickerCount returns ticker t's count, summed over the shards; 0 for a value
// that names no ticker.
func (s *Statistics) TickerCount(t Ticker) uint64 {
	if s == nil || t >= NumTickers {
		return 0
	}
	var n uint64
	for i := range s.shards {
		n += s.shards[i].tickers[t].Load()
	}
	return n
}

// RecordInHistogram records v in the non-time histogram h (a size or a
// count, such as BytesPerRead or MultiGetIOBatchSize) from
// LevelExceptTimers up.
//
// Given a time histogram, it records under that histogram's own gate, as
// ReportTimeToHistogram would: the gating table holds whichever method a
// caller uses. A value of h that names no histogram is ignored.
func (s *Statistics) RecordInHistogram(h Histogram, v uint64) {
	// The same gate as record, written out so the compiler inlines it into
	// the caller.
	if s != nil && h < NumHistograms && Level(s.level.Load()) >= histogramMinLevel[h] {
		s.add(h, v)
	}
}

// ReportTimeToHistogram records a duration in the time histogram h, in the
// histogram's unit (microseconds; nanoseconds for CompressionTimesNanos and
// DecompressionTimesNanos). Time histograms are recorded from
// LevelExceptDetailedTimers up; the detailed ones (the five user-read
// FileRead* histograms and the two compression timers) from
// LevelExceptTimeForMutex up.
//
// Given a non-time histogram, it records under that histogram's own gate
// (LevelExceptTimers), as RecordInHistogram would. A value of h that names
// no histogram (HistogramNone included) is ignored.
func (s *Statistics) ReportTimeToHistogram(h Histogram, micros uint64) {
	if s != nil && h < NumHistograms && Level(s.level.Load()) >= histogramMinLevel[h] {
		s.add(h, micros)
	}
}

//go:noinline
func (s *Statistics) add(h Histogram, v uint64) {
	sh, own := s.pin()
	sh.hists[h].record(v, own)
	procUnpin()
}

// HistogramEnabled reports whether a sample for h would be recorded now:
// whether the level is at least h.MinLevel(). Check it before reading a clock
// to time something for h. A StopWatch checks it for each of its slots.
func (s *Statistics) HistogramEnabled(h Histogram) bool {
	return s != nil && Level(s.level.Load()) >= h.MinLevel()
}

// merged returns histogram h merged over the shards.
func (s *Statistics) merged(h Histogram, v *histValues) {
	if s == nil || h >= NumHistograms {
		return
	}
	for i := range s.shards {
		v.addFrom(&s.shards[i].hists[h])
	}
}

// HistogramData returns histogram h's summary, merged over the shards. A
// value of h that names no histogram reads as an empty histogram.
func (s *Statistics) HistogramData(h Histogram) HistogramData {
	var v histValues
	s.merged(h, &v)
	return v.data()
}

// HistogramString returns histogram h merged over the shards, in the layout
// of [HistogramStat.String].
func (s *Statistics) HistogramString(h Histogram) string {
	var v histValues
	s.merged(h, &v)
	return v.format()
}

// TickerMap returns every ticker's name ([Ticker.String]) mapped to its
// count. The caller owns the map.
func (s *Statistics) TickerMap() map[string]uint64 {
	m := make(map[string]uint64, NumTickers)
	for t := range NumTickers {
		m[t.String()] = s.TickerCount(t)
	}
	return m
}

// Reset zeroes every ticker and empties every histogram. It is not atomic
// with respect to concurrent recorders: a sample recorded while Reset runs
// may survive it, in whole or in part (for example in a histogram's Sum but
// not its Count), and where recorders add to their own shard unlocked (see
// pin) so may the count a recorder was adding to when Reset zeroed it. It does not change the level.
func (s *Statistics) Reset() {
	if s == nil {
		return
	}
	for i := range s.shards {
		sh := &s.shards[i]
		for t := range sh.tickers {
			sh.tickers[t].Store(0)
		}
		for h := range sh.hists {
			sh.hists[h].Clear()
		}
	}
	for _, ts := range s.Tags() {
		ts.reset()
	}
}

// String returns every ticker and every histogram in the layout of RocksDB's
// StatisticsImpl::ToString: first one line per ticker, in Ticker order,
//
//	shale.block.cache.miss COUNT : 12
//
// then one line per histogram, in Histogram order, where P100 is the max:
//
//	shale.sst.read.micros P50 : 12.500000 P95 : 48.000000 P99 : 51.000000 P100 : 51.000000 COUNT : 40 SUM : 700
//
// and last, for each tag the statistics have seen (see [Statistics.Tag]), its
// tickers and its histogram, named "shale.tag.<tag name>." plus the suffix.
func (s *Statistics) String() string {
	var b strings.Builder
	b.Grow(int(NumTickers)*48 + int(NumHistograms)*128)
	for t := range NumTickers {
		fmt.Fprintf(&b, "%s COUNT : %d\n", t, s.TickerCount(t))
	}
	for h := range NumHistograms {
		d := s.HistogramData(h)
		fmt.Fprintf(&b, "%s P50 : %f P95 : %f P99 : %f P100 : %f COUNT : %d SUM : %d\n",
			h, d.Median, d.P95, d.P99, float64(d.Max), d.Count, d.Sum)
	}
	s.writeTags(&b)
	return b.String()
}

// Snapshot is every ticker count and every histogram summary at one moment
// (each read atomically, not all at one instant).
type Snapshot struct {
	Tickers    [NumTickers]uint64
	Histograms [NumHistograms]HistogramData
}

// Snapshot returns the current counts and summaries.
func (s *Statistics) Snapshot() Snapshot {
	var snap Snapshot
	for t := range NumTickers {
		snap.Tickers[t] = s.TickerCount(t)
	}
	for h := range NumHistograms {
		snap.Histograms[h] = s.HistogramData(h)
	}
	return snap
}

// Sub returns how much each ticker grew from an earlier snapshot b to a,
// indexed by Ticker. A ticker that went down (a Reset ran in between) reads
// as 0.
//
// Histograms have no Sub: percentiles of a difference cannot be computed from
// two summaries. [Snapshot.CountDelta] and [Snapshot.SumDelta] give the
// parts that can.
func (a Snapshot) Sub(b Snapshot) [NumTickers]uint64 {
	var d [NumTickers]uint64
	for t := range d {
		d[t] = subFloor(a.Tickers[t], b.Tickers[t])
	}
	return d
}

// CountDelta returns how many samples histogram h gained from an earlier
// snapshot b to a; 0 if it lost some (a Reset ran in between) or h names no
// histogram.
func (a Snapshot) CountDelta(b Snapshot, h Histogram) uint64 {
	if h >= NumHistograms {
		return 0
	}
	return subFloor(a.Histograms[h].Count, b.Histograms[h].Count)
}

// SumDelta returns how much histogram h's Sum grew from an earlier snapshot b
// to a; 0 if it went down or h names no histogram. With CountDelta it gives
// the mean of the samples in between.
func (a Snapshot) SumDelta(b Snapshot, h Histogram) uint64 {
	if h >= NumHistograms {
		return 0
	}
	return subFloor(a.Histograms[h].Sum, b.Histograms[h].Sum)
}

func subFloor(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}
