//go:build unix

package memtable

import "syscall"

// mapMemory returns size bytes of zeroed memory outside the Go heap, from an
// anonymous private mapping, or nil when the mapping fails.
func mapMemory(size int) []byte {
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil
	}
	adviseHugePages(b)
	return b
}

// unmapMemory releases memory from mapMemory.
func unmapMemory(b []byte) {
	// Munmap fails only for a range that is not a mapping, which would be
	// a double free: better to crash now than to unmap a later mapping.
	if err := syscall.Munmap(b); err != nil {
		panic("memtable: munmap of an arena: " + err.Error())
	}
}
