package driver

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// catchUpConn is a full connection that implements CatchUpper.
type catchUpConn struct {
	*fullConn
	calls int
	err   error
}

func (c *catchUpConn) CatchUp(ctx context.Context) error {
	c.calls++
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.err
}

// TestCatchUp: without CatchUpper, CatchUp returns ErrNotSupported naming
// the interface; with it, the call is forwarded and its error returned as
// it is; on a closed DB it returns ErrClosed.
func TestCatchUp(t *testing.T) {
	ctx := context.Background()
	db := openFake(t, newFullConn())
	err := db.CatchUp(ctx)
	require.ErrorIs(t, err, ErrNotSupported)
	require.EqualError(t, err, "driver: CatchUp is not supported by this driver (its connection does not implement driver.CatchUpper)")

	conn := &catchUpConn{fullConn: newFullConn()}
	cdb := openFake(t, conn)
	require.NoError(t, cdb.CatchUp(ctx))
	conn.err = ErrCorruption
	require.Same(t, ErrCorruption, cdb.CatchUp(ctx))
	require.Equal(t, 2, conn.calls)
	require.NoError(t, cdb.Close())
	require.ErrorIs(t, cdb.CatchUp(ctx), ErrClosed)
	require.Equal(t, 2, conn.calls)
}
