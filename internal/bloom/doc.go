// Package bloom builds and queries the full bloom filter stored in a table's
// filter block: one filter over every user key of the table, so that a point
// lookup can skip a table that does not hold its key without reading a data
// block.
//
// # Format
//
// A filter over n keys built with b bits per key is:
//
//	+--------------------------------------+-------------+
//	| bit array: m/8 bytes                 | k (1 byte)  |
//	+--------------------------------------+-------------+
//
// where m = max(64, n*b) rounded up to a multiple of 8, and k, the number of
// probes, is round(b * ln 2) clamped to [1, 30]. Bit i of the array is bit
// i%8 of byte i/8 (least significant bit first).
//
// A key is hashed once, h = low 32 bits of XXH64(key, seed 0), and probed with
// LevelDB's double hashing, all arithmetic modulo 2^32:
//
//	delta := (h >> 17) | (h << 15)   // rotate right 17 bits
//	for j := 0; j < k; j++ {
//		bit h % m is set (when building) or tested (when querying)
//		h += delta
//	}
//
// A key may be in the table only if all k bits are set. The layout and the
// hash are part of the file format; do not change them.
//
// A filter that is shorter than 2 bytes, or whose k is 0 or above 30, is
// treated as matching every key: RocksDB reserves such values for other
// encodings, and a filter must never cause a false negative.
//
// With 10 bits per key (k = 7) the false-positive rate is about 1%.
package bloom
