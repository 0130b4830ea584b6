package block

import "unsafe"

// prefetchLines issues PREFETCHT0 for the n 64-byte cache lines starting at
// p. A prefetch never faults and retires without waiting for its line.
//
//go:noescape
func prefetchLines(p unsafe.Pointer, n int)
