package sstable

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/bloom"
	"github.com/shaledb/shale/internal/cache"
	"github.com/stretchr/testify/require"
)

// TestMayContainKeyPartitioned: MayContain (by hash alone) rules nothing out
// in a partitioned table, so a caller that skips tables on it (an
// optimistic transaction's conflict check, readpath.LatestSeqNum) reads a
// data block of every partitioned table it looks at. MayContainKey asks
// the one filter partition that can hold the key: never false for a key of
// the table, false for nearly every absent key, and false for any key above
// the table's last entry; with the partitions in the block cache, only once
// the partition is cached.
func TestMayContainKeyPartitioned(t *testing.T) {
	es := genEntries(rand.New(rand.NewPCG(11, 12)), 800, 20)
	data := buildTable(t, partOpts, es)
	requirePartitioned(t, data, 5)
	absent := func(i int) []byte { return fmt.Appendf(nil, "key%06d", 3*i+2) } // genEntries skips these

	for _, cfg := range []openConfig{{}, {cache: cache.New(1 << 20), cacheMeta: true}} {
		t.Run(cfg.String(), func(t *testing.T) {
			r := openTable(t, data, cfg)
			for _, e := range es {
				require.True(t, r.MayContainKey(e.key.UserKey, bloom.Hash(e.key.UserKey)), "key %s", e.key)
			}
			// Above the last partition's separator (the successor of the
			// last key, "l"): no filter needed.
			require.False(t, r.MayContainKey([]byte("zzz"), bloom.Hash([]byte("zzz"))), "above the table")

			count := func() (byHash, byKey int) {
				for i := range 300 {
					k := absent(i)
					if !r.MayContain(bloom.Hash(k)) {
						byHash++
					}
					if !r.MayContainKey(k, bloom.Hash(k)) {
						byKey++
					}
				}
				return byHash, byKey
			}
			byHash, byKey := count()
			require.Zero(t, byHash, "MayContain cannot pick a partition")
			if cfg.cacheMeta {
				require.Zero(t, byKey, "no partition is cached yet")
				// Gets load the partitions into the cache.
				for i := range 300 {
					_, _, _, pin, err := r.Get(context.Background(), verifyEnv, absent(i), base.MaxSeqNum)
					require.NoError(t, err)
					pin.Release()
				}
				_, byKey = count()
			}
			require.Greater(t, byKey, 270, "10 bits per key rule out about 99%% of absent keys")
		})
	}
}
