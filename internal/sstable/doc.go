// Package sstable implements shale's table files: immutable, sorted runs of
// internal keys and their values. This comment is the format's
// specification; Writer writes it.
//
// # File layout
//
// A table is a sequence of blocks, each followed by a 5-byte trailer (see
// package block), and a fixed-size footer:
//
//	data block 0       | trailer
//	...
//	data block n-1     | trailer
//	filter block       | trailer   present when bloom bits per key > 0
//	range-del block    | trailer   present when the table has range tombstones
//	properties block   | trailer
//	metaindex block    | trailer
//	index block        | trailer
//	footer             (FooterLen = 53 bytes)
//
// Data blocks hold encoded internal keys (user key, then the 8-byte
// little-endian trailer (seqnum << 8) | kind; see package base) and their
// values, in increasing internal-key order, with a restart point every 16
// entries by default. A data block is cut once its estimated encoded size
// reaches the block size (4096 bytes by default), so blocks run slightly
// over it.
//
// The index block has one entry per data block, with restart interval 1. Its
// key k for block i is an encoded internal key with
// last(block i) <= k < first(block i+1): when the two blocks' user keys
// allow a physically shorter user key u between them (LevelDB's
// FindShortestSeparator: the first differing byte of last(block i) plus
// one), k is (u, MaxSeqNum, KindSet), below every entry of u;
// otherwise k is last(block i). The last block's key is built the same way
// from LevelDB's FindShortSuccessor of its last user key. The value is the
// data block's block.Handle. So the first index entry >= a search key names
// the only data block that can hold the first entry >= that key.
//
// The filter block is a bloom filter (package bloom) over every distinct user
// key of the table; it is never compressed. It is cache-line blocked, and its
// last byte names its encoding (bloom.EncodingBlocked): a reader treats a
// filter of an encoding it does not know as matching every key.
//
// The properties block maps "shale.<name>" to a value, sorted, restart
// interval 1, never compressed. Integers are varint64; the compression and
// checksum types are their names ("snappy", "xxh64", ...):
//
//	shale.block.size           target data block size the table was written with
//	shale.bloom.bits.per.key   0 when there is no filter block
//	shale.checksum.type        block checksum type (as in the footer)
//	shale.compression          compression the writer was asked for; each block's
//	                           trailer says whether that block is compressed
//	shale.data.size            bytes of all data blocks, trailers included
//	shale.filter.size          bytes of the filter block, trailer included (0 if none);
//	                           partitioned: of every filter partition
//	shale.format.version       the footer's format version
//	shale.index.partitions     number of index partitions; absent (0) when the
//	                           index is not partitioned
//	shale.index.size           bytes of the index block as stored, trailer included;
//	                           partitioned: of every index partition and the
//	                           top-level index block
//	shale.largest.seqno        largest sequence number of any entry
//	shale.num.data.blocks      number of data blocks
//	shale.num.deletions        number of tombstones (KindDelete entries)
//	shale.num.entries          number of entries
//	shale.prefix.extractor.name  the prefix extractor whose key prefixes the
//	                           filter holds besides whole keys ("fixed:8",
//	                           "capped:8"; RocksDB's rocksdb.prefix.extractor.name);
//	                           absent when none (WriterOptions.PrefixExtractor)
//	shale.raw.key.size         sum of the encoded internal key lengths
//	shale.raw.value.size       sum of the value lengths
//	shale.smallest.seqno       smallest sequence number of any entry
//
// Readers ignore names they do not know, so properties can be added without a
// new format version. Nothing time- or host-dependent is stored: the same
// entries and options always produce the same bytes.
//
// The metaindex block maps meta block names to their handles, sorted, restart
// interval 1, never compressed: MetaFilterName ("shale.filter.bloom", when
// there is a filter), MetaPropertiesName ("shale.properties") and
// MetaRangeDelName ("shale.rangedel", when the table has range tombstones).
//
// # Partitioned index and filters
//
// With WriterOptions.IndexPartitionSize > 0 (RocksDB's two-level index,
// index_type=kTwoLevelIndexSearch, with partition_filters and
// metadata_block_size), a table whose index would need more than one
// partition is written in this layout instead:
//
//	data block 0 .. n-1      | trailer
//	filter partition 0..P-1  | trailer   present when bloom bits per key > 0
//	index partition 0..P-1   | trailer
//	range-del block          | trailer   present when the table has range tombstones
//	properties block         | trailer
//	metaindex block          | trailer   no MetaFilterName entry
//	top-level index block    | trailer   the footer's index handle
//	footer                   format version FormatVersionPartitioned (3)
//
// The index entries, exactly those of the single index block, are cut into
// index partitions, each an ordinary index block (same entries, restart
// interval 1, compressed like the index block). A partition is cut after a
// data block's entry, once its estimated size reaches IndexPartitionSize,
// and after the last one; so every data block has its entry in exactly one
// partition and partitions are never empty.
//
// Filter partition p is a bloom filter (same encoding as the filter block,
// never compressed) over the user keys of the data blocks that index
// partition p covers. A user key whose versions span the boundary between
// two partitions is in both filters.
//
// The top-level index block has one entry per partition, in order, restart
// interval 1, compressed like the index block (its trailer says whether it
// is): its key is the partition's last separator (an encoded internal
// key, so the top-level keys strictly increase), its value the index
// partition's block.Handle followed, when the table has a filter, by the
// filter partition's handle (every entry has both, or every entry has one).
//
// This is all a point lookup needs. The entry it wants is the first one >=
// the search key s = (key, seq, KindMax); by the index rule above, the data
// block that can hold it is the one of the first separator >= s, in the
// single index. Separators increase across partitions, so that separator is
// in the first partition whose last separator is >= s: the partition the
// top-level search picks. The entry, if it exists, is in a data block of that
// partition, so its user key is in that partition's filter, and a filter
// partition that rules the key out rules out the table. When no top-level
// key is >= s, no separator is, and the table holds no entry >= s.
//
// A table whose index fits in one partition (every table with fewer data
// blocks than a partition holds) is written in the unpartitioned layout,
// byte for byte as with IndexPartitionSize 0, so small tables keep one
// fewer indirection and the file stays readable by older readers.
//
// Format versions name the newest feature a reader must know, not one
// feature each: a partitioned table has version 3 whether or not it has a
// range deletion block (the metaindex says, as for version 2), and a
// reader of version 3 reads versions 1 and 2. A reader that knows only 1
// and 2 refuses a partitioned table, whose top-level entries it would
// otherwise take for data block handles.
//
// # Range deletions
//
// The range deletion block holds the table's range tombstones in fragmented
// form (package rangedel): non-overlapping fragments in increasing order,
// one entry each, restart interval 1, never compressed. An entry's key is the
// fragment's start user key; its value is the varint-prefixed end user key
// (exclusive) and the varint count and values of the covering tombstones'
// sequence numbers, strictly decreasing (rangedel.AppendValue). A reader
// loads the block at open and keeps it. A table with the block has format
// version FormatVersionRangeDel (2) in its footer and properties, so that a
// reader predating range deletions refuses it rather than reading it without
// its tombstones; a table without it is written exactly as before, with
// FormatVersion 1. A table may hold tombstones and no point entry (its
// index block is then empty).
//
// A fragment's end is never empty: a table holds no unbounded tombstone.
// The engine's DeleteRange(start, nil), "every key >= start", is unbounded
// only in memory and in the WAL (an empty end, see packages rangedel and
// batch); the flush that writes it to a table clamps it to end just after
// the largest user key in the tree, which deletes exactly the same entries
// (package rangedel says why). So unbounded deletions changed nothing in
// this format, no format version was needed for them, and every reader,
// older ones included, reads a table that came from one exactly. A reader
// takes an empty end for corruption (rangedel.DecodeFragment), and the
// Writer refuses to write one.
//
// A table's smallest and largest keys, which the writer reports and the
// MANIFEST records, cover its tombstones: the first fragment's start
// contributes (start, its highest seq, KindRangeDelete) and the last one's
// exclusive end the sentinel
// (end, MaxSeqNum, KindRangeDelete), which sorts before every entry of end,
// so a table whose tombstones end where the next table of its level starts
// does not overlap it.
//
// Data and index blocks are compressed with the table's compression when that
// saves at least an eighth of the block (package compress): none, snappy or
// zstd, named by each block's trailer (RocksDB's ids 0, 1 and 7) and, for the
// table, by shale.compression. One exception: a zstd table stores the index
// block a reader loads at open (the top-level index when partitioned) zstd
// compressed whether or not that pays. A release that does not know zstd
// refuses such a table when it opens it: first at the shale.compression
// property (an unknown name), and, were that ignored, at the index block (an
// unknown compression byte), both as corruption, rather than opening it and
// failing at its first zstd data block. zstd needs no new format version:
// the layout is unchanged and the compression byte was always checked (see
// FORMAT.md).
//
// # Footer
//
//	offset  size  field
//	0       1     checksum type of every block trailer (checksum.Type)
//	1       <=20  metaindex block handle (two varint64s)
//	        <=20  index block handle (two varint64s)
//	...           zero padding up to offset 41
//	41      4     format version, uint32 LE (FormatVersion = 1,
//	              FormatVersionRangeDel = 2 with a range deletion block,
//	              FormatVersionPartitioned = 3 with a partitioned index)
//	45      8     magic, uint64 LE (= Magic = 0x5348414c45535354, "SHALESST"
//	              read as a big-endian string)
//
// All of the above is part of the file format; do not change it. A change
// needs a new FormatVersion that readers can tell apart.
//
// FormatVersion stayed 1 when the filter became cache-line blocked (before
// any release): the table layout did not change, and the filter says its
// own encoding, so a development-era table with the old flat filter reads
// correctly, without its filter's help.
//
// # Checksums
//
// Every block is checked by its trailer. The Writer also computes the CRC-32C
// (unmasked, as RocksDB's FileChecksumCrc32c) of the whole file while
// writing it and returns it in WriterMetadata, so the engine can record it in
// the MANIFEST without reading the file back.
package sstable
