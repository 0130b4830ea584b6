package batch

import (
	"syscall"
	"unsafe"
)

// adviseHugePages asks the kernel to back the whole 2 MiB pages within b
// with transparent huge pages, where it does so only on request ("madvise",
// a common default). b is Go heap memory: the advice changes how the kernel
// backs the pages, not what they hold or who owns them (the Go runtime gave
// the same advice for its whole heap until Go 1.21.1). A kernel without
// transparent huge pages refuses it, which changes nothing.
func adviseHugePages(b []byte) {
	if len(b) < 2*hugePage {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	start := (p + hugePage - 1) &^ (hugePage - 1)
	end := (p + uintptr(len(b))) &^ (hugePage - 1)
	if end <= start {
		return
	}
	_ = syscall.Madvise(b[start-p:end-p], syscall.MADV_HUGEPAGE)
}
