package etcd

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shaledb/shale/driver"
)

// TestClientConnector checks a DB over a client the caller owns: the DB
// uses it, and its Close leaves it open.
func TestClientConnector(t *testing.T) {
	cli := rawClient(t, shared)
	cfg := DefaultConfig(nil, newNamespace(t))
	c, err := NewClientConnector(cli, *cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := driver.OpenDB(c)
	if err := db.Put(bg, []byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if v, err := db.Get(bg, []byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(bg, cfg.Namespace+"\x00k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Errorf("the caller's client after DB.Close: %v, %v; want it open, reading the DB's key", resp, err)
	}
	if _, err := NewClientConnector(nil, *cfg); !errors.Is(err, driver.ErrInvalidArgument) {
		t.Errorf("NewClientConnector(nil) = %v; want ErrInvalidArgument", err)
	}
}

// TestConnectFiles checks that a missing password or TLS file fails the
// connect (the first use) with an error naming its key.
func TestConnectFiles(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.pem")
	for _, tc := range []struct{ params, key string }{
		{"username=u&password_file=" + missing, "password_file"},
		{"tls_ca=" + missing, "tls_ca"},
		{"tls_cert=" + missing + "&tls_key=" + missing, "tls_cert"},
	} {
		db, err := driver.Open(DriverName, shared.dsn(t, tc.params))
		if err != nil {
			t.Fatalf("Open with %s: %v; the DSN is valid, the file is read at connect", tc.params, err)
		}
		err = db.Ping(bg)
		if !errors.Is(err, driver.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("Ping with %s = %v; want ErrInvalidArgument naming %s", tc.params, err, tc.key)
		}
		db.Close()
	}
}

// TestAuthentication enables etcd's authentication on a private cluster:
// the DSN's username and password_file let the DB in (VerifyChecksum's
// HashKV needs the root role), a wrong password fails the connect, and no
// credentials get every call refused.
func TestAuthentication(t *testing.T) {
	c := privateCluster(t)
	cli := rawClient(t, c)
	for _, step := range []func() error{
		func() error { _, err := cli.RoleAdd(bg, "root"); return err },
		func() error { _, err := cli.UserAdd(bg, "root", "s3cret"); return err },
		func() error { _, err := cli.UserGrantRole(bg, "root", "root"); return err },
		func() error { _, err := cli.AuthEnable(bg); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good"), filepath.Join(dir, "bad")
	if err := os.WriteFile(good, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("guess\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	db := openDSN(t, c.dsn(t, "username=root&password_file="+good))
	if err := db.Put(bg, []byte("k"), []byte("v")); err != nil {
		t.Fatalf("Put as root: %v", err)
	}
	if err := db.VerifyChecksum(bg); err != nil {
		t.Fatalf("VerifyChecksum as root: %v", err)
	}
	wrong := openDSN(t, c.dsn(t, "username=root&password_file="+bad))
	if err := wrong.Ping(bg); err == nil {
		t.Errorf("Ping with a wrong password succeeded")
	}
	anon := openDSN(t, c.dsn(t, ""))
	if _, err := anon.Get(bg, []byte("k")); err == nil || errors.Is(err, driver.ErrNotFound) {
		t.Errorf("Get without credentials on a cluster with authentication = %v; want it refused", err)
	}
}
