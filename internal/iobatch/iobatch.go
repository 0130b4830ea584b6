// Package iobatch is the engine's private contract for reading several
// ranges of a file in one call: the OS filesystem of package vfs implements
// it with io_uring on Linux, and the file reader (internal/fileio) uses it
// when a file has it.
//
// It is not part of package vfs because it is engine plumbing, not
// something a program implements or calls: a filesystem a program hands in
// is read range by range through vfs.File.ReadAt, which is always correct.
// Keeping it here, in an internal package both vfs and fileio may import,
// keeps vfs's public names to the ones a user needs.
package iobatch

import "github.com/shaledb/shale/ioctx"

// Read is one read of a Reader.ReadAtBatch: P and Off are its
// arguments as for ReadAt, N and Err its results.
type Read struct {
	P   []byte
	Off int64

	N   int
	Err error
}

// Reader is an optional interface of a vfs.File: a file that can read several
// ranges in one call for less than one ReadAt each. On Linux the OS
// filesystem submits them together with io_uring, one system call instead of
// one per range, for files on filesystems whose cached reads io_uring
// completes without a worker thread (ext4, xfs, btrfs; not tmpfs).
//
// ReadAtBatch either reads every request and returns true, or reads none and
// returns false: the file has no faster way for these requests than ReadAt
// each (io_uring unavailable under seccomp or kernel.io_uring_disabled, all
// of the process's rings busy, a filesystem it does not suit, a single
// request), and the caller reads them as it would have without the
// interface. A read sets the request's N and Err to what ReadAt(P, Off)
// returns: a read that ends past the end of the file returns the bytes there
// are and io.EOF, a failed read its own error; one request's failure does not
// affect the others. The requests may be read in any order and at the same
// time, so they must not share buffer bytes. The buffers are owned by the
// caller, written only until ReadAtBatch returns, and not retained.
// ReadAtBatch is safe for concurrent use, as ReadAt is.
//
// opts is that of vfs.ReaderAtWithOptions, but the file reader uses ReadAtBatch
// only for reads without a timeout (opts.Timeout == 0): a timed read is
// issued request by request, so that each can be checked against it.
// Wrappers (errorfs, MemFS, test files) do not implement it, so reads through
// them, and fault injection, go request by request through ReadAt.
type Reader interface {
	ReadAtBatch(opts ioctx.IOOptions, reqs []Read) bool
}
