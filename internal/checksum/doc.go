// Package checksum computes the 4-byte block checksums stored in table block
// trailers.
//
// # Format
//
// A block trailer holds a compression type byte followed by a 4-byte
// little-endian checksum. The checksum covers the block bytes as stored (after
// compression) followed by the compression type byte, and is computed with the
// [Type] named in the table's footer:
//
//	Type      value  checksum of data (block bytes || type byte)
//	None      0      not checked; writers store 0
//	CRC32C    1      masked CRC-32C: m = ((c >> 15) | (c << 17)) + 0xa282ead8
//	XXHash64  3      low 32 bits of XXH64(data, seed 0)
//
// The values are RocksDB's ChecksumType values, so a trailer means the same in
// both systems. RocksDB's xxHash32 (2) and XXH3 (4) are recognised by name but
// not supported: a table that names them cannot be read. The values are part
// of the file format; do not change them.
//
// CRC32C values are masked (as in LevelDB and RocksDB) because computing the
// CRC of a string that itself contains embedded CRCs is problematic; error
// messages print them unmasked, as RocksDB does.
//
// Everything in this package is safe for concurrent use.
package checksum
