package readpath

import (
	"context"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// TestCompactionIterHoldsOneTable pins NewCompactionIter's memory bound: a
// forward scan over a level's tables holds at most one of them (its
// reference, and with it its table iterator and readahead buffer), and
// none once the scan is exhausted; Next and Prev then return nil until a
// First repositions it, which reopens the first table. A DB iterator's
// level keeps its last table open at the end, for a Prev or a seek back.
func TestCompactionIterHoldsOneTable(t *testing.T) {
	files := []testFile{
		{level: 1, kvs: []string{"a@20=a20", "c@21=c21"}},
		{level: 1, kvs: []string{"e@22=e22", "g@23=g23"}},
		{level: 1, kvs: []string{"h@24=h24"}},
	}
	v, src := buildHandLSM(t, vfs.NewMem(), files, nil, sstable.WriterOptions{})
	ctx := context.Background()
	it := NewCompactionIter(ctx, readEnv(), src, 1, v.Version.Levels[1])
	require.Zero(t, src.outstanding.Load(), "creating the iterator opens nothing")

	scan := func() []string {
		var got []string
		for kv := it.First(); kv != nil; kv = it.Next() {
			require.LessOrEqual(t, src.outstanding.Load(), int64(1), "tables held during the scan")
			got = append(got, kv.K.String())
		}
		require.NoError(t, it.Error())
		return got
	}
	want := []string{
		base.MakeInternalKey([]byte("a"), 20, base.KindSet).String(),
		base.MakeInternalKey([]byte("c"), 21, base.KindSet).String(),
		base.MakeInternalKey([]byte("e"), 22, base.KindSet).String(),
		base.MakeInternalKey([]byte("g"), 23, base.KindSet).String(),
		base.MakeInternalKey([]byte("h"), 24, base.KindSet).String(),
	}
	require.Equal(t, want, scan())
	require.Zero(t, src.outstanding.Load(), "tables held once the scan is exhausted")
	require.Nil(t, it.Next())
	require.Nil(t, it.Prev())
	require.Zero(t, src.outstanding.Load())
	// A First after the end scans again from the first table.
	require.Equal(t, want, scan())
	require.NoError(t, it.Close())
	require.Zero(t, src.outstanding.Load())
}
