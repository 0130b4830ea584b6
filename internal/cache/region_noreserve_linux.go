package cache

import "syscall"

// mapNoReserve keeps the region's reservation out of the kernel's
// overcommit accounting: its pages are committed as they are touched.
const mapNoReserve = syscall.MAP_NORESERVE
