package etcd

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/statistics"
)

// Config is a parsed DSN: the cluster's endpoints, the namespace and every
// setting a DSN can carry. ParseDSN and (*Config).String round-trip.
type Config struct {
	// Endpoints are the members' client addresses, host:port each.
	Endpoints []string
	// Namespace is the DB's key space: every key is stored in etcd as the
	// namespace, a zero byte, and the key. It is not empty and holds no
	// zero byte, so no namespace's keys are a prefix of another's.
	Namespace string

	// DialTimeout bounds the connect (a member answering, and
	// authentication when Username is set) and each attempt of the client
	// to connect to a member.
	DialTimeout time.Duration
	// RequestTimeout bounds each RPC, within the caller's context and the
	// read's deadline; 0 leaves them alone.
	RequestTimeout time.Duration

	// Username authenticates with the password in PasswordFile (read at
	// connect, trailing newline removed). Both or neither are set.
	Username, PasswordFile string
	// TLSCA, TLSCert and TLSKey are PEM files: the CA that signs the
	// members' certificates, and the client's certificate and key (both
	// or neither). Any of them turns TLS on.
	TLSCA, TLSCert, TLSKey string

	// MaxTxnOps is the server's --max-txn-ops: the most operations (and
	// comparisons) one Txn may carry. A Write of more distinct keys, or a
	// Commit touching more keys, fails before anything is sent; MultiGet
	// is split into Txns of this many keys.
	MaxTxnOps int
	// MaxRequestBytes is the server's --max-request-bytes: a Write or
	// Commit whose request is larger fails before anything is sent.
	MaxRequestBytes int64
	// PageSize is the number of keys an iterator fetches per RPC.
	PageSize int
	// RequireLeader makes every RPC fail at once, with an error matching
	// ErrUnavailable, when the member serving it has no leader, rather than
	// wait for one until the deadline.
	RequireLeader bool

	DisableStatistics bool
	StatsLevel        statistics.Level
	// RateLimit is the rate limiter's bytes per second for reads; 0 means
	// none.
	RateLimit int64
}

// The defaults of the DSN keys. MaxTxnOps and MaxRequestBytes are etcd's own
// defaults for the server flags they mirror.
const (
	DefaultDialTimeout     = 5 * time.Second
	DefaultRequestTimeout  = 10 * time.Second
	DefaultMaxTxnOps       = 128
	DefaultMaxRequestBytes = 1536 << 10
	DefaultPageSize        = 256
)

// DefaultConfig returns the configuration of a DSN with no parameters.
func DefaultConfig(endpoints []string, namespace string) *Config {
	return &Config{
		Endpoints:       endpoints,
		Namespace:       namespace,
		DialTimeout:     DefaultDialTimeout,
		RequestTimeout:  DefaultRequestTimeout,
		MaxTxnOps:       DefaultMaxTxnOps,
		MaxRequestBytes: DefaultMaxRequestBytes,
		PageSize:        DefaultPageSize,
		RequireLeader:   true,
		StatsLevel:      statistics.DefaultLevel,
	}
}

// dsnKey is one DSN parameter: its name and documentation, how to parse it
// into a Config, and how to print a Config's value.
type dsnKey struct {
	name, doc string
	parse     func(c *Config, v string) error
	get       func(c *Config) string
}

func durationKey(name, doc string, field func(c *Config) *time.Duration, zeroOK bool) dsnKey {
	return dsnKey{
		name: name, doc: doc,
		parse: func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			switch {
			case err != nil:
				return fmt.Errorf("%q is not a Go duration (such as 5s or 250ms)", v)
			case d < 0 || d == 0 && !zeroOK:
				return fmt.Errorf("%q is not a positive duration", v)
			}
			*field(c) = d
			return nil
		},
		get: func(c *Config) string { return field(c).String() },
	}
}

func positiveIntKey(name, doc string, field func(c *Config) *int) dsnKey {
	return dsnKey{
		name: name, doc: doc,
		parse: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return fmt.Errorf("%q is not a positive integer", v)
			}
			*field(c) = n
			return nil
		},
		get: func(c *Config) string { return strconv.Itoa(*field(c)) },
	}
}

func stringKey(name, doc string, field func(c *Config) *string) dsnKey {
	return dsnKey{
		name: name, doc: doc,
		parse: func(c *Config, v string) error {
			if v == "" {
				return errors.New("empty value")
			}
			*field(c) = v
			return nil
		},
		get: func(c *Config) string { return *field(c) },
	}
}

func boolKey(name, doc string, field func(c *Config) *bool, inverted bool) dsnKey {
	return dsnKey{
		name: name, doc: doc,
		parse: func(c *Config, v string) error {
			b, err := driver.ParseBool(v)
			if err != nil {
				return err
			}
			*field(c) = b != inverted
			return nil
		},
		get: func(c *Config) string { return strconv.FormatBool(*field(c) != inverted) },
	}
}

// dsnKeys is the DSN's parameter table, in documentation order.
var dsnKeys = []dsnKey{
	durationKey("dial_timeout", "bound on the connect (a member answering; authentication, with username)",
		func(c *Config) *time.Duration { return &c.DialTimeout }, false),
	durationKey("request_timeout", "bound on each RPC; 0 leaves it to the caller's context",
		func(c *Config) *time.Duration { return &c.RequestTimeout }, true),
	stringKey("username", "user to authenticate as (needs password_file)", func(c *Config) *string { return &c.Username }),
	stringKey("password_file", "file holding the user's password", func(c *Config) *string { return &c.PasswordFile }),
	stringKey("tls_ca", "PEM file of the CA that signs the members' certificates; turns TLS on",
		func(c *Config) *string { return &c.TLSCA }),
	stringKey("tls_cert", "PEM file of the client certificate (needs tls_key); turns TLS on",
		func(c *Config) *string { return &c.TLSCert }),
	stringKey("tls_key", "PEM file of the client certificate's key", func(c *Config) *string { return &c.TLSKey }),
	positiveIntKey("max_txn_ops", "the server's --max-txn-ops: operations per Txn (Write, Commit, MultiGet chunk)",
		func(c *Config) *int { return &c.MaxTxnOps }),
	{
		name: "max_request_bytes", doc: "the server's --max-request-bytes: the largest Write or Commit",
		parse: func(c *Config, v string) error {
			n, err := driver.ParseSize(v)
			switch {
			case err != nil:
				return err
			case n <= 0:
				return fmt.Errorf("%q is not a positive size", v)
			case n > 1<<31-1:
				return fmt.Errorf("%q is beyond gRPC's 2GiB message limit", v)
			}
			c.MaxRequestBytes = n
			return nil
		},
		get: func(c *Config) string { return driver.FormatSize(c.MaxRequestBytes) },
	},
	positiveIntKey("page_size", "keys an iterator fetches per RPC", func(c *Config) *int { return &c.PageSize }),
	boolKey("require_leader", "fail at once with ErrUnavailable when the serving member has no leader",
		func(c *Config) *bool { return &c.RequireLeader }, false),
	boolKey("statistics", "collect statistics (tickers and histograms)",
		func(c *Config) *bool { return &c.DisableStatistics }, true),
	{
		name: "stats_level", doc: "what statistics record: disable_all, except_histogram_or_timers, except_timers, " +
			"except_detailed_timers, except_time_for_mutex, all",
		parse: func(c *Config, v string) error {
			l, err := statistics.ParseLevel(v)
			c.StatsLevel = l
			return err
		},
		get: func(c *Config) string { return c.StatsLevel.String() },
	},
	{
		name: "rate_limit", doc: "rate limiter bytes per second for the responses of reads; 0 means no limiter",
		parse: func(c *Config, v string) error {
			n, err := driver.ParseSize(v)
			c.RateLimit = n
			return err
		},
		get: func(c *Config) string {
			if c.RateLimit > 0 {
				return driver.FormatSize(c.RateLimit)
			}
			return "0"
		},
	},
}

// ParseDSN parses a DSN of the form
//
//	host:port[,host:port...]/namespace[?key=value&...]
//
// for example "10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379/app?request_timeout=2s".
// An unknown key, a bad value or an invalid combination is an error matching
// driver.ErrInvalidArgument that names it. See DSNKeys for the keys.
func ParseDSN(dsn string) (*Config, error) {
	d, err := driver.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	var errs []error
	addrs, namespace, ok := strings.Cut(d.Path, "/")
	if !ok {
		errs = append(errs, errors.New("no namespace: the path is host:port[,host:port...]/namespace"))
	}
	endpoints := strings.Split(addrs, ",")
	for _, ep := range endpoints {
		if err := checkEndpoint(ep); err != nil {
			errs = append(errs, err)
		}
	}
	if ok {
		if err := checkNamespace(namespace); err != nil {
			errs = append(errs, err)
		}
	}
	c := DefaultConfig(endpoints, namespace)
	known := make(map[string]*dsnKey, len(dsnKeys))
	for i := range dsnKeys {
		known[dsnKeys[i].name] = &dsnKeys[i]
	}
	for _, p := range d.Params {
		k, ok := known[p.Key]
		if !ok {
			errs = append(errs, fmt.Errorf("unknown key %q", p.Key))
			continue
		}
		if err := k.parse(c, p.Value); err != nil {
			errs = append(errs, fmt.Errorf("bad value for %s: %w", p.Key, err))
		}
	}
	if len(errs) == 0 {
		errs = c.check()
	}
	if len(errs) > 0 {
		return nil, newError(fmt.Sprintf("etcd: invalid DSN %q", dsn), errors.Join(errs...), driver.ErrInvalidArgument)
	}
	return c, nil
}

func checkEndpoint(ep string) error {
	host, port, err := net.SplitHostPort(ep)
	if err != nil {
		return fmt.Errorf("endpoint %q is not host:port", ep)
	}
	if n, err := strconv.Atoi(port); host == "" || err != nil || n <= 0 || n > 65535 {
		return fmt.Errorf("endpoint %q is not host:port with a port number", ep)
	}
	return nil
}

func checkNamespace(ns string) error {
	switch {
	case ns == "":
		return errors.New("empty namespace")
	case strings.IndexByte(ns, 0) >= 0:
		return fmt.Errorf("namespace %q holds a zero byte, which ends a namespace in the keys", ns)
	}
	return nil
}

// check reports combinations of settings that cannot work.
func (c *Config) check() []error {
	var errs []error
	if (c.Username == "") != (c.PasswordFile == "") {
		errs = append(errs, errors.New("username and password_file go together"))
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		errs = append(errs, errors.New("tls_cert and tls_key go together"))
	}
	if c.RateLimit < 0 {
		errs = append(errs, fmt.Errorf("rate_limit %d is negative", c.RateLimit))
	}
	return errs
}

// Validate checks a Config built in Go rather than parsed: the endpoints,
// the namespace, the limits and the combinations ParseDSN checks.
func (c *Config) Validate() error { return c.validate(true) }

// validate is Validate, checking the endpoints only when endpoints is set
// (a caller's client has its own, which may carry URL schemes).
func (c *Config) validate(endpoints bool) error {
	var errs []error
	if endpoints && len(c.Endpoints) == 0 {
		errs = append(errs, errors.New("no endpoints"))
	}
	for _, ep := range c.Endpoints {
		if err := checkEndpoint(ep); endpoints && err != nil {
			errs = append(errs, err)
		}
	}
	if err := checkNamespace(c.Namespace); err != nil {
		errs = append(errs, err)
	}
	if c.DialTimeout <= 0 || c.RequestTimeout < 0 || c.MaxTxnOps <= 0 || c.MaxRequestBytes <= 0 || c.PageSize <= 0 {
		errs = append(errs, errors.New("dial_timeout, max_txn_ops, max_request_bytes and page_size must be positive, "+
			"request_timeout not negative"))
	}
	errs = append(errs, c.check()...)
	if len(errs) > 0 {
		return newError("etcd: invalid Config", errors.Join(errs...), driver.ErrInvalidArgument)
	}
	return nil
}

// String formats c as a DSN that ParseDSN parses back to c, listing only the
// settings that differ from the defaults, in table order.
func (c *Config) String() string {
	def := DefaultConfig(c.Endpoints, c.Namespace)
	var params []driver.Param
	for _, k := range dsnKeys {
		if v := k.get(c); v != k.get(def) {
			params = append(params, driver.Param{Key: k.name, Value: v})
		}
	}
	return driver.FormatDSN(strings.Join(c.Endpoints, ",")+"/"+c.Namespace, params)
}

// DSNKeys returns the DSN parameter table as {key, default, meaning} rows, in
// documentation order.
func DSNKeys() [][3]string {
	def := DefaultConfig(nil, "")
	rows := make([][3]string, 0, len(dsnKeys))
	for _, k := range dsnKeys {
		rows = append(rows, [3]string{k.name, k.get(def), k.doc})
	}
	return rows
}
