// Package block encodes, checks and iterates over the blocks a table is made
// of: data blocks, the index block, the metaindex block and the properties
// block all share one format (LevelDB's). The filter block is an opaque
// payload with the same trailer.
//
// # Block format
//
// A block is a sequence of entries followed by an array of restart points:
//
//	+---------+---------+-----+-----------+-----------+-----+-----------------+
//	| entry 0 | entry 1 | ... | restart 0 | restart 1 | ... | num_restarts    |
//	+---------+---------+-----+-----------+-----------+-----+-----------------+
//	                            uint32 LE each              uint32 LE
//
// Each entry stores only what its key does not share with the previous
// entry's key: the key is prev[:shared] followed by the unshared bytes.
//
//	+----------+------------+------------+-----------------+-------+
//	| shared   | unshared   | valueLen   | key[shared:]    | value |
//	| varint32 | varint32   | varint32   | unshared bytes  |       |
//	+----------+------------+------------+-----------------+-------+
//
// Every restartInterval-th entry (the first of each restart interval) has
// shared = 0, and its offset within the block is a restart point. Restart
// points are what make a block searchable: a seek binary-searches them and
// then scans forward at most one interval. An empty block is
// num_restarts = 1, restart 0 = 0 (as LevelDB writes it); num_restarts = 0 is
// accepted too. Offsets are 32-bit, so a block is smaller than 4 GiB.
//
// # Trailer
//
// On disk every block is followed by a 5-byte trailer:
//
//	+----------------------+-------------------------------+
//	| compression (1 byte) | checksum (uint32 LE)          |
//	+----------------------+-------------------------------+
//
// The compression byte is a compress.Type and applies to the block bytes that
// precede it. The checksum is checksum.Compute of the block bytes as stored
// (compressed, if they are) followed by the compression byte, with the
// checksum type named in the table's footer. This is RocksDB's
// block-based-table trailer.
//
// # Handle
//
// A Handle locates a block in a file: varint64 offset then varint64 length,
// where length counts the block bytes but not the trailer. A handle takes at
// most MaxHandleLen bytes.
//
// These layouts are part of the file format; do not change them.
package block
