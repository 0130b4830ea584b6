package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// TestOptimizeFiltersForHits checks that with OptimizeFiltersForHits the
// tables compacted into the last level have no bloom filter while a flushed
// L0 table keeps its own, that without it every table has one, and that
// Gets of present and absent keys answer the same either way; absent keys
// in L6's range are then ruled out by its index and data blocks, not by a
// filter.
func TestOptimizeFiltersForHits(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("on=%t", on), func(t *testing.T) {
			ctx := context.Background()
			st := statistics.New(statistics.LevelAll)
			opts := smallOptions(nil)
			opts.OptimizeFiltersForHits = on
			opts.Statistics = st
			db, fs := openTestDB(t, opts)
			for i := range 3000 {
				require.NoError(t, db.Put(ctx, fmt.Appendf(nil, "key%05d", 2*i), fmt.Appendf(nil, "value%d", i)))
			}
			require.NoError(t, db.Compact(ctx, nil, nil))
			require.NoError(t, db.Put(ctx, []byte("key99999"), []byte("newest")))
			require.NoError(t, db.Flush(ctx))

			rs := mustReadState(t, db)
			levels := rs.current.Levels
			rs.unref()
			require.NotEmpty(t, levels[manifest.NumLevels-1])
			require.NotEmpty(t, levels[0])
			for level, files := range levels {
				for _, meta := range files {
					size := tableFilterSize(t, fs, meta.FileNum)
					if on && level == manifest.NumLevels-1 {
						require.Zero(t, size, "L%d table %s", level, meta.FileNum)
					} else {
						require.Positive(t, size, "L%d table %s", level, meta.FileNum)
					}
				}
			}

			useful := st.TickerCount(statistics.BloomFilterUseful)
			for i := range 3000 {
				v, err := db.Get(ctx, fmt.Appendf(nil, "key%05d", 2*i))
				require.NoError(t, err)
				require.Equal(t, fmt.Appendf(nil, "value%d", i), v)
				_, err = db.Get(ctx, fmt.Appendf(nil, "key%05d", 2*i+1))
				require.ErrorIs(t, err, ErrNotFound)
			}
			v, err := db.Get(ctx, []byte("key99999"))
			require.NoError(t, err)
			require.Equal(t, []byte("newest"), v)
			// The absent keys lie within L6's tables and outside L0's:
			// only L6's filters could rule them out.
			if on {
				require.Equal(t, useful, st.TickerCount(statistics.BloomFilterUseful))
			} else {
				require.Greater(t, st.TickerCount(statistics.BloomFilterUseful), useful+2900)
			}
		})
	}
}

// tableFilterSize returns the size of table n's bloom filter, from its
// properties.
func tableFilterSize(t *testing.T, fs vfs.FS, n manifest.FileNum) uint64 {
	t.Helper()
	f, err := fileio.Open(fs, manifest.TableFileName("/db", n), fileio.Options{})
	require.NoError(t, err)
	r, err := sstable.Open(context.Background(), f, sstable.ReadEnv{VerifyChecksums: true}, sstable.ReaderOptions{})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	return r.Properties().FilterSize
}
