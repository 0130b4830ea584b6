package conformance

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
)

// A Capability is something a case needs from the database it opens that
// package driver does not promise of every driver: reads that reach the
// driver's IO, a statistics level, a rate limiter, reads the driver makes on
// its own. The suite asks the driver's test harness for each one through
// [Config.Capabilities], which says how to open a database that has it (the
// DSN parameters to add) or that the driver cannot provide it (and the case,
// or the check, skips naming the capability and the reason). So the suite
// judges a driver by what it does, not by whether it accepts the DSN keys
// of shale's engine.
type Capability struct {
	Kind CapabilityKind
	// Level is the statistics level, for StatsLevel.
	Level statistics.Level
	// BytesPerSecond is the rate, for RateLimit.
	BytesPerSecond int64
	// Activity is Flush, Compaction or DBOpen, for BackgroundReads.
	Activity ioctx.Activity
	// PrefixLen is the extractor's length in bytes, and PrefixCapped its
	// kind, for PrefixFilters.
	PrefixLen    int
	PrefixCapped bool
	// MergeOperator names a merge operator by RocksDB's built-in name
	// ("stringappend"), for MergeOperator.
	MergeOperator string
}

// CapabilityKind says which capability a Capability is.
type CapabilityKind uint8

const (
	// ColdReads: reads of data the case wrote (and flushed, when the driver
	// has driver.Flusher) reach the driver's IO, and each such IO is
	// recorded where shale's engine records a table-file read:
	// statistics.SSTReadMicros and the read activity's FileRead*Micros
	// histogram, and it is charged to the rate limiter at the read's
	// priority. Nothing in the background (an automatic compaction) reads
	// concurrently. Shale's engine: block_cache_size=0 and
	// disable_auto_compactions=true, with the data flushed. A driver whose
	// every read is an RPC has it with no parameter.
	ColdReads CapabilityKind = iota + 1
	// StatsLevel: DB.Statistics() is not nil and records at Level.
	StatsLevel
	// RateLimit: reads whose ReadOptions carry a priority other than
	// PriorityTotal are charged, their bytes as they reach the driver's IO,
	// to a rate limiter of BytesPerSecond that makes them wait, and counted
	// in the tickers RateLimiterRequestsRead and RateLimiterBytesRead.
	// Writes may be charged too, or not.
	RateLimit
	// BackgroundReads: the driver reads with Activity on its own behalf
	// and records those reads (in SSTReadMicros and Activity's
	// FileRead*Micros histogram, from the default stats level up): Flush
	// reads back what it wrote, Compact reads its inputs, an open reads
	// its files' metadata. It is a question, not a parameter: the answer
	// carries no DSN parameter.
	BackgroundReads
	// PrefixFilters: the database has a prefix extractor of PrefixLen
	// bytes (RocksDB's capped transform when PrefixCapped: a shorter key is
	// its own prefix; else the fixed one: a shorter key has none) and
	// filters that hold its keys' prefixes, which an iterator whose
	// IterOptions.Prefix is at least PrefixLen bytes long consults to leave
	// out what they rule out; the keys it yields are the same. When the
	// driver reports statistics at the default level or above, the
	// filters that rule a table out count in BloomFilterPrefixUseful. The
	// extractor may differ between opens of one database. Shale's engine:
	// prefix_extractor=fixed:N or capped:N.
	PrefixFilters
	// MergeOperator: DB.Merge combines operands with the merge operator
	// Capability.MergeOperator names, RocksDB's built-in one of that name
	// (stringappend: the existing value and the operands joined with ',').
	// Shale's engine: merge_operator. Asked only of a driver whose Merge
	// is not ErrNotSupported.
	MergeOperator
)

// String names the capability and its setting (a level, a rate, an
// activity), as the suite's skip messages print it.
func (c Capability) String() string {
	switch c.Kind {
	case ColdReads:
		return "ColdReads"
	case StatsLevel:
		return fmt.Sprintf("StatsLevel(%s)", c.Level)
	case RateLimit:
		return fmt.Sprintf("RateLimit(%d bytes/s)", c.BytesPerSecond)
	case BackgroundReads:
		return fmt.Sprintf("BackgroundReads(%s)", c.Activity)
	case PrefixFilters:
		return fmt.Sprintf("PrefixFilters(%s)", prefixExtractorName(c))
	case MergeOperator:
		return fmt.Sprintf("MergeOperator(%s)", c.MergeOperator)
	}
	return fmt.Sprintf("Capability(%d)", c.Kind)
}

// DSNCapabilities provides the capabilities with the DSN keys of shale's
// engine, which the suite's model driver accepts as well (all but
// prefix_extractor and merge_operator): ColdReads is block_cache_size=0 and
// disable_auto_compactions=true, StatsLevel is stats_level, RateLimit is
// rate_limit with rate_limit_mode=reads, PrefixFilters is prefix_extractor,
// MergeOperator is merge_operator, and the engine reads with activities
// Flush, Compaction and DBOpen in the background. It is what a nil
// [Config.Capabilities] means. A driver that
// rejects one of the keys skips the cases needing it, with a message naming
// the capability and the key.
func DSNCapabilities(c Capability) ([]driver.Param, error) {
	switch c.Kind {
	case ColdReads:
		return []driver.Param{{Key: "block_cache_size", Value: "0"}, {Key: "disable_auto_compactions", Value: "true"}}, nil
	case StatsLevel:
		return []driver.Param{{Key: "stats_level", Value: c.Level.String()}}, nil
	case RateLimit:
		return []driver.Param{{Key: "rate_limit", Value: strconv.FormatInt(c.BytesPerSecond, 10)},
			{Key: "rate_limit_mode", Value: "reads"}}, nil
	case BackgroundReads:
		switch c.Activity {
		case ioctx.ActivityFlush, ioctx.ActivityCompaction, ioctx.ActivityDBOpen:
			return nil, nil
		}
		return nil, fmt.Errorf("shale's engine makes no background reads with activity %s", c.Activity)
	case PrefixFilters:
		return []driver.Param{{Key: "prefix_extractor", Value: prefixExtractorName(c)}}, nil
	case MergeOperator:
		return []driver.Param{{Key: "merge_operator", Value: c.MergeOperator}}, nil
	}
	return nil, fmt.Errorf("unknown capability %s", c)
}

// provide returns the parameters that give a database caps, each marked
// with the capability it is for, or a message saying which one the harness
// cannot provide and why.
func (s *suite) provide(caps ...Capability) (params []param, unavailable string) {
	provider := s.caps
	if provider == nil {
		provider = DSNCapabilities
	}
	for _, c := range caps {
		ps, err := provider(c)
		if err != nil {
			return nil, fmt.Sprintf("the driver's harness cannot provide capability %s: %v", c, err)
		}
		if c.Kind == BackgroundReads && len(ps) > 0 {
			return nil, fmt.Sprintf("Config.Capabilities answered %s with DSN parameters %v; that capability "+
				"is a question about the driver, answered with (nil, nil) or (nil, error)", c, ps)
		}
		for _, p := range ps {
			params = append(params, param{key: p.Key, value: p.Value, capability: c.String()})
		}
	}
	return params, ""
}

// need is provide that skips the case when a capability is unavailable.
func (s *suite) need(t testing.TB, caps ...Capability) []param {
	t.Helper()
	params, unavailable := s.provide(caps...)
	if unavailable != "" {
		t.Skip(unavailable)
	}
	return params
}

// has reports whether the harness provides c, which must be a question
// (BackgroundReads), and otherwise logs why not, under what.
func (s *suite) has(t testing.TB, c Capability, what string) bool {
	t.Helper()
	if _, unavailable := s.provide(c); unavailable != "" {
		t.Logf("%s not checked: %s", what, unavailable)
		return false
	}
	return true
}

func coldReads() Capability                    { return Capability{Kind: ColdReads} }
func statsLevel(l statistics.Level) Capability { return Capability{Kind: StatsLevel, Level: l} }
func rateLimit(bytesPerSecond int64) Capability {
	return Capability{Kind: RateLimit, BytesPerSecond: bytesPerSecond}
}
func prefixFilters(n int, capped bool) Capability {
	return Capability{Kind: PrefixFilters, PrefixLen: n, PrefixCapped: capped}
}

// prefixExtractorName is c's extractor as RocksDB's and shale's DSN write
// it: fixed:N or capped:N.
func prefixExtractorName(c Capability) string {
	if c.PrefixCapped {
		return "capped:" + strconv.Itoa(c.PrefixLen)
	}
	return "fixed:" + strconv.Itoa(c.PrefixLen)
}

func backgroundReads(a ioctx.Activity) Capability {
	return Capability{Kind: BackgroundReads, Activity: a}
}
