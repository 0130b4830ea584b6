package statistics

import (
	"fmt"
	"strings"
	"sync/atomic"
	"unsafe"
)

// Per-tag statistics: a caller-chosen tag (ioctx.Tag, a tenant or a job)
// gets, in each Statistics that sees it, its own file-read latency histogram
// and a few tickers, so IO can be attributed to whoever asked for it.
//
// Tags are identified here by their value in RocksDB's custom IO activity
// range, 0x80 to 0xFE (ioctx.Tag.RocksDBValue), and named by the caller on
// first use: this package imports nothing of the module, as
// [FileReadHistogram] explains, and the registry of names lives in ioctx.
// A Statistics keeps room only for the tags it has seen, so a process may
// register all 127 tags without every database paying for them.

// TagMinLevel is the level from which per-tag statistics are recorded: the
// level of the detailed timers, the five user-read FileRead* histograms,
// since a tag's file-read histogram is one more breakdown of SSTReadMicros
// and its tickers come with it.
const TagMinLevel = LevelExceptTimeForMutex

// TagTicker names a per-tag counter.
type TagTicker uint8

// The per-tag tickers.
const (
	// TagBytesRead counts the bytes the tag's requests read from table
	// files.
	TagBytesRead TagTicker = iota
	// TagBlockCacheHit and TagBlockCacheMiss count the tag's data-block
	// lookups in the block cache.
	TagBlockCacheHit
	TagBlockCacheMiss
	// TagRateLimiterWaitMicros is the time the tag's reads waited for a rate
	// limiter: the database's and the tag's own budget.
	TagRateLimiterWaitMicros

	// NumTagTickers bounds the per-tag tickers.
	NumTagTickers
)

var tagTickerSuffixes = [NumTagTickers]string{
	TagBytesRead:             "bytes.read",
	TagBlockCacheHit:         "block.cache.hit",
	TagBlockCacheMiss:        "block.cache.miss",
	TagRateLimiterWaitMicros: "rate.limiter.wait.micros",
}

// Suffix returns the ticker's name after "shale.tag.<tag>.", for example
// "block.cache.hit".
func (t TagTicker) Suffix() string {
	if t < NumTagTickers {
		return tagTickerSuffixes[t]
	}
	return fmt.Sprintf("TagTicker(%d)", uint8(t))
}

// TagHistogramSuffix is the name of a tag's file-read histogram after
// "shale.tag.<tag>.".
const TagHistogramSuffix = "file.read.micros"

const (
	firstTagValue = 0x80
	lastTagValue  = 0xFE
	numTagSlots   = lastTagValue - firstTagValue + 1
)

// tagStripe is one stripe of a tag's statistics; stripes are padded apart
// as a Statistics' shards are.
type tagStripe struct {
	tickers [NumTagTickers]atomic.Uint64
	hist    HistogramStat
	_       [cacheLinePair - tagStripeDataSize%cacheLinePair]byte
}

const tagStripeDataSize = 8*int(NumTagTickers) + int(unsafe.Sizeof(HistogramStat{}))

// TagStats are one tag's statistics within a Statistics. Obtain them with
// [Statistics.Tag]; record with their nil-safe methods.
type TagStats struct {
	s       *Statistics
	value   uint8
	name    string
	stripes []tagStripe
}

// Tag returns the statistics of the tag whose RocksDB value is v, named name,
// creating them on the tag's first use in s (the only allocation, once per
// tag and Statistics); later calls return the same TagStats and ignore name.
// It returns nil, so that recording through the result does nothing, when s
// is nil, v is outside 0x80-0xFE (no tag: 0xFF), or the level is below
// TagMinLevel. Call it once per operation and record through the result.
func (s *Statistics) Tag(v uint8, name string) *TagStats {
	if s == nil || v < firstTagValue || v > lastTagValue || Level(s.level.Load()) < TagMinLevel {
		return nil
	}
	if ts := s.tags[v-firstTagValue].Load(); ts != nil {
		return ts
	}
	return s.newTag(v, name)
}

//go:noinline
func (s *Statistics) newTag(v uint8, name string) *TagStats {
	ts := &TagStats{s: s, value: v, name: name, stripes: make([]tagStripe, len(s.shards))}
	slot := &s.tags[v-firstTagValue]
	if slot.CompareAndSwap(nil, ts) {
		return ts
	}
	return slot.Load()
}

// stripe returns the stripe of the caller's P, as Statistics.shard does.
func (ts *TagStats) stripe() *tagStripe {
	p := procPin()
	procUnpin()
	return &ts.stripes[uint32(p)&ts.s.mask]
}

// RecordTick adds n to the tag's ticker t. Nil-safe.
func (ts *TagStats) RecordTick(t TagTicker, n uint64) {
	if ts != nil && t < NumTagTickers && n != 0 {
		ts.stripe().tickers[t].Add(n)
	}
}

// RecordReadMicros records one file read of the tag, of micros
// microseconds. Nil-safe.
func (ts *TagStats) RecordReadMicros(micros uint64) {
	if ts != nil {
		ts.stripe().hist.Add(micros)
	}
}

// RecordRead records one file read of the tag: its time in microseconds,
// its bytes, and its rate-limiter wait in microseconds, in one stripe (one
// pick of a stripe where three RecordTick calls and a RecordReadMicros make
// four). Nil-safe.
func (ts *TagStats) RecordRead(micros, bytes, waitMicros uint64) {
	if ts == nil {
		return
	}
	st := ts.stripe()
	st.hist.Add(micros)
	if bytes != 0 {
		st.tickers[TagBytesRead].Add(bytes)
	}
	if waitMicros != 0 {
		st.tickers[TagRateLimiterWaitMicros].Add(waitMicros)
	}
}

// Name returns the tag's name.
func (ts *TagStats) Name() string { return ts.name }

// Value returns the tag's RocksDB value (0x80-0xFE).
func (ts *TagStats) Value() uint8 { return ts.value }

// TickerCount returns ticker t of the tag, summed over the stripes.
func (ts *TagStats) TickerCount(t TagTicker) uint64 {
	if ts == nil || t >= NumTagTickers {
		return 0
	}
	var n uint64
	for i := range ts.stripes {
		n += ts.stripes[i].tickers[t].Load()
	}
	return n
}

// HistogramSnapshot reads the tag's file-read histogram once, merged over
// the stripes.
func (ts *TagStats) HistogramSnapshot() HistogramSnapshot {
	var v histValues
	if ts != nil {
		for i := range ts.stripes {
			v.addFrom(&ts.stripes[i].hist)
		}
	}
	return v.snapshot()
}

func (ts *TagStats) reset() {
	for i := range ts.stripes {
		st := &ts.stripes[i]
		for t := range st.tickers {
			st.tickers[t].Store(0)
		}
		st.hist.Clear()
	}
}

// Tags returns the statistics of every tag s has seen, in order of tag
// value, whatever the level (Export leaves them out below TagMinLevel).
func (s *Statistics) Tags() []*TagStats {
	if s == nil {
		return nil
	}
	var out []*TagStats
	for i := range s.tags {
		if ts := s.tags[i].Load(); ts != nil {
			out = append(out, ts)
		}
	}
	return out
}

// TagValue is one tag's statistics in an [Export].
type TagValue struct {
	// Value is the tag's RocksDB value (0x80-0xFE); Name its name.
	Value uint8
	Name  string
	// Tickers are indexed by TagTicker.
	Tickers [NumTagTickers]uint64
	// FileReadMicros is the tag's file-read latency histogram.
	FileReadMicros HistogramSnapshot
}

// exportTags returns the tags' values for Export.
func (s *Statistics) exportTags() []TagValue {
	var out []TagValue
	for _, ts := range s.Tags() {
		v := TagValue{Value: ts.value, Name: ts.name, FileReadMicros: ts.HistogramSnapshot()}
		for t := range NumTagTickers {
			v.Tickers[t] = ts.TickerCount(t)
		}
		out = append(out, v)
	}
	return out
}

// writeTags appends the tags to String's output, in its layout, each name
// "shale.tag.<name>." plus the suffix:
//
//	shale.tag.tenant_a.bytes.read COUNT : 4096
//	shale.tag.tenant_a.file.read.micros P50 : ... COUNT : 1 SUM : 12
func (s *Statistics) writeTags(b *strings.Builder) {
	for _, ts := range s.Tags() {
		for t := range NumTagTickers {
			fmt.Fprintf(b, "shale.tag.%s.%s COUNT : %d\n", ts.name, t.Suffix(), ts.TickerCount(t))
		}
		snap := ts.HistogramSnapshot()
		d := snap.Data()
		fmt.Fprintf(b, "shale.tag.%s.%s P50 : %f P95 : %f P99 : %f P100 : %f COUNT : %d SUM : %d\n",
			ts.name, TagHistogramSuffix, d.Median, d.P95, d.P99, float64(d.Max), d.Count, d.Sum)
	}
}
