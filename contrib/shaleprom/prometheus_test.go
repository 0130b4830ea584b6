package shaleprom

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

// promDeadline bounds each wait on the Prometheus server: its start, and
// the scrapes that bring the expected value. Generous, for a busy 2-core
// CI machine; the test polls and returns as soon as the answer is there.
const promDeadline = 2 * time.Minute

// TestRealPrometheus starts Debian's prometheus server on a loopback port
// the kernel picked, with its TSDB in a temporary directory, scraping a
// loaded shale database's exporter every second; it polls the server's
// HTTP API until shale_file_read_seconds_count{activity="get"} is there and
// equals the statistics' own count, checks that the HELP reached the
// server's metadata, and stops the server with SIGTERM. Without the
// prometheus binary (.ci/run installs Debian's package) it skips, saying so.
func TestRealPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Prometheus server; skipped with -short")
	}
	if runtime.GOOS == "windows" {
		t.Skip("stops the server with SIGTERM")
	}
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("the prometheus server is not on PATH (apt-get install prometheus; .ci/run installs it): ", err)
	}

	// The exporter: a loaded database, then no more reads, so that the
	// statistics' count stands still while Prometheus catches up with it.
	db := loadedDB(t)
	want := fileReadCount(db.Statistics(), statistics.FileReadGetMicros)
	require.Positive(t, want)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(db, prometheus.Labels{"db": "prom"}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	exporter := httptest.NewServer(mux)
	defer exporter.Close()

	start := time.Now()
	api := startPrometheus(t, bin, strings.TrimPrefix(exporter.URL, "http://"))
	t.Logf("%s ready at %s after %v", promVersion(bin), api, time.Since(start).Round(time.Millisecond))

	query := `shale_file_read_seconds_count{activity="get",db="prom"}`
	var got float64
	deadline := time.Now().Add(promDeadline)
	for {
		v, ok, err := instantQuery(api, query)
		require.NoError(t, err)
		if ok {
			got = v
			if got == float64(want) {
				break
			}
		}
		require.True(t, time.Now().Before(deadline), "%s: %v (present %v) after %v, want %d", query, got, ok, promDeadline, want)
		time.Sleep(100 * time.Millisecond) // polling, not waiting for an event: the answer comes with a scrape
	}
	t.Logf("%s = %v, the statistics' count of shale.file.read.get.micros = %d (%v after start)", query, got, want, time.Since(start).Round(time.Millisecond))

	help, err := metadataHelp(api, fileReadFamily)
	require.NoError(t, err)
	require.Equal(t, fileReadHelp, help)
	t.Logf("metadata HELP of %s: %q", fileReadFamily, help)

	// The rules file loads, and every rule evaluates over the real series
	// without error.
	deadline = time.Now().Add(promDeadline)
	for {
		health, err := ruleHealth(api)
		require.NoError(t, err)
		bad := 0
		for _, h := range health {
			if h != "ok" {
				bad++
			}
		}
		if len(health) > 0 && bad == 0 {
			t.Logf("%d rules loaded from %s, all evaluated with health ok", len(health), rulesFile)
			break
		}
		require.True(t, time.Now().Before(deadline), "rules' health after %v: %v", promDeadline, health)
		time.Sleep(100 * time.Millisecond) // polling: the rules evaluate every second
	}

	// The scrape's size, as a server counts it.
	v, ok, err := instantQuery(api, `count({__name__=~"shale_.+",db="prom"})`)
	require.NoError(t, err)
	require.True(t, ok)
	t.Logf(`count({__name__=~"shale_.+",db="prom"}) = %v series`, v)
	require.Less(t, v, 1500.0)
}

// fileReadCount is the count of one histogram in a statistics export.
func fileReadCount(s *statistics.Statistics, h statistics.Histogram) uint64 {
	e := s.Export()
	for _, hv := range e.Histograms {
		if hv.Histogram == h {
			return hv.Count
		}
	}
	return 0
}

// startPrometheus starts the server scraping target every second and waits
// until it is ready; it returns the server's base URL and stops it at the
// end of the test. The port is one the kernel gave a listener just closed;
// should another process take it first, the server fails to bind and is
// started again on another.
func startPrometheus(t *testing.T, bin, target string) string {
	t.Helper()
	dir := t.TempDir()
	rules, err := filepath.Abs(rulesFile)
	require.NoError(t, err)
	config := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(config, []byte(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: ['`+rules+`']
scrape_configs:
  - job_name: shale
    metrics_path: /metrics
    static_configs:
      - targets: ['`+target+`']
`), 0o644))
	var lastErr error
	for attempt := range 3 {
		port := freePort(t)
		addr := "127.0.0.1:" + strconv.Itoa(port)
		var logs syncBuffer
		cmd := exec.Command(bin,
			"--config.file="+config,
			"--storage.tsdb.path="+filepath.Join(dir, fmt.Sprintf("tsdb%d", attempt)),
			"--web.listen-address="+addr,
			"--web.console.templates="+dir, "--web.console.libraries="+dir,
			"--log.level=warn")
		cmd.Stdout, cmd.Stderr = &logs, &logs
		dieWithTest(cmd)
		require.NoError(t, cmd.Start())
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		api := "http://" + addr
		err := waitReady(api, exited)
		if err == nil {
			t.Cleanup(func() { stopPrometheus(t, cmd, exited, &logs) })
			return api
		}
		_ = cmd.Process.Kill()
		<-exited
		lastErr = fmt.Errorf("%w\n%s", err, logs.String())
		if !strings.Contains(logs.String(), "address already in use") {
			break
		}
	}
	t.Fatalf("prometheus did not start: %v", lastErr)
	return ""
}

// freePort asks the kernel for a free loopback port.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitReady polls the server's readiness endpoint until it answers 200, the
// process exits, or promDeadline passes.
func waitReady(api string, exited <-chan error) error {
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(promDeadline)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("prometheus exited before it was ready: %v", err)
		default:
		}
		resp, err := client.Get(api + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond) // polling readiness
	}
	return fmt.Errorf("prometheus not ready after %v", promDeadline)
}

// stopPrometheus stops the server with SIGTERM, which makes it close its
// TSDB cleanly, and kills it if it has not exited within promDeadline.
func stopPrometheus(t *testing.T, cmd *exec.Cmd, exited <-chan error, logs *syncBuffer) {
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("prometheus exited with %v after SIGTERM:\n%s", err, logs.String())
		}
	case <-time.After(promDeadline):
		_ = cmd.Process.Kill()
		<-exited
		t.Errorf("prometheus did not exit within %v of SIGTERM:\n%s", promDeadline, logs.String())
	}
}

// instantQuery runs a PromQL query and returns the value of its single
// sample; ok is false when the result is empty.
func instantQuery(api, query string) (v float64, ok bool, err error) {
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := getJSON(api+"/api/v1/query?query="+url.QueryEscape(query), &r); err != nil {
		return 0, false, err
	}
	if r.Status != "success" {
		return 0, false, fmt.Errorf("query %s: %s", query, r.Error)
	}
	switch len(r.Data.Result) {
	case 0:
		return 0, false, nil
	case 1:
	default:
		return 0, false, fmt.Errorf("query %s: %d samples, want 1", query, len(r.Data.Result))
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	v, err = strconv.ParseFloat(s, 64)
	return v, err == nil, err
}

// ruleHealth returns the health of each rule the server loaded, by name:
// "ok", "unknown" before its first evaluation, "err" after a failed one.
func ruleHealth(api string) (map[string]string, error) {
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Groups []struct {
				Rules []struct {
					Name      string `json:"name"`
					Health    string `json:"health"`
					LastError string `json:"lastError"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := getJSON(api+"/api/v1/rules", &r); err != nil {
		return nil, err
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("/api/v1/rules: %s", r.Status)
	}
	h := make(map[string]string)
	for _, g := range r.Data.Groups {
		for _, rule := range g.Rules {
			h[rule.Name] = rule.Health + rule.LastError
		}
	}
	return h, nil
}

// metadataHelp returns the HELP the server holds for a metric family.
func metadataHelp(api, family string) (string, error) {
	var r struct {
		Status string `json:"status"`
		Data   map[string][]struct {
			Type string `json:"type"`
			Help string `json:"help"`
		} `json:"data"`
	}
	if err := getJSON(api+"/api/v1/metadata?metric="+url.QueryEscape(family), &r); err != nil {
		return "", err
	}
	md := r.Data[family]
	if r.Status != "success" || len(md) == 0 {
		return "", fmt.Errorf("no metadata for %s: %+v", family, r)
	}
	return md[0].Help, nil
}

func getJSON(u string, v any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

// promVersion is the server's first version line, for the test's log.
func promVersion(bin string) string {
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		return "prometheus (version unknown)"
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return line
}

// syncBuffer is a bytes.Buffer the server's output goroutines and the test
// share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
