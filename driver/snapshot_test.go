package driver

import (
	"context"
	"testing"

	"github.com/shaledb/shale/ioctx"
	"github.com/stretchr/testify/require"
)

func TestSnapshotReads(t *testing.T) {
	for _, batched := range []bool{false, true} {
		t.Run(map[bool]string{false: "loop", true: "SnapshotMultiGetter"}[batched], func(t *testing.T) {
			ctx := context.Background()
			full := newFullConn()
			full.snapMultiGet = batched
			db := openFake(t, full)
			require.NoError(t, db.Put(ctx, []byte("a"), []byte("1")))
			require.NoError(t, db.Put(ctx, []byte("b"), []byte("2")))
			s, err := db.NewSnapshot(ctx)
			require.NoError(t, err)
			require.NoError(t, db.Put(ctx, []byte("a"), []byte("changed")))
			require.NoError(t, db.Delete(ctx, []byte("b")))
			require.NoError(t, db.Put(ctx, []byte("c"), []byte("new")))

			v, err := s.Get(ctx, []byte("a"))
			require.NoError(t, err)
			require.Equal(t, "1", string(v))
			_, err = s.Get(ctx, []byte("c"))
			require.ErrorIs(t, err, ErrNotFound)
			vals, err := s.MultiGet(ctx, [][]byte{[]byte("a"), []byte("b"), []byte("c")})
			require.NoError(t, err)
			require.Equal(t, [][]byte{[]byte("1"), []byte("2"), nil}, vals)
			it, err := s.NewIterator(ctx, &IterOptions{LowerBound: []byte("a")})
			require.NoError(t, err)
			var keys []string
			for ok := it.First(); ok; ok = it.Next() {
				keys = append(keys, string(it.Key())+"="+string(it.Value()))
			}
			require.Equal(t, []string{"a=1", "b=2"}, keys)
			require.NoError(t, it.Close())

			// Each read was tagged with its API's activity (check-then-tag).
			var got []string
			for _, c := range full.recorded() {
				got = append(got, c.method+" "+c.req.IO.Activity.String())
			}
			want := []string{"Snapshot.Get Get", "Snapshot.Get Get", "Snapshot.MultiGet MultiGet", "Snapshot.NewIterator DBIterator"}
			if !batched {
				// The fallback loops the snapshot's Get, keeping the tag.
				want = []string{"Snapshot.Get Get", "Snapshot.Get Get",
					"Snapshot.Get MultiGet", "Snapshot.Get MultiGet", "Snapshot.Get MultiGet", "Snapshot.NewIterator DBIterator"}
			}
			require.Equal(t, want, got)

			// Another API's activity is refused before the driver.
			wrong := ioctx.WithReadOptions(ctx, ioctx.ReadOptions{Activity: ioctx.ActivityCompaction})
			_, err = s.Get(wrong, []byte("a"))
			require.ErrorIs(t, err, ErrInvalidArgument)

			require.NoError(t, s.Close())
			require.ErrorIs(t, s.Close(), ErrClosed)
			_, err = s.Get(ctx, []byte("a"))
			require.ErrorIs(t, err, ErrClosed)
			_, err = s.MultiGet(ctx, [][]byte{[]byte("a")})
			require.ErrorIs(t, err, ErrClosed)
			_, err = s.NewIterator(ctx, nil)
			require.ErrorIs(t, err, ErrClosed)
			require.Equal(t, 1, full.snapCloses)
		})
	}
}

// TestSnapshotConnDefaults: a Conn's snapshot merges the session's read
// defaults, as they were at NewSnapshot.
func TestSnapshotConnDefaults(t *testing.T) {
	ctx := context.Background()
	full := newFullConn()
	db := openFake(t, full)
	c, err := db.Conn(ioctx.WithReadOptions(ctx, ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityLow}))
	require.NoError(t, err)
	s, err := c.NewSnapshot(ctx)
	require.NoError(t, err)
	defer s.Close()
	c.SetReadOptions(ioctx.ReadOptions{})
	_, _ = s.Get(ctx, []byte("a"))
	calls := full.recorded()
	require.Equal(t, ioctx.PriorityLow, calls[len(calls)-1].req.IO.RateLimiterPriority)
}

// TestSnapshotIteratorOutlivesClose: the driver's snapshot is released when
// the snapshot and its last iterator are closed, never under an iterator.
func TestSnapshotIteratorOutlivesClose(t *testing.T) {
	ctx := context.Background()
	full := newFullConn()
	db := openFake(t, full)
	require.NoError(t, db.Put(ctx, []byte("a"), []byte("1")))
	s, err := db.NewSnapshot(ctx)
	require.NoError(t, err)
	it1, err := s.NewIterator(ctx, nil)
	require.NoError(t, err)
	it2, err := s.NewIterator(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.Zero(t, full.snapCloses, "iterators keep the driver's snapshot")
	require.True(t, it1.First())
	require.Equal(t, "a", string(it1.Key()))
	require.NoError(t, it1.Close())
	require.Zero(t, full.snapCloses)
	require.NoError(t, it2.Close())
	require.Equal(t, 1, full.snapCloses, "the last iterator released it")
}

// TestCloseReleasesSnapshots: DB.Close closes snapshots left open, after
// their iterators; openFake's cleanup checks the driver saw no violation.
func TestCloseReleasesSnapshots(t *testing.T) {
	ctx := context.Background()
	full := newFullConn()
	db := openFake(t, full)
	s1, err := db.NewSnapshot(ctx)
	require.NoError(t, err)
	s2, err := db.NewSnapshot(ctx)
	require.NoError(t, err)
	it, err := s2.NewIterator(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, s2.Close())
	require.NoError(t, db.Close())
	require.Equal(t, 2, full.snapCloses)
	require.Zero(t, full.openSnaps)
	require.ErrorIs(t, s1.Close(), ErrClosed)
	_, err = s1.Get(ctx, []byte("a"))
	require.ErrorIs(t, err, ErrClosed)
	require.False(t, it.First())
	require.ErrorIs(t, it.Error(), ErrClosed)
	require.Empty(t, full.violationList())
}
