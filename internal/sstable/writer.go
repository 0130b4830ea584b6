package sstable

import (
	"bytes"
	"encoding/binary"
	"io"
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/bloom"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/crc"
	"github.com/shaledb/shale/internal/rangedel"
	"github.com/shaledb/shale/internal/sstable/block"
)

// WriterOptions configure a Writer. The zero value is valid: 4 KiB blocks,
// restart interval 16, no filter, no compression, no checksums. The engine
// passes its own defaults (bloom 10 bits per key, Snappy, XXHash64).
// WriterOptions is a plain value.
type WriterOptions struct {
	// BlockSize is the target size of an uncompressed data block; a block is
	// cut once its estimated size reaches it. 0 means 4096.
	BlockSize int
	// BlockRestartInterval is the number of entries between restart points in
	// data blocks. 0 means 16.
	BlockRestartInterval int
	// BloomBitsPerKey sizes the table's bloom filter; 0 writes no filter.
	BloomBitsPerKey int
	// Compression compresses data and index blocks.
	Compression compress.Type
	// ZstdLevel is the zstd level (compress.MinZstdLevel to MaxZstdLevel)
	// with Compression zstd; 0 means compress.DefaultZstdLevel.
	ZstdLevel int
	// Checksum is the block checksum type.
	Checksum checksum.Type
	// IndexPartitionSize, when > 0, partitions the index and the filter
	// (RocksDB's index_type=kTwoLevelIndexSearch with partition_filters and
	// metadata_block_size): an index partition is cut at a data block
	// boundary once its estimated size reaches IndexPartitionSize bytes, and
	// a top-level index names the partitions (see "Partitioned index and
	// filters" in the package doc). A table whose index fits in one
	// partition is written exactly as with 0, which writes one index block
	// and one filter block.
	IndexPartitionSize int
	// PrefixExtractor, when not nil and the table has a filter, adds to the
	// filter the prefix of each user key it returns a non-nil prefix for
	// (RocksDB's prefix_extractor with whole_key_filtering: whole keys stay
	// in the filter too), each once per run of keys sharing it, in the
	// filter (or filter partition) of the key's entry. The prefix returned
	// may alias the key and is only read during the call.
	// PrefixExtractorName names it in the table's properties
	// (shale.prefix.extractor.name), so that a reader checks prefixes only
	// against filters built by the same extractor.
	PrefixExtractor     func(userKey []byte) []byte
	PrefixExtractorName string
	// External marks the table as written outside a database for an
	// ingest (Properties.ExternalVersion 1).
	External bool
	// Comparer orders the table's user keys; nil is bytewise. A
	// non-bytewise one's name is recorded (shale.comparator), and its
	// Separator and Successor, when set, shorten the index's separators.
	Comparer *base.Comparer
}

func (o WriterOptions) ensureDefaults() WriterOptions {
	if o.BlockSize == 0 {
		o.BlockSize = defaultBlockSize
	}
	if o.BlockRestartInterval == 0 {
		o.BlockRestartInterval = defaultRestartInterval
	}
	if o.ZstdLevel == 0 {
		o.ZstdLevel = compress.DefaultZstdLevel
	}
	return o
}

func (o WriterOptions) validate() error {
	switch {
	case o.BlockSize < 0:
		return base.InvalidArgumentf("sstable: negative block size %d", o.BlockSize)
	case o.BlockRestartInterval < 0:
		return base.InvalidArgumentf("sstable: negative block restart interval %d", o.BlockRestartInterval)
	case o.IndexPartitionSize < 0:
		return base.InvalidArgumentf("sstable: negative index partition size %d", o.IndexPartitionSize)
	case o.BloomBitsPerKey < 0:
		return base.InvalidArgumentf("sstable: negative bloom bits per key %d", o.BloomBitsPerKey)
	case !o.Compression.Supported():
		return base.InvalidArgumentf("sstable: unsupported compression %s", o.Compression)
	case o.ZstdLevel != 0 && (o.ZstdLevel < compress.MinZstdLevel || o.ZstdLevel > compress.MaxZstdLevel):
		return base.InvalidArgumentf("sstable: zstd level %d is not within %d to %d",
			o.ZstdLevel, compress.MinZstdLevel, compress.MaxZstdLevel)
	case !o.Checksum.Supported():
		return base.InvalidArgumentf("sstable: unsupported checksum type %s", o.Checksum)
	}
	return nil
}

// WriterMetadata describes a table the Writer finished. It is a plain value
// that owns its memory.
type WriterMetadata struct {
	// Size is the file's length in bytes.
	Size uint64
	// Smallest and Largest are the table's first and last internal keys;
	// they own their memory. With range tombstones they cover the
	// tombstones too: a tombstone's start as (start, seq, KindRangeDelete),
	// its exclusive end as the sentinel base.MakeRangeDeleteSentinel(end)
	// when no point key at or after end is larger.
	Smallest, Largest base.InternalKey
	// SmallestSeqNum and LargestSeqNum bound the entries' sequence numbers.
	SmallestSeqNum, LargestSeqNum base.SeqNum
	NumEntries, NumDeletions      uint64
	// NumRangeDeletions is the number of fragments in the range deletion
	// block (0 when the table has none).
	NumRangeDeletions uint64
	// FileChecksum is the unmasked CRC-32C of the whole file, computed while
	// writing it.
	FileChecksum uint32
	// Properties is what the properties block holds.
	Properties Properties
}

// Writer writes a table file: Add every entry in order, then Close.
//
// Blocks go out as they fill, each block and its trailer in one Write call;
// the Writer keeps only the current data block, the index and the filter's
// key hashes in memory (with a partitioned index, the finished index and
// filter partitions, which it writes after the data blocks). The first write error sticks: every later call
// returns it.
//
// A Writer is not safe for concurrent use.
type Writer struct {
	w    io.Writer
	opts WriterOptions
	err  error

	offset  uint64
	fileCRC crc.CRC
	// out gathers the blocks written (see write) until it holds
	// writeBufferSize bytes; from outBufs.
	out []byte

	data block.Builder
	// index holds the index entries not yet in a finished partition (all
	// of them when the index is not partitioned), filter the key hashes of
	// the same data blocks.
	index  block.Builder
	filter *bloom.Builder
	// parts are the finished index partitions, kept until Close writes
	// them after the data blocks (see writePartitioned); partsSize is their
	// stored size. freshFilter says a partition was just cut, so the next
	// key goes into the new filter partition even if its user key is the
	// previous key's.
	parts       []partition
	partsSize   uint64
	freshFilter bool
	// lastPrefix is the last prefix added to the filter (hasLastPrefix
	// says there is one), so that each prefix is added once per run.
	lastPrefix    []byte
	hasLastPrefix bool

	// pending is the handle of the last finished data block. Its index entry
	// is added when the next key arrives, so that the separator can be
	// shorter than the block's last key.
	pending    block.Handle
	hasPending bool

	// lastKey is the encoded internal key of the last entry added.
	lastKey []byte
	// rangeDels are the fragments added with AddRangeDeletion, in order;
	// their keys are owned (copied).
	rangeDels []rangedel.Fragment
	hasSeq    bool // the sequence number bounds in meta are set
	meta      WriterMetadata
	props     Properties

	// Scratch buffers, reused across blocks.
	keyBuf      []byte
	sepBuf      []byte
	handleBuf   []byte
	compressBuf []byte
	writeBuf    []byte
	indexBuf    []byte
	filterBuf   []byte
}

// partition is a finished index partition and its filter partition.
type partition struct {
	// lastSep is the partition's last index separator: its top-level key.
	lastSep []byte
	// index is the index block as stored, followed by its trailer; its
	// handle's length is indexLen.
	index    []byte
	indexLen int
	// filter is the filter partition (nil without a filter), never
	// compressed.
	filter []byte
}

// errWriterClosed is returned by calls on a closed Writer.
var errWriterClosed = base.Mark(errors.New("sstable: writer is closed"), base.ErrClosed)

// NewWriter returns a Writer that writes a table to w with opts. It never
// syncs or closes w. Invalid options are reported by the first Add or Close,
// as an error marked base.ErrInvalidArgument.
func NewWriter(w io.Writer, opts WriterOptions) *Writer {
	opts = opts.ensureDefaults()
	tw := &Writer{w: w, opts: opts, err: opts.validate()}
	tw.data.Init(opts.BlockRestartInterval)
	tw.index.Init(metaRestartInterval)
	if opts.BloomBitsPerKey > 0 {
		tw.filter = bloom.NewBuilder(opts.BloomBitsPerKey)
	}
	return tw
}

// Add appends an entry. Keys must be strictly increasing in
// base.CompareInternal order and of a known kind: anything else is a bug in
// the caller, reported with base.AssertionFailedf naming the keys, and the
// entry is not added. key and value are copied.
func (w *Writer) Add(key base.InternalKey, value []byte) error {
	if w.err != nil {
		return w.err
	}
	if !key.Valid() {
		return base.AssertionFailedf("sstable: key %s has kind %d, which is not a known kind", key, key.Trailer&0xff)
	}
	if w.meta.NumEntries > 0 {
		last, _ := base.DecodeInternalKey(w.lastKey)
		if base.CompareInternalWith(w.opts.Comparer.UserCompare(), last, key) >= 0 {
			return base.AssertionFailedf("sstable: keys must be added in strictly increasing order: %s, then %s", last, key)
		}
	}
	w.keyBuf = key.Append(w.keyBuf[:0])
	if w.hasPending {
		w.addIndexEntry(w.separator(w.lastKey, w.keyBuf), w.pending)
		w.hasPending = false
	}
	if w.filter != nil && (w.meta.NumEntries == 0 || w.freshFilter || !bytes.Equal(w.lastKey[:len(w.lastKey)-base.TrailerLen], key.UserKey)) {
		w.filter.AddKey(key.UserKey)
		if w.opts.PrefixExtractor != nil {
			w.addPrefix(key.UserKey)
		}
		w.freshFilter = false
	}
	w.data.Add(w.keyBuf, value)

	if w.meta.NumEntries == 0 {
		w.meta.Smallest = key.Clone()
	}
	w.noteSeq(key.SeqNum())
	w.meta.NumEntries++
	if key.Kind() == base.KindDelete {
		w.meta.NumDeletions++
	}
	w.props.RawKeySize += uint64(len(w.keyBuf))
	w.props.RawValueSize += uint64(len(value))
	w.lastKey = append(w.lastKey[:0], w.keyBuf...)

	if w.data.EstimatedSize() >= w.opts.BlockSize {
		return w.finishDataBlock()
	}
	return nil
}

// AddRangeDeletion adds a fragment to the table's range deletion block.
// Fragments must come in increasing order without overlapping (as a
// rangedel.Set holds them), each non-empty with its sequence numbers strictly
// decreasing; anything else is a caller bug reported with
// base.AssertionFailedf. They may be added before, between or after the
// point entries. f is copied.
func (w *Writer) AddRangeDeletion(f rangedel.Fragment) error {
	if w.err != nil {
		return w.err
	}
	if len(f.End) == 0 {
		return base.AssertionFailedf("sstable: unbounded range deletion from %q: a flush clamps it first", f.Start)
	}
	if base.CompareUser(w.opts.Comparer.UserCompare(), f.Start, f.End) >= 0 || len(f.Seqs) == 0 {
		return base.AssertionFailedf("sstable: empty range deletion [%q, %q) %v", f.Start, f.End, f.Seqs)
	}
	for i := 1; i < len(f.Seqs); i++ {
		if f.Seqs[i] >= f.Seqs[i-1] {
			return base.AssertionFailedf("sstable: range deletion [%q, %q): sequence numbers %v not decreasing", f.Start, f.End, f.Seqs)
		}
	}
	if n := len(w.rangeDels); n > 0 && base.CompareUser(w.opts.Comparer.UserCompare(), w.rangeDels[n-1].End, f.Start) > 0 {
		return base.AssertionFailedf("sstable: range deletion [%q, %q) overlaps or precedes [%q, %q)",
			f.Start, f.End, w.rangeDels[n-1].Start, w.rangeDels[n-1].End)
	}
	w.rangeDels = append(w.rangeDels, rangedel.Fragment{
		Start: bytes.Clone(f.Start), End: bytes.Clone(f.End), Seqs: append([]base.SeqNum(nil), f.Seqs...),
	})
	w.noteSeq(f.Seqs[0])
	w.noteSeq(f.Seqs[len(f.Seqs)-1])
	return nil
}

// EstimatedSize returns the approximate size the file would have if closed
// now.
func (w *Writer) EstimatedSize() uint64 {
	size := w.offset + uint64(w.data.EstimatedSize()) + uint64(w.index.EstimatedSize()) + w.partsSize + FooterLen
	if w.filter != nil {
		size += uint64(bloom.Size(w.filter.NumKeys(), w.opts.BloomBitsPerKey))
	}
	return size
}

// Close finishes the table: it writes the last data block, the filter,
// properties, metaindex and index blocks and the footer. It does not sync or
// close the underlying writer. A table with no entries is an error marked
// base.ErrInvalidArgument (the engine never writes one). After Close the
// Writer accepts no more calls.
func (w *Writer) Close() (WriterMetadata, error) {
	if w.err != nil {
		return WriterMetadata{}, w.err
	}
	if err := w.close(); err != nil {
		if w.err == nil {
			w.err = err
		}
		return WriterMetadata{}, err
	}
	w.err = errWriterClosed
	return w.meta, nil
}

func (w *Writer) close() error {
	if w.meta.NumEntries == 0 && len(w.rangeDels) == 0 {
		return base.InvalidArgumentf("sstable: cannot write a table with no entries")
	}
	if !w.data.Empty() {
		if err := w.finishDataBlock(); err != nil {
			return err
		}
	}
	if w.hasPending {
		w.addIndexEntry(w.successor(w.lastKey), w.pending)
		w.hasPending = false
	}
	if len(w.parts) > 0 && !w.index.Empty() {
		w.cutPartition()
	}

	// The index is written last but its size is a property, so encode it
	// now and keep it: the one index block, or the top-level index of a
	// partitioned one.
	var filterHandle block.Handle
	var indexLen int
	var err error
	if len(w.parts) > 1 {
		indexLen, err = w.writePartitions()
	} else {
		filterHandle, indexLen, err = w.writeWhole()
	}
	if err != nil {
		return err
	}

	w.props.BlockSize = uint64(w.opts.BlockSize)
	w.props.BloomBitsPerKey = uint64(w.opts.BloomBitsPerKey)
	if w.filter != nil && w.opts.PrefixExtractor != nil {
		w.props.PrefixExtractorName = w.opts.PrefixExtractorName
	}
	w.props.Checksum = w.opts.Checksum
	if w.opts.External {
		w.props.ExternalVersion = 1
	}
	if !w.opts.Comparer.IsBytewise() {
		w.props.ComparerName = w.opts.Comparer.Name
	}
	w.props.Compression = w.opts.Compression
	w.props.NumDeletions = w.meta.NumDeletions
	w.props.NumEntries = w.meta.NumEntries
	w.props.SmallestSeqNum = w.meta.SmallestSeqNum
	w.props.LargestSeqNum = w.meta.LargestSeqNum
	version := uint32(FormatVersion)
	var rangeDelHandle block.Handle
	if len(w.rangeDels) > 0 {
		version = FormatVersionRangeDel
		if rangeDelHandle, err = w.writeRangeDels(); err != nil {
			return err
		}
	}
	if len(w.parts) > 1 {
		version = FormatVersionPartitioned
	}
	w.props.FormatVersion = uint64(version)
	propsHandle, err := w.writeBlock(w.props.Encode(), compress.None)
	if err != nil {
		return err
	}

	var meta block.Builder
	meta.Init(metaRestartInterval)
	if w.filter != nil && len(w.parts) <= 1 {
		meta.Add([]byte(MetaFilterName), filterHandle.Append(nil))
	}
	meta.Add([]byte(MetaPropertiesName), propsHandle.Append(nil))
	if len(w.rangeDels) > 0 {
		meta.Add([]byte(MetaRangeDelName), rangeDelHandle.Append(nil))
	}
	metaHandle, err := w.writeBlock(meta.Finish(), compress.None)
	if err != nil {
		return err
	}

	topHandle := block.Handle{Offset: w.offset, Length: uint64(indexLen)}
	if err := w.write(w.indexBuf); err != nil {
		return err
	}

	footer := Footer{Checksum: w.opts.Checksum, MetaIndex: metaHandle, Index: topHandle, FormatVersion: version}
	w.writeBuf = footer.Encode(w.writeBuf[:0])
	if err := w.write(w.writeBuf); err != nil {
		return err
	}
	if err := w.flushOut(); err != nil {
		return err
	}
	w.releaseOut()

	if w.meta.NumEntries > 0 {
		last, _ := base.DecodeInternalKey(w.lastKey)
		w.meta.Largest = last.Clone()
	}
	w.widenBounds()
	w.meta.Size = w.offset
	w.meta.FileChecksum = uint32(w.fileCRC)
	w.meta.Properties = w.props
	return nil
}

// noteSeq widens the table's sequence number bounds to seq.
func (w *Writer) noteSeq(seq base.SeqNum) {
	if !w.hasSeq {
		w.meta.SmallestSeqNum, w.meta.LargestSeqNum, w.hasSeq = seq, seq, true
		return
	}
	w.meta.SmallestSeqNum = min(w.meta.SmallestSeqNum, seq)
	w.meta.LargestSeqNum = max(w.meta.LargestSeqNum, seq)
}

// writeRangeDels writes the range deletion block: one entry per fragment,
// key Start, value as rangedel.AppendValue encodes it, restart interval 1,
// never compressed (it is small and read once, at open).
func (w *Writer) writeRangeDels() (block.Handle, error) {
	var b block.Builder
	b.Init(metaRestartInterval)
	var val []byte
	for i := range w.rangeDels {
		val = rangedel.AppendValue(val[:0], &w.rangeDels[i])
		b.Add(w.rangeDels[i].Start, val)
	}
	w.meta.NumRangeDeletions = uint64(len(w.rangeDels))
	return w.writeBlock(b.Finish(), compress.None)
}

// widenBounds extends Smallest and Largest to the range tombstones' extent.
func (w *Writer) widenBounds() {
	if len(w.rangeDels) == 0 {
		return
	}
	first := &w.rangeDels[0]
	lo := base.MakeInternalKey(first.Start, first.Seqs[0], base.KindRangeDelete)
	hi := base.MakeRangeDeleteSentinel(w.rangeDels[len(w.rangeDels)-1].End)
	if w.meta.NumEntries == 0 || base.CompareInternalWith(w.opts.Comparer.UserCompare(), lo, w.meta.Smallest) < 0 {
		w.meta.Smallest = lo.Clone()
	}
	if w.meta.NumEntries == 0 || base.CompareInternalWith(w.opts.Comparer.UserCompare(), hi, w.meta.Largest) > 0 {
		w.meta.Largest = hi.Clone()
	}
}

// finishDataBlock writes the current data block and leaves its index entry
// pending.
func (w *Writer) finishDataBlock() error {
	h, err := w.writeBlock(w.data.Finish(), w.opts.Compression)
	w.data.Reset()
	if err != nil {
		return err
	}
	w.pending, w.hasPending = h, true
	w.props.NumDataBlocks++
	w.props.DataSize += h.Length + block.TrailerLen
	return nil
}

// addIndexEntry adds the index entry of a finished data block, and cuts an
// index partition after it when the partition has grown to
// IndexPartitionSize. A partition is cut only here, between data blocks, so
// that every data block belongs to exactly one partition.
func (w *Writer) addIndexEntry(key []byte, h block.Handle) {
	w.handleBuf = h.Append(w.handleBuf[:0])
	w.index.Add(key, w.handleBuf)
	if w.opts.IndexPartitionSize > 0 && w.index.EstimatedSize() >= w.opts.IndexPartitionSize {
		w.cutPartition()
	}
}

// cutPartition finishes the index entries and filter keys gathered since the
// last cut as a partition, kept in memory until Close writes it. Index
// partitions are compressed as the single index block is; the table's
// output stays a function of its entries and options alone.
func (w *Writer) cutPartition() {
	p := partition{lastSep: bytes.Clone(w.index.LastKey())}
	p.indexLen = w.prepareBlock(&p.index, w.index.Finish(), w.opts.Compression)
	w.index.Reset()
	w.partsSize += uint64(len(p.index))
	if w.filter != nil {
		p.filter = w.filter.Finish(nil)
		w.filter.Reset()
		w.freshFilter = true
		w.partsSize += uint64(len(p.filter) + block.TrailerLen)
	}
	w.parts = append(w.parts, p)
}

// writeWhole writes the filter block (when there is a filter) and prepares
// the index block in w.indexBuf, returning the filter's handle and the index
// handle's length. A single partition cut at the last entry is the whole
// index: it is written unpartitioned, the same bytes as without
// partitioning.
func (w *Writer) writeWhole() (block.Handle, int, error) {
	var indexLen int
	var filter []byte
	if len(w.parts) == 1 {
		w.indexBuf, indexLen = w.parts[0].index, w.parts[0].indexLen
		filter = w.parts[0].filter
	} else {
		indexLen = w.prepareOpenIndex(&w.indexBuf, w.index.Finish())
		if w.filter != nil {
			filter = w.filter.Finish(w.filterBuf[:0])
		}
	}
	w.props.IndexSize = uint64(len(w.indexBuf))
	if w.filter == nil {
		return block.Handle{}, indexLen, nil
	}
	h, err := w.writeBlock(filter, compress.None)
	w.props.FilterSize = h.Length + block.TrailerLen
	return h, indexLen, err
}

// writePartitions writes the filter partitions and the index partitions,
// in that order, right after the data blocks, and prepares the top-level
// index in w.indexBuf (written last, where the single index block would be),
// returning its handle's length. It sets the index and filter size
// properties: the sums over the partitions, the top-level block counted in
// the index's.
func (w *Writer) writePartitions() (int, error) {
	filters := make([]block.Handle, len(w.parts))
	if w.filter != nil {
		for i := range w.parts {
			h, err := w.writeBlock(w.parts[i].filter, compress.None)
			if err != nil {
				return 0, err
			}
			filters[i] = h
			w.props.FilterSize += h.Length + block.TrailerLen
		}
	}
	var top block.Builder
	top.Init(metaRestartInterval)
	for i := range w.parts {
		p := &w.parts[i]
		h := block.Handle{Offset: w.offset, Length: uint64(p.indexLen)}
		if err := w.write(p.index); err != nil {
			return 0, err
		}
		w.props.IndexSize += uint64(len(p.index))
		w.handleBuf = h.Append(w.handleBuf[:0])
		if w.filter != nil {
			w.handleBuf = filters[i].Append(w.handleBuf)
		}
		top.Add(p.lastSep, w.handleBuf)
	}
	n := w.prepareOpenIndex(&w.indexBuf, top.Finish())
	w.props.IndexSize += uint64(len(w.indexBuf))
	w.props.IndexPartitions = uint64(len(w.parts))
	return n, nil
}

// prepareBlock compresses raw with comp if that pays, and sets *dst to the
// stored block followed by its trailer. It returns the stored block's length
// (the handle's Length).
func (w *Writer) prepareBlock(dst *[]byte, raw []byte, comp compress.Type) int {
	// Kept at snappy's worst case for raw, so that Compress never allocates
	// (with values that do not compress, every data block did).
	w.compressBuf = compress.Buffer(comp, w.compressBuf, len(raw))
	payload, ct := compress.CompressLevel(comp, w.opts.ZstdLevel, w.compressBuf, raw)
	buf := append((*dst)[:0], payload...)
	*dst = block.AppendTrailer(buf, w.opts.Checksum, ct, buf)
	return len(payload)
}

// prepareOpenIndex is prepareBlock for the index block a reader loads when
// it opens the table (the index, or the top-level index when partitioned).
// With zstd it stores the block zstd-compressed even when that does not pay,
// so that a release that cannot read zstd refuses the table when it opens
// it (as corruption: an unknown compression type), not at the first read
// of a data block that happened to compress. See the package doc.
func (w *Writer) prepareOpenIndex(dst *[]byte, raw []byte) int {
	if w.opts.Compression != compress.Zstd {
		return w.prepareBlock(dst, raw, w.opts.Compression)
	}
	w.compressBuf = compress.Buffer(compress.Zstd, w.compressBuf, len(raw))
	payload := compress.EncodeZstd(w.opts.ZstdLevel, w.compressBuf, raw)
	buf := append((*dst)[:0], payload...)
	*dst = block.AppendTrailer(buf, w.opts.Checksum, compress.Zstd, buf)
	return len(payload)
}

// writeBlock writes raw as the next block, compressed with comp if that pays.
func (w *Writer) writeBlock(raw []byte, comp compress.Type) (block.Handle, error) {
	n := w.prepareBlock(&w.writeBuf, raw, comp)
	h := block.Handle{Offset: w.offset, Length: uint64(n)}
	return h, w.write(w.writeBuf)
}

// write writes b at the current offset and folds it into the file checksum.
// Errors stick.
func (w *Writer) write(b []byte) error {
	if len(w.out)+len(b) > writeBufferSize || len(b) >= writeBufferSize/2 {
		if err := w.flushOut(); err != nil {
			return err
		}
	}
	if len(b) >= writeBufferSize/2 {
		// Large enough for a write of its own, without the copy.
		if err := w.writeOut(b); err != nil {
			return err
		}
	} else {
		if w.out == nil {
			w.out = (*outBufs.Get().(*[]byte))[:0]
		}
		w.out = append(w.out, b...)
	}
	w.fileCRC = w.fileCRC.Update(b)
	w.offset += uint64(len(b))
	return nil
}

// writeBufferSize is the size of the writes a Writer makes. Blocks are
// about 4 KiB: written one by one, a compaction of 4 GiB made a million
// write system calls, a quarter of its CPU profile, where Pebble and
// RocksDB buffer their table writes.
const writeBufferSize = 256 << 10

// outBufs holds the Writers' write buffers (released at Close), so that
// a flush or compaction writing many tables does not allocate one each.
var outBufs = sync.Pool{New: func() any { b := make([]byte, 0, writeBufferSize); return &b }}

// flushOut writes what w.out gathered.
func (w *Writer) flushOut() error {
	if len(w.out) == 0 {
		return nil
	}
	err := w.writeOut(w.out)
	w.out = w.out[:0]
	return err
}

// writeOut writes b to the file; the offset b starts at is w.offset minus
// what w.out holds.
func (w *Writer) writeOut(b []byte) error {
	n, err := w.w.Write(b)
	if err == nil && n != len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.err = errors.Wrapf(err, "sstable: writing %d bytes at offset %d", len(b), w.offset-uint64(len(w.out)))
		return w.err
	}
	return nil
}

// releaseOut gives w.out back to outBufs.
func (w *Writer) releaseOut() {
	if w.out != nil {
		b := w.out[:0]
		outBufs.Put(&b)
		w.out = nil
	}
}

// separator returns an index key k for the boundary between two data blocks
// whose last and first encoded internal keys are a and b:
// a <= k < b. See the package doc.
func (w *Writer) separator(a, b []byte) []byte {
	ua, ub := a[:len(a)-base.TrailerLen], b[:len(b)-base.TrailerLen]
	if !w.opts.Comparer.IsBytewise() {
		return w.separatorCmp(a, ua, ub)
	}
	n := min(len(ua), len(ub))
	i := 0
	for i < n && ua[i] == ub[i] {
		i++
	}
	// LevelDB's rule: shorten only when ua[:i+1] with its last byte
	// incremented is physically shorter than ua and still below ub.
	if i < n && ua[i] < 0xff && ua[i]+1 < ub[i] && i+1 < len(ua) {
		return w.shortKey(ua[:i+1])
	}
	w.sepBuf = append(w.sepBuf[:0], a...)
	return w.sepBuf
}

// successor returns an index key k >= a for the last data block, whose last
// encoded internal key is a. See the package doc.
func (w *Writer) successor(a []byte) []byte {
	ua := a[:len(a)-base.TrailerLen]
	if !w.opts.Comparer.IsBytewise() {
		return w.successorCmp(a, ua)
	}
	for i, c := range ua {
		if c != 0xff {
			if i+1 < len(ua) {
				return w.shortKey(ua[:i+1])
			}
			break
		}
	}
	w.sepBuf = append(w.sepBuf[:0], a...)
	return w.sepBuf
}

// shortKey returns the internal key (prefix with its last byte incremented,
// MaxSeqNum, separatorKind): below every entry of that user key.
func (w *Writer) shortKey(prefix []byte) []byte {
	w.sepBuf = append(w.sepBuf[:0], prefix...)
	w.sepBuf[len(w.sepBuf)-1]++
	w.sepBuf = binary.LittleEndian.AppendUint64(w.sepBuf, base.MakeTrailer(base.MaxSeqNum, separatorKind))
	return w.sepBuf
}

// addPrefix adds userKey's prefix, if the extractor gives one, to the
// filter, unless the last key added to this filter (or partition) had the
// same prefix: keys come in order, so a prefix's keys are one run.
func (w *Writer) addPrefix(userKey []byte) {
	p := w.opts.PrefixExtractor(userKey)
	if p == nil {
		w.hasLastPrefix = false
		return
	}
	if w.hasLastPrefix && !w.freshFilter && bytes.Equal(p, w.lastPrefix) {
		return
	}
	w.filter.AddKey(p)
	w.lastPrefix = append(w.lastPrefix[:0], p...)
	w.hasLastPrefix = true
}
