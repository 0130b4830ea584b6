package sstable

import "unsafe"

// mgPrefetchLines asks the CPU to bring the n 64-byte cache lines starting
// at p into the cache, without waiting for them. PREFETCHT0 never faults,
// so the lines need not all be mapped.
//
//go:noescape
func mgPrefetchLines(p unsafe.Pointer, n int)
