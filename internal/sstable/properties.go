package sstable

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/sstable/block"
)

// Properties describes a table: the options it was written with and counts
// of what it holds. It is stored in the properties block (see the package
// doc for each field's name and meaning). It is a plain value, safe to copy
// and share.
type Properties struct {
	BlockSize       uint64
	BloomBitsPerKey uint64
	Checksum        checksum.Type
	Compression     compress.Type
	DataSize        uint64
	FilterSize      uint64
	IndexSize       uint64
	IndexPartitions uint64
	NumDataBlocks   uint64
	NumDeletions    uint64
	NumEntries      uint64
	RawKeySize      uint64
	RawValueSize    uint64
	SmallestSeqNum  base.SeqNum
	LargestSeqNum   base.SeqNum
	FormatVersion   uint64
	// PrefixExtractorName names the prefix extractor whose prefixes the
	// table's filter holds besides whole keys (shale.prefix.extractor.name,
	// RocksDB's rocksdb.prefix.extractor.name); empty when none (the
	// property is then not written).
	PrefixExtractorName string
	// ExternalVersion marks a table written outside a database for an
	// ingest (shale.external.sst.version, RocksDB's
	// rocksdb.external_sst_file.version): 1 for such a table, whose entries
	// all have sequence number 0 until an ingest gives them one; 0 (the
	// property is then not written) for a table a database wrote.
	ExternalVersion uint64
	// ComparerName names the table's key order (shale.comparator,
	// RocksDB's rocksdb.comparator); empty for the default bytewise order
	// (the property is then not written, so such tables keep their bytes).
	ComparerName string
}

// propKind says how a property's value is encoded.
type propKind uint8

const (
	propUint propKind = iota // varint64
	// propUintOmitZero is a varint64 left out of the block (and String)
	// when it is 0: a property added after tables existed, so that a table
	// without the feature keeps the bytes it had before.
	propUintOmitZero
	propChecksum    // checksum.Type name
	propCompression // compress.Type name
	propPrefixName  // Properties.PrefixExtractorName, omitted when empty
	propComparer    // Properties.ComparerName, omitted when empty
)

// property describes one stored property; u points at the field of a
// Properties value for integer properties.
type property struct {
	name string
	kind propKind
	u    func(p *Properties) *uint64
}

// properties lists every property in the order they are stored (sorted by
// name, as a block requires). The names are part of the file format; do not
// change them.
var properties = [...]property{
	{"shale.block.size", propUint, func(p *Properties) *uint64 { return &p.BlockSize }},
	{"shale.bloom.bits.per.key", propUint, func(p *Properties) *uint64 { return &p.BloomBitsPerKey }},
	{"shale.checksum.type", propChecksum, nil},
	{"shale.comparator", propComparer, nil},
	{"shale.compression", propCompression, nil},
	{"shale.data.size", propUint, func(p *Properties) *uint64 { return &p.DataSize }},
	{"shale.external.sst.version", propUintOmitZero, func(p *Properties) *uint64 { return &p.ExternalVersion }},
	{"shale.filter.size", propUint, func(p *Properties) *uint64 { return &p.FilterSize }},
	{"shale.format.version", propUint, func(p *Properties) *uint64 { return &p.FormatVersion }},
	{"shale.index.partitions", propUintOmitZero, func(p *Properties) *uint64 { return &p.IndexPartitions }},
	{"shale.index.size", propUint, func(p *Properties) *uint64 { return &p.IndexSize }},
	{"shale.largest.seqno", propUint, func(p *Properties) *uint64 { return (*uint64)(&p.LargestSeqNum) }},
	{"shale.num.data.blocks", propUint, func(p *Properties) *uint64 { return &p.NumDataBlocks }},
	{"shale.num.deletions", propUint, func(p *Properties) *uint64 { return &p.NumDeletions }},
	{"shale.num.entries", propUint, func(p *Properties) *uint64 { return &p.NumEntries }},
	{"shale.prefix.extractor.name", propPrefixName, nil},
	{"shale.raw.key.size", propUint, func(p *Properties) *uint64 { return &p.RawKeySize }},
	{"shale.raw.value.size", propUint, func(p *Properties) *uint64 { return &p.RawValueSize }},
	{"shale.smallest.seqno", propUint, func(p *Properties) *uint64 { return (*uint64)(&p.SmallestSeqNum) }},
}

// Encode returns the contents of the properties block for p (before the
// trailer). The result is a new slice owned by the caller.
func (p *Properties) Encode() []byte {
	var b block.Builder
	b.Init(metaRestartInterval)
	var val []byte
	for i := range properties {
		if p.omitted(&properties[i]) {
			continue
		}
		val = p.appendValue(val[:0], &properties[i])
		b.Add([]byte(properties[i].name), val)
	}
	return b.Finish()
}

// omitted reports whether prop is left out of p's encoding.
func (p *Properties) omitted(prop *property) bool {
	switch prop.kind {
	case propUintOmitZero:
		return *prop.u(p) == 0
	case propPrefixName:
		return p.PrefixExtractorName == ""
	case propComparer:
		return p.ComparerName == ""
	}
	return false
}

func (p *Properties) appendValue(dst []byte, prop *property) []byte {
	switch prop.kind {
	case propChecksum:
		return append(dst, p.Checksum.String()...)
	case propCompression:
		return append(dst, p.Compression.String()...)
	case propPrefixName:
		return append(dst, p.PrefixExtractorName...)
	case propComparer:
		return append(dst, p.ComparerName...)
	}
	return binary.AppendUvarint(dst, *prop.u(p))
}

// DecodeProperties decodes the contents of a properties block (after its
// trailer was checked and removed). Names it does not know are ignored, so
// newer writers can add properties; properties it knows that are missing are
// left zero. A malformed block, keys out of order, a value that is not one
// varint64, or a type name it does not know is an error marked
// base.ErrCorruption. The result does not retain data.
func DecodeProperties(data []byte) (Properties, error) {
	p, err := decodeProperties(data)
	if err != nil {
		return Properties{}, errors.Wrap(err, "sstable: properties block")
	}
	return p, nil
}

// decodeProperties is DecodeProperties with errors that say neither
// "sstable:" nor which block they are about, for a caller that names the
// block itself: the Reader says the file and the block's handle too
// ("sstable: FILE: properties block H: ..."), which used to be followed by
// a second "sstable: properties block".
func decodeProperties(data []byte) (Properties, error) {
	var p Properties
	var it block.Iter
	if err := it.Init(bytes.Compare, data); err != nil {
		return Properties{}, err
	}
	var prev []byte
	for ok := it.First(); ok; ok = it.Next() {
		name, val := it.Key(), it.Value()
		if prev != nil && bytes.Compare(prev, name) >= 0 {
			return Properties{}, base.CorruptionErrorf("%q follows %q", name, prev)
		}
		prev = append(prev[:0], name...)
		prop := lookupProperty(name)
		if prop == nil {
			continue
		}
		switch prop.kind {
		case propChecksum:
			t, err := checksum.ParseType(string(val))
			if err != nil {
				return Properties{}, base.CorruptionErrorf("property %s: unknown checksum type %q", prop.name, val)
			}
			p.Checksum = t
		case propCompression:
			t, err := compress.ParseType(string(val))
			if err != nil {
				return Properties{}, base.CorruptionErrorf("property %s: unknown compression %q", prop.name, val)
			}
			p.Compression = t
		case propPrefixName:
			p.PrefixExtractorName = string(val)
		case propComparer:
			p.ComparerName = string(val)
		default:
			v, n := binary.Uvarint(val)
			if n <= 0 || n != len(val) {
				return Properties{}, base.CorruptionErrorf("property %s: % x is not one varint64", prop.name, val)
			}
			*prop.u(&p) = v
		}
	}
	if err := it.Error(); err != nil {
		return Properties{}, err
	}
	return p, nil
}

func lookupProperty(name []byte) *property {
	for i := range properties {
		if properties[i].name == string(name) {
			return &properties[i]
		}
	}
	return nil
}

// String formats p as "name: value" lines in storage order.
func (p *Properties) String() string {
	var sb strings.Builder
	for i := range properties {
		prop := &properties[i]
		if p.omitted(prop) {
			continue
		}
		sb.WriteString(prop.name)
		sb.WriteString(": ")
		switch prop.kind {
		case propChecksum:
			sb.WriteString(p.Checksum.String())
		case propCompression:
			sb.WriteString(p.Compression.String())
		case propPrefixName:
			sb.WriteString(p.PrefixExtractorName)
		case propComparer:
			sb.WriteString(p.ComparerName)
		default:
			sb.WriteString(strconv.FormatUint(*prop.u(p), 10))
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}
