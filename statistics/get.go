package statistics

// GetCounts are what one point lookup counts, as RocksDB's DBImpl::GetImpl
// counts them: NumberKeysRead, MemtableHit (a memtable decided the lookup,
// with a value or a tombstone) or MemtableMiss, Hit (GetHitL0, GetHitL1 or
// GetHitL2AndUp when a table held the value; any other value, such as
// NumTickers, for none), BytesRead with the value's length when Found, and
// the BytesPerRead histogram with that length (0 when not found).
type GetCounts struct {
	MemtableHit bool
	Hit         Ticker
	Found       bool
	Bytes       uint64
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
func (s *Statistics) RecordGet(t *GetTimer, c GetCounts) uint64 {
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
	// A sample of 0 in an owned stripe, nearly every sample of a Get that
	// stays in memory (its value's size on a miss, its time under a
	// microsecond), is recorded inline (recordZeroOwned); others with
	// record, a call.
	if l >= histogramMinLevel[BytesPerRead] {
		if h := &sh.hists[BytesPerRead]; c.Bytes == 0 && own {
			h.recordZeroOwned()
		} else {
			h.record(c.Bytes, own)
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
