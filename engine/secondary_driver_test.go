package engine

import (
	"context"
	"testing"

	"github.com/shaledb/shale/driver"
	"github.com/stretchr/testify/require"
)

// TestSecondaryThroughFacade opens a secondary with the DSN key through the
// façade: CatchUp follows the primary, every kind of write is refused with
// ErrInvalidArgument (a transaction's at Commit), properties and statistics
// answer, and CatchUp on the primary is a no-op.
func TestSecondaryThroughFacade(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	primary, err := driver.Open(DriverName, dir)
	require.NoError(t, err)
	defer primary.Close()
	require.NoError(t, primary.Put(ctx, []byte("a"), []byte("1")))
	require.NoError(t, primary.SyncWAL(ctx))

	sec, err := driver.Open(DriverName, dir+"?secondary=true")
	require.NoError(t, err)
	defer sec.Close()
	v, err := sec.Get(ctx, []byte("a"))
	require.NoError(t, err)
	require.Equal(t, "1", string(v))

	snap, err := sec.NewSnapshot(ctx)
	require.NoError(t, err)
	require.NoError(t, primary.Put(ctx, []byte("a"), []byte("2")))
	require.NoError(t, primary.Flush(ctx))
	require.NoError(t, primary.Compact(ctx, nil, nil))
	_, err = sec.Get(ctx, []byte("a"))
	require.NoError(t, err, "the table the flush replaced stays readable")
	require.NoError(t, sec.CatchUp(ctx))
	v, err = sec.Get(ctx, []byte("a"))
	require.NoError(t, err)
	require.Equal(t, "2", string(v))
	v, err = snap.Get(ctx, []byte("a"))
	require.NoError(t, err)
	require.Equal(t, "1", string(v), "a snapshot keeps its view")
	require.NoError(t, snap.Close())

	b := &driver.Batch{}
	b.Put([]byte("x"), []byte("y"))
	tx, err := sec.BeginTx(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, tx.Put(ctx, []byte("x"), []byte("y")))
	for name, err := range map[string]error{
		"Put":         sec.Put(ctx, []byte("x"), []byte("y")),
		"Write":       sec.Write(ctx, b),
		"DeleteRange": sec.DeleteRange(ctx, []byte("a"), []byte("b")),
		"Flush":       sec.Flush(ctx),
		"Compact":     sec.Compact(ctx, nil, nil),
		"Commit":      tx.Commit(),
	} {
		require.ErrorIs(t, err, driver.ErrInvalidArgument, name)
	}

	n, err := sec.Property(ctx, PropEstimateNumKeys)
	require.NoError(t, err)
	require.NotEmpty(t, n)
	require.NotNil(t, sec.Statistics())
	require.NoError(t, sec.VerifyChecksum(ctx))

	require.NoError(t, primary.CatchUp(ctx), "a primary is always caught up")
}
