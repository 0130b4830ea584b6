package memtable

import "syscall"

// hugePageMin is the smallest arena worth backing with transparent huge
// pages: one 2 MiB page.
const hugePageMin = 2 << 20

// adviseHugePages asks the kernel to back a large arena with transparent
// huge pages where it is configured to do so only on request ("madvise", a
// common default). An arena is written from start to end once, so 4 KiB
// pages cost a page fault each: a memtable of 100 MB took 25,000 faults,
// most of the time of applying a large sorted batch. The advice is a hint;
// a kernel without transparent huge pages refuses it, which changes nothing.
func adviseHugePages(b []byte) {
	if len(b) >= hugePageMin {
		_ = syscall.Madvise(b, syscall.MADV_HUGEPAGE)
	}
}
