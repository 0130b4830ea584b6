//go:build !amd64

package sstable

import "unsafe"

// mgPrefetchLines does nothing where no prefetch instruction is wired in.
func mgPrefetchLines(unsafe.Pointer, int) {}
