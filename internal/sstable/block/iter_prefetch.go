package block

import "unsafe"

// Prefetch asks the processor to start loading the parts of block data that
// an Iter scanning it reads first: its restart count (the last 4 bytes,
// which Init reads) and the cache lines of its first touchLimit bytes (the
// lines touch would load). Unlike touch it does not wait for them: a table
// iterator calls it on the block after the one it walks, whose lines then
// arrive while it walks the current one, instead of stalling the first
// moves in the next (see sstable.Iter). Where no prefetch instruction is
// wired in (other than amd64) it does nothing.
func Prefetch(data []byte) {
	if len(data) < 4 {
		return
	}
	p := unsafe.Pointer(unsafe.SliceData(data))
	prefetchLines(unsafe.Add(p, len(data)-4), 1)
	prefetchLines(p, (min(len(data), touchLimit)+63)/64)
}
