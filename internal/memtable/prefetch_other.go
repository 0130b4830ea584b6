//go:build !amd64

package memtable

import "unsafe"

// prefetchNode does nothing where no prefetch instruction is wired in.
func prefetchNode(unsafe.Pointer) {}
