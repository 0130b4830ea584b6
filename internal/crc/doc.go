// Package crc computes CRC-32C (Castagnoli) checksums the way LevelDB and
// RocksDB store them, so shale's WAL chunks and table-block trailers use the
// same sums as those engines.
//
// # Masking
//
// A CRC stored next to the data it covers is masked:
//
//	masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8
//
// The reason (from LevelDB's crc32c.h): computing the CRC of a string that
// itself contains embedded CRCs is problematic, for example when a WAL record
// holds a block with its own checksum, or when a whole file of checksummed
// chunks is itself checksummed. Rotating and adding a constant breaks that
// algebraic relation. The rotation (15) and the constant (0xa282ead8) are part
// of the file format; do not change them.
//
// [CRC.Value] returns the masked sum, which is what WAL chunk headers and
// CRC32C block trailers hold. [Value] returns the raw, unmasked CRC-32C of a
// byte slice, which is what RocksDB records as a table's whole-file checksum.
// A CRC is the raw running sum, so uint32(c) is the unmasked value of data
// fed to it in several pieces:
//
//	var u uint32 = crc.New(data).Value() // masked, one piece
//	c := crc.New(header).Update(payload)  // several pieces
//	masked, raw := c.Value(), uint32(c)
//
// The polynomial is Castagnoli's (0x1edc6f41, 0x82f63b78 bit-reversed),
// computed with
// hash/crc32, which uses the SSE4.2 / ARMv8 CRC instructions where the CPU has
// them.
//
// CRC is a value type; everything in this package is safe for concurrent use.
package crc
