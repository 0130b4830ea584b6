package memtable

import "syscall"

// hugePageMin is the smallest arena worth backing with transparent huge
// pages: one 2 MiB page.
const hugePageMin = 2 << 20

// adviseHugePages asks the kernel to back a large arena with transparent
// huge pages where it is configured to do so only on request ("madvise", a
// common default). An arena is written from start to end once, so 4 KiB
// pages cost a page fault each, about 24,000 for 100 MB: with the advice,
// applying a million sorted records went from 0.42-0.76 s to 0.15-0.18 s,
// and a million random ones from 0.68-0.97 s to 0.32-0.42 s (commit
// c5f0fad). The advice is a hint; a kernel without transparent huge pages
// refuses it, which changes nothing.
func adviseHugePages(b []byte) {
	if len(b) >= hugePageMin {
		_ = syscall.Madvise(b, syscall.MADV_HUGEPAGE)
	}
}
