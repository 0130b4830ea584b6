// Package vfs is the filesystem shale reads and writes through, and the one
// a program can hand it in engine.Options.FS. It has two implementations:
// [Default], the operating system's, and [MemFS] ([NewMem]), an in-memory
// one that can simulate a crash ([MemFS.CrashClone]). Package errorfs wraps
// any FS to inject faults. Together they let a program test itself against
// shale without a disk, with failed writes and with crashes:
//
//	fs := vfs.NewMem()
//	db, err := driver.OpenDB(engine.NewConnector("/db", &engine.Options{FS: fs}))
//
// A program may also implement FS itself (to count, slow down or redirect
// IO): it implements [FS] and [File], and nothing else is required.
//
// # What is public, and what is not
//
// The package's names are the ones a program implements or calls: FS, File,
// Default, MemFS and NewMem, ErrLocked, and three optional interfaces a
// file or filesystem may have ([Linker], [ReaderAtWithOptions], [Mappable])
// with [ReadAtOptions] for wrappers that forward reads. The engine's own
// plumbing is not here: the OS files read batches of ranges with io_uring on
// Linux (probing for seccomp and kernel.io_uring_disabled first), but the
// contract between those files and the engine's file reader lives in an
// internal package (internal/iobatch) that both import, because Go's
// internal rule would not let the engine import vfs/internal/... . A
// filesystem a program hands in is read through ReadAt, which is always
// correct; it simply takes the request-by-request path. The lock registry,
// mmap and io_uring code are unexported.
//
// # Contract
//
// [FS] and [File] are kept small, as golang/leveldb's were (pebble's grew to
// 18 methods). A capability only some files have is an optional interface
// found by type assertion: [ReaderAtWithOptions] (the file sees each read's
// [ioctx.IOOptions]: activity, rate-limiter priority, timeout) and
// [Mappable] (mmap_reads). Callers use [ReadAtOptions] rather than asserting
// themselves, and wrappers forward both.
//
// Files are written sequentially and read at offsets: a File has Write (an
// append) but no WriteAt or Seek, which is all that table, WAL and MANIFEST
// writers need, and it lets MemFS share file bytes without copying (see
// below). ReadAt may be called concurrently, also while the file is being
// appended; Write and Sync are sequential.
//
// # Durability
//
// Data is durable only once synced, on disk as in MemFS:
//
//   - File.Sync makes a file's contents durable.
//   - A directory entry (a creation, rename or removal, also of a
//     directory) is durable only after a Sync of a handle on its directory
//     from FS.OpenDir. So writing a new file durably is: Create, Write,
//     Sync the file, then OpenDir(dir).Sync(). A directory made by MkdirAll
//     needs a Sync of its parent to survive.
//   - Rename replaces atomically, so "write a temporary file, sync it,
//     rename it over the real name, sync the directory" publishes a file
//     (CURRENT) that a crash leaves either old or new.
//
// [MemFS.CrashClone] returns the state a crash would leave: exactly the
// durable state defined above, and nothing more. Its doc comment gives the
// precise rules. Tests write through a MemFS, crash-clone it, and recover
// from the clone.
//
// # Locking
//
// FS.Lock takes an exclusive lock on a file (the engine's LOCK file). On the
// OS filesystem it is flock(LOCK_EX|LOCK_NB), which excludes other
// processes, plus an in-process registry so a second Lock from the same
// process fails too, with a clear message, on every platform. Where package
// syscall has no flock (windows, plan9, solaris, aix), only the registry
// excludes. MemFS has only the registry: other processes cannot see it.
// A refused Lock's error names the file and is marked [ErrLocked].
//
// # Names
//
// Default takes OS paths. MemFS takes slash-separated paths from its root,
// with or without a leading slash ("/db/000001.sst" and "db/000001.sst" are
// the same file), cleaned with path.Clean.
//
// # Concurrency
//
// Default and MemFS are safe for concurrent use. Files follow the File
// contract above. Lock closers may be closed from any goroutine, once or
// more.
package vfs
