package etcd

import (
	"errors"
	"strconv"
	"testing"

	"github.com/shaledb/shale/conformance"
	"github.com/shaledb/shale/driver"
)

// TestConformance runs the façade's conformance suite against the shared
// 3-member cluster, a fresh namespace per database, with conformance's
// capabilities provided as capabilities says.
//
// Skipped by name:
//   - Corruption flips a byte in the *.sst table files of the DSN's
//     directory, an LSM's files; an etcd DSN names no directory. This
//     driver's own corruption test (TestVerifyChecksumCorruptMember)
//     corrupts a member's bbolt file instead.
//
// Skipped by itself: Checkpoint, whose contract is a copy in a directory
// that the same driver opens as a database (an etcd DB is a namespace of a
// cluster; see the package doc, "Snapshots and checkpoints"); the case
// checks that DB.Checkpoint fails with ErrNotSupported.
//
// With -short, the three cases that are long single-goroutine sequences of
// RPCs (CRUD: 2000 Puts and Gets; IteratorModel: 2000 random writes then
// 5000 moves; FlushCompact: rounds of writes, each checked key by key) are
// skipped as well: the full run covers them, and -short is what CI runs
// under the race detector, where every RPC through the in-process cluster
// costs several times as much, while those cases start no goroutine for the
// detector to watch.
func TestConformance(t *testing.T) {
	skip := []string{"Corruption"}
	if testing.Short() {
		skip = append(skip, "CRUD", "IteratorModel", "FlushCompact")
	}
	conformance.RunWith(t, DriverName, func(t *testing.T) string { return shared.dsn(t, "") },
		conformance.Config{Skip: skip, Capabilities: capabilities})
}

// errNoBackgroundReads is why this driver has no BackgroundReads
// capability.
var errNoBackgroundReads = errors.New("the etcd driver reads nothing on its own behalf: Flush is a no-op " +
	"(a returned write is committed), Compact is a revision compaction the members run without sending " +
	"data to the client, and connecting reads nothing")

// errNoPrefixFilters is why this driver has no PrefixFilters capability.
var errNoPrefixFilters = errors.New("the etcd driver has no prefix extractor or filters: a prefix scan is a range " +
	"read of the prefix's keys, which the members serve from their index")

// capabilities tells the conformance suite how this driver provides what
// its statistics and rate-limiter cases need:
//   - ColdReads: always; every read is one or more RPCs, this driver's IO
//     (there is no client-side cache), recorded and charged per RPC.
//   - StatsLevel: the DSN key stats_level.
//   - RateLimit: the DSN key rate_limit, which charges the responses of
//     reads on the client.
//   - BackgroundReads: none (errNoBackgroundReads), so the checks of the
//     flush, compaction and DB-open histograms are left out.
//   - PrefixFilters: none (errNoPrefixFilters), so IteratorPrefixFilters
//     skips; IteratorPrefix checks this driver's prefix scans.
func capabilities(c conformance.Capability) ([]driver.Param, error) {
	switch c.Kind {
	case conformance.ColdReads:
		return nil, nil
	case conformance.StatsLevel:
		return []driver.Param{{Key: "stats_level", Value: c.Level.String()}}, nil
	case conformance.RateLimit:
		return []driver.Param{{Key: "rate_limit", Value: strconv.FormatInt(c.BytesPerSecond, 10)}}, nil
	case conformance.BackgroundReads:
		return nil, errNoBackgroundReads
	case conformance.PrefixFilters:
		return nil, errNoPrefixFilters
	}
	return nil, errors.New("unknown capability " + c.String())
}
