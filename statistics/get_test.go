package statistics

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRecordGet: RecordGet records exactly what the separate calls a Get
// used to make record, at every level, and stops the timer.
func TestRecordGet(t *testing.T) {
	cases := []GetCounts{
		{Hit: NumTickers},                    // miss everywhere
		{MemtableHit: true, Hit: NumTickers}, // memtable tombstone
		{MemtableHit: true, Found: true, Bytes: 100, Hit: NumTickers},
		{Hit: GetHitL0, Found: true, Bytes: 7},
		{Hit: GetHitL1, Found: true, Bytes: 1 << 20},
		{Hit: GetHitL2AndUp, Found: true, Bytes: 0},     // an empty value
		{Hit: DBMutexWaitMicros, Found: true, Bytes: 3}, // a Hit ticker of its own level
		// With table lookups: a bloom negative; a cached hit; a miss in
		// two tables and a block read; every count at once.
		{Hit: NumTickers, Tables: TableTicks{BloomUseful: 1}},
		{Hit: GetHitL1, Found: true, Bytes: 10, Tables: TableTicks{BloomPositive: 1, BloomTruePositive: 1, DataHits: 1, DataHitBytes: 4096}},
		{Hit: NumTickers, Tables: TableTicks{BloomUseful: 1, BloomPositive: 1, DataMisses: 1}},
		{Hit: GetHitL0, Found: true, Tables: TableTicks{3, 4, 5, 6, 7, 8}},
	}
	for l := LevelDisableAll; l <= LevelAll; l++ {
		for i, c := range cases {
			t.Run(fmt.Sprintf("%s/%d", l, i), func(t *testing.T) {
				got, want := New(l), New(l)
				timer := got.StartGet()
				got.RecordGet(&timer, &c)
				require.Zero(t, timer, "RecordGet stops the timer")

				ww := want.StartStopWatch(DBGet, HistogramNone)
				want.RecordTick(NumberKeysRead, 1)
				if c.MemtableHit {
					want.RecordTick(MemtableHit, 1)
				} else {
					want.RecordTick(MemtableMiss, 1)
				}
				if c.Hit < NumTickers {
					want.RecordTick(c.Hit, 1)
				}
				if c.Found {
					want.RecordTick(BytesRead, c.Bytes)
				}
				want.RecordInHistogram(BytesPerRead, c.Bytes)
				recordTableTicksEach(want, c.Tables)
				ww.Stop()

				require.Equal(t, want.TickerMap(), got.TickerMap())
				require.Equal(t, want.HistogramData(BytesPerRead), got.HistogramData(BytesPerRead))
				require.Equal(t, want.HistogramData(DBGet).Count, got.HistogramData(DBGet).Count)
				// Nothing else is recorded: every other histogram is
				// empty in both.
				for h := range NumHistograms {
					if h != DBGet {
						require.Equal(t, want.HistogramData(h), got.HistogramData(h), "%s", h)
					}
				}
			})
		}
	}
}

// recordTableTicksEach records t as the table lookups did before
// TableTicks: one RecordTick per ticker and event.
func recordTableTicksEach(s *Statistics, t TableTicks) {
	for range t.BloomUseful {
		s.RecordTick(BloomFilterUseful, 1)
	}
	for range t.BloomPositive {
		s.RecordTick(BloomFilterFullPositive, 1)
	}
	for range t.BloomTruePositive {
		s.RecordTick(BloomFilterFullTruePositive, 1)
	}
	for range t.DataHits {
		s.RecordTick(BlockCacheHit, 1)
		s.RecordTick(BlockCacheDataHit, 1)
	}
	if t.DataHits != 0 {
		s.RecordTick(BlockCacheBytesRead, t.DataHitBytes)
	}
	for range t.DataMisses {
		s.RecordTick(BlockCacheMiss, 1)
		s.RecordTick(BlockCacheDataMiss, 1)
	}
}

// TestRecordTableTicks: RecordTableTicks records what one RecordTick per
// event would, at every level, and clears its argument.
func TestRecordTableTicks(t *testing.T) {
	cases := []TableTicks{
		{},
		{BloomUseful: 1},
		{BloomPositive: 1, BloomTruePositive: 1, DataHits: 1, DataHitBytes: 4096},
		{BloomPositive: 2, DataMisses: 2},
		{1, 2, 3, 4, 5, 6},
	}
	for l := LevelDisableAll; l <= LevelAll; l++ {
		for i, c := range cases {
			t.Run(fmt.Sprintf("%s/%d", l, i), func(t *testing.T) {
				got, want := New(l), New(l)
				tt := c
				got.RecordTableTicks(&tt)
				require.Zero(t, tt, "RecordTableTicks clears its counts")
				recordTableTicksEach(want, c)
				require.Equal(t, want.TickerMap(), got.TickerMap())
			})
		}
	}
	var nilStats *Statistics
	tt := TableTicks{BloomUseful: 1}
	nilStats.RecordTableTicks(&tt)
	require.Zero(t, tt)
}

// TestTableTicksLevel: TableTicks' flush checks one level for all the
// tickers it stands for, which must therefore share it.
func TestTableTicksLevel(t *testing.T) {
	for _, tk := range []Ticker{
		BloomFilterUseful, BloomFilterFullPositive, BloomFilterFullTruePositive,
		BlockCacheHit, BlockCacheDataHit, BlockCacheBytesRead, BlockCacheMiss, BlockCacheDataMiss,
	} {
		require.Equal(t, LevelExceptHistogramOrTimers, tk.MinLevel(), "%s", tk)
	}
}

// TestGetTickersLevel: recordGet adds NumberKeysRead, MemtableHit,
// MemtableMiss and BytesRead without checking their level, relying on
// RecordGet's check that the level records tickers at all.
func TestGetTickersLevel(t *testing.T) {
	for _, tk := range []Ticker{NumberKeysRead, MemtableHit, MemtableMiss, BytesRead} {
		require.Equal(t, LevelExceptHistogramOrTimers, tk.MinLevel(), "%s", tk)
	}
	require.Equal(t, LevelExceptDetailedTimers, DBGet.MinLevel(), "StartGet times DBGet from its level")
}

// TestGetTimerSample: a timed lookup records its span, in whole
// microseconds, into DBGet, and RecordGet returns it.
func TestGetTimerSample(t *testing.T) {
	s := New(DefaultLevel)
	outer := time.Now()
	timer := s.StartGet()
	require.NotZero(t, timer, "timed at the default level")
	time.Sleep(2 * time.Millisecond)
	us := s.RecordGet(&timer, &GetCounts{Hit: NumTickers})
	elapsed := time.Since(outer)
	require.GreaterOrEqual(t, us, uint64(2000))
	require.LessOrEqual(t, us, uint64(elapsed/time.Microsecond))
	d := s.HistogramData(DBGet)
	require.EqualValues(t, 1, d.Count)
	require.Equal(t, us, d.Sum)

	// A stopped timer records nothing more.
	require.Zero(t, s.RecordGet(&timer, &GetCounts{Hit: NumTickers}))
	require.EqualValues(t, 1, s.HistogramData(DBGet).Count)
	require.EqualValues(t, 2, s.TickerCount(NumberKeysRead))
}

// TestGetTimerLevelChange: as a StopWatch does, RecordGet checks the level
// again when it stops the timer: a lookup timed at the default level and
// stopped after the level fell below the time histograms' records its
// tickers but no DBGet sample, and one started below it (not timed) records
// no sample after the level rose.
func TestGetTimerLevelChange(t *testing.T) {
	s := New(DefaultLevel)
	timer := s.StartGet()
	s.SetLevel(LevelExceptTimers)
	s.RecordGet(&timer, &GetCounts{Hit: NumTickers})
	require.Zero(t, timer)
	require.Zero(t, s.HistogramData(DBGet).Count)
	require.EqualValues(t, 1, s.HistogramData(BytesPerRead).Count)
	require.EqualValues(t, 1, s.TickerCount(NumberKeysRead))

	timer = s.StartGet()
	require.Zero(t, timer, "not timed below DBGet's level")
	s.SetLevel(LevelAll)
	s.RecordGet(&timer, &GetCounts{Hit: NumTickers})
	require.Zero(t, s.HistogramData(DBGet).Count)
	require.EqualValues(t, 2, s.TickerCount(NumberKeysRead))

	// Timed, then everything disabled: nothing at all is recorded.
	timer = s.StartGet()
	s.SetLevel(LevelDisableAll)
	require.Zero(t, s.RecordGet(&timer, &GetCounts{Hit: NumTickers}))
	require.Zero(t, timer)
	require.EqualValues(t, 2, s.TickerCount(NumberKeysRead))
	require.Zero(t, s.HistogramData(DBGet).Count)
}

// TestRecordGetNil: a nil timer records the counts untimed, and nil
// statistics record nothing and read no clock.
func TestRecordGetNil(t *testing.T) {
	s := New(LevelAll)
	s.RecordGet(nil, &GetCounts{Hit: NumTickers})
	require.EqualValues(t, 1, s.TickerCount(MemtableMiss))
	require.Zero(t, s.HistogramData(DBGet).Count)

	var nilStats *Statistics
	timer := nilStats.StartGet()
	require.Zero(t, timer)
	require.Zero(t, nilStats.RecordGet(&timer, &GetCounts{Hit: NumTickers}))
	require.Zero(t, nilStats.RecordGet(nil, &GetCounts{Hit: NumTickers}))
}
