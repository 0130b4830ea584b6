// Package bloom builds and queries the full bloom filter stored in a table's
// filter block: one filter over every user key of the table, so that a point
// lookup can skip a table that does not hold its key without reading a data
// block.
//
// The filter is cache-line blocked (RocksDB's FastLocalBloom, its "full
// filter" of format_version 5): each key sets and tests all of its bits in
// one 64-byte line, so a query costs one cache miss where a flat bit array
// costs one per probe.
//
// # Format
//
// A filter over n keys built with b bits per key is:
//
//	+----------------------------------+-------------+-------------------+
//	| lines: L × 64 bytes              | k (1 byte)  | encoding (1 byte) |
//	+----------------------------------+-------------+-------------------+
//
// where L = max(1, ceil(n*b / 512)) (512 bits per line), k is the number of
// probes per key, and the encoding byte is EncodingBlocked (0xff). Bit j of a
// line (0 <= j < 512) is bit j%8 of the line's byte j/8 (least significant
// bit first).
//
// A key is hashed once, h = low 32 bits of XXH64(key, seed 0). All arithmetic
// is on uint32 (modulo 2^32), except the line number:
//
//	line := uint32((uint64(h) * uint64(L)) >> 32)   // in [0, L)
//	p := h * 0x9e3779b9
//	for j := 0; j < k; j++ {
//		bit p >> 23 of the line is set (building) or tested (querying)
//		p *= 0x9e3779b9
//	}
//
// The line comes from the high bits of h (a multiply-shift range
// reduction, cheaper than a modulo); multiplying by the golden-ratio
// constant moves the low bits up, so the bit positions within the line,
// taken from the top 9 bits of each product, are nearly independent of the
// line. A key may be in the table only if all k bits are set.
//
// A filter whose encoding byte is not EncodingBlocked, whose k is 0 or above
// 30, or whose lines are not a positive whole number of 64-byte lines (or
// more than 2^32-1 of them) is treated as matching every key: a filter must
// never cause a false negative, so an unknown or damaged one only costs
// reads. In particular the flat bit array that development builds wrote
// before this encoding (ending in k in [1, 30], not 0xff) matches every key.
//
// The layout, the hash and the probe sequence are part of the file format; do
// not change them. The choice of k is not: readers take it from the filter.
//
// # False positives
//
// Blocking costs a little accuracy, because lines are loaded unevenly, and
// moves the best k below the flat filter's round(b ln 2). The Builder takes k
// from a table that minimises the expected rate (a Poisson number of keys per
// line; the smallest k within 0.5% of the best): at 10 bits per key k = 6,
// and the rate is about 0.96% (a flat filter with k = 7: 0.82%). The measured
// rate is pinned by TestFalsePositiveRate.
package bloom
