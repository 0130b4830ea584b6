package crc

import "hash/crc32"

// table is the Castagnoli table. crc32.MakeTable returns the table that
// hash/crc32 recognises and routes to the hardware implementation.
var table = crc32.MakeTable(crc32.Castagnoli)

// maskDelta is added after rotating; part of the file format; do not change.
const maskDelta = 0xa282ead8

// CRC is a running, unmasked CRC-32C. The zero value is the CRC of no bytes,
// so CRC(0).Update(b) == New(b). It is a plain value, safe to share.
type CRC uint32

// New returns the CRC-32C of b. b is only read during the call.
func New(b []byte) CRC {
	return CRC(0).Update(b)
}

// Update returns the CRC-32C of the bytes already summed in c followed by b.
// b is only read during the call.
func (c CRC) Update(b []byte) CRC {
	return CRC(crc32.Update(uint32(c), table, b))
}

// Value returns the masked CRC (see the package doc), the form stored on
// disk next to the data it covers.
func (c CRC) Value() uint32 {
	return Mask(uint32(c))
}

// Mask returns the masked form of the raw CRC-32C crc.
func Mask(crc uint32) uint32 {
	return (crc>>15 | crc<<17) + maskDelta
}

// Unmask is the inverse of Mask.
func Unmask(masked uint32) uint32 {
	rot := masked - maskDelta
	return rot>>17 | rot<<15
}

// Value returns the raw, unmasked CRC-32C of b, as RocksDB stores a whole
// file's checksum. b is only read during the call.
func Value(b []byte) uint32 {
	return crc32.Checksum(b, table)
}
