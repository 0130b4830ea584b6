// Package compress compresses and decompresses table blocks.
//
// # Format
//
// The compression type of a block is stored as one byte in the block's
// trailer. The values are RocksDB's CompressionType ids, so a trailer means
// the same in both systems:
//
//	Type    value  block bytes
//	None    0      stored as is
//	Snappy  1      the Snappy block format (not the framing format): a
//	               varint of the decoded length, then Snappy elements
//
// Other RocksDB ids (zlib 2, bzip2 3, lz4 4, lz4hc 5, xpress 6, zstd 7) are
// named in error messages but not supported. The values are part of the file
// format; do not change them.
//
// A block is stored compressed only when that saves at least one eighth of
// its size (LevelDB's rule): decompressing costs CPU on every read, which a
// small saving does not pay for.
//
// # Buffers
//
// Both directions take a destination buffer so that a caller that reuses its
// buffers compresses and decompresses without allocating.
//
// Everything in this package is safe for concurrent use.
package compress
