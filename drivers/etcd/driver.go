package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/ratelimit"
	"github.com/shaledb/shale/statistics"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
)

// DriverName is the name this package registers with the driver package.
const DriverName = "etcd"

func init() { driver.Register(DriverName, Driver{}) }

// Driver is the "etcd" driver. Importing this package registers it.
type Driver struct{}

var (
	_ driver.Driver        = Driver{}
	_ driver.DriverContext = Driver{}
)

// Open opens the DB the DSN names. The returned connection owns its client:
// its Close closes it.
func (Driver) Open(dsn string) (driver.DriverConn, error) {
	c, err := Driver{}.OpenConnector(dsn)
	if err != nil {
		return nil, err
	}
	oc := c.(*ownedConnector)
	dc, err := oc.Connect(context.Background())
	if err != nil {
		return nil, err
	}
	cn := dc.(*conn)
	cn.owner = oc
	return cn, nil
}

// OpenConnector parses dsn once; the returned Connector creates its client
// on the façade's first use and closes it when the DB closes.
func (Driver) OpenConnector(dsn string) (driver.Connector, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	return &ownedConnector{connector: connector{cfg: cfg}}, nil
}

// NewConnector returns a Connector for cfg, for driver.OpenDB. It creates an
// etcd client on first use and closes it when the DB closes (it implements
// io.Closer).
func NewConnector(cfg Config) (driver.Connector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &ownedConnector{connector: connector{cfg: &cfg}}, nil
}

// NewClientConnector returns a Connector that uses client, which the caller
// owns: the DB never closes it. cfg (start from DefaultConfig(nil,
// namespace)) gives the namespace, limits, timeouts and statistics; its
// endpoints, dial, authentication and TLS settings are not used, the client
// having its own.
func NewClientConnector(client *clientv3.Client, cfg Config) (driver.Connector, error) {
	if client == nil {
		return nil, invalidArgument("etcd: NewClientConnector with a nil client")
	}
	cfg.Endpoints = client.Endpoints()
	if err := cfg.validate(false); err != nil {
		return nil, err
	}
	return &connector{cfg: &cfg, client: client}, nil
}

// connector connects one DB: it holds the client (made on the first
// successful Connect, or given), the statistics and the rate limiter, which
// every connection it makes shares.
type connector struct {
	cfg *Config

	mu      sync.Mutex
	client  *clientv3.Client
	stats   *statistics.Statistics
	limiter *ratelimit.Generic
	made    bool
	closed  bool
}

var _ driver.Connector = (*connector)(nil)

func (c *connector) Driver() driver.Driver { return Driver{} }

// Connect returns a connection to the namespace. The first call creates the
// client (which authenticates, with username) and makes one Status RPC to
// prove that a member answers, both within dial_timeout; then the
// statistics and the rate limiter. Later calls share them. A failed first
// connect leaves nothing behind (a client it made is closed), so the next
// call, which the façade makes on the DB's next use, starts afresh.
func (c *connector) Connect(ctx context.Context) (driver.DriverConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, newError("etcd: the connector is closed", nil, driver.ErrClosed)
	}
	if !c.made {
		client, owned := c.client, false
		if client == nil {
			var err error
			if client, err = newClient(c.cfg); err != nil {
				return nil, err
			}
			owned = true
		}
		fail := func(err error) (driver.DriverConn, error) {
			if owned {
				client.Close()
			}
			return nil, err
		}
		if err := reach(ctx, client, c.cfg); err != nil {
			return fail(err)
		}
		var limiter *ratelimit.Generic
		if c.cfg.RateLimit > 0 {
			l, err := ratelimit.New(ratelimit.Options{BytesPerSecond: c.cfg.RateLimit, Mode: ratelimit.ModeReads})
			if err != nil {
				return fail(newError("etcd: rate_limit", err, driver.ErrInvalidArgument))
			}
			limiter = l
		}
		if !c.cfg.DisableStatistics {
			c.stats = statistics.New(c.cfg.StatsLevel)
		}
		c.client, c.limiter, c.made = client, limiter, true
	}
	return newConn(c.cfg, c.client, c.stats, c.limiter), nil
}

// reach makes one Status RPC on the client's connection, which round-robins
// over the endpoints, to prove that some member answers. It does not wait
// for a connection (WaitForReady false): when every endpoint refuses, it
// fails as soon as the client has tried each once; when an endpoint
// neither answers nor refuses, dial_timeout ends the wait. Status needs no
// leader, so a cluster without quorum connects (and its calls then fail
// with ErrUnavailable).
func reach(ctx context.Context, client *clientv3.Client, cfg *Config) error {
	rctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	_, err := pb.NewMaintenanceClient(client.ActiveConnection()).Status(rctx, &pb.StatusRequest{},
		grpc.WaitForReady(false))
	if err != nil {
		return connectError(cfg, err)
	}
	return nil
}

// connectError is the error of a failed connect: one matching
// ErrUnavailable that names the endpoints and dial_timeout when no member
// answered (refused, unreachable, or silent until dial_timeout), otherwise
// the client's error (a failed authentication, say).
func connectError(cfg *Config, err error) error {
	eps := strings.Join(cfg.Endpoints, ",")
	switch code := grpcCode(err); {
	case code == codes.Unavailable, code == codes.DeadlineExceeded, errors.Is(err, context.DeadlineExceeded):
		return &classError{
			msg:     fmt.Sprintf("etcd: no member of %s answered within %v: %s", eps, cfg.DialTimeout, dialCause(err)),
			cause:   err,
			classes: []error{ErrUnavailable},
		}
	}
	return newError("etcd: connecting to "+eps, err)
}

// ownedConnector is a connector that made its client and closes it.
type ownedConnector struct {
	connector
}

// Close closes the client and the rate limiter.
func (c *ownedConnector) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.limiter != nil {
		c.limiter.Close()
	}
	if c.client == nil {
		return nil
	}
	err := c.client.Close()
	c.client = nil
	if errors.Is(err, context.Canceled) {
		err = nil // the client reports its own cancellation
	}
	return err
}

// newClient creates the client cfg describes. It reads the password and TLS
// files now, so a missing file fails the connect with its name.
func newClient(cfg *Config) (*clientv3.Client, error) {
	cc := clientv3.Config{
		Endpoints:          cfg.Endpoints,
		DialTimeout:        cfg.DialTimeout,
		Username:           cfg.Username,
		MaxCallSendMsgSize: int(min(cfg.MaxRequestBytes+grpcOverheadBytes, math.MaxInt32)),
		MaxCallRecvMsgSize: math.MaxInt32,
		// The driver reports every failure to its caller; the client's
		// own warnings (one per retried RPC) would only repeat them.
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(connectParams(cfg.DialTimeout))},
	}
	// A member without a leader (with require_leader), and a client with
	// no connection, answer at once; the client's retries of a read so
	// answered (100 by default, 25 ms apart) would turn "fail fast" into a
	// wait of seconds. Three attempts still move a read off a member that
	// just stopped.
	cc.MaxUnaryRetries = 3
	if cfg.PasswordFile != "" {
		pw, err := os.ReadFile(cfg.PasswordFile)
		if err != nil {
			return nil, newError("etcd: password_file", err, driver.ErrInvalidArgument)
		}
		cc.Password = strings.TrimRight(string(pw), "\r\n")
	}
	if cfg.TLSCA != "" || cfg.TLSCert != "" {
		tc, err := tlsConfig(cfg)
		if err != nil {
			return nil, err
		}
		cc.TLS = tc
	}
	client, err := clientv3.New(cc)
	if err != nil {
		// With username, New authenticates within dial_timeout.
		return nil, connectError(cfg, err)
	}
	return client, nil
}

// connectParams bounds how long the client tries to connect to an endpoint
// (dial_timeout: an endpoint that neither answers nor refuses stops
// holding calls then) and how long it waits before trying one that failed
// again: from 100 ms, growing to at most 2 s (gRPC's defaults, 1 s growing
// to 120 s, would leave a restarted member unused for minutes).
func connectParams(dialTimeout time.Duration) grpc.ConnectParams {
	return grpc.ConnectParams{
		Backoff: backoff.Config{
			BaseDelay:  100 * time.Millisecond,
			Multiplier: 1.6,
			Jitter:     0.2,
			MaxDelay:   2 * time.Second,
		},
		MinConnectTimeout: dialTimeout,
	}
}

func tlsConfig(cfg *Config) (*tls.Config, error) {
	info := transport.TLSInfo{CertFile: cfg.TLSCert, KeyFile: cfg.TLSKey, TrustedCAFile: cfg.TLSCA}
	for _, f := range []struct{ key, path string }{{"tls_ca", cfg.TLSCA}, {"tls_cert", cfg.TLSCert}, {"tls_key", cfg.TLSKey}} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			return nil, newError("etcd: "+f.key, err, driver.ErrInvalidArgument)
		}
	}
	tc, err := info.ClientConfig()
	if err != nil {
		return nil, newError("etcd: tls_ca, tls_cert, tls_key", err, driver.ErrInvalidArgument)
	}
	return tc, nil
}
