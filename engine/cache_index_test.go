package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/bloom"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

// TestCacheIndexAndFilterBlocksDSN checks the DSN key: parsed into
// Options, printed only when set, a bad value named.
func TestCacheIndexAndFilterBlocksDSN(t *testing.T) {
	for _, tc := range []struct {
		dsn  string
		want bool
		str  string
	}{
		{"/db", false, "/db"},
		{"/db?cache_index_and_filter_blocks=false", false, "/db"},
		{"/db?cache_index_and_filter_blocks=true", true, "/db?cache_index_and_filter_blocks=true"},
		{"/db?cache_index_and_filter_blocks=1&block_cache_size=16MiB", true,
			"/db?block_cache_size=16MiB&cache_index_and_filter_blocks=true"},
	} {
		dir, c, err := ParseDSN(tc.dsn)
		require.NoError(t, err, tc.dsn)
		require.Equal(t, tc.want, c.CacheIndexAndFilterBlocks, tc.dsn)
		require.Equal(t, tc.str, FormatDSN(dir, c), tc.dsn)
		_, again, err := ParseDSN(FormatDSN(dir, c))
		require.NoError(t, err)
		require.Equal(t, c, again)
	}
	_, _, err := ParseDSN("/db?cache_index_and_filter_blocks=maybe")
	require.Error(t, err)
	require.Contains(t, err.Error(), "cache_index_and_filter_blocks")
	require.ErrorIs(t, err, ErrInvalidArgument)
}

// TestTableCacheIndexAndFilterInBlockCache checks that the table cache opens
// readers with the option: a table's index and filter then go to the block
// cache at open, and Gets through the reader still find every key.
func TestTableCacheIndexAndFilterInBlockCache(t *testing.T) {
	ctx := context.Background()
	db, fs := openTestDB(t, nil)
	for i := range 200 {
		require.NoError(t, db.Put(ctx, fmt.Appendf(nil, "key%04d", i), []byte("value")))
	}
	require.NoError(t, db.Flush(ctx))
	rs := mustReadState(t, db)
	meta := rs.current.Levels[0][0]
	rs.unref()

	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("on=%t", on), func(t *testing.T) {
			c := cache.New(1 << 20)
			tc := newTableCache(fs, "/db", fileio.Options{}, c, c.NewID(), nil, 0)
			tc.cacheIndexAndFilterBlocks = on
			defer tc.close()
			ref, err := tc.Acquire(ctx, openReadEnv, meta, 0)
			require.NoError(t, err)
			defer ref.Release()
			if on {
				require.Equal(t, 2, c.Len(), "the index and the filter")
			} else {
				require.Zero(t, c.Len())
			}
			for i := range 200 {
				key := fmt.Appendf(nil, "key%04d", i)
				_, _, found, pin, err := ref.Reader.GetHash(ctx, openReadEnv, key, bloom.Hash(key), base.MaxSeqNum)
				require.NoError(t, err)
				require.True(t, found, "%s", key)
				pin.Release()
			}
		})
	}
}

// TestCacheIndexAndFilterBlocksOpen: the DSN key reaches the tables a
// database opens: with it, a reopened database's Gets look its index and
// filter up in the block cache (BlockCacheIndexHit); without it, never.
func TestCacheIndexAndFilterBlocksOpen(t *testing.T) {
	ctx := context.Background()
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("on=%t", on), func(t *testing.T) {
			dir := t.TempDir()
			dsn := fmt.Sprintf("%s?cache_index_and_filter_blocks=%t&stats_level=all", dir, on)
			_, opts, err := ParseDSN(dsn)
			require.NoError(t, err)
			require.Equal(t, on, opts.CacheIndexAndFilterBlocks)
			db, err := openDatabase(dir, opts)
			require.NoError(t, err)
			for i := range 200 {
				require.NoError(t, db.Put(ctx, fmt.Appendf(nil, "key%04d", i), []byte("value")))
			}
			require.NoError(t, db.Flush(ctx))
			require.NoError(t, db.Close())

			db, err = openDatabase(dir, opts)
			require.NoError(t, err)
			defer func() { require.NoError(t, db.Close()) }()
			for i := range 200 {
				_, err := db.Get(ctx, fmt.Appendf(nil, "key%04d", i))
				require.NoError(t, err)
			}
			st := db.Statistics()
			for _, tk := range []statistics.Ticker{statistics.BlockCacheIndexHit, statistics.BlockCacheFilterHit} {
				if on {
					require.NotZero(t, st.TickerCount(tk), "%s: lookups go through the block cache", tk)
				} else {
					require.Zero(t, st.TickerCount(tk), "%s", tk)
				}
			}
		})
	}
}
