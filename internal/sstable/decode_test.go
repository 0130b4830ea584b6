package sstable

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/bloom"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/sstable/block"
)

// This file is a test-only table decoder: it walks a whole table file with
// the format pieces this package defines (footer, block trailers, block.Iter,
// properties), checking every invariant the writer promises. It stands in
// for the real reader, which comes later, to prove that the golden files and
// the writer's output decode back to their entries.

// entry is one decoded table entry.
type entry struct {
	key   base.InternalKey
	value []byte
}

func (e entry) String() string {
	if e.key.Kind() == base.KindDelete {
		return fmt.Sprintf("DEL %s %d", e.key.UserKey, e.key.SeqNum())
	}
	return fmt.Sprintf("SET %s %d %s", e.key.UserKey, e.key.SeqNum(), e.value)
}

type decodedTable struct {
	footer  Footer
	props   Properties
	filter  []byte // nil when the table has none
	entries []entry
	// layout describes the file block by block, for golden .layout files.
	layout strings.Builder
}

// maxDecodedBlock bounds the decoded size of one block, so corrupt length
// headers cannot make the decoder allocate without limit.
const maxDecodedBlock = 1 << 24

// readBlock returns the decoded contents of the block at h, checking its
// trailer.
func readBlock(file []byte, name string, f Footer, h block.Handle) ([]byte, compress.Type, error) {
	if !blockWithin(h, uint64(len(file))) {
		return nil, 0, base.CorruptionErrorf("block %s beyond the end of the %d-byte file", h, len(file))
	}
	raw := file[h.Offset : h.Offset+h.Length+block.TrailerLen]
	if err := block.ValidateChecksum(f.Checksum, raw, name, h.Offset); err != nil {
		return nil, 0, err
	}
	stored, ct, err := block.SplitTrailer(raw)
	if err != nil {
		return nil, 0, err
	}
	n, err := compress.DecodedLen(ct, stored)
	if err != nil {
		return nil, 0, err
	}
	if n > maxDecodedBlock {
		return nil, 0, base.CorruptionErrorf("block %s claims %d decoded bytes", h, n)
	}
	out, err := compress.DecompressInto(ct, make([]byte, n), stored)
	return out, ct, err
}

// decodeTable decodes a whole table file and checks its invariants.
func decodeTable(file []byte, name string) (*decodedTable, error) {
	t := &decodedTable{}
	lw := &t.layout
	size := uint64(len(file))
	footer, err := DecodeFooter(file[max(0, len(file)-FooterLen):], size)
	if err != nil {
		return nil, err
	}
	t.footer = footer
	fmt.Fprintf(lw, "footer at %d: checksum=%s metaindex=%s index=%s version=%d\n",
		size-FooterLen, footer.Checksum, footer.MetaIndex, footer.Index, footer.FormatVersion)

	// Metaindex.
	metaData, _, err := readBlock(file, name, footer, footer.MetaIndex)
	if err != nil {
		return nil, errors.Wrap(err, "metaindex")
	}
	var it block.Iter
	if err := it.Init(bytes.Compare, metaData); err != nil {
		return nil, err
	}
	meta := map[string]block.Handle{}
	var metaNames []string
	for ok := it.First(); ok; ok = it.Next() {
		h, n, err := block.DecodeHandle(it.Value())
		if err != nil {
			return nil, err
		}
		if n != len(it.Value()) {
			return nil, base.CorruptionErrorf("metaindex value has %d trailing bytes", len(it.Value())-n)
		}
		metaNames = append(metaNames, string(it.Key()))
		meta[string(it.Key())] = h
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	fmt.Fprintf(lw, "metaindex %s:", footer.MetaIndex)
	for _, n := range metaNames {
		fmt.Fprintf(lw, " %s=%s", n, meta[n])
	}
	lw.WriteString("\n")

	// Properties.
	ph, ok := meta[MetaPropertiesName]
	if !ok {
		return nil, base.CorruptionErrorf("no %s in metaindex", MetaPropertiesName)
	}
	propData, ct, err := readBlock(file, name, footer, ph)
	if err != nil {
		return nil, errors.Wrap(err, "properties")
	}
	if ct != compress.None {
		return nil, base.CorruptionErrorf("properties block is compressed")
	}
	if t.props, err = DecodeProperties(propData); err != nil {
		return nil, err
	}
	fmt.Fprintf(lw, "properties %s:\n", ph)
	for _, line := range strings.Split(strings.TrimSpace(t.props.String()), "\n") {
		fmt.Fprintf(lw, "  %s\n", line)
	}

	// Filter.
	if fh, ok := meta[MetaFilterName]; ok {
		if t.filter, ct, err = readBlock(file, name, footer, fh); err != nil {
			return nil, errors.Wrap(err, "filter")
		}
		if ct != compress.None {
			return nil, base.CorruptionErrorf("filter block is compressed")
		}
		// The filter's own format (package bloom): 64-byte lines, then
		// k and the encoding byte.
		n := len(t.filter) - 2
		if n < 64 || n%64 != 0 || t.filter[n+1] != bloom.EncodingBlocked {
			return nil, errors.Newf("filter of %d bytes is not a blocked bloom filter", len(t.filter))
		}
		fmt.Fprintf(lw, "filter %s: %d bytes, %d lines, %d probes\n", fh, len(t.filter), n/64, t.filter[n])
		if t.props.FilterSize != fh.Length+block.TrailerLen {
			return nil, errors.Newf("filter size property %d, block %s", t.props.FilterSize, fh)
		}
	} else if t.props.BloomBitsPerKey != 0 || t.props.FilterSize != 0 {
		return nil, errors.Newf("properties promise a filter, metaindex has none")
	}

	// Index and data blocks.
	indexData, ct, err := readBlock(file, name, footer, footer.Index)
	if err != nil {
		return nil, errors.Wrap(err, "index")
	}
	fmt.Fprintf(lw, "index %s (%s):\n", footer.Index, ct)
	if t.props.IndexSize != footer.Index.Length+block.TrailerLen {
		return nil, errors.Newf("index size property %d, block %s", t.props.IndexSize, footer.Index)
	}
	var index block.Iter
	if err := index.Init(base.CompareEncoded, indexData); err != nil {
		return nil, err
	}
	var prevSep []byte
	var dataEnd uint64
	nBlocks := 0
	for ok := index.First(); ok; ok = index.Next() {
		sep, ok := base.DecodeInternalKey(index.Key())
		if !ok {
			return nil, base.CorruptionErrorf("index key %q too short", index.Key())
		}
		h, _, err := block.DecodeHandle(index.Value())
		if err != nil {
			return nil, err
		}
		if h.Offset != dataEnd {
			return nil, errors.Newf("data block %s does not follow the previous one, which ended at %d", h, dataEnd)
		}
		dataEnd = h.Offset + h.Length + block.TrailerLen
		data, ct, err := readBlock(file, name, footer, h)
		if err != nil {
			return nil, errors.Wrapf(err, "data block %s", h)
		}
		var di block.Iter
		if err := di.Init(base.CompareEncoded, data); err != nil {
			return nil, err
		}
		n := 0
		for ok := di.First(); ok; ok = di.Next() {
			k, ok := base.DecodeInternalKey(di.Key())
			if !ok {
				return nil, base.CorruptionErrorf("data key %q too short", di.Key())
			}
			k = k.Clone()
			if len(t.entries) > 0 {
				last := t.entries[len(t.entries)-1].key
				if base.CompareInternal(last, k) >= 0 {
					return nil, errors.Newf("keys out of order: %s then %s", last, k)
				}
				if n == 0 && (prevSep == nil || base.CompareEncoded(prevSep, di.Key()) >= 0) {
					return nil, errors.Newf("index key %q is not below the next block's first key %s", prevSep, k)
				}
			}
			t.entries = append(t.entries, entry{k, bytes.Clone(di.Value())})
			n++
		}
		if err := di.Error(); err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, errors.Newf("empty data block %s", h)
		}
		if last := t.entries[len(t.entries)-1].key; base.CompareInternal(last, sep) > 0 {
			return nil, errors.Newf("index key %s is below its block's last key %s", sep, last)
		}
		prevSep = bytes.Clone(index.Key())
		fmt.Fprintf(lw, "  %s -> data %s (%s) %d entries, %s .. %s\n",
			sep, h, ct, n, t.entries[len(t.entries)-n].key, t.entries[len(t.entries)-1].key)
		nBlocks++
	}
	if err := index.Error(); err != nil {
		return nil, err
	}

	// Where everything is, and what the properties say about it.
	var filterHandle block.Handle
	if h, ok := meta[MetaFilterName]; ok {
		filterHandle = h
	}
	for _, c := range []struct {
		what      string
		got, want uint64
	}{
		{"data size", t.props.DataSize, dataEnd},
		{"data blocks", t.props.NumDataBlocks, uint64(nBlocks)},
		{"entries", t.props.NumEntries, uint64(len(t.entries))},
		{"deletions", t.props.NumDeletions, countDeletions(t.entries)},
		{"raw key size", t.props.RawKeySize, rawKeySize(t.entries)},
		{"raw value size", t.props.RawValueSize, rawValueSize(t.entries)},
		{"format version", t.props.FormatVersion, FormatVersion},
		{"smallest seqnum", uint64(t.props.SmallestSeqNum), uint64(minSeqNum(t.entries))},
		{"largest seqnum", uint64(t.props.LargestSeqNum), uint64(maxSeqNum(t.entries))},
		{"checksum type", uint64(t.props.Checksum), uint64(footer.Checksum)},
		{"file size", size, footer.Index.Offset + footer.Index.Length + block.TrailerLen + FooterLen},
		{"metaindex offset", footer.MetaIndex.Offset + footer.MetaIndex.Length + block.TrailerLen, footer.Index.Offset},
		{"properties offset", ph.Offset + ph.Length + block.TrailerLen, footer.MetaIndex.Offset},
	} {
		if c.got != c.want {
			return nil, errors.Newf("%s: %d, want %d", c.what, c.got, c.want)
		}
	}
	if t.filter != nil {
		if filterHandle.Offset != dataEnd || filterHandle.Offset+filterHandle.Length+block.TrailerLen != ph.Offset {
			return nil, errors.Newf("filter %s not between data (end %d) and properties %s", filterHandle, dataEnd, ph)
		}
		for _, e := range t.entries {
			if !bloom.MayContainHash(t.filter, bloom.Hash(e.key.UserKey)) {
				return nil, errors.Newf("filter rejects %q", e.key.UserKey)
			}
		}
	} else if ph.Offset != dataEnd {
		return nil, errors.Newf("properties %s do not follow the data, which ends at %d", ph, dataEnd)
	}
	return t, nil
}

func countDeletions(es []entry) (n uint64) {
	for _, e := range es {
		if e.key.Kind() == base.KindDelete {
			n++
		}
	}
	return n
}

func rawKeySize(es []entry) (n uint64) {
	for _, e := range es {
		n += uint64(e.key.Size())
	}
	return n
}

func rawValueSize(es []entry) (n uint64) {
	for _, e := range es {
		n += uint64(len(e.value))
	}
	return n
}

func minSeqNum(es []entry) base.SeqNum {
	m := base.MaxSeqNum
	for _, e := range es {
		m = min(m, e.key.SeqNum())
	}
	return m
}

func maxSeqNum(es []entry) base.SeqNum {
	var m base.SeqNum
	for _, e := range es {
		m = max(m, e.key.SeqNum())
	}
	return m
}
