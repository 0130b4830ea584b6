package vfs

import (
	"io"
	"os"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/ioctx"
)

// File is an open file or directory.
//
// ReadAt is safe for concurrent use, also with Write on the same file: a read
// sees at least the bytes whose Write returned before it started. Write and
// Sync must be called sequentially (by one goroutine at a time). Close must
// not race with any other method.
//
// ReadAt follows io.ReaderAt: p is owned by the caller and is not retained;
// a read that ends past the end of the file returns the bytes there are and
// io.EOF. Write appends p at the end of what this handle has written so far
// and does not retain p. A handle from FS.Create writes from offset 0; a
// handle from FS.Open or FS.OpenDir cannot write.
type File interface {
	io.ReaderAt
	io.Writer
	io.Closer

	// Sync makes the data and metadata of this file durable. On a directory
	// handle (FS.OpenDir) it makes the directory's entries durable: the
	// creations, renames and removals done in it so far survive a crash.
	Sync() error

	// Stat describes the file. Name() is the base of the name it was opened
	// with, even if it has been renamed since.
	Stat() (os.FileInfo, error)
}

// Linker is an optional interface of an FS that can hard-link files: Link
// gives the file oldname a second name, newname, with os.Link's rules
// (newname must not exist; a directory cannot be linked). The new entry is
// durable after a Sync of newname's directory. A checkpoint links table files
// where the filesystem allows it, and copies them where it does not.
type Linker interface {
	Link(oldname, newname string) error
}

// FS is the filesystem the engine uses. It is kept small: capabilities that
// only some files have are optional interfaces of File (ReaderAtWithOptions,
// Mappable), found by type assertion.
//
// Errors for a missing or existing name satisfy errors.Is(err,
// os.ErrNotExist) and errors.Is(err, os.ErrExist) as the os package's do.
//
// Implementations in this package are safe for concurrent use.
type FS interface {
	// Create creates the named file, or truncates it if it exists, and opens
	// it read-write. The new entry is durable only after a Sync of the
	// parent directory.
	Create(name string) (File, error)

	// Open opens the named file read-only.
	Open(name string) (File, error)

	// OpenDir opens the named directory; Sync on the handle makes the
	// directory's entries durable. It fails for a name that is not a
	// directory.
	OpenDir(name string) (File, error)

	// Remove removes the named file or empty directory.
	Remove(name string) error

	// Rename renames oldname to newname, atomically replacing newname if it
	// exists: a reader sees either the old or the new file under newname,
	// never neither. The change is durable after a Sync of the directories.
	Rename(oldname, newname string) error

	// MkdirAll creates dir and any missing parents, each with perm (before
	// umask); it succeeds if dir already exists.
	MkdirAll(dir string, perm os.FileMode) error

	// List returns the base names of the entries of dir, sorted. The slice
	// belongs to the caller.
	List(dir string) ([]string, error)

	// Stat describes the named file or directory.
	Stat(name string) (os.FileInfo, error)

	// Lock takes an exclusive lock on the named file, creating it if it
	// does not exist. Until the returned Closer is closed, a second Lock of
	// the same name fails, whether it comes from this process or another,
	// with an error that names the file and is marked ErrLocked. Closing the
	// Closer releases the lock (a second Close does nothing) but leaves the
	// file in place.
	Lock(name string) (io.Closer, error)
}

// ErrLocked marks the error Lock returns when the file is already locked.
// Test with errors.Is.
var ErrLocked = errors.New("vfs: file is locked")

// Default is the operating system's filesystem. Names are OS paths.
var Default FS = diskFS{}

// ReaderAtWithOptions is an optional interface of File: a file that
// implements it sees the IO options (activity, rate-limiter priority,
// timeout) of every read. The file reader calls it, through ReadAtOptions,
// instead of ReadAt when it is present; wrappers (errorfs, test files)
// forward it. p is owned by the caller and not retained, as with ReadAt.
type ReaderAtWithOptions interface {
	ReadAtWithOptions(opts ioctx.IOOptions, p []byte, off int64) (int, error)
}

// Mappable is an optional interface of File: the file can be mapped into
// memory read-only (the mmap_reads option).
//
// Map returns the whole file's contents as of the call. The slice belongs to
// the file: the caller must not modify it (on the OS filesystem the pages are
// read-only and a write faults), and must not use it after Unmap or Close.
// A second Map before Unmap returns the same mapping. Unmap releases the
// mapping; Unmap without a mapping does nothing. Close unmaps.
// Map and Unmap are safe for concurrent use with ReadAt.
type Mappable interface {
	Map() ([]byte, error)
	Unmap() error
}

// ReadAtOptions reads len(p) bytes at off from f, passing opts to f when f
// implements ReaderAtWithOptions and calling f.ReadAt otherwise. It does not
// allocate. p is owned by the caller and not retained.
func ReadAtOptions(f File, opts ioctx.IOOptions, p []byte, off int64) (int, error) {
	if r, ok := f.(ReaderAtWithOptions); ok {
		return r.ReadAtWithOptions(opts, p, off)
	}
	return f.ReadAt(p, off)
}
