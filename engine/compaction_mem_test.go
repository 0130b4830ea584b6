package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/memtable"
	"github.com/shaledb/shale/ioctx"
	"github.com/stretchr/testify/require"
)

// TestCompactionOutputsDropWriters pins that a compaction keeps no finished
// output's sstable.Writer until it is installed: a closed Writer still holds
// its table's index and filter partitions and block buffers, so a full
// compaction that kept one per output held memory that grew with the data
// (the bench's peak RSS at 4 GiB).
func TestCompactionOutputsDropWriters(t *testing.T) {
	for _, tc := range []struct {
		name        string
		partitioned bool
	}{
		{"whole index and filter", false},
		{"partitioned index and filters", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			opts := smallOptions(nil)
			opts.DisableAutoCompactions = true
			opts.PartitionIndexAndFilters = tc.partitioned
			opts.CacheIndexAndFilterBlocks = tc.partitioned
			d, _ := openTestDB(t, opts)
			// Values that do not compress, so the outputs are many.
			rng := rand.New(rand.NewPCG(1, 2))
			val := make([]byte, 100)
			// Two overlapping L0 tables, so the compaction is no trivial
			// move and writes several outputs of TargetFileSizeBase.
			for round := range 2 {
				for i := round; i < 2000; i += 2 {
					for j := range val {
						val[j] = byte(rng.Uint32())
					}
					require.NoError(t, d.Put(ctx, key(i), val))
				}
				require.NoError(t, d.Flush(ctx))
			}
			d.mu.Lock()
			c, busy := d.pickAndMarkLocked(&manualCompaction{level: 0})
			d.mu.Unlock()
			require.False(t, busy)
			require.NotNil(t, c)
			require.False(t, c.TrivialMove)
			defer func() {
				d.mu.Lock()
				d.unmarkLocked(c)
				d.mu.Unlock()
			}()

			outputs, err := d.compactFiles(ctx, c)
			require.NoError(t, err)
			defer outputs.abandon()
			require.Greater(t, len(outputs), 2)
			for i, out := range outputs {
				require.NotNil(t, out.meta, "output %d", i)
				require.Truef(t, out.w == nil, "output %d (%s) still holds its closed writer", i, out.fileNum)
			}
		})
	}
}

// TestFlushDropsWriter pins that a flush's table, like a compaction's
// outputs, no longer holds its closed sstable.Writer once finished: the
// flush keeps the tableWriter until its version edit is applied, and the
// closed Writer holds the table's index and filter partitions.
func TestFlushDropsWriter(t *testing.T) {
	for _, partitioned := range []bool{false, true} {
		t.Run(fmt.Sprintf("partitioned=%t", partitioned), func(t *testing.T) {
			ctx := context.Background()
			opts := smallOptions(nil)
			opts.PartitionIndexAndFilters = partitioned
			opts.CacheIndexAndFilterBlocks = partitioned
			d, _ := openTestDB(t, opts)
			mem := memtable.New(1 << 20)
			for i := range 1000 {
				require.NoError(t, mem.Add(base.SeqNum(i+1), base.KindSet, key(i), []byte("value")))
			}
			tw, err := d.flushMemTable(ctx, mem, ioctx.ActivityFlush, nil, nil)
			require.NoError(t, err)
			require.NotNil(t, tw)
			defer tw.abandon()
			require.NotNil(t, tw.meta)
			require.Truef(t, tw.w == nil, "the flushed table %s still holds its closed writer", tw.fileNum)
		})
	}
}
