package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// TestComparerMergeIngestSecondary runs the features main gained beside the
// comparer under the reverse bytewise order, against a model sorted alike:
// merge operands (stringappend) resolved by Get, MultiGet and scans from
// memtables, tables and compactions; Ingest of TableWriter tables written
// in the database's order (with a range deletion), and refusals of a table
// written bytewise and of keys added in bytewise order; and a secondary
// that follows the primary (WAL replay and CatchUp), a checkpoint of it
// that records the comparer, and a secondary opened with the wrong
// comparer, which is refused.
func TestComparerMergeIngestSecondary(t *testing.T) {
	ctx := context.Background()
	cmp := ReverseBytewiseComparer
	rng := rand.New(rand.NewPCG(11, 3))
	key := func(rng *rand.Rand) []byte { return fmt.Appendf(nil, "k%03d", rng.IntN(600)) }
	dir := t.TempDir()
	opts := func() *Options {
		o := smallOptions(vfs.Default)
		o.Comparer = cmp
		o.DisableAutoCompactions = true
		op, err := ParseMergeOperator("stringappend")
		require.NoError(t, err)
		o.MergeOperator = op
		return o
	}
	db := driver.OpenDB(NewConnector(dir, opts()))
	defer func() { _ = db.Close() }()
	m := cmpModel{cmp: cmp, m: map[string]string{}}
	write := func(n int) {
		for i := range n {
			k := key(rng)
			switch rng.IntN(6) {
			case 0:
				require.NoError(t, db.Delete(ctx, k))
				delete(m.m, string(k))
			case 1, 2:
				op := fmt.Sprintf("m%d", i)
				require.NoError(t, db.Merge(ctx, k, []byte(op)))
				if v, ok := m.m[string(k)]; ok {
					m.m[string(k)] = v + "," + op
				} else {
					m.m[string(k)] = op
				}
			default:
				v := fmt.Sprintf("v%d", i)
				require.NoError(t, db.Put(ctx, k, []byte(v)))
				m.m[string(k)] = v
			}
		}
	}

	write(300)
	checkOrder(t, "merges in the memtable", db, m, rng, key)
	require.NoError(t, db.Flush(ctx))
	write(300)
	checkOrder(t, "merges over a table", db, m, rng, key)
	require.NoError(t, db.Flush(ctx))
	require.NoError(t, db.SyncWAL(ctx))

	// A secondary opened now replays nothing but the MANIFEST; one with the
	// wrong comparer is refused, naming both.
	secOpts := opts()
	secOpts.Secondary = true
	sec := driver.OpenDB(NewConnector(dir, secOpts))
	defer func() { _ = sec.Close() }()
	checkOrder(t, "secondary", sec, m, rng, key)
	bad := opts()
	bad.Secondary, bad.Comparer = true, nil
	badSec := driver.OpenDB(NewConnector(dir, bad))
	_, err := badSec.Get(ctx, key(rng))
	require.ErrorIs(t, err, driver.ErrInvalidArgument)
	require.ErrorContains(t, err, `"rocksdb.ReverseBytewiseComparator", but it is opened with comparer "leveldb.BytewiseComparator"`)
	_ = badSec.Close()

	require.NoError(t, db.Compact(ctx, nil, nil))
	write(200)
	checkOrder(t, "merges over compacted tables", db, m, rng, key)

	// Two tables for Ingest, in the database's order, each a run of keys
	// that does not overlap the other's; the first deletes a range of the
	// database's older keys (not its own points).
	extDir := t.TempDir()
	writeTable := func(name string, o *Options, keys []string, del [2]string) string {
		path := filepath.Join(extDir, name)
		tw, err := NewTableWriter(path, o)
		require.NoError(t, err)
		if del[0] != "" {
			require.NoError(t, tw.DeleteRange([]byte(del[0]), []byte(del[1])))
		}
		for _, k := range keys {
			require.NoError(t, tw.Set([]byte(k), []byte("ing"+k)))
		}
		_, err = tw.Finish()
		require.NoError(t, err)
		return path
	}
	var hiKeys, loKeys []string // k599..k300 and k299..k000 in reverse order
	for i := 599; i >= 0; i -= 1 + rng.IntN(7) {
		if i >= 300 {
			hiKeys = append(hiKeys, fmt.Sprintf("k%03d", i))
		} else {
			loKeys = append(loKeys, fmt.Sprintf("k%03d", i))
		}
	}
	require.True(t, slices.IsSortedFunc(hiKeys, func(a, b string) int { return cmp.Compare([]byte(a), []byte(b)) }))
	del := [2]string{"k450", "k400"} // k450 down to k401 in reverse order
	p1 := writeTable("hi.sst", opts(), hiKeys, del)
	p2 := writeTable("lo.sst", opts(), loKeys, [2]string{})

	// Refused: a table written bytewise, and keys in bytewise order.
	bytewise := opts()
	bytewise.Comparer = nil
	slices.Reverse(loKeys)
	pb := writeTable("bytewise.sst", bytewise, loKeys, [2]string{})
	err = db.Ingest(ctx, []string{pb})
	require.ErrorIs(t, err, driver.ErrInvalidArgument)
	require.ErrorContains(t, err, "rocksdb.ReverseBytewiseComparator")
	require.ErrorContains(t, err, "leveldb.BytewiseComparator")
	tw, err := NewTableWriter(filepath.Join(extDir, "unordered.sst"), opts())
	require.NoError(t, err)
	require.NoError(t, tw.Set([]byte("k001"), nil))
	require.ErrorIs(t, tw.Set([]byte("k002"), nil), driver.ErrInvalidArgument)
	require.ErrorIs(t, tw.DeleteRange([]byte("k001"), []byte("k002")), driver.ErrInvalidArgument, "empty in reverse order")
	require.NoError(t, tw.Abort())
	// Overlapping in reverse order (hi.sst spans k599..k300): refused.
	pOver := writeTable("over.sst", opts(), []string{"k350", "k340"}, [2]string{})
	require.ErrorIs(t, db.Ingest(ctx, []string{p1, pOver}), driver.ErrInvalidArgument)
	checkOrder(t, "after refused ingests", db, m, rng, key)

	require.NoError(t, db.Ingest(ctx, []string{p2, p1}))
	m.deleteRange([]byte(del[0]), []byte(del[1]))
	for _, k := range append(slices.Clone(hiKeys), loKeys...) {
		m.m[k] = "ing" + k
	}
	checkOrder(t, "ingested", db, m, rng, key)
	write(200) // merges onto ingested keys, in the memtable
	checkOrder(t, "merges over ingested tables", db, m, rng, key)
	require.NoError(t, db.SyncWAL(ctx))

	// The secondary catches up: the ingest's MANIFEST edit and the WAL.
	require.NoError(t, sec.CatchUp(ctx))
	checkOrder(t, "secondary caught up", sec, m, rng, key)
	require.NoError(t, db.Flush(ctx))
	require.NoError(t, db.Compact(ctx, nil, nil))
	checkOrder(t, "compacted after ingest", db, m, rng, key)
	require.NoError(t, sec.CatchUp(ctx))
	checkOrder(t, "secondary after a compaction", sec, m, rng, key)

	// A checkpoint of the secondary writes a MANIFEST of its own: it
	// records the comparer.
	cp := filepath.Join(t.TempDir(), "cp")
	require.NoError(t, sec.Checkpoint(ctx, cp))
	cpdb := driver.OpenDB(NewConnector(cp, opts()))
	checkOrder(t, "checkpoint of the secondary", cpdb, m, rng, key)
	require.NoError(t, cpdb.Close())
	cpBytewise := opts()
	cpBytewise.Comparer = nil
	cpdb = driver.OpenDB(NewConnector(cp, cpBytewise))
	_, err = cpdb.Get(ctx, key(rng))
	require.ErrorIs(t, err, driver.ErrInvalidArgument, "the secondary's checkpoint opened bytewise")
	_ = cpdb.Close()
}
