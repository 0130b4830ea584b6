package etcd

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/statistics"
)

func TestParseDSN(t *testing.T) {
	for _, tc := range []struct {
		dsn   string
		check func(c *Config) bool
	}{
		{"127.0.0.1:2379/app", func(c *Config) bool {
			return len(c.Endpoints) == 1 && c.Namespace == "app" && c.RequireLeader && c.MaxTxnOps == 128 &&
				c.MaxRequestBytes == 1536<<10 && c.PageSize == 256 && c.RequestTimeout == 10*time.Second &&
				c.StatsLevel == statistics.LevelExceptDetailedTimers && !c.DisableStatistics
		}},
		{"a:1,b:2,c:3/team/app", func(c *Config) bool {
			return strings.Join(c.Endpoints, " ") == "a:1 b:2 c:3" && c.Namespace == "team/app"
		}},
		{"[::1]:2379/x?dial_timeout=250ms&request_timeout=0&max_txn_ops=1024&max_request_bytes=10MiB" +
			"&page_size=16&require_leader=false&statistics=off&stats_level=all&rate_limit=8MiB" +
			"&username=u&password_file=/p&tls_ca=/ca&tls_cert=/c&tls_key=/k", func(c *Config) bool {
			return c.DialTimeout == 250*time.Millisecond && c.RequestTimeout == 0 && c.MaxTxnOps == 1024 &&
				c.MaxRequestBytes == 10<<20 && c.PageSize == 16 && !c.RequireLeader && c.DisableStatistics &&
				c.StatsLevel == statistics.LevelAll && c.RateLimit == 8<<20 && c.Username == "u" &&
				c.PasswordFile == "/p" && c.TLSCA == "/ca" && c.TLSCert == "/c" && c.TLSKey == "/k"
		}},
	} {
		c, err := ParseDSN(tc.dsn)
		if err != nil {
			t.Errorf("ParseDSN(%q): %v", tc.dsn, err)
			continue
		}
		if !tc.check(c) {
			t.Errorf("ParseDSN(%q) = %+v", tc.dsn, c)
		}
		// String round-trips.
		c2, err := ParseDSN(c.String())
		if err != nil || c2.String() != c.String() {
			t.Errorf("ParseDSN(%q).String() = %q, which parses to %v, %v", tc.dsn, c.String(), c2, err)
		}
	}
}

// TestParseDSNErrors checks that every bad DSN is an error matching
// ErrInvalidArgument whose message names the key or part at fault.
func TestParseDSNErrors(t *testing.T) {
	for _, tc := range []struct{ dsn, names string }{
		{"127.0.0.1:2379", "no namespace"},
		{"127.0.0.1:2379/", "empty namespace"},
		{"127.0.0.1:2379/a%00b", "zero byte"},
		{"127.0.0.1/app", `"127.0.0.1"`},
		{"127.0.0.1:port/app", `"127.0.0.1:port"`},
		{"a:1,,b:2/app", `endpoint ""`},
		{"a:1/app?block_cache_size=0", "block_cache_size"},
		{"a:1/app?dial_timeout=5", "dial_timeout"},
		{"a:1/app?dial_timeout=0s", "dial_timeout"},
		{"a:1/app?request_timeout=-1s", "request_timeout"},
		{"a:1/app?max_txn_ops=0", "max_txn_ops"},
		{"a:1/app?max_request_bytes=3GiB", "max_request_bytes"},
		{"a:1/app?page_size=x", "page_size"},
		{"a:1/app?require_leader=maybe", "require_leader"},
		{"a:1/app?stats_level=most", "stats_level"},
		{"a:1/app?rate_limit=-1", "rate_limit"},
		{"a:1/app?username=u", "password_file"},
		{"a:1/app?tls_key=/k", "tls_cert"},
		{"a:1/app?username=", "username"},
	} {
		_, err := ParseDSN(tc.dsn)
		switch {
		case err == nil:
			t.Errorf("ParseDSN(%q) succeeded; want an error naming %s", tc.dsn, tc.names)
		case !errors.Is(err, driver.ErrInvalidArgument):
			t.Errorf("ParseDSN(%q) = %v, which does not match ErrInvalidArgument", tc.dsn, err)
		case !strings.Contains(strings.ReplaceAll(err.Error(), tc.dsn, ""), tc.names):
			t.Errorf("ParseDSN(%q) = %v; want it to name %s", tc.dsn, err, tc.names)
		}
		if _, err := driver.Open(DriverName, tc.dsn); err == nil || !errors.Is(err, driver.ErrInvalidArgument) {
			t.Errorf("driver.Open(%q) = %v; want the DSN's error at Open (DriverContext)", tc.dsn, err)
		}
	}
}

func TestDSNKeys(t *testing.T) {
	rows := DSNKeys()
	if len(rows) != len(dsnKeys) {
		t.Fatalf("DSNKeys has %d rows for %d keys", len(rows), len(dsnKeys))
	}
	for _, r := range rows {
		if r[0] == "" || r[2] == "" {
			t.Errorf("DSNKeys row %q lacks a name or a meaning", r)
		}
		if r[1] != "" {
			// Every default parses as a value of its key.
			if _, err := ParseDSN("a:1/app?" + r[0] + "=" + r[1]); err != nil {
				t.Errorf("the default of %s, %q, does not parse: %v", r[0], r[1], err)
			}
		}
	}
}

func TestConfigValidate(t *testing.T) {
	good := DefaultConfig([]string{"a:1"}, "app")
	if err := good.Validate(); err != nil {
		t.Fatalf("Validate of the default Config: %v", err)
	}
	for name, mutate := range map[string]func(c *Config){
		"no endpoints":  func(c *Config) { c.Endpoints = nil },
		"bad endpoint":  func(c *Config) { c.Endpoints = []string{"a"} },
		"no namespace":  func(c *Config) { c.Namespace = "" },
		"zero page":     func(c *Config) { c.PageSize = 0 },
		"zero txn ops":  func(c *Config) { c.MaxTxnOps = 0 },
		"half TLS pair": func(c *Config) { c.TLSCert = "/c" },
	} {
		c := *good
		mutate(&c)
		if err := c.Validate(); !errors.Is(err, driver.ErrInvalidArgument) {
			t.Errorf("Validate with %s = %v; want ErrInvalidArgument", name, err)
		}
		if _, err := NewConnector(c); !errors.Is(err, driver.ErrInvalidArgument) {
			t.Errorf("NewConnector with %s = %v; want ErrInvalidArgument", name, err)
		}
	}
}

// TestReadmeDSNTable keeps README.md's DSN table in step with the parser.
func TestReadmeDSNTable(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range DSNKeys() {
		def := "`" + row[1] + "`"
		if row[1] == "" {
			def = "none"
		}
		line := "| `" + row[0] + "` | " + def + " | " + row[2] + " |"
		if !strings.Contains(string(data), line) {
			t.Errorf("README.md lacks the DSN row:\n%s", line)
		}
	}
}
