package etcd

import (
	"testing"

	"github.com/shaledb/shale/conformance"
)

// TestConformance runs the façade's conformance suite against the shared
// 3-member cluster, a fresh namespace per database.
//
// Skipped by name:
//   - Corruption flips a byte in the *.sst table files of the DSN's
//     directory, an LSM's files; an etcd DSN names no directory. This
//     driver's own corruption test (TestVerifyChecksumCorruptMember)
//     corrupts a member's bbolt file instead.
//
// The statistics and rate-limiter cases (StatisticsPerActivity,
// StatisticsGating, RateLimiterCharging, RateLimiterThrottling) skip by
// themselves: they require the engine's DSN key block_cache_size=0 to make
// reads reach table files, which this driver rejects as unknown. The tests
// in stats_test.go check the same contracts for this driver.
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
		conformance.Config{Skip: skip})
}
