package statistics

import (
	"fmt"
	"strconv"
)

// Level says how much a [Statistics] records: RocksDB's StatsLevel. Each level
// records everything the levels below it record, plus one more class of
// statistic; the classes are ordered by how much recording them costs (see
// the gating table in the package doc). The zero value is LevelDisableAll.
type Level int32

// The levels, RocksDB's values included: shale's Level has the same numbers
// as RocksDB's StatsLevel, so a level printed by one is read correctly by the
// other.
const (
	// LevelDisableAll records nothing (RocksDB kDisableAll, also spelled
	// kExceptTickers).
	LevelDisableAll Level = iota
	// LevelExceptHistogramOrTimers records tickers only.
	LevelExceptHistogramOrTimers
	// LevelExceptTimers records tickers and non-time histograms (sizes,
	// counts), but reads no clock.
	LevelExceptTimers
	// LevelExceptDetailedTimers adds time histograms, except the detailed
	// ones: the five user-read FileRead* histograms and the
	// (de)compression timers. It is the default.
	LevelExceptDetailedTimers
	// LevelExceptTimeForMutex adds the detailed timers, but does not time
	// the DB mutex.
	LevelExceptTimeForMutex
	// LevelAll records everything, including DB mutex wait time.
	LevelAll

	// LevelExceptTickers is RocksDB's other name for LevelDisableAll.
	LevelExceptTickers = LevelDisableAll
)

// DefaultLevel is the level RocksDB's CreateDBStatistics uses and the one a
// shale DSN gets without stats_level.
const DefaultLevel = LevelExceptDetailedTimers

var levelNames = [...]string{
	LevelDisableAll:              "disable_all",
	LevelExceptHistogramOrTimers: "except_histogram_or_timers",
	LevelExceptTimers:            "except_timers",
	LevelExceptDetailedTimers:    "except_detailed_timers",
	LevelExceptTimeForMutex:      "except_time_for_mutex",
	LevelAll:                     "all",
}

// String returns the level as the stats_level DSN parameter spells it, for
// example "except_detailed_timers"; "Level(N)" for a value that names no
// level.
func (l Level) String() string {
	if l >= 0 && int(l) < len(levelNames) {
		return levelNames[l]
	}
	return "Level(" + strconv.Itoa(int(l)) + ")"
}

// ParseLevel parses the stats_level spellings that [Level.String] produces,
// plus "except_tickers" (the same level as "disable_all"). Spellings are
// exact: lower case, no surrounding space. The error names the bad value and
// the accepted ones.
func ParseLevel(s string) (Level, error) {
	for l, name := range levelNames {
		if s == name {
			return Level(l), nil
		}
	}
	if s == "except_tickers" {
		return LevelExceptTickers, nil
	}
	return 0, fmt.Errorf("statistics: unknown stats level %q (want disable_all, except_tickers, "+
		"except_histogram_or_timers, except_timers, except_detailed_timers, except_time_for_mutex or all)", s)
}
