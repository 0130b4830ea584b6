package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/engine"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

// TestShale runs the suite against shale's own driver, which importing
// package engine registers.
func TestShale(t *testing.T) {
	RunWith(t, engine.DriverName, func(t *testing.T) string { return t.TempDir() }, Config{WriteTable: shaleWriteTable})
}

// shaleWriteTable writes a table with shale's engine.TableWriter, for the
// Ingest case.
func shaleWriteTable(path string, kvs []KV) error {
	tw, err := engine.NewTableWriter(path, nil)
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		if err := tw.Set(kv.Key, kv.Value); err != nil {
			_ = tw.Abort()
			return err
		}
	}
	_, err = tw.Finish()
	return err
}

// TestShaleMemory runs the cases that do not need a directory against an
// in-memory shale database.
func TestShaleMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("the directory run (TestShale) covers the same code")
	}
	RunWith(t, engine.DriverName, func(*testing.T) string { return memoryPath },
		Config{Skip: []string{"RateLimiterThrottling", "Concurrency", "BatchAtomicity", "TxCommitAtomicity"}})
}

// shaleWrapper wraps shale's driver, its connections changed by wrap. It is
// how the tests below break shale in ways the model cannot show: the model
// has no files to corrupt.
type shaleWrapper struct {
	wrap func(wrappedConn) driver.DriverConn
}

func (d shaleWrapper) Open(dsn string) (driver.DriverConn, error) {
	return nil, errors.New("shaleWrapper: use OpenConnector")
}

// OpenConnector wraps shale's Connector, which owns the database and closes
// it when the DB closes.
func (d shaleWrapper) OpenConnector(dsn string) (driver.Connector, error) {
	c, err := engine.Driver{}.OpenConnector(dsn)
	if err != nil {
		return nil, err
	}
	return wrappedConnector{c, d}, nil
}

type wrappedConnector struct {
	driver.Connector
	d shaleWrapper
}

func (c wrappedConnector) Connect(ctx context.Context) (driver.DriverConn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return c.d.wrap(wrappedConn{conn}), nil
}

func (c wrappedConnector) Driver() driver.Driver { return c.d }

func (c wrappedConnector) Close() error {
	if cl, ok := c.Connector.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

// wrappedConn forwards every method, optional ones included, to a
// DriverConn; the broken connections below override one each.
type wrappedConn struct{ driver.DriverConn }

func (c wrappedConn) MultiGet(ctx context.Context, req ioctx.ReadRequest, keys [][]byte) ([][]byte, error) {
	if mg, ok := c.DriverConn.(driver.MultiGetter); ok {
		return mg.MultiGet(ctx, req, keys)
	}
	return nil, driver.ErrSkip
}

func (c wrappedConn) Flush(ctx context.Context) error {
	if f, ok := c.DriverConn.(driver.Flusher); ok {
		return f.Flush(ctx)
	}
	return driver.ErrNotSupported
}

func (c wrappedConn) Compact(ctx context.Context, start, end []byte) error {
	if cp, ok := c.DriverConn.(driver.Compacter); ok {
		return cp.Compact(ctx, start, end)
	}
	return driver.ErrNotSupported
}

func (c wrappedConn) VerifyChecksum(ctx context.Context, req ioctx.ReadRequest) error {
	if v, ok := c.DriverConn.(driver.Verifier); ok {
		return v.VerifyChecksum(ctx, req)
	}
	return driver.ErrNotSupported
}

func (c wrappedConn) VerifyFileChecksums(ctx context.Context, req ioctx.ReadRequest) error {
	if v, ok := c.DriverConn.(driver.Verifier); ok {
		return v.VerifyFileChecksums(ctx, req)
	}
	return driver.ErrNotSupported
}

func (c wrappedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.DriverTx, error) {
	if b, ok := c.DriverConn.(driver.TxBeginner); ok {
		return b.BeginTx(ctx, opts)
	}
	return nil, driver.ErrNotSupported
}

func (c wrappedConn) Statistics() *statistics.Statistics {
	if sr, ok := c.DriverConn.(driver.StatsReporter); ok {
		return sr.Statistics()
	}
	return nil
}

// corruptionAsMissConn treats a block it cannot read as a miss.
type corruptionAsMissConn struct{ wrappedConn }

func (c corruptionAsMissConn) Get(ctx context.Context, req ioctx.ReadRequest, key []byte) ([]byte, error) {
	v, err := c.wrappedConn.Get(ctx, req, key)
	if errors.Is(err, driver.ErrCorruption) {
		return nil, fmt.Errorf("unreadable, so absent: %w", driver.ErrNotFound)
	}
	return v, err
}

// anonymousCorruptionConn's VerifyChecksum reports corruption without
// saying where.
type anonymousCorruptionConn struct{ wrappedConn }

func (c anonymousCorruptionConn) VerifyChecksum(ctx context.Context, req ioctx.ReadRequest) error {
	if err := c.wrappedConn.VerifyChecksum(ctx, req); errors.Is(err, driver.ErrCorruption) {
		return fmt.Errorf("checksum mismatch: %w", driver.ErrCorruption)
	} else {
		return err
	}
}

var (
	brokenCorruptionAsMiss = "conformance-broken-shale-corruption-as-miss"
	brokenAnonymous        = "conformance-broken-shale-anonymous-corruption"
)

func init() {
	driver.Register(brokenCorruptionAsMiss, shaleWrapper{func(c wrappedConn) driver.DriverConn {
		return corruptionAsMissConn{c}
	}})
	driver.Register(brokenAnonymous, shaleWrapper{func(c wrappedConn) driver.DriverConn {
		return anonymousCorruptionConn{c}
	}})
}

func TestBrokenShale(t *testing.T) {
	for _, tc := range []struct {
		driver string
		want   []string
	}{
		{brokenCorruptionAsMiss, []string{"of a corrupt database failed with \"unreadable, so absent: not found\", " +
			"which does not match driver.ErrCorruption", "never a wrong answer"}},
		{brokenAnonymous, []string{"VerifyChecksum failed with \"checksum mismatch: corruption\", which names none " +
			"of the corrupt files (", ".sst"}},
	} {
		t.Run(strings.TrimPrefix(tc.driver, "conformance-broken-shale-"), func(t *testing.T) {
			r := runRecorded(t, tc.driver, caseNamed(t, "Corruption"), func(t *testing.T) string { return t.TempDir() })
			require.True(t, r.Failed(), "the case passed (skipped: %q)", r.skipped)
			require.True(t, slices.ContainsFunc(r.errors, func(msg string) bool {
				for _, w := range tc.want {
					if !strings.Contains(msg, w) {
						return false
					}
				}
				return true
			}), "no failure message contains all of %q; messages:\n%s", tc.want, strings.Join(r.errors, "\n"))
		})
	}
	// The control: unbroken shale passes the same case on the recorder.
	r := runRecorded(t, engine.DriverName, caseNamed(t, "Corruption"), func(t *testing.T) string { return t.TempDir() })
	require.False(t, r.Failed(), "errors: %s", strings.Join(r.errors, "\n"))
	require.False(t, r.Skipped(), "skipped: %s", r.skipped)
}
