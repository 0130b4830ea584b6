//go:build unix

package cache

import "syscall"

// mapRegion returns size bytes of zeroed memory outside the Go heap: an
// anonymous private mapping that reserves address space only (pages become
// resident when first touched), or nil when the mapping fails.
func mapRegion(size int) []byte {
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_ANON|syscall.MAP_PRIVATE|mapNoReserve)
	if err != nil {
		return nil
	}
	return b
}

// unmapRegion releases memory from mapRegion.
func unmapRegion(b []byte) {
	// Munmap fails only for a range that is not a mapping, which would be
	// a double free: better to crash now than to unmap a later mapping.
	if err := syscall.Munmap(b); err != nil {
		panic("cache: munmap of the off-heap region: " + err.Error())
	}
}
