package memtable

import (
	"os"
	"syscall"
	"unsafe"
)

// releaseMinBytes is the smallest used part of an arena worth handing back
// to the kernel on reset rather than clearing: below it a madvise costs
// more than the clear, and keeps little resident.
const releaseMinBytes = 64 << 10

// releaseMemory zeroes the first used bytes of buf, a mapping from
// mapMemory, by dropping its pages (MADV_DONTNEED): they read as zeros and
// are resident again only when touched, so an arena waiting for reuse costs
// no memory. It reports false when used is too small for that to pay, or
// the advice fails; the caller then clears those bytes itself.
func releaseMemory(buf []byte, used int) bool {
	if used < releaseMinBytes {
		return false
	}
	// The whole mapping, whose pages past used are zero (an arena writes
	// nothing past what it allocated): dropping only up to used would keep
	// the rest of a huge page that straddles it resident, up to 2 MiB.
	// The mapping covers buf's last page whole.
	page := os.Getpagesize()
	n := (len(buf) + page - 1) &^ (page - 1)
	_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, uintptr(unsafe.Pointer(unsafe.SliceData(buf))), uintptr(n), syscall.MADV_DONTNEED)
	return errno == 0
}
