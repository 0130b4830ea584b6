package sstable

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/cache"
	"github.com/stretchr/testify/require"
)

// TestPartitionErrorMidIteration: with the partitions in the block cache,
// Open loads none of them, so a corrupt index or filter partition is found
// by the read that first needs it. An iterator that reaches a corrupt index
// partition, in either direction, stops with the error in Error and Close,
// never as a silent end of the table; a MultiGet whose keys reach it fails.
func TestPartitionErrorMidIteration(t *testing.T) {
	ctx := context.Background()
	es := genEntries(rand.New(rand.NewPCG(81, 82)), 600, 20)
	data := buildTable(t, partOpts, es)
	probe := requirePartitioned(t, data, 5)
	h := probe.top.x.handles[3]
	bad := bytes.Clone(data)
	bad[h.Offset+h.Length/2] ^= 0x10
	requireCorrupt := func(t *testing.T, err error, what string) {
		t.Helper()
		require.Error(t, err, what)
		require.True(t, base.IsCorruption(err), "%s: %v", what, err)
		require.Contains(t, err.Error(), "index partition 3", what)
	}
	for _, backward := range []bool{false, true} {
		r := openTable(t, bad, openConfig{cache: cache.New(1 << 20), cacheMeta: true})
		it, err := r.NewIter(ctx, verifyEnv, nil, nil)
		require.NoError(t, err)
		got, err := scan(it, backward)
		requireCorrupt(t, err, "scan")
		require.Less(t, len(got), len(es))
		require.Nil(t, it.Next(), "a failed iterator stays failed")
		require.Nil(t, it.First())
		requireCorrupt(t, it.Close(), "Close")
	}

	// A seek into partition 2's last block, then Next across the cut.
	r := openTable(t, bad, openConfig{cache: cache.New(1 << 20), cacheMeta: true})
	it, err := r.NewIter(ctx, verifyEnv, nil, nil)
	require.NoError(t, err)
	last2 := sepUserKey(&probe.parts[2], probe.parts[2].len()-1)
	kv := it.SeekGE(keyOfPartition(t, probe, 2))
	for kv != nil && bytes.Compare(kv.K.UserKey, last2) <= 0 {
		kv = it.Next()
	}
	require.Nil(t, kv)
	requireCorrupt(t, it.Error(), "Next into the partition")
	requireCorrupt(t, it.Close(), "Close")

	requireCorrupt(t, r.MultiGet(ctx, verifyEnv, multiGetKeys(es, base.MaxSeqNum)), "MultiGet")
}
