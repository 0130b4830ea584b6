package engine

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadStateDuringFlushInstall builds a read state in the window where a
// flush's table is already current but its memtable has not left d.mu.imm
// (a write switching memtables can), and scans through it: the memtable's
// merge operand must show once. Listing the memtable and its table both
// returned "m1,m1" (the metamorphic history
// merge-operand-doubled-after-flush-install).
func TestReadStateDuringFlushInstall(t *testing.T) {
	ctx := context.Background()
	opts := smallOptions(nil)
	opts.MergeOperator = StringAppendForTest()
	db, _ := openTestDB(t, opts)
	require.NoError(t, db.mergeImpl(ctx, writeOptions{}, []byte("k"), []byte("m1")))

	var seen []string
	hook := func(d *database, u *versionUpdate) {
		if d != db || u.flushed == nil {
			return
		}
		d.mu.Lock()
		d.updateReadStateLocked()
		d.mu.Unlock()
		it, err := d.NewIterator(ctx, nil)
		require.NoError(t, err)
		for ok := it.First(); ok; ok = it.Next() {
			seen = append(seen, string(it.Key())+"="+string(it.Value()))
		}
		require.NoError(t, it.Close())
	}
	installAppliedHook.Store(&hook)
	t.Cleanup(func() { installAppliedHook.Store(nil) })
	require.NoError(t, db.Flush(ctx))
	installAppliedHook.Store(nil)
	require.Equal(t, []string{"k=m1"}, seen)
}
