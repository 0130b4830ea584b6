package driver

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// ingestConn is a fake driver with Ingester, recording the paths.
type ingestConn struct {
	*fakeConn
	paths []string
}

func (c *ingestConn) Ingest(ctx context.Context, paths []string) error {
	c.paths = append(c.paths, paths...)
	return nil
}

func TestIngestFacade(t *testing.T) {
	ctx := context.Background()
	ic := &ingestConn{fakeConn: newFakeConn()}
	db := openFake(t, ic)
	require.NoError(t, db.Ingest(ctx, []string{"/a.sst", "/b.sst"}))
	require.Equal(t, []string{"/a.sst", "/b.sst"}, ic.paths)
	require.ErrorIs(t, db.Ingest(ctx, nil), ErrInvalidArgument)
	require.ErrorIs(t, db.Ingest(ctx, []string{}), ErrInvalidArgument)

	// Without Ingester: ErrNotSupported, naming the connection's type.
	pdb := openFake(t, newFakeConn())
	err := pdb.Ingest(ctx, []string{"/a.sst"})
	require.ErrorIs(t, err, ErrNotSupported)
	require.True(t, strings.Contains(err.Error(), "*driver.fakeConn") && strings.Contains(err.Error(), "Ingester"), err.Error())
	// No files is the caller's mistake whatever the driver.
	require.ErrorIs(t, pdb.Ingest(ctx, nil), ErrInvalidArgument)

	require.NoError(t, db.Close())
	require.ErrorIs(t, db.Ingest(ctx, []string{"/a.sst"}), ErrClosed)
}
