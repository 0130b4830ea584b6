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
func TestConformance(t *testing.T) {
	conformance.RunWith(t, DriverName, func(t *testing.T) string { return shared.dsn(t, "") },
		conformance.Config{Skip: []string{"Corruption"}})
}
