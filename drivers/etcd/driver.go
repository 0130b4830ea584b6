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

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/ratelimit"
	"github.com/shaledb/shale/statistics"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
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
// Connect, or given), the statistics and the rate limiter, which every
// connection it makes shares.
type connector struct {
	cfg *Config

	mu      sync.Mutex
	client  *clientv3.Client
	stats   *statistics.Statistics
	limiter *ratelimit.Generic
	made    bool
}

var _ driver.Connector = (*connector)(nil)

func (c *connector) Driver() driver.Driver { return Driver{} }

// Connect returns a connection to the namespace. The first call creates the
// client (which authenticates, with username, within dial_timeout) and the
// statistics; later calls share them. It makes no other RPC: a cluster that
// is down at connect fails the calls, not the DB.
func (c *connector) Connect(context.Context) (driver.DriverConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.made {
		if c.client == nil {
			client, err := newClient(c.cfg)
			if err != nil {
				return nil, err
			}
			c.client = client
		}
		if !c.cfg.DisableStatistics {
			c.stats = statistics.New(c.cfg.StatsLevel)
		}
		if c.cfg.RateLimit > 0 {
			l, err := ratelimit.New(ratelimit.Options{BytesPerSecond: c.cfg.RateLimit, Mode: ratelimit.ModeReads})
			if err != nil {
				return nil, newError("etcd: rate_limit", err, driver.ErrInvalidArgument)
			}
			c.limiter = l
		}
		c.made = true
	}
	if c.client == nil {
		return nil, newError("etcd: the connector is closed", nil, driver.ErrClosed)
	}
	return newConn(c.cfg, c.client, c.stats, c.limiter), nil
}

// ownedConnector is a connector that made its client and closes it.
type ownedConnector struct {
	connector
}

// Close closes the client and the rate limiter.
func (c *ownedConnector) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
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
		Logger: zap.NewNop(),
	}
	if cfg.RequireLeader {
		// A member without a leader answers at once; the client's retries
		// of that answer (100 by default, 25 ms apart) would turn "fail
		// fast" into a wait of seconds. Three attempts still move a
		// request off a member that just stopped.
		cc.MaxUnaryRetries = 3
	}
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
		return nil, newError(fmt.Sprintf("etcd: connecting to %s", strings.Join(cfg.Endpoints, ",")), err)
	}
	return client, nil
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
