package driver

import (
	"context"
	"testing"

	"github.com/shaledb/shale/ioctx"
	"github.com/stretchr/testify/require"
)

// sizesConn adds ApproximateSizer, DiskUsager and PropertyReader, recording
// what they are given.
type sizesConn struct {
	*fakeConn
	req        ioctx.ReadRequest
	start, end []byte
	calls      int
}

func (c *sizesConn) ApproximateSize(ctx context.Context, req ioctx.ReadRequest, start, end []byte) (RangeSize, error) {
	c.calls++
	c.req, c.start, c.end = req, start, end
	return RangeSize{OnDisk: 1, InMemory: 2, InMemoryEntries: 3}, ctx.Err()
}

func (c *sizesConn) DiskUsage(ctx context.Context) (uint64, error) { return 42, ctx.Err() }

func (c *sizesConn) Property(ctx context.Context, name string) (string, error) {
	if name != "x.known" {
		return "", ErrNotFound
	}
	return "7", ctx.Err()
}

// TestSizes: without the interfaces, ApproximateSize, DiskUsage and Property
// return ErrNotSupported naming the interface; with them, the calls are
// forwarded, ApproximateSize's read tagged ActivityUnknown and refused with
// another activity, and an inverted range answered by the façade.
func TestSizes(t *testing.T) {
	ctx := context.Background()
	db := openFake(t, newFakeConn())
	_, err := db.ApproximateSize(ctx, nil, nil)
	require.ErrorIs(t, err, ErrNotSupported)
	require.Contains(t, err.Error(), "driver.ApproximateSizer")
	_, err = db.DiskUsage(ctx)
	require.ErrorIs(t, err, ErrNotSupported)
	require.Contains(t, err.Error(), "driver.DiskUsager")
	_, err = db.Property(ctx, "x.known")
	require.ErrorIs(t, err, ErrNotSupported)
	require.Contains(t, err.Error(), "driver.PropertyReader")

	conn := &sizesConn{fakeConn: newFakeConn()}
	db = openFake(t, conn)
	s, err := db.ApproximateSize(ctx, []byte("a"), []byte("b"))
	require.NoError(t, err)
	require.Equal(t, RangeSize{OnDisk: 1, InMemory: 2, InMemoryEntries: 3}, s)
	require.Equal(t, ioctx.ActivityUnknown, conn.req.IO.Activity)
	require.Equal(t, "a", string(conn.start))
	require.Equal(t, "b", string(conn.end))
	s, err = db.ApproximateSize(ctx, []byte("b"), []byte("a"))
	require.NoError(t, err)
	require.Zero(t, s, "an inverted range")
	require.Equal(t, 1, conn.calls, "answered by the façade")
	_, err = db.ApproximateSize(ioctx.WithReadOptions(ctx, ioctx.ReadOptions{Activity: ioctx.ActivityGet}), nil, nil)
	require.ErrorIs(t, err, ErrInvalidArgument)
	n, err := db.DiskUsage(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(42), n)
	v, err := db.Property(ctx, "x.known")
	require.NoError(t, err)
	require.Equal(t, "7", v)
	_, err = db.Property(ctx, "x.unknown")
	require.ErrorIs(t, err, ErrNotFound)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = db.ApproximateSize(cancelled, nil, nil)
	require.ErrorIs(t, err, context.Canceled)
	_, err = db.DiskUsage(cancelled)
	require.ErrorIs(t, err, context.Canceled)
	_, err = db.Property(cancelled, "x.known")
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 1, conn.calls, "a done ctx reaches no driver")
	require.NoError(t, db.Close())
	_, err = db.DiskUsage(ctx)
	require.ErrorIs(t, err, ErrClosed)
}
