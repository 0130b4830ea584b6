package sstable

import (
	"context"
	"strconv"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/sstable/block"
)

// This file reads partitioned indexes and filters (FormatVersionPartitioned;
// see "Partitioned index and filters" in the package doc).

// topIndex is the decoded top-level index of a partitioned table. It is
// small (one entry per partition: about 60 bytes per 4 KiB partition) and
// lives as long as the Reader, whatever CacheIndexAndFilterBlocks says
// (RocksDB's pin_top_level_index_and_filter).
type topIndex struct {
	// x searches the partitions: its separators are the partitions' last
	// separators, its handles the index partitions' handles. x.seekGE(s)
	// is the partition whose data blocks can hold the first entry >= s.
	x indexTable
	// filters[p] is filter partition p's handle; nil when the table has
	// no filter.
	filters []block.Handle
}

// decodeTopIndex decodes a top-level index block (after its trailer was
// checked and removed). An empty block, a value that is not one or two
// handles, or entries that disagree on whether there is a filter handle are
// errors marked base.ErrCorruption. As for an index block, the order of the
// keys is Check's to verify.
func decodeTopIndex(data []byte) (*topIndex, error) {
	t := &topIndex{}
	buf, err := encodeIndexTableWith(data, nil, true, func(i int, v []byte) (block.Handle, error) {
		h, fh, hasFilter, err := DecodeTopIndexValue(v)
		if err != nil {
			return block.Handle{}, err
		}
		if had := len(t.filters) > 0; i > 0 && hasFilter != had {
			return block.Handle{}, base.CorruptionErrorf(
				"top-level entry %d has a filter handle: %t, but entry 0 has one: %t", i, hasFilter, had)
		}
		if hasFilter {
			t.filters = append(t.filters, fh)
		}
		return h, nil
	})
	if err != nil {
		return nil, err
	}
	t.x = viewIndexTable(buf)
	if t.x.len() == 0 {
		return nil, base.CorruptionErrorf("top-level index has no partitions")
	}
	return t, nil
}

// DecodeTopIndexValue decodes the value of a top-level index entry (see
// "Partitioned index and filters" in the package doc): the index
// partition's handle, and the filter partition's when hasFilter. A value
// that is not one or two handles is an error marked base.ErrCorruption.
// Tools that walk a table's blocks themselves (shale sst dump) use it.
func DecodeTopIndexValue(v []byte) (index, filter block.Handle, hasFilter bool, err error) {
	index, n, err := block.DecodeHandle(v)
	if err != nil {
		return block.Handle{}, block.Handle{}, false, err
	}
	if n == len(v) {
		return index, block.Handle{}, false, nil
	}
	if filter, err = decodeHandleExact(v[n:]); err != nil {
		return block.Handle{}, block.Handle{}, false, err
	}
	return index, filter, true, nil
}

// len returns the number of partitions.
func (t *topIndex) len() int { return t.x.len() }

// partName names partition p of the index or the filter in errors: "index
// partition 3".
func partName(what string, p int) string { return what + " partition " + strconv.Itoa(p) }

// openPartitioned reads the top-level index at the footer's index handle and,
// unless the partitions live in the block cache, every partition, verifying
// each block. With the cache, partitions are loaded when a read needs them:
// reading all of them into a cache smaller than they are would only evict
// each other.
func (r *Reader) openPartitioned(ctx context.Context, env ReadEnv, limit uint64) error {
	data, err := r.readMetaBlock(ctx, env, "top-level index", r.footer.Index, limit)
	if err != nil {
		return err
	}
	if r.top, err = decodeTopIndex(data); err != nil {
		return r.wrapBlockErr(err, "top-level index", r.footer.Index)
	}
	r.top.x.cmp = r.cmp
	r.hasFilter = len(r.top.filters) > 0
	// The partitions follow the data blocks: filter partitions first.
	for _, h := range r.top.x.handles {
		r.dataEnd = min(r.dataEnd, h.Offset)
	}
	for _, h := range r.top.filters {
		r.dataEnd = min(r.dataEnd, h.Offset)
	}
	if r.metaInCache {
		return nil
	}
	r.parts = make([]indexTable, r.top.len())
	for p, h := range r.top.x.handles {
		buf, err := r.decodeIndexFor(ctx, env.IO, h, p, nil)
		if err != nil {
			return err
		}
		r.parts[p] = viewIndexTable(buf)
		r.parts[p].cmp = r.cmp
	}
	if !r.hasFilter {
		return nil
	}
	r.filterParts = make([][]byte, r.top.len())
	for p, h := range r.top.filters {
		if r.filterParts[p], err = r.readFilter(ctx, env, partName("filter", p), h, limit); err != nil {
			return err
		}
	}
	return nil
}

// partitionOf returns the partition whose data blocks can hold the first
// entry >= the encoded search key s: -1 for an unpartitioned table, whose
// one index covers everything, and the number of partitions when the table
// holds no entry >= s.
func (r *Reader) partitionOf(s []byte) int {
	if r.top == nil {
		return -1
	}
	return r.top.x.seekGE(s)
}

// numParts returns the number of index partitions, 1 for an unpartitioned
// table (whose one index is its only "partition").
func (r *Reader) numParts() int {
	if r.top == nil {
		return 1
	}
	return r.top.len()
}
