package engine

import (
	"context"
	"testing"
	"time"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/ioctx"
	"github.com/stretchr/testify/require"
)

// TestFacadeGetDeadlineAllocations checks, through the real driver, that a
// deadline on a Get's context costs no allocation: the façade resolves the
// request once and the engine derives no context for a deadline the caller's
// context already carries.
func TestFacadeGetDeadlineAllocations(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	db, err := driver.Open(DriverName, t.TempDir())
	require.NoError(t, err)
	defer db.Close()
	bg := context.Background()
	key := []byte("key")
	require.NoError(t, db.Put(bg, key, []byte("value")))
	require.NoError(t, db.Put(bg, []byte("flushed"), []byte("value")))
	require.NoError(t, db.Flush(bg))

	deadline, cancel := context.WithTimeout(bg, time.Hour)
	defer cancel()
	prio := ioctx.WithReadOptions(deadline, ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityUser})
	conn, err := db.Conn(prio)
	require.NoError(t, err)
	for _, k := range [][]byte{key, []byte("flushed")} {
		get := func(ctx context.Context, get func(context.Context, []byte) ([]byte, error)) float64 {
			return testing.AllocsPerRun(200, func() {
				if _, err := get(ctx, k); err != nil {
					t.Fatal(err)
				}
			})
		}
		plain := get(bg, db.Get)
		require.LessOrEqual(t, plain, 1.0, "%s: a copying Get allocates its value only", k)
		require.Equal(t, plain, get(deadline, db.Get), "%s: a deadline on the context", k)
		require.Equal(t, plain, get(prio, db.Get), "%s: a deadline and read options", k)
		require.Equal(t, plain, get(deadline, conn.Get), "%s: a session's Get with a deadline", k)
	}
}
