package statistics

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLevelValues(t *testing.T) {
	// RocksDB's StatsLevel values (spec §4.2).
	for _, tc := range []struct {
		l    Level
		want int32
		name string
	}{
		{LevelDisableAll, 0, "disable_all"},
		{LevelExceptTickers, 0, "disable_all"},
		{LevelExceptHistogramOrTimers, 1, "except_histogram_or_timers"},
		{LevelExceptTimers, 2, "except_timers"},
		{LevelExceptDetailedTimers, 3, "except_detailed_timers"},
		{LevelExceptTimeForMutex, 4, "except_time_for_mutex"},
		{LevelAll, 5, "all"},
		{Level(6), 6, "Level(6)"},
		{Level(-1), -1, "Level(-1)"},
	} {
		require.Equal(t, tc.want, int32(tc.l))
		require.Equal(t, tc.name, tc.l.String())
	}
	require.Equal(t, LevelExceptDetailedTimers, DefaultLevel)
}

func TestParseLevel(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Level
		wantErr bool
	}{
		{"disable_all", LevelDisableAll, false},
		{"except_tickers", LevelDisableAll, false},
		{"except_histogram_or_timers", LevelExceptHistogramOrTimers, false},
		{"except_timers", LevelExceptTimers, false},
		{"except_detailed_timers", LevelExceptDetailedTimers, false},
		{"except_time_for_mutex", LevelExceptTimeForMutex, false},
		{"all", LevelAll, false},
		{"", 0, true},
		{"ALL", 0, true},
		{" all", 0, true},
		{"kAll", 0, true},
		{"3", 0, true},
		{"Level(6)", 0, true},
	} {
		got, err := ParseLevel(tc.in)
		if tc.wantErr {
			require.Error(t, err, "%q", tc.in)
			require.Contains(t, err.Error(), `"`+tc.in+`"`, "the error names the bad value")
			continue
		}
		require.NoError(t, err, "%q", tc.in)
		require.Equal(t, tc.want, got)
	}
}

// FuzzParseLevel: any input either parses to a level whose String parses
// back to it, or fails with an error quoting the input; nothing panics.
func FuzzParseLevel(f *testing.F) {
	for l := LevelDisableAll; l <= LevelAll; l++ {
		f.Add(l.String())
	}
	f.Add("except_tickers")
	f.Add("")
	f.Add("all\x00")
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLevel(s)
		if err != nil {
			if !strings.Contains(err.Error(), quote(s)) {
				t.Fatalf("error %q does not name %q", err, s)
			}
			return
		}
		if l < LevelDisableAll || l > LevelAll {
			t.Fatalf("ParseLevel(%q) = %d, out of range", s, l)
		}
		back, err := ParseLevel(l.String())
		if err != nil || back != l {
			t.Fatalf("ParseLevel(%q) = %v, but %q parses to %v, %v", s, l, l.String(), back, err)
		}
	})
}
