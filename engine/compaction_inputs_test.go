package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/compact"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/merging"
	"github.com/shaledb/shale/internal/readpath"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/stretchr/testify/require"
)

// countingTables is a TableSource that counts the references its callers
// hold: every table iterator of a compaction holds one, with its readahead
// buffer and pinned blocks, while it is open.
type countingTables struct {
	readpath.TableSource
	open, peak, acquires int
}

func (c *countingTables) Acquire(ctx context.Context, env sstable.ReadEnv, meta *manifest.FileMetadata, level int) (readpath.TableRef, error) {
	ref, err := c.TableSource.Acquire(ctx, env, meta, level)
	if err != nil {
		return ref, err
	}
	c.acquires++
	c.open++
	c.peak = max(c.peak, c.open)
	return readpath.NewTableRef(ref.Reader, countedRef{c, ref}), nil
}

type countedRef struct {
	c   *countingTables
	ref readpath.TableRef
}

func (r countedRef) Release() {
	r.c.open--
	r.ref.Release()
}

// TestCompactionInputsOpenOneTablePerLevel pins that a compaction reads
// each input level >= 1 through one table at a time and lets go of each
// input table once its scan is done: at most one table per L0 input and
// one per other input level is open at once, however many files the
// compaction reads, and none once the merge is exhausted. It used to open
// every input at the start and keep them all, each table iterator's
// readahead buffer grown to 256 KiB by its scan, until the compaction
// ended: a full compaction's memory grew with the number of its inputs.
// The merge still yields every entry of every input.
func TestCompactionInputsOpenOneTablePerLevel(t *testing.T) {
	for _, tc := range []struct {
		name string
		// l0 is the number of L0 tables over the compacted bottom level;
		// 0 compacts the bottom level into itself.
		l0 int
	}{
		{"L0 into the bottom level", 2},
		{"bottom level in place", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			opts := smallOptions(nil)
			opts.DisableAutoCompactions = true
			opts.TargetFileSizeBase = 8 << 10
			d, _ := openTestDB(t, opts)
			const n = 4000
			for i := range n {
				require.NoError(t, d.Put(ctx, key(i), []byte(fmt.Sprintf("value %d, long enough to fill tables", i))))
			}
			require.NoError(t, d.Compact(ctx, nil, nil))
			for round := range tc.l0 {
				for i := round; i < n; i += 7 {
					require.NoError(t, d.Put(ctx, key(i), []byte(fmt.Sprintf("round %d", round))))
				}
				require.NoError(t, d.Flush(ctx))
			}
			level := 0
			if tc.l0 == 0 {
				level = manifest.NumLevels - 1
			}
			d.mu.Lock()
			c, busy := d.pickAndMarkLocked(&manualCompaction{level: level})
			d.mu.Unlock()
			require.False(t, busy)
			require.NotNil(t, c)
			defer func() {
				d.mu.Lock()
				d.unmarkLocked(c)
				d.mu.Unlock()
			}()
			inputs := len(c.Inputs[0]) + len(c.Inputs[1])
			require.Greater(t, inputs, 8, "the compaction must read many tables")
			runs := 1 // the bottom level
			if tc.l0 > 0 {
				require.Len(t, c.Inputs[0], tc.l0)
				runs = tc.l0 + 1
			}

			src := &countingTables{TableSource: d.tables}
			iters, _, err := compactionInputs(ctx, c, src)
			require.NoError(t, err)
			// No input has range tombstones: none is acquired to read them.
			require.Zero(t, src.acquires, "tables acquired before the merge")
			m := merging.NewIter(iters...)
			var got []string
			for kv := m.First(); kv != nil; kv = m.Next() {
				got = append(got, kv.K.String())
			}
			require.NoError(t, m.Error())
			require.LessOrEqual(t, src.peak, runs, "tables open at once, of %d inputs", inputs)
			require.Zero(t, src.open, "tables still open once the merge is exhausted")
			require.NoError(t, m.Close())
			require.Equal(t, wantInputEntries(t, d, c), got)
		})
	}
}

// wantInputEntries lists every entry of c's input tables, merged, through
// one table iterator per file.
func wantInputEntries(t *testing.T, d *database, c *compact.Compaction) []string {
	ctx := context.Background()
	var iters []base.InternalIterator
	for i, files := range c.Inputs {
		level := c.Level
		if i == 1 {
			level = c.OutputLevel
		}
		for _, f := range files {
			ref, err := d.tables.Acquire(ctx, compactionReadEnv, f, level)
			require.NoError(t, err)
			defer ref.Release()
			it, err := ref.Reader.NewIter(ctx, compactionReadEnv, nil, nil)
			require.NoError(t, err)
			iters = append(iters, it)
		}
	}
	m := merging.NewIter(iters...)
	defer func() { require.NoError(t, m.Close()) }()
	var want []string
	for kv := m.First(); kv != nil; kv = m.Next() {
		want = append(want, kv.K.String())
	}
	require.NoError(t, m.Error())
	return want
}
