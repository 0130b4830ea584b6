package shaleprom

import (
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
)

const (
	rulesFile     = "rules/shale.rules.yml"
	rulesTestFile = "rules/shale.rules.test.yml"
)

// TestRulesNames parses the rules file as Prometheus does (rulefmt, which
// validates every expression and template) and checks that every metric
// the rules read is one a real scrape exports or one the rules record.
func TestRulesNames(t *testing.T) {
	groups, errs := rulefmt.ParseFile(rulesFile, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	require.Empty(t, errs)
	exported := scrapedNames(t, realScrape(t))
	recorded := map[string]bool{}
	alerts := map[string]bool{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				recorded[r.Record] = true
			} else {
				alerts[r.Alert] = true
			}
		}
	}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			for _, name := range metricNames(t, r.Expr) {
				require.True(t, exported[name] || recorded[name], "rule %s%s: %s is neither in a real scrape nor recorded", r.Record, r.Alert, name)
			}
		}
	}
	require.Len(t, alerts, 6)
	for _, a := range []string{"ShaleWriteStalls", "ShaleBackgroundErrors", "ShaleL0FilesHigh", "ShaleGetLatencyHigh",
		"ShaleBlockCacheHitRatioCollapse", "ShaleRateLimiterStarvation"} {
		require.True(t, alerts[a], a)
	}
}

// TestPromtool runs promtool's checks and the rules' unit tests (each alert
// fed series that make it fire and series that keep it quiet). promtool is
// Debian's prometheus package's; .ci/run installs it. Without it the test
// skips, saying so.
func TestPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not on PATH (apt-get install prometheus; .ci/run installs it): ", err)
	}
	for _, args := range [][]string{
		{"check", "rules", filepath.Base(rulesFile)},
		{"test", "rules", filepath.Base(rulesTestFile)},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = filepath.Dir(rulesFile)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
		require.Contains(t, string(out), "SUCCESS")
		t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
	}
}
