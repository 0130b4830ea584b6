package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSummarizeRSS(t *testing.T) {
	s := func(sec float64, phase string, mib float64) rssSample {
		return rssSample{Seconds: sec, Phase: phase, RSSMiB: mib}
	}
	for _, tc := range []struct {
		name    string
		samples []rssSample
		want    []rssPhaseSummary
	}{
		{"none", nil, nil},
		{"one phase", []rssSample{s(0, "fill", 10), s(1, "fill", 30), s(2, "fill", 20)},
			[]rssPhaseSummary{{phase: "fill", from: 0, to: 2, first: 10, median: 20, max: 30, last: 20, n: 3}}},
		{"phases in turn", []rssSample{s(0, "fill", 10), s(1, "compaction", 50), s(2, "compaction", 40), s(3, "get_hit", 45)},
			[]rssPhaseSummary{
				{phase: "fill", from: 0, to: 0, first: 10, median: 10, max: 10, last: 10, n: 1},
				{phase: "compaction", from: 1, to: 2, first: 50, median: 50, max: 50, last: 40, n: 2},
				{phase: "get_hit", from: 3, to: 3, first: 45, median: 45, max: 45, last: 45, n: 1},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, summarizeRSS(tc.samples))
		})
	}
}

// TestRSSTimeline: the sampler labels samples with the phase set last and
// the report prints a row per phase.
func TestRSSTimeline(t *testing.T) {
	tl := startRSSTimeline(time.Hour) // samples only at phase changes and stop
	tl.setPhase("fill")
	tl.setPhase("get_hit")
	samples := tl.stop()
	require.GreaterOrEqual(t, len(samples), 3)
	require.Equal(t, "get_hit", samples[len(samples)-1].Phase)
	for _, smp := range samples {
		require.Greater(t, smp.RSSMiB, 0.0)
	}
	require.Nil(t, startRSSTimeline(0).stop())

	rr := roundResults{resultKey("shale", variantMain): &engineResult{Engine: "shale", Variant: variantMain, RSSTimeline: samples}}
	var buf bytes.Buffer
	writeRSSTimelines(&buf, []roundResults{rr}, []string{"shale", "pebble"}, time.Second)
	require.Contains(t, buf.String(), "| get_hit |")
	require.Contains(t, buf.String(), "| fill |")
	require.NotContains(t, buf.String(), "pebble:")
}
