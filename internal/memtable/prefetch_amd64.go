package memtable

import "unsafe"

// prefetchNode asks the CPU to bring the cache lines of the node at p (its
// header, and the line after in case the tower or key crosses into it) into
// the cache, without waiting for them: PREFETCHT0 never faults, so p may
// be any address.
//
//go:noescape
func prefetchNode(p unsafe.Pointer)
