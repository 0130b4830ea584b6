package sstable

import (
	"context"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/sstable/block"
)

// DataEnd returns where the table's data blocks end: the offset of the
// first block after them (filter, index, meta blocks and the footer follow).
// ApproximateOffsetOf returns offsets in [0, DataEnd()].
func (r *Reader) DataEnd() uint64 { return r.dataEnd }

// ApproximateOffsetOf returns the offset in the file of the data block that
// holds the first entry of key or, when there is none, the first entry
// after key (RocksDB's BlockBasedTable::ApproximateOffsetOf): 0 for a key at
// or before the table's first entry, DataEnd for a key after its last. The
// bytes of the data blocks wholly below key are thus its result, with an
// error of at most one block.
//
// It reads only the index (in a partitioned table, the top-level index,
// which the Reader keeps, and the one partition that locates key): the
// Reader's own or, with CacheIndexAndFilterBlocks, the cached one, read
// with env.IO on a miss and inserted into the cache when env.FillCache is
// set. It never reads a data block. key is not retained.
func (r *Reader) ApproximateOffsetOf(ctx context.Context, env ReadEnv, key []byte) (uint64, error) {
	s := appendSearchKey(make([]byte, 0, len(key)+base.TrailerLen), key, base.MaxSeqNum)
	part := r.partitionOf(s)
	if r.top != nil && part == r.top.len() {
		return r.dataEnd, nil
	}
	var scratch metaScratch
	var view indexTable
	x, hd, err := r.pinIndexFor(ctx, env.IO, part, &view, r.scratchFor(&env, &scratch))
	if err != nil {
		return 0, err
	}
	defer hd.Release()
	b := x.seekGE(s)
	if b < x.len() {
		return min(x.handle(b).Offset, r.dataEnd), nil
	}
	// After every entry of this index: in a partitioned table, where the
	// next partition's first block starts, which is the end of this one's
	// last block; after the table's last block, its data end.
	if x.len() == 0 || r.top == nil || part == r.top.len()-1 {
		return r.dataEnd, nil
	}
	h := x.handle(x.len() - 1)
	return min(h.Offset+h.Length+block.TrailerLen, r.dataEnd), nil
}
