package engine

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/shaledb/shale/driver"
	"github.com/stretchr/testify/require"
)

// TestProperties checks each property against Metrics or a direct count,
// through the façade.
func TestProperties(t *testing.T) {
	ctx := context.Background()
	db := driver.OpenDB(NewConnector(t.TempDir(), &Options{DisableAutoCompactions: true}))
	defer func() { require.NoError(t, db.Close()) }()
	prop := func(name string) string {
		t.Helper()
		v, err := db.Property(ctx, name)
		require.NoError(t, err, name)
		return v
	}
	num := func(name string) uint64 {
		t.Helper()
		n, err := strconv.ParseUint(prop(name), 10, 64)
		require.NoError(t, err, name)
		return n
	}
	put := func(from, to int) {
		for i := from; i < to; i++ {
			require.NoError(t, db.Put(ctx, fmt.Appendf(nil, "k%05d", i), []byte("value")))
		}
	}

	for _, name := range PropertyNames() {
		require.True(t, strings.HasPrefix(name, PropertyPrefix), name)
		prop(name) // every listed name answers
	}
	require.Zero(t, num(PropEstimateNumKeys))
	require.Zero(t, num(PropLiveSSTFilesSize))

	put(0, 1000)
	require.Equal(t, uint64(1000), num(PropNumEntriesActiveMemTable))
	require.Zero(t, num(PropNumEntriesImmMemTables))
	require.Equal(t, uint64(1000), num(PropEstimateNumKeys))
	m, err := db.Metrics(ctx)
	require.NoError(t, err)
	require.Equal(t, m.MemTables.Bytes, num(PropCurSizeAllMemTables))
	require.Equal(t, num(PropCurSizeAllMemTables), num(PropSizeAllMemTables))

	require.NoError(t, db.Flush(ctx))
	put(500, 1500) // 500 overwrites
	require.NoError(t, db.Flush(ctx))
	for i := range 100 {
		require.NoError(t, db.Delete(ctx, fmt.Appendf(nil, "k%05d", i)))
	}
	require.NoError(t, db.Flush(ctx))
	// Tables: 1000 + 1000 entries, 100 deletions: 2100 - 2*100.
	require.Equal(t, uint64(1900), num(PropEstimateNumKeys))
	require.Equal(t, uint64(3), num(PropNumFilesAtLevelPrefix+"0"))
	require.Zero(t, num(PropNumEntriesActiveMemTable))

	m, err = db.Metrics(ctx)
	require.NoError(t, err)
	for _, l := range m.Levels {
		require.Equal(t, uint64(l.Tables), num(PropNumFilesAtLevelPrefix+strconv.Itoa(l.Level)))
	}
	total := m.Total().Bytes
	require.Equal(t, total, num(PropLiveSSTFilesSize))
	require.Equal(t, total, num(PropTotalSSTFilesSize), "no reader holds an old version")
	// Newest first, the deletions (k0-k99) and the overwrites (k500-k1499)
	// count; the first table overlaps both and does not.
	live := num(PropEstimateLiveDataSize)
	require.Positive(t, live)
	require.Less(t, live, total)
	require.Equal(t, m.Compactions.PendingBytes, num(PropEstimatePendingCompactionBytes))
	require.Equal(t, uint64(m.Compactions.InProgress), num(PropNumRunningCompactions))
	require.Zero(t, num(PropNumRunningFlushes))
	require.Zero(t, num(PropBackgroundErrors))
	require.Contains(t, prop(PropLevelStats), "Level Files Size(MB)")
	require.Contains(t, prop(PropLevelStats), "\n  0        3 ")
	require.Contains(t, prop(PropStats), "level | tables")

	// An iterator holds the version: after a compaction, total counts the
	// tables it replaced while live counts the new ones, and the live data
	// estimate is the one compacted table.
	it, err := db.NewIterator(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, db.Compact(ctx, nil, nil))
	m, err = db.Metrics(ctx)
	require.NoError(t, err)
	require.Zero(t, num(PropNumFilesAtLevelPrefix+"0"))
	require.Equal(t, m.Total().Bytes, num(PropLiveSSTFilesSize))
	require.Equal(t, m.Total().Bytes, num(PropEstimateLiveDataSize))
	require.Equal(t, m.Total().Bytes+total, num(PropTotalSSTFilesSize))
	require.NoError(t, it.Close())
	require.Equal(t, uint64(1400), num(PropEstimateNumKeys), "compaction dropped the overwritten and deleted")

	for _, bad := range []string{"shale.nope", "rocksdb.estimate-num-keys", PropNumFilesAtLevelPrefix + "7",
		PropNumFilesAtLevelPrefix + "-1", PropNumFilesAtLevelPrefix + "01", PropNumFilesAtLevelPrefix, ""} {
		_, err := db.Property(ctx, bad)
		require.ErrorIs(t, err, driver.ErrNotFound, bad)
	}
}
