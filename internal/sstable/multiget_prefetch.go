package sstable

import "unsafe"

// mgPrefetchHead is how many bytes at the start of a cached data block
// MultiGet prefetches: a point lookup scans the entries of a restart
// interval from its start (with few restart points per block, from the
// block's start).
const mgPrefetchHead = 4096

// mgPrefetchBlock starts loading a cached block's restart count (its last
// 4 bytes, which Init reads first) and its first entries, so that the
// cache misses of the blocks of one MultiGet overlap rather than come one
// after the other while each key is looked up.
func mgPrefetchBlock(data []byte) {
	if len(data) < 4 {
		return
	}
	p := unsafe.Pointer(unsafe.SliceData(data))
	mgPrefetchLines(unsafe.Add(p, len(data)-4), 1)
	mgPrefetchLines(p, (min(len(data), mgPrefetchHead)+63)/64)
}
