package conformance

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/shaledb/shale/driver"
	"github.com/stretchr/testify/require"
)

// runWithCaps runs case name against the model with caps as
// Config.Capabilities, on a recorder.
func runWithCaps(t *testing.T, name string, caps func(Capability) ([]driver.Param, error)) *recorder {
	r := &recorder{TB: t}
	s := &suite{driverName: modelDriverName, newDSN: func() string { return t.TempDir() }, caps: caps}
	runOnGoroutine(func() { runCase(r, caseNamed(t, name), s) })
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		runOnGoroutine(r.cleanups[i])
	}
	return r
}

// capsExcept is DSNCapabilities with the answers of change.
func capsExcept(change func(Capability) ([]driver.Param, error, bool)) func(Capability) ([]driver.Param, error) {
	return func(c Capability) ([]driver.Param, error) {
		if ps, err, ok := change(c); ok {
			return ps, err
		}
		return DSNCapabilities(c)
	}
}

var capabilityCases = []string{"StatisticsPerActivity", "StatisticsGating", "RateLimiterCharging", "RateLimiterThrottling"}

// TestCapabilityUnavailable: a case needing a capability the harness cannot
// provide skips naming the capability and the harness's reason, not a DSN
// key.
func TestCapabilityUnavailable(t *testing.T) {
	noCold := capsExcept(func(c Capability) ([]driver.Param, error, bool) {
		return nil, errors.New("reads are always served from memory"), c.Kind == ColdReads
	})
	for _, name := range capabilityCases {
		t.Run(name, func(t *testing.T) {
			r := runWithCaps(t, name, noCold)
			require.False(t, r.Failed(), "%q", r.errors)
			require.True(t, r.Skipped(), "the case did not skip; log: %q", r.logs)
			require.Equal(t, "the driver's harness cannot provide capability ColdReads: reads are always served "+
				"from memory", r.skipped)
		})
	}
}

// TestCapabilityRejected: a parameter the harness gives for a capability
// and the driver rejects skips the case naming both.
func TestCapabilityRejected(t *testing.T) {
	r := runWithCaps(t, "StatisticsPerActivity", capsExcept(func(c Capability) ([]driver.Param, error, bool) {
		return []driver.Param{{Key: "stats", Value: "all"}}, nil, c.Kind == StatsLevel
	}))
	require.False(t, r.Failed(), "%q", r.errors)
	require.Contains(t, r.skipped, "capability StatsLevel(all): the harness gave DSN key stats for it, but driver "+
		"does not support DSN key stats (opening with stats=all failed: ")
}

// TestCapabilityWithoutDSNKeys: a harness that provides ColdReads and
// RateLimit without the engine's keys (as a driver whose every read is an
// RPC does) has the statistics and rate-limiter cases run, and pass, rather
// than skip because it has no block_cache_size. The model has cold reads
// once its data is flushed, and charges reads whenever rate_limit is set.
func TestCapabilityWithoutDSNKeys(t *testing.T) {
	var asked []string
	caps := capsExcept(func(c Capability) ([]driver.Param, error, bool) {
		asked = append(asked, c.String())
		switch c.Kind {
		case ColdReads:
			return nil, nil, true
		case RateLimit:
			return []driver.Param{{Key: "rate_limit", Value: "1GiB"}}, nil, c.BytesPerSecond == 1<<30
		}
		return nil, nil, false
	})
	for _, name := range capabilityCases {
		t.Run(name, func(t *testing.T) {
			asked = nil
			r := runWithCaps(t, name, caps)
			require.False(t, r.Failed(), "%q", r.errors)
			require.False(t, r.Skipped(), "skipped: %s", r.skipped)
			require.Contains(t, asked, "ColdReads")
			for _, l := range r.logs {
				require.NotContains(t, l, "block_cache_size")
			}
		})
	}
}

// TestCapabilityNoBackgroundReads: a driver that makes no background reads
// passes StatisticsGating, whose flush, compaction and DB-open checks are
// left out, each logged with the harness's reason; and a harness answering
// that question with DSN parameters is told it cannot.
func TestCapabilityNoBackgroundReads(t *testing.T) {
	r := runWithCaps(t, "StatisticsGating", capsExcept(func(c Capability) ([]driver.Param, error, bool) {
		return nil, errors.New("no background work"), c.Kind == BackgroundReads
	}))
	require.False(t, r.Failed(), "%q", r.errors)
	require.False(t, r.Skipped(), "skipped: %s", r.skipped)
	for _, h := range []string{"flush", "compaction", "db.open"} {
		require.True(t, slices.ContainsFunc(r.logs, func(l string) bool {
			return strings.Contains(l, "shale.file.read."+h+".micros not checked: the driver's harness cannot "+
				"provide capability BackgroundReads(") && strings.Contains(l, "no background work")
		}), "no log says the %s histogram was not checked: %q", h, r.logs)
	}

	r = runWithCaps(t, "StatisticsGating", capsExcept(func(c Capability) ([]driver.Param, error, bool) {
		return []driver.Param{{Key: "flush_reads", Value: "true"}}, nil, c.Kind == BackgroundReads
	}))
	require.False(t, r.Failed(), "%q", r.errors)
	require.True(t, slices.ContainsFunc(r.logs, func(l string) bool {
		return strings.Contains(l, "answered BackgroundReads(Flush) with DSN parameters")
	}), "%q", r.logs)
}

func TestCapabilityString(t *testing.T) {
	for _, tc := range []struct {
		c    Capability
		want string
	}{
		{coldReads(), "ColdReads"},
		{statsLevel(0), "StatsLevel(disable_all)"},
		{rateLimit(256 << 10), "RateLimit(262144 bytes/s)"},
		{Capability{Kind: 99}, "Capability(99)"},
	} {
		require.Equal(t, tc.want, tc.c.String())
	}
}
