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
//	Zstd    7      as RocksDB's kZSTD blocks (compress_format_version 2): a
//	               varint32 of the decoded length, then one zstd frame
//	               (RFC 8878) that declares the same content size; shale
//	               writes it without the frame checksum (the block trailer
//	               has one) and with no dictionary
//
// Other RocksDB ids (zlib 2, bzip2 3, lz4 4, lz4hc 5, xpress 6) are named in
// error messages but not supported. The values are part of the file
// format; do not change them.
//
// A block is stored compressed only when that saves at least one eighth of
// its size (LevelDB's rule): decompressing costs CPU on every read, which a
// small saving does not pay for.
//
// Zstd takes a level, 1 to 22 as the zstd CLI and RocksDB number them
// (default 3). The encoder is github.com/klauspost/compress/zstd, which has
// four: levels 1-2 encode as its fastest, 3-5 as its default, 6-9 as its
// better and 10-22 as its best compression. A zstd block's declared size is
// checked against its length header and a 256 MiB limit before anything is
// decoded, and it is decoded into the caller's buffer of that size only: a
// frame that would decode to more is corruption, never an allocation.
//
// # Buffers
//
// Both directions take a destination buffer so that a caller that reuses its
// buffers compresses and decompresses without allocating.
//
// Everything in this package is safe for concurrent use.
package compress
