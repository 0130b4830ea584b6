package engine

import (
	"testing"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/internal/base"
	"github.com/stretchr/testify/require"
)

// TestDeprecatedErrorNames: the engine's error names are the driver's
// sentinels, which are the classes the engine marks its errors with.
func TestDeprecatedErrorNames(t *testing.T) {
	for _, tc := range []struct{ engine, drv, internal error }{
		{ErrNotFound, driver.ErrNotFound, base.ErrNotFound},
		{ErrCorruption, driver.ErrCorruption, base.ErrCorruption},
		{ErrInvalidArgument, driver.ErrInvalidArgument, base.ErrInvalidArgument},
		{ErrClosed, driver.ErrClosed, base.ErrClosed},
		{ErrConflict, driver.ErrConflict, base.ErrConflict},
	} {
		require.Same(t, tc.drv, tc.engine)
		require.Same(t, tc.drv, tc.internal)
	}
}
