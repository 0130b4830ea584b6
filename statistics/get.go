package statistics

// GetCounts are what one point lookup counts, as RocksDB's DBImpl::GetImpl
// counts them: NumberKeysRead, MemtableHit (a memtable decided the lookup,
// with a value or a tombstone) or MemtableMiss, Hit (GetHitL0, GetHitL1 or
// GetHitL2AndUp when a table held the value; any other value, such as
// NumTickers, for none), BytesRead with the value's length when Found, and
// the BytesPerRead histogram with that length (0 when not found). Tables
// are the tickers of the table lookups, which RecordGet adds in the same
// shard access.
type GetCounts struct {
	MemtableHit bool
	Hit         Ticker
	Found       bool
	Bytes       uint64
	Tables      TableTicks
}

// TableTicks counts the tickers that table point lookups record (in
// sstable's Get), for one flush instead of a shard access per tick: a
// cached Get ticks five counters, each a pin of the caller's stripe. Each
// field is the count of the ticker(s) it names. They record from
// LevelExceptHistogramOrTimers, as every ticker they stand for does
// (TestTableTicksLevel), so a flush checks the level once.
type TableTicks struct {
	// BloomUseful is BloomFilterUseful; BloomPositive
	// BloomFilterFullPositive; BloomTruePositive
	// BloomFilterFullTruePositive.
	BloomUseful, BloomPositive, BloomTruePositive uint32
	// DataHits is both BlockCacheHit and BlockCacheDataHit (a data block
	// found in the block cache), DataHitBytes the BlockCacheBytesRead
	// of those blocks; DataMisses is both BlockCacheMiss and
	// BlockCacheDataMiss.
	DataHits, DataMisses uint32
	DataHitBytes         uint64
}

// RecordTableTicks records t's counts, as the RecordTick calls they stand
// for would, in one shard access, and clears t. A lookup that counts into
// its GetCounts.Tables has them recorded by RecordGet instead.
func (s *Statistics) RecordTableTicks(t *TableTicks) {
	if s == nil || Level(s.level.Load()) < LevelExceptHistogramOrTimers || *t == (TableTicks{}) {
		*t = TableTicks{}
		return
	}
	sh, own := s.pin()
	t.addTo(sh, own)
	procUnpin()
	*t = TableTicks{}
}

// addTo adds t's counts to the tickers of stripe sh (see pin). The
// branches skip the cache lines of counts that are 0: a cached hit counts
// bloom positives and data hits, a miss a bloom negative only.
func (t *TableTicks) addTo(sh *shardData, own bool) {
	if n := t.BloomUseful; n != 0 {
		addIn(&sh.tickers[BloomFilterUseful], uint64(n), own)
	}
	if n := t.BloomPositive; n != 0 {
		addIn(&sh.tickers[BloomFilterFullPositive], uint64(n), own)
	}
	if n := t.BloomTruePositive; n != 0 {
		addIn(&sh.tickers[BloomFilterFullTruePositive], uint64(n), own)
	}
	if n := t.DataHits; n != 0 {
		addIn(&sh.tickers[BlockCacheHit], uint64(n), own)
		addIn(&sh.tickers[BlockCacheDataHit], uint64(n), own)
		addIn(&sh.tickers[BlockCacheBytesRead], t.DataHitBytes, own)
	}
	if n := t.DataMisses; n != 0 {
		addIn(&sh.tickers[BlockCacheMiss], uint64(n), own)
		addIn(&sh.tickers[BlockCacheDataMiss], uint64(n), own)
	}
}

// GetTimer times one point lookup for the DBGet histogram, as a StopWatch
// started for DBGet alone would, in one word: the clock reading at the
// start, unscaled, or 0 when the lookup is not timed. The zero value times
// nothing. Start one with [Statistics.StartGet] and stop it with
// [Statistics.RecordGet] of the same Statistics.
type GetTimer struct {
	start int64
}

// StartGet starts timing a point lookup for DBGet, if the level records
// DBGet now (LevelExceptDetailedTimers and up); otherwise it reads no clock
// and returns the zero GetTimer. It inlines into the caller.
func (s *Statistics) StartGet() GetTimer {
	if s == nil || Level(s.level.Load()) < histogramMinLevel[DBGet] {
		return GetTimer{}
	}
	return GetTimer{start: clockTicks()}
}

// RecordGet records the counts c of one point lookup and stops t, the
// lookup's timer from s.StartGet (nil or the zero GetTimer when not timed),
// as RecordTick, RecordInHistogram and a DBGet StopWatch's Stop would, each
// gated by its own level, but with one level check and one shard access for
// all of them instead of five or six: a lookup that a bloom filter rules out
// costs little more than the recording. As a StopWatch's Stop does, it
// checks the level again: a timed lookup records its DBGet sample only if
// the level still records DBGet. It returns the sample in microseconds (0
// when not timed, or when the level no longer records tickers).
//
// It is one function, not an inlined gate and an out-of-line body: the gate,
// which must clear t, does not fit the inliner's budget, and two calls cost
// more than one.
func (s *Statistics) RecordGet(t *GetTimer, c *GetCounts) uint64 {
	var start int64
	if t != nil {
		start, t.start = t.start, 0
	}
	var us uint64
	if start != 0 {
		// The clock first, for the span to end here; the sample's bucket
		// is picked last (see bucketIndex on why its store must not wait
		// for this read).
		us = uint64(ticksNanos(clockTicks()-start) / 1000)
	}
	if s == nil {
		return 0
	}
	l := Level(s.level.Load())
	if l < LevelExceptHistogramOrTimers {
		return 0
	}
	mem := MemtableMiss
	if c.MemtableHit {
		mem = MemtableHit
	}
	// NumberKeysRead, MemtableHit, MemtableMiss and BytesRead record from
	// LevelExceptHistogramOrTimers, which l is at (TestGetTickersLevel), so
	// they need no level check; Hit, the caller's choice, gets one.
	sh, own := s.pin()
	addIn(&sh.tickers[NumberKeysRead], 1, own)
	addIn(&sh.tickers[mem], 1, own)
	if c.Hit < NumTickers && l >= tickerMinLevel[c.Hit] {
		addIn(&sh.tickers[c.Hit], 1, own)
	}
	if c.Found && c.Bytes != 0 {
		addIn(&sh.tickers[BytesRead], c.Bytes, own)
	}
	if own {
		// TableTicks.addTo written out, with plain adds: addTo is a call
		// and checks own at every add. With the BytesPerRead sample below
		// also written out, a cached Get's recording takes 2-3 CPU ns
		// less, of 29-33 over its 25 ns of clock reads
		// (BenchmarkGetRecording, op=cached).
		t := &c.Tables
		if n := t.BloomUseful; n != 0 {
			addOwned(&sh.tickers[BloomFilterUseful], uint64(n))
		}
		if n := t.BloomPositive; n != 0 {
			addOwned(&sh.tickers[BloomFilterFullPositive], uint64(n))
		}
		if n := t.BloomTruePositive; n != 0 {
			addOwned(&sh.tickers[BloomFilterFullTruePositive], uint64(n))
		}
		if n := t.DataHits; n != 0 {
			addOwned(&sh.tickers[BlockCacheHit], uint64(n))
			addOwned(&sh.tickers[BlockCacheDataHit], uint64(n))
			addOwned(&sh.tickers[BlockCacheBytesRead], t.DataHitBytes)
		}
		if n := t.DataMisses; n != 0 {
			addOwned(&sh.tickers[BlockCacheMiss], uint64(n))
			addOwned(&sh.tickers[BlockCacheDataMiss], uint64(n))
		}
	} else {
		c.Tables.addTo(sh, false)
	}
	// A sample in an owned stripe is recorded inline: of 0, nearly every
	// sample of a Get that stays in memory (its value's size on a miss,
	// its time under a microsecond), with recordZeroOwned; the value's size
	// of a hit as record's owned path does. Others with record, a call.
	if l >= histogramMinLevel[BytesPerRead] {
		switch h, v := &sh.hists[BytesPerRead], c.Bytes; {
		case !own:
			h.record(v, false)
		case v == 0:
			h.recordZeroOwned()
		default:
			b := &h.buckets[bucketIndex(v)]
			raiseOwned(&h.minInv, ^v)
			raiseOwned(&h.max, v)
			addOwned(&h.sum, v)
			addOwned(&h.sumSquares, v*v)
			addOwned(b, 1)
		}
	}
	if start != 0 && l >= histogramMinLevel[DBGet] {
		if h := &sh.hists[DBGet]; us == 0 && own {
			h.recordZeroOwned()
		} else {
			h.record(us, own)
		}
	}
	procUnpin()
	return us
}
