//go:build !linux

package memtable

// releaseMemory does nothing where MADV_DONTNEED is not known to zero the
// pages it drops (the BSDs' and macOS's may keep their contents): the
// caller clears the arena itself.
func releaseMemory([]byte, int) bool { return false }
