package shaleprom

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
)

// The Grafana dashboard, grafana/shale.json, is generated here from plain
// structs (the foundation SDK would add a large dependency for the few
// fields used), and TestDashboardGolden keeps the committed file equal to
// what this code generates: go test -run TestDashboardGolden -update.

const dashboardFile = "grafana/shale.json"

type (
	dashboard struct {
		UID           string         `json:"uid"`
		Title         string         `json:"title"`
		Description   string         `json:"description"`
		Tags          []string       `json:"tags"`
		SchemaVersion int            `json:"schemaVersion"`
		Editable      bool           `json:"editable"`
		Refresh       string         `json:"refresh"`
		Time          timeRange      `json:"time"`
		Templating    templating     `json:"templating"`
		Panels        []panel        `json:"panels"`
		Annotations   map[string]any `json:"annotations"`
	}
	timeRange  struct{ From, To string }
	templating struct {
		List []variable `json:"list"`
	}
	variable struct {
		Name       string      `json:"name"`
		Label      string      `json:"label"`
		Type       string      `json:"type"`
		Query      string      `json:"query"`
		Datasource *datasource `json:"datasource,omitempty"`
		Refresh    int         `json:"refresh,omitempty"`
		IncludeAll bool        `json:"includeAll"`
		Multi      bool        `json:"multi"`
		AllValue   string      `json:"allValue,omitempty"`
	}
	datasource struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	}
	panel struct {
		ID          int          `json:"id"`
		Type        string       `json:"type"`
		Title       string       `json:"title"`
		Description string       `json:"description,omitempty"`
		GridPos     gridPos      `json:"gridPos"`
		Datasource  *datasource  `json:"datasource,omitempty"`
		Targets     []target     `json:"targets,omitempty"`
		FieldConfig *fieldConfig `json:"fieldConfig,omitempty"`
		Collapsed   *bool        `json:"collapsed,omitempty"`
	}
	gridPos     struct{ H, W, X, Y int }
	target      struct{ RefID, Expr, LegendFormat string }
	fieldConfig struct {
		Defaults fieldDefaults `json:"defaults"`
	}
	fieldDefaults struct {
		Unit string `json:"unit"`
		Min  *int   `json:"min,omitempty"`
	}
)

func (t timeRange) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]string{"from": t.From, "to": t.To})
}

func (g gridPos) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]int{"h": g.H, "w": g.W, "x": g.X, "y": g.Y})
}

func (t target) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]string{"refId": t.RefID, "expr": t.Expr, "legendFormat": t.LegendFormat})
}

// sel is the selector every query puts on its metrics: the databases the
// dashboard's variable picks.
const sel = `db=~"$db"`

// rateWin is the range of every rate: Grafana's $__rate_interval, which
// is at least four scrape intervals.
const rateWin = "[$__rate_interval]"

func rate(metric string) string { return "rate(" + metric + "{" + sel + "}" + rateWin + ")" }

// quantiles are the p50 and p99 of a histogram family, by the given label.
func quantiles(family, by, legend string) []target {
	var ts []target
	for _, q := range []struct{ q, name string }{{"0.5", "p50"}, {"0.99", "p99"}} {
		ts = append(ts, target{Expr: "histogram_quantile(" + q.q + ", sum by (" + by + ", le) (" + rate(family+"_bucket") + "))",
			LegendFormat: legend + " " + q.name})
	}
	return ts
}

// rowSpec is one row of panels.
type rowSpec struct {
	title  string
	panels []panelSpec
}

type panelSpec struct {
	title, description, unit string
	targets                  []target
}

// dashboardRows are the dashboard's contents, row by row.
var dashboardRows = []rowSpec{
	{"Reads", []panelSpec{
		{"Table file read latency by activity", "p50 and p99 of table file reads by the IO activity they served. The user-read activities (get, multiget, db_iterator, verify_*) need stats_level=except_time_for_mutex or all.", "s",
			quantiles(fileReadFamily, "activity", "{{activity}}")},
		{"Table file read latency by tag", "p50 and p99 of the table file reads of each tag's requests (ioctx.Tag; from stats_level=except_time_for_mutex).", "s",
			quantiles(tagReadFam, "tag", "{{tag}}")},
		{"Block cache hit ratio (data blocks)", "Data-block lookups that hit the block cache, over all data-block lookups.", "percentunit",
			[]target{{Expr: "sum by (db) (" + rate("shale_block_cache_data_hit_total") + ") / (sum by (db) (" + rate("shale_block_cache_data_hit_total") + ") + sum by (db) (" + rate("shale_block_cache_data_miss_total") + "))", LegendFormat: "{{db}}"}}},
		{"Bytes read by level", "Bytes compactions read from each level, and bytes read from table files of the last level and of the others (every activity).", "Bps",
			[]target{
				{Expr: "sum by (level) (" + rate("shale_lsm_level_compaction_read_bytes_total") + ")", LegendFormat: "compaction L{{level}}"},
				{Expr: "sum(" + rate("shale_last_level_read_bytes_total") + ")", LegendFormat: "last level"},
				{Expr: "sum(" + rate("shale_non_last_level_read_bytes_total") + ")", LegendFormat: "other levels"},
			}},
		{"Point lookup latency", "p50 and p99 of Get and MultiGet calls, whole calls.", "s",
			append(quantiles("shale_db_get_seconds", "db", "Get {{db}}"), quantiles("shale_db_multiget_seconds", "db", "MultiGet {{db}}")...)},
	}},
	{"Rate limiter", []panelSpec{
		{"Requests waiting by priority", "Requests queued at the rate limiter now, by priority (low, mid, high, user).", "short",
			[]target{{Expr: "sum by (priority) (shale_rate_limiter_priority_pending_requests{" + sel + "})", LegendFormat: "{{priority}}"}}},
		{"Bytes granted by priority", "Bytes the rate limiter granted per second, by priority.", "Bps",
			[]target{{Expr: "sum by (priority) (" + rate("shale_rate_limiter_priority_bytes_total") + ")", LegendFormat: "{{priority}}"}}},
		{"Rate limiter waits", "p99 of the time a request waited for the rate limiter, and requests delayed per second.", "s",
			append(quantiles("shale_rate_limiter_wait_seconds", "db", "wait {{db}}"),
				target{Expr: "sum by (db) (" + rate("shale_rate_limiter_delayed_read_requests_total") + " + " + rate("shale_rate_limiter_delayed_write_requests_total") + ")", LegendFormat: "delayed requests/s {{db}}"})},
	}},
	{"Writes and background work", []panelSpec{
		{"Write stalls", "Fraction of time writes were stalled waiting for a flush or compaction, and writes stalled now.", "percentunit",
			[]target{
				{Expr: "sum by (db) (" + rate("shale_write_stall_seconds_sum") + ")", LegendFormat: "stalled {{db}}"},
				{Expr: "sum by (db) (shale_lsm_write_stalls_active{" + sel + "})", LegendFormat: "stalled now {{db}}"},
			}},
		{"Flush and compaction throughput", "Bytes flushes and compactions wrote, and compactions read, per second.", "Bps",
			[]target{
				{Expr: "sum by (db) (" + rate("shale_flush_write_bytes_total") + ")", LegendFormat: "flush write {{db}}"},
				{Expr: "sum by (db) (" + rate("shale_compact_write_bytes_total") + ")", LegendFormat: "compaction write {{db}}"},
				{Expr: "sum by (db) (" + rate("shale_compact_read_bytes_total") + ")", LegendFormat: "compaction read {{db}}"},
			}},
		{"L0 files", "Table files in level 0. Writes slow down at level0_slowdown_writes_trigger and stop at level0_stop_writes_trigger.", "short",
			[]target{{Expr: "sum by (db) (shale_lsm_level_tables{" + sel + `, level="0"})`, LegendFormat: "{{db}}"}}},
		{"Pending compaction bytes", "Bytes the levels hold above their targets, which compactions have yet to move down.", "bytes",
			[]target{{Expr: "sum by (db) (shale_lsm_compaction_pending_bytes{" + sel + "})", LegendFormat: "{{db}}"}}},
		{"Background errors", "Background errors (failed WAL writes, memtable inserts, flushes, compactions) in each interval. Any is worth a look at the database's log.", "short",
			[]target{{Expr: "sum by (db) (increase(shale_background_errors_total{" + sel + "}" + rateWin + "))", LegendFormat: "{{db}}"}}},
	}},
}

// buildDashboard lays the rows out: a row header, then panels two by two.
func buildDashboard() dashboard {
	ds := &datasource{Type: "prometheus", UID: "${datasource}"}
	d := dashboard{
		UID: "shale", Title: "shale", Tags: []string{"shale"}, SchemaVersion: 39, Editable: true, Refresh: "30s",
		Description: "A shale database's statistics as contrib/shaleprom exports them. Generated by contrib/shaleprom/dashboard_test.go; do not edit by hand.",
		Time:        timeRange{"now-1h", "now"},
		Annotations: map[string]any{"list": []any{}},
		Templating: templating{List: []variable{
			{Name: "datasource", Label: "Data source", Type: "datasource", Query: "prometheus"},
			{Name: "db", Label: "Database", Type: "query", Query: "label_values(shale_statistics_level, db)", Datasource: ds,
				Refresh: 2, IncludeAll: true, Multi: true, AllValue: ".*"},
		}},
	}
	id, y := 1, 0
	for _, r := range dashboardRows {
		collapsed := false
		d.Panels = append(d.Panels, panel{ID: id, Type: "row", Title: r.title, GridPos: gridPos{H: 1, W: 24, X: 0, Y: y}, Collapsed: &collapsed})
		id++
		y++
		for i, p := range r.panels {
			targets := make([]target, len(p.targets))
			for j, t := range p.targets {
				t.RefID = string(rune('A' + j))
				targets[j] = t
			}
			zero := 0
			d.Panels = append(d.Panels, panel{
				ID: id, Type: "timeseries", Title: p.title, Description: p.description, Datasource: ds,
				GridPos: gridPos{H: 8, W: 12, X: 12 * (i % 2), Y: y + 8*(i/2)}, Targets: targets,
				FieldConfig: &fieldConfig{Defaults: fieldDefaults{Unit: p.unit, Min: &zero}},
			})
			id++
		}
		y += 8 * ((len(r.panels) + 1) / 2)
	}
	return d
}

func dashboardJSON(t *testing.T) []byte {
	t.Helper()
	b, err := json.MarshalIndent(buildDashboard(), "", "  ")
	require.NoError(t, err)
	return append(b, '\n')
}

// TestDashboardGolden: the committed dashboard is what the code generates.
func TestDashboardGolden(t *testing.T) {
	want := dashboardJSON(t)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(dashboardFile), 0o755))
		require.NoError(t, os.WriteFile(dashboardFile, want, 0o644))
	}
	got, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "%s is stale: go test -run TestDashboardGolden -update", dashboardFile)
	var v map[string]any
	require.NoError(t, json.Unmarshal(got, &v), "valid JSON")
}

// grafanaVars stand in for Grafana's variables so that PromQL's parser
// reads a query as Prometheus will once Grafana has substituted them.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$db", ".*")

// metricNames parses expr (failing the test if it does not parse) and
// returns the metric names its selectors name.
func metricNames(t *testing.T, expr string) []string {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	require.NoError(t, err, "%s", expr)
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			require.NotEmpty(t, vs.Name, "%s: a selector without a metric name", expr)
			names = append(names, vs.Name)
		}
		return nil
	})
	require.NotEmpty(t, names, "%s names no metric", expr)
	return names
}

// TestDashboardQueries: every query of the dashboard parses, and names
// only metrics a real scrape of a loaded database exports.
func TestDashboardQueries(t *testing.T) {
	exported := scrapedNames(t, realScrape(t))
	var d dashboard
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(dashboardJSON(t)), &d))
	n := 0
	for _, p := range buildDashboard().Panels {
		for _, tg := range p.Targets {
			for _, name := range metricNames(t, grafanaVars.Replace(tg.Expr)) {
				require.True(t, exported[name], "panel %q: %s is not in a real scrape", p.Title, name)
			}
			n++
		}
	}
	for _, v := range buildDashboard().Templating.List {
		if v.Type == "query" {
			require.True(t, exported["shale_statistics_level"], v.Query)
		}
	}
	require.Greater(t, n, 15)
}
