package statistics

import "time"

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

// RecordGet records the counts c of one point lookup and stops w, the
// lookup's stopwatch (nil or disabled when not timed), as RecordTick,
// RecordInHistogram and w.Stop would, each gated by its own level, but with
// one shard access for all of them instead of five or six: a lookup that a
// bloom filter rules out costs little more than the recording. It returns
// w's sample in microseconds.
func (s *Statistics) RecordGet(w *StopWatch, c GetCounts) uint64 {
	if w != nil && w.s != nil && w.s != s {
		// Timed for other statistics: record there on their own.
		us := w.Stop()
		s.RecordGet(nil, c)
		return us
	}
	if s == nil || Level(s.level.Load()) < LevelExceptHistogramOrTimers {
		if w != nil {
			return w.Stop()
		}
		return 0
	}
	return s.recordGet(w, c)
}

func (s *Statistics) recordGet(w *StopWatch, c GetCounts) uint64 {
	timed := w != nil && w.s != nil
	var d time.Duration
	var us uint64
	if timed {
		d, us = w.elapsed()
	}
	l := Level(s.level.Load())
	mem := MemtableMiss
	if c.MemtableHit {
		mem = MemtableHit
	}
	sh, own := s.pin()
	tickIn(sh, own, l, NumberKeysRead, 1)
	tickIn(sh, own, l, mem, 1)
	if c.Hit < NumTickers {
		tickIn(sh, own, l, c.Hit, 1)
	}
	if c.Found {
		tickIn(sh, own, l, BytesRead, c.Bytes)
	}
	if l >= histogramMinLevel[BytesPerRead] {
		sh.hists[BytesPerRead].record(c.Bytes, own)
	}
	if timed {
		w.recordInto(sh, own, l, d, us)
	}
	procUnpin()
	return us
}

// tickIn adds n to ticker t in the pinned stripe sh, if level l records t.
func tickIn(sh *shardData, own bool, l Level, t Ticker, n uint64) {
	if l < tickerMinLevel[t] || n == 0 {
		return
	}
	addIn(&sh.tickers[t], n, own)
}
