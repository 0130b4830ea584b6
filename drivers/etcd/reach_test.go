package etcd

import (
	"errors"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shale/driver"
)

// deadEndpoint returns an address of 127.0.0.1 where nothing listens: a
// port the kernel gave a listener that is closed again.
func deadEndpoint(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// silentEndpoint returns an address of 127.0.0.1 that accepts connections
// and never says a word, as a member stuck or behind a black hole would:
// gRPC's handshake never completes. It closes when the test ends.
func silentEndpoint(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

// TestPingDeadEndpoint checks that Ping connects: on an address where
// nothing listens it fails at once (not after dial_timeout, which is long
// here), with an error matching ErrUnavailable that names the endpoint and
// says why; and so does the first call of a DB never pinged.
func TestPingDeadEndpoint(t *testing.T) {
	addr := deadEndpoint(t)
	db := openDSN(t, addr+"/ns?dial_timeout=30s")
	start := time.Now()
	err := db.Ping(bg)
	took := time.Since(start)
	t.Logf("Ping of %s: %v after %v", addr, err, took)
	switch {
	case err == nil:
		t.Fatalf("Ping of %s, where nothing listens, succeeded", addr)
	case !errors.Is(err, ErrUnavailable):
		t.Errorf("Ping of a dead endpoint = %v; want an error matching ErrUnavailable", err)
	case !strings.Contains(err.Error(), "no member of "+addr+" answered within 30s") ||
		!strings.Contains(err.Error(), "connection refused"):
		t.Errorf("Ping of a dead endpoint = %q; want it to name %s, dial_timeout and the refusal", err, addr)
	case took > 10*time.Second:
		t.Errorf("Ping of a refusing endpoint took %v; want it to fail at once, not near dial_timeout=30s", took)
	}

	db2 := openDSN(t, addr+"/ns?dial_timeout=30s")
	start = time.Now()
	err = db2.Put(bg, []byte("k"), []byte("v"))
	if took := time.Since(start); !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown) ||
		took > 10*time.Second {
		t.Errorf("Put on a dead endpoint = %v after %v; want ErrUnavailable of known outcome, at once", err, took)
	}
}

// TestPingSilentEndpoint checks that dial_timeout bounds the connect without
// a username: an endpoint that accepts the TCP connection and never answers
// fails Ping after about dial_timeout, not request_timeout.
func TestPingSilentEndpoint(t *testing.T) {
	addr := silentEndpoint(t)
	db := openDSN(t, addr+"/ns?dial_timeout=300ms&request_timeout=2m")
	start := time.Now()
	err := db.Ping(bg)
	took := time.Since(start)
	t.Logf("Ping of a silent %s: %v after %v", addr, err, took)
	switch {
	case err == nil:
		t.Fatalf("Ping of %s, which never answers, succeeded", addr)
	case !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no member of "+addr+" answered within 300ms"):
		t.Errorf("Ping of a silent endpoint = %v; want ErrUnavailable naming it and dial_timeout", err)
	case took < 250*time.Millisecond:
		t.Errorf("Ping of a silent endpoint failed after %v; want it to wait dial_timeout=300ms", took)
	case took > 30*time.Second:
		t.Errorf("Ping of a silent endpoint took %v; want about dial_timeout=300ms", took)
	}
}

// clientGoroutines counts the goroutines of etcd or gRPC clients: the
// shared cluster's members run some of their own (their gateway's), which
// stay the same while no member starts or stops.
func clientGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "go.etcd.io/etcd/client/v3") || strings.Contains(g, "grpc.(*addrConn)") ||
			strings.Contains(g, "grpc.(*ccBalancerWrapper)") || strings.Contains(g, "transport.(*http2Client)") ||
			strings.Contains(g, "grpc.(*ClientConn)") {
			count++
		}
	}
	return count
}

// TestFailedConnectLeavesNothing checks that a failed connect can be
// repeated and leaves no client behind: after connects that fail, on one DB
// and on DBs closed afterwards, the clients' goroutines are gone.
func TestFailedConnectLeavesNothing(t *testing.T) {
	addr := deadEndpoint(t)
	before := clientGoroutines()
	db, err := driver.Open(DriverName, addr+"/ns")
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := db.Ping(bg); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Ping of a dead endpoint = %v; want ErrUnavailable", err)
		}
	}
	for range 5 {
		other, err := driver.Open(DriverName, addr+"/ns")
		if err != nil {
			t.Fatal(err)
		}
		if err := other.Ping(bg); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Ping of a dead endpoint = %v; want ErrUnavailable", err)
		}
		if err := other.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// A closed client's goroutines end soon after Close returns: wait for
	// that, generously.
	deadline := time.Now().Add(2 * time.Minute)
	for after := clientGoroutines(); after > before; after = clientGoroutines() {
		if time.Now().After(deadline) {
			t.Fatalf("%d client goroutines before the failed connects, %d two minutes after them", before, after)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// The count sees a client: one connected DB adds to it.
	live := openDB(t, "")
	if err := live.Ping(bg); err != nil {
		t.Fatal(err)
	}
	if n := clientGoroutines(); n <= before {
		t.Errorf("%d client goroutines with a connected DB, %d before: the count misses clients", n, before)
	}
}

// TestConnectAfterClusterReturns checks that a DB whose connect failed while
// the cluster was down connects on a later call once it is back.
func TestConnectAfterClusterReturns(t *testing.T) {
	c := privateCluster(t)
	dsn := c.dsn(t, "dial_timeout=1s")
	c.stop()
	db := openDSN(t, dsn)
	if err := db.Ping(bg); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Ping with every member stopped = %v; want ErrUnavailable", err)
	}
	// The members restart together: each waits for the others to be ready.
	for i := range c.members {
		c.members[i].cfg.ClusterState = "existing"
	}
	start := time.Now()
	if err := c.startMembers(c.members); err != nil {
		t.Fatal(err)
	}
	c.waitLeader(t, 0)
	t.Logf("the members restarted and elected a leader in %v", time.Since(start))
	start = time.Now()
	var err error
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err = db.Ping(bg); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("Ping two minutes after the cluster came back: %v", err)
	}
	t.Logf("Ping succeeded %v after the cluster came back", time.Since(start))
	if err := retryUnavailable(func() error { return db.Put(bg, []byte("k"), []byte("v")) }); err != nil {
		t.Fatalf("Put once connected: %v", err)
	}
}

// TestCallsWithNoMemberReachable stops every member of a connected DB's
// cluster: each call then fails at once (request_timeout is long here) with
// an error matching ErrUnavailable, and a write says it was not applied
// rather than of unknown outcome: it never left the client.
func TestCallsWithNoMemberReachable(t *testing.T) {
	c := privateCluster(t)
	db := openDSN(t, c.dsn(t, "dial_timeout=1s&request_timeout=1m"))
	for _, k := range []string{"a", "b", "c"} {
		if err := db.Put(bg, []byte(k), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := db.BeginTx(bg, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Reading b first leaves Commit one RPC, the Txn.
	if _, err := tx.Get(bg, []byte("b")); err != nil {
		t.Fatal(err)
	}
	if err := tx.Put(bg, []byte("b"), []byte("tx")); err != nil {
		t.Fatal(err)
	}
	c.stop()
	start := time.Now()
	err = tx.Commit()
	took := time.Since(start)
	t.Logf("Commit with every member stopped: %v after %v", err, took)
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown) ||
		!strings.Contains(err.Error(), "not applied") || took > 20*time.Second {
		t.Errorf("Commit with every member stopped = %v after %v; want ErrUnavailable, not applied, at once", err, took)
	}
	for _, dc := range dbCalls {
		start := time.Now()
		err := dc.call(bg, db)
		took := time.Since(start)
		t.Logf("%s with every member stopped: %v after %v", dc.name, err, took)
		switch {
		case !errors.Is(err, ErrUnavailable):
			t.Errorf("%s with every member stopped = %v; want ErrUnavailable", dc.name, err)
		case took > 20*time.Second:
			t.Errorf("%s with every member stopped took %v; want it to fail at once, not at request_timeout=1m",
				dc.name, took)
		case dc.write && dc.name != "Commit" &&
			(errors.Is(err, ErrOutcomeUnknown) || !strings.Contains(err.Error(), "not applied")):
			t.Errorf("%s with every member stopped = %v; want it reported as not applied, of known outcome",
				dc.name, err)
		}
	}
}
