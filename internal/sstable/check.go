package sstable

import (
	"bytes"
	"context"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/bloom"
	"github.com/shaledb/shale/internal/sstable/block"
)

// Check verifies the table as thoroughly as it can without knowing what it
// should hold, for tools and the engine's consistency checker. It does what
// VerifyChecksums does (same reads, same tickers) and also checks, while it
// walks the data blocks, that:
//
//   - the data blocks tile the start of the file, in index order, from
//     offset 0 to the first meta block, and none is empty;
//   - every key is a valid internal key, and keys strictly increase within
//     and across blocks;
//   - each block's index separator is at or above its last key, below the
//     next block's first key, and separators strictly increase;
//   - the filter holds every user key (in a partitioned table, the filter
//     partition of the index partition that lists the key's data block),
//     so that no Get is turned away from an entry the table has;
//   - the counts and sizes in the properties (entries, deletions, data
//     blocks, data size, raw key and value sizes, sequence number bounds,
//     index and filter sizes, index partitions) match the file.
//
// The first violation is returned as an error marked base.ErrCorruption that
// names the file, the block and the keys involved.
func (r *Reader) Check(ctx context.Context, env ReadEnv) error {
	c := checker{r: r}
	if err := r.walk(ctx, env, &c); err != nil {
		return err
	}
	return c.finish()
}

// checker accumulates what Check learns from the data blocks.
type checker struct {
	r  *Reader
	it block.Iter

	// prevKey is the last key seen and prevSep the separator of the last
	// block, both encoded; nil before the first block.
	prevKey, prevSep []byte
	nextOffset       uint64

	blocks, entries, deletions uint64
	rawKeySize, rawValueSize   uint64
	minSeq, maxSeq             base.SeqNum
	seqSeen                    bool // a range tombstone's seq set minSeq, maxSeq

	// indexSize and filterSize are the stored sizes of the index and
	// filter partitions (and the top-level index) seen, parts their number.
	indexSize, filterSize, parts uint64

	// filter is the filter (partition) that must hold the user keys of the
	// data blocks visited next, a copy; nil when the table has none.
	// filterWhat and filterH name it in errors.
	filter     []byte
	filterWhat string
	filterH    block.Handle
}

// setFilter makes raw, the filter block (never compressed) what names at
// h, the one the following data blocks' keys must be in.
func (c *checker) setFilter(raw []byte, what string, h block.Handle) {
	c.filter = append(c.filter[:0], raw...)
	c.filterWhat, c.filterH = what, h
}

// partition checks index partition p, decoded as index at h, against its
// top-level entry: key topKey and filter partition fh (when hasFilter).
func (c *checker) partition(p int, topKey, index []byte, h, fh block.Handle, hasFilter bool) error {
	r := c.r
	what := partName("index", p)
	if hasFilter != r.hasFilter {
		return base.CorruptionErrorf("sstable: %s: top-level index %s: entry %d has a filter handle: %t, entry 0: %t",
			r.name, r.footer.Index, p, hasFilter, r.hasFilter)
	}
	c.parts++
	c.indexSize += h.Length + block.TrailerLen
	if hasFilter {
		c.filterSize += fh.Length + block.TrailerLen
	}
	if err := c.it.Init(base.CompareEncoded, index); err != nil {
		return r.wrapBlockErr(err, what, h)
	}
	if !c.it.Last() {
		if err := c.it.Error(); err != nil {
			return r.wrapBlockErr(err, what, h)
		}
		return base.CorruptionErrorf("sstable: %s: %s block %s is empty", r.name, what, h)
	}
	if !bytes.Equal(c.it.Key(), topKey) {
		return base.CorruptionErrorf("sstable: %s: %s block %s ends with separator %s, but its top-level key is %s",
			r.name, what, h, decoded(c.it.Key()), decoded(topKey))
	}
	return nil
}

func (c *checker) corrupt(h block.Handle, format string, args ...any) error {
	return base.CorruptionErrorf("sstable: %s: data block %s: "+format,
		append([]any{c.r.name, h}, args...)...)
}

func (c *checker) visit(sep []byte, h block.Handle, data []byte) error {
	sepKey, ok := base.DecodeInternalKey(sep)
	if !ok {
		return c.corrupt(h, "index separator %q is shorter than a trailer", sep)
	}
	if c.prevSep != nil && base.CompareEncodedCmp(c.r.cmp, c.prevSep, sep) >= 0 {
		return c.corrupt(h, "index separator %s is not above the previous one, %s", sepKey, decoded(c.prevSep))
	}
	if h.Offset != c.nextOffset {
		return c.corrupt(h, "starts at %d, but the previous data block ends at %d", h.Offset, c.nextOffset)
	}
	c.nextOffset = h.Offset + h.Length + block.TrailerLen
	c.blocks++

	if err := c.it.Init(base.CompareEncoded, data); err != nil {
		return c.r.wrapBlockErr(err, "data", h)
	}
	first := true
	for ok := c.it.First(); ok; ok = c.it.Next() {
		k := c.it.Key()
		ik, err := c.r.decodeKey(k, h)
		if err != nil {
			return err
		}
		if c.prevKey != nil && base.CompareEncodedCmp(c.r.cmp, c.prevKey, k) >= 0 {
			what := "follows"
			if first {
				what = "begins the block after"
			}
			return c.corrupt(h, "key %s %s %s: keys are not strictly increasing", ik, what, decoded(c.prevKey))
		}
		if first && c.prevSep != nil && base.CompareEncodedCmp(c.r.cmp, c.prevSep, k) >= 0 {
			return c.corrupt(h, "first key %s is not above the previous block's separator %s", ik, decoded(c.prevSep))
		}
		first = false
		if c.filter != nil && !bloom.MayContainHash(c.filter, bloom.Hash(ik.UserKey)) {
			return c.corrupt(h, "key %s is not in the %s block %s", ik, c.filterWhat, c.filterH)
		}
		seq := ik.SeqNum()
		if c.entries == 0 {
			c.minSeq, c.maxSeq = seq, seq
		} else {
			c.minSeq, c.maxSeq = min(c.minSeq, seq), max(c.maxSeq, seq)
		}
		c.entries++
		if ik.Kind() == base.KindDelete {
			c.deletions++
		}
		c.rawKeySize += uint64(len(k))
		c.rawValueSize += uint64(len(c.it.Value()))
		c.prevKey = append(c.prevKey[:0], k...)
	}
	if err := c.it.Error(); err != nil {
		return c.r.wrapBlockErr(err, "data", h)
	}
	if first {
		return c.corrupt(h, "block is empty")
	}
	if base.CompareEncodedCmp(c.r.cmp, c.prevKey, sep) > 0 {
		return c.corrupt(h, "last key %s is above the block's index separator %s", decoded(c.prevKey), sepKey)
	}
	c.prevSep = append(c.prevSep[:0], sep...)
	return nil
}

// finish compares the totals with the properties.
func (c *checker) finish() error {
	r := c.r
	p := &r.props
	// The sequence number properties cover the range tombstones too.
	for _, f := range r.rangeDels.Fragments() {
		for _, q := range [2]base.SeqNum{f.Seqs[0], f.Seqs[len(f.Seqs)-1]} {
			if r.opts.GlobalSeqNum != 0 {
				// The Reader substituted it for the file's own, which an
				// ingest checked to be 0.
				q = 0
			}
			if c.entries == 0 && !c.seqSeen {
				c.minSeq, c.maxSeq = q, q
			}
			c.seqSeen = true
			c.minSeq, c.maxSeq = min(c.minSeq, q), max(c.maxSeq, q)
		}
	}
	filterSize := c.filterSize
	for _, m := range r.metaHandles {
		if m.name == MetaFilterName {
			filterSize = m.h.Length + block.TrailerLen
		}
	}
	for _, f := range [...]struct {
		name       string
		prop, seen uint64
	}{
		{"num.data.blocks", p.NumDataBlocks, c.blocks},
		{"data.size", p.DataSize, c.nextOffset},
		{"num.entries", p.NumEntries, c.entries},
		{"num.deletions", p.NumDeletions, c.deletions},
		{"raw.key.size", p.RawKeySize, c.rawKeySize},
		{"raw.value.size", p.RawValueSize, c.rawValueSize},
		{"smallest.seqno", uint64(p.SmallestSeqNum), uint64(c.minSeq)},
		{"largest.seqno", uint64(p.LargestSeqNum), uint64(c.maxSeq)},
		{"index.size", p.IndexSize, c.indexSize},
		{"filter.size", p.FilterSize, filterSize},
		{"index.partitions", p.IndexPartitions, c.parts},
	} {
		if f.prop != f.seen {
			return base.CorruptionErrorf("sstable: %s: property shale.%s is %d, but the file has %d",
				r.name, f.name, f.prop, f.seen)
		}
	}
	if c.nextOffset != r.dataEnd {
		return base.CorruptionErrorf("sstable: %s: data blocks end at %d, but the first meta block starts at %d",
			r.name, c.nextOffset, r.dataEnd)
	}
	return nil
}

// decoded formats an encoded internal key for an error message.
func decoded(enc []byte) string {
	if k, ok := base.DecodeInternalKey(enc); ok {
		return k.String()
	}
	return string(enc)
}
