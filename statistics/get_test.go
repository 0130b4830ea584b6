package statistics

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRecordGet: RecordGet records exactly what the separate calls a Get
// used to make record, at every level, and stops the watch.
func TestRecordGet(t *testing.T) {
	cases := []GetCounts{
		{Hit: NumTickers},                    // miss everywhere
		{MemtableHit: true, Hit: NumTickers}, // memtable tombstone
		{MemtableHit: true, Found: true, Bytes: 100, Hit: NumTickers},
		{Hit: GetHitL0, Found: true, Bytes: 7},
		{Hit: GetHitL2AndUp, Found: true, Bytes: 0}, // an empty value
	}
	for l := LevelDisableAll; l <= LevelAll; l++ {
		for i, c := range cases {
			t.Run(fmt.Sprintf("%s/%d", l, i), func(t *testing.T) {
				got, want := New(l), New(l)
				w := got.StartStopWatch(DBGet, HistogramNone)
				got.RecordGet(&w, c)
				require.False(t, w.Enabled(), "RecordGet stops the watch")

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
				ww.Stop()

				require.Equal(t, want.TickerMap(), got.TickerMap())
				require.Equal(t, want.HistogramData(BytesPerRead), got.HistogramData(BytesPerRead))
				require.Equal(t, want.HistogramData(DBGet).Count, got.HistogramData(DBGet).Count)
			})
		}
	}
}

// TestRecordGetOtherWatch: a watch started on other statistics, or none,
// still works: each records where it belongs.
func TestRecordGetOtherWatch(t *testing.T) {
	s, other := New(LevelAll), New(LevelAll)
	w := other.StartStopWatch(DBGet, HistogramNone)
	s.RecordGet(&w, GetCounts{Hit: NumTickers})
	require.False(t, w.Enabled())
	require.EqualValues(t, 1, other.HistogramData(DBGet).Count)
	require.Zero(t, s.HistogramData(DBGet).Count)
	require.EqualValues(t, 1, s.TickerCount(NumberKeysRead))

	s.RecordGet(nil, GetCounts{Hit: NumTickers})
	require.EqualValues(t, 2, s.TickerCount(MemtableMiss))

	var nilStats *Statistics
	w = other.StartStopWatch(DBGet, HistogramNone)
	nilStats.RecordGet(&w, GetCounts{Hit: NumTickers})
	require.False(t, w.Enabled())
	require.EqualValues(t, 2, other.HistogramData(DBGet).Count)
}
