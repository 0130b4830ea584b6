//go:build !linux || mips || mipsle || mips64 || mips64le

package vfs

import "github.com/shaledb/shale/internal/iobatch"

// readRing reads nothing: this platform has no io_uring (or, on mips,
// uring_linux.go does not know its system call numbers), so ReadAtBatch
// declines every batch.
func (d *diskFile) readRing([]iobatch.Read) bool { return false }
