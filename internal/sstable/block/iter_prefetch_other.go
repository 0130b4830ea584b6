//go:build !amd64

package block

import "unsafe"

// prefetchLines does nothing where no prefetch instruction is wired in.
func prefetchLines(unsafe.Pointer, int) {}
