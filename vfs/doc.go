// Package vfs is the filesystem interface the engine uses, with two
// implementations: [Default], the operating system's, and [MemFS], an
// in-memory one that can simulate a crash. Package errorfs wraps any FS to
// inject faults.
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
