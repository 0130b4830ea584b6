package etcd

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shaledb/shale/driver"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// testCluster is a cluster of embedded etcd members on 127.0.0.1, for the
// tests. Every member's traffic, peer and client, stays on loopback.
type testCluster struct {
	dir     string
	members []*testMember
	// Limits the cluster runs with, which the DSNs repeat.
	maxTxnOps       int
	maxRequestBytes int64
}

type testMember struct {
	name               string
	dir                string
	peerURL, clientURL url.URL
	cfg                *embed.Config
	etcd               *embed.Etcd
}

// clusterTiming returns the test cluster's heartbeat tick and election
// timeout. Short ticks make a leader appear within a few hundred
// milliseconds, and a lost one be noticed as fast; but a member that misses
// heartbeats for a whole election timeout (on a loaded machine, or under the
// race detector, which slows the in-process members several times) starts
// an election, and calls fail while it runs.
func clusterTiming() (tickMs, electionMs uint) {
	if raceEnabled {
		return 100, 1500
	}
	return 50, 500
}

// shared is the cluster every test of the binary uses (TestMain starts it),
// each DB in a namespace of its own.
var shared *testCluster

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "shale-etcd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	start := time.Now()
	shared, err = startCluster(filepath.Join(dir, "shared"), 3)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the test cluster:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	took := time.Since(start)
	code := m.Run()
	if testing.Verbose() {
		fmt.Printf("the shared 3-member cluster started in %v\n", took)
	}
	shared.stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

// freePorts returns n distinct free TCP ports of 127.0.0.1. Another process
// may take one before the member binds it; startCluster retries then.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}

// startCluster starts an n-member cluster with data under dir and waits
// until it has a leader.
func startCluster(dir string, n int) (*testCluster, error) {
	var lastErr error
	for range 3 {
		c, err := tryStartCluster(dir, n)
		if err == nil {
			return c, nil
		}
		lastErr = err
		os.RemoveAll(dir)
	}
	return nil, lastErr
}

func tryStartCluster(dir string, n int) (*testCluster, error) {
	ports, err := freePorts(2 * n)
	if err != nil {
		return nil, err
	}
	c := &testCluster{dir: dir, maxTxnOps: 1024, maxRequestBytes: 4 << 20}
	var initial []string
	for i := range n {
		m := &testMember{
			name:      fmt.Sprintf("m%d", i),
			dir:       filepath.Join(dir, fmt.Sprintf("m%d", i)),
			peerURL:   url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i])},
			clientURL: url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i+1])},
		}
		c.members = append(c.members, m)
		initial = append(initial, m.name+"="+m.peerURL.String())
	}
	for _, m := range c.members {
		m.cfg = c.memberConfig(m, strings.Join(initial, ","))
	}
	if err := c.startMembers(c.members); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// memberConfig is the configuration of member m of a new cluster.
func (c *testCluster) memberConfig(m *testMember, initialCluster string) *embed.Config {
	cfg := embed.NewConfig()
	cfg.Name = m.name
	cfg.Dir = m.dir
	cfg.ListenPeerUrls = []url.URL{m.peerURL}
	cfg.AdvertisePeerUrls = []url.URL{m.peerURL}
	cfg.ListenClientUrls = []url.URL{m.clientURL}
	cfg.AdvertiseClientUrls = []url.URL{m.clientURL}
	cfg.InitialCluster = initialCluster
	cfg.InitialClusterToken = "shale-etcd-test"
	cfg.ClusterState = embed.ClusterStateFlagNew
	cfg.TickMs, cfg.ElectionMs = clusterTiming()
	cfg.MaxTxnOps = uint(c.maxTxnOps)
	cfg.MaxRequestBytes = uint(c.maxRequestBytes)
	// A test cluster's data need not survive a power cut: without fsync
	// each write costs a few hundred microseconds instead of milliseconds.
	cfg.UnsafeNoFsync = true
	// bcrypt's cheapest cost: TestAuthentication's logins take
	// milliseconds, not a second each.
	cfg.BcryptCost = 4
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.Logger = "zap"
	cfg.Metrics = "basic"
	return cfg
}

// startMembers starts ms and waits until each is ready. They start one
// after another: a new member first asks its peers whether it already
// belongs to the cluster, and a peer whose port is bound but not yet
// served holds that question for a second (etcd's bootstrap timeout), while
// one not yet bound, or already serving, answers at once.
func (c *testCluster) startMembers(ms []*testMember) error {
	for _, m := range ms {
		e, err := embed.StartEtcd(m.cfg)
		if err != nil {
			return fmt.Errorf("member %s: %w", m.name, err)
		}
		m.etcd = e
	}
	for _, m := range ms {
		select {
		case <-m.etcd.Server.ReadyNotify():
		case err := <-m.etcd.Err():
			return fmt.Errorf("member %s: %w", m.name, err)
		case <-time.After(2 * time.Minute):
			return fmt.Errorf("member %s: not ready after two minutes", m.name)
		}
	}
	return nil
}

// stopMember stops member i; restartMember starts it again on its data.
func (c *testCluster) stopMember(i int) {
	m := c.members[i]
	if m.etcd != nil {
		m.etcd.Close()
		m.etcd = nil
	}
}

func (c *testCluster) restartMember(i int) error {
	m := c.members[i]
	cfg := *m.cfg
	cfg.ClusterState = embed.ClusterStateFlagExisting
	m.cfg = &cfg
	return c.startMembers([]*testMember{m})
}

func (c *testCluster) stop() {
	for i := range c.members {
		c.stopMember(i)
	}
}

// endpoints returns the members' client addresses, host:port each.
func (c *testCluster) endpoints() string {
	var eps []string
	for _, m := range c.members {
		eps = append(eps, m.clientURL.Host)
	}
	return strings.Join(eps, ",")
}

// namespaces numbers the tests' namespaces, unique within the binary's run.
var namespaces atomic.Int64

// newNamespace returns a namespace no other DB of the run has used.
func newNamespace(t testing.TB) string {
	name := strings.NewReplacer("/", "-", " ", "_", "%", "_", "?", "_").Replace(t.Name())
	return fmt.Sprintf("%s-%d", name, namespaces.Add(1))
}

// dsn returns the DSN of a fresh namespace of c with params
// ("key=value&...", or ""), and the cluster's limits unless params set them.
func (c *testCluster) dsn(t testing.TB, params string) string {
	t.Helper()
	d, err := driver.ParseDSN(fmt.Sprintf("%s/%s?%s", c.endpoints(), newNamespace(t), params))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []driver.Param{{Key: "max_txn_ops", Value: strconv.Itoa(c.maxTxnOps)},
		{Key: "max_request_bytes", Value: strconv.FormatInt(c.maxRequestBytes, 10)}} {
		if !slices.ContainsFunc(d.Params, func(q driver.Param) bool { return q.Key == p.Key }) {
			d.Params = append(d.Params, p)
		}
	}
	return d.String()
}

// waitLeader waits until member i of c sees a leader, or fails t.
func (c *testCluster) waitLeader(t testing.TB, i int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if s := c.members[i].etcd; s != nil && s.Server.Leader() != 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("member %d has no leader after 10s", i)
}
