package engine

import (
	"context"
	"testing"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// TestDriverNewIteratorErrorIsNil: when the engine cannot open an iterator
// (here, the read state is gone with the database), the driver returns a nil
// driver.Iter, not a nil *Iterator in a non-nil interface that a caller
// checking it != nil would use.
func TestDriverNewIteratorErrorIsNil(t *testing.T) {
	// No background compaction: its loop reads the read state, which this
	// test takes away (Close does so only after the loops have stopped).
	opts := smallOptions(vfs.NewMem())
	opts.DisableAutoCompactions = true
	db, err := openDatabase("/db", opts)
	require.NoError(t, err)
	c := &conn{db: db}
	req, err := ioctx.ResolveRead(context.Background(), nil, "NewIterator", ioctx.ActivityDBIterator)
	require.NoError(t, err)
	// Drop the read state while the database still counts as open, so
	// that startRead passes and newIteratorImpl fails.
	saved := db.readState.Swap(nil)
	it, err := c.NewIterator(context.Background(), req, driver.IterOptions{})
	require.ErrorIs(t, err, ErrClosed)
	require.True(t, it == nil, "a failed NewIterator returned a non-nil driver.Iter (%T)", it)
	db.readState.Store(saved)
	require.NoError(t, db.Close())
}
