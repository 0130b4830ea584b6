package conformance

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/engine"
	"github.com/shaledb/shale/ioctx"
	"github.com/stretchr/testify/require"
)

// shortPrefixDriver is shale with a bug of the filtered path: an
// IterOptions.Prefix shorter than the database's prefix extractor is taken
// as ruled out (as if a fixed extractor's "no prefix" meant "no keys"), and
// the iterator yields nothing. Without an extractor it is shale, so only a
// case opening the database with prefix filters can catch it.
type shortPrefixDriver struct{}

const brokenShortPrefix = "conformance-broken-shale-short-prefix"

func init() { driver.Register(brokenShortPrefix, shortPrefixDriver{}) }

func (shortPrefixDriver) Open(string) (driver.DriverConn, error) {
	return nil, driver.ErrNotSupported
}

func (shortPrefixDriver) OpenConnector(dsn string) (driver.Connector, error) {
	d, err := driver.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	n := 0
	if v, ok := d.Lookup("prefix_extractor"); ok {
		if _, l, ok := strings.Cut(v, ":"); ok {
			n, _ = strconv.Atoi(l)
		}
	}
	return shaleWrapper{func(c wrappedConn) driver.DriverConn { return shortPrefixConn{c, n} }}.OpenConnector(dsn)
}

type shortPrefixConn struct {
	wrappedConn
	extractorLen int
}

func (c shortPrefixConn) NewIterator(ctx context.Context, req ioctx.ReadRequest, opts driver.IterOptions) (driver.Iter, error) {
	if len(opts.Prefix) > 0 && len(opts.Prefix) < c.extractorLen {
		opts.UpperBound = slices.Clone(opts.LowerBound)
	}
	return c.wrappedConn.NewIterator(ctx, req, opts)
}

// TestBrokenPrefixFilters: IteratorPrefixFilters fails on the broken
// driver, which IteratorPrefix (no extractor) passes, and passes on shale.
func TestBrokenPrefixFilters(t *testing.T) {
	dir := func(t *testing.T) string { return t.TempDir() }
	r := runRecorded(t, brokenShortPrefix, caseNamed(t, "IteratorPrefixFilters"), dir)
	require.True(t, r.Failed(), "the case passed (skipped: %q)", r.skipped)
	require.True(t, slices.ContainsFunc(r.errors, func(msg string) bool {
		return strings.Contains(msg, `prefix "p0"`) || strings.Contains(msg, `prefix "p"`) || strings.Contains(msg, `prefix "o"`)
	}), "no failure names a prefix shorter than the extractor; messages:\n%s", strings.Join(r.errors, "\n"))

	r = runRecorded(t, brokenShortPrefix, caseNamed(t, "IteratorPrefix"), dir)
	require.False(t, r.Failed(), "errors: %s", strings.Join(r.errors, "\n"))

	r = runRecorded(t, engine.DriverName, caseNamed(t, "IteratorPrefixFilters"), dir)
	require.False(t, r.Failed(), "errors: %s", strings.Join(r.errors, "\n"))
	require.False(t, r.Skipped(), "skipped: %s", r.skipped)
}
