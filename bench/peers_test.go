package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPebbleBlockBudget: after the load and full compaction, Pebble's
// blocks hold no more than the configured cache, however much of its
// enlarged cache its memtables leave free. Without the settled reservation
// they held all the data (38 MiB of blocks in a 32 MiB run).
func TestPebbleBlockBudget(t *testing.T) {
	const (
		keys      = 20000
		valueSize = 256
		budget    = 1 << 20
	)
	// Memtables far larger than the data, as in the harness's main run:
	// Pebble's never grow to their full size.
	cfg := storeConfig{cacheSize: budget, memtableSize: 64 << 20, bloomBits: 10}
	s, err := openPebble(t.TempDir(), cfg)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.close()) }()
	var kbuf [keySize]byte
	for k := range keys {
		require.NoError(t, s.put(makeKey(kbuf[:], k, 0), makeValue(k, valueSize)))
	}
	require.NoError(t, s.compact())
	// Read everything twice: 5 MiB of blocks pass through the cache.
	for range 2 {
		for k := range keys {
			_, found, err := s.get(makeKey(kbuf[:], k, 0))
			require.NoError(t, err)
			require.True(t, found)
		}
	}
	size := s.db.Metrics().BlockCache.Size
	// Pebble evicts once a shard is over its share, so it may overshoot by
	// about a block per shard.
	require.LessOrEqual(t, size, int64(budget)*103/100, "Pebble's blocks hold %d bytes of a %d-byte budget", size, budget)
	require.Greater(t, size, int64(budget/2), "Pebble's blocks should fill most of their budget")
}
