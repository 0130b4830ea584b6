package vfs

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/errclass"
	"github.com/shaledb/shale/internal/iobatch"
	"github.com/shaledb/shale/ioctx"
)

// diskFS is the operating system's filesystem. It is stateless apart from
// the process-wide lock registry, so the zero value is ready and safe for
// concurrent use.
type diskFS struct{}

var _ FS = diskFS{}

func (diskFS) Create(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return nil, err
	}
	return newDiskFile(f), nil
}

func (diskFS) Open(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return newDiskFile(f), nil
}

func (diskFS) OpenDir(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if !fi.IsDir() {
		_ = f.Close()
		return nil, &fs.PathError{Op: "opendir", Path: name, Err: syscall.ENOTDIR}
	}
	return newDiskFile(f), nil
}

func (diskFS) Remove(name string) error { return os.Remove(name) }

func (diskFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

// Link implements Linker.
func (diskFS) Link(oldname, newname string) error { return os.Link(oldname, newname) }

func (diskFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }

func (diskFS) List(dir string) ([]string, error) {
	// os.ReadDir sorts by name.
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

func (diskFS) Stat(name string) (os.FileInfo, error) { return os.Stat(name) }

// Lock takes the lock in two places. The in-process registry makes a second
// Lock from this process fail with a clear error on every platform, whatever
// the OS lock's semantics between descriptors of one process; the OS lock
// (flock where available, see lockFile) stops other processes.
//
// The holder of a lock may remove the file before releasing it (a failed
// engine Open removes the LOCK file it created). The OS lock belongs to the
// file, not to its name, so a Lock that opened the file before the removal
// and locks it after the release would hold a lock on a file no longer
// named, while another Lock creates and locks a new one. So once it holds
// the lock, Lock checks that name still leads to the file it locked, and
// otherwise lets it go and tries again.
func (diskFS) Lock(name string) (io.Closer, error) {
	key, err := filepath.Abs(name)
	if err != nil {
		return nil, errors.Wrapf(err, "vfs: lock %s", name)
	}
	if !processLocks.acquire(key) {
		return nil, errclass.Mark(errors.Newf("vfs: lock %s: already held by this process", name), ErrLocked)
	}
	for attempt := 0; ; attempt++ {
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			processLocks.release(key)
			return nil, errors.Wrapf(err, "vfs: lock %s", name)
		}
		if hook := lockOpenedHook; hook != nil {
			hook(name)
		}
		if err := lockFile(f); err != nil {
			_ = f.Close()
			processLocks.release(key)
			if errors.Is(err, ErrLocked) {
				return nil, errors.Wrapf(err, "vfs: lock %s: held by another process", name)
			}
			return nil, errors.Wrapf(err, "vfs: lock %s", name)
		}
		same, err := namesFile(name, f)
		if err == nil && same {
			return &diskLock{f: f, key: key}, nil
		}
		_ = f.Close()
		if err == nil && attempt >= maxLockAttempts {
			err = errors.Newf("the file was removed or replaced %d times while being locked", attempt+1)
		}
		if err != nil {
			processLocks.release(key)
			return nil, errors.Wrapf(err, "vfs: lock %s", name)
		}
	}
}

// maxLockAttempts bounds how many times Lock tries again after finding the
// file it locked removed or replaced.
const maxLockAttempts = 100

// lockOpenedHook, when a test sets it, runs in Lock between opening the file
// and locking it.
var lockOpenedHook func(name string)

// namesFile reports whether name leads to the open file f. A name that
// leads nowhere is not an error: the file was removed.
func namesFile(name string, f *os.File) (bool, error) {
	held, err := f.Stat()
	if err != nil {
		return false, err
	}
	named, err := os.Stat(name)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(held, named), nil
}

// lockRegistry holds the absolute names of the files this process has
// locked. It is safe for concurrent use.
type lockRegistry struct {
	mu   sync.Mutex
	held map[string]struct{}
}

var processLocks = lockRegistry{held: make(map[string]struct{})}

func (r *lockRegistry) acquire(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.held[key]; ok {
		return false
	}
	r.held[key] = struct{}{}
	return true
}

func (r *lockRegistry) release(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.held, key)
}

// diskLock is a held lock. Close is safe for concurrent use; only the first
// call releases.
type diskLock struct {
	f        *os.File
	key      string
	released atomic.Bool
}

func (l *diskLock) Close() error {
	if l.released.Swap(true) {
		return nil
	}
	// Closing the descriptor releases the OS lock.
	err := l.f.Close()
	processLocks.release(l.key)
	return err
}

// diskFile is a File backed by an *os.File. ReadAt, Map and Unmap are safe
// for concurrent use; Write and Sync are sequential, as File requires.
type diskFile struct {
	f *os.File

	// mu guards the mapping, which Map, Unmap and Close change.
	// mapped is nil when the file is not mapped; an empty file's mapping is
	// an empty, non-nil slice.
	mu struct {
		sync.Mutex
		mapped []byte
	}

	// ring says whether ReadAtBatch uses io_uring for this file, decided
	// by its first batch from the file's filesystem (see ringSuits; on
	// platforms without io_uring it stays unused).
	ring atomic.Int32
}

func newDiskFile(f *os.File) *diskFile { return &diskFile{f: f} }

var _ File = (*diskFile)(nil)

func (d *diskFile) ReadAt(p []byte, off int64) (int, error) { return d.f.ReadAt(p, off) }

var _ iobatch.Reader = (*diskFile)(nil)

// ReadAtBatch implements iobatch.Reader. On Linux, for a file on a filesystem
// whose cached reads io_uring completes inline, a batch goes to the kernel
// with one io_uring_enter per 32 reads (uring_linux.go). It returns false
// for a single request, elsewhere, when io_uring is unavailable (seccomp,
// kernel.io_uring_disabled) or all of the process's rings are busy. The file
// has no use for opts.
func (d *diskFile) ReadAtBatch(_ ioctx.IOOptions, reqs []iobatch.Read) bool {
	return len(reqs) > 1 && d.readRing(reqs)
}

func (d *diskFile) Write(p []byte) (int, error) { return d.f.Write(p) }

func (d *diskFile) Sync() error { return d.f.Sync() }

func (d *diskFile) Stat() (os.FileInfo, error) { return d.f.Stat() }

func (d *diskFile) Close() error {
	uerr := d.closeMapping()
	if err := d.f.Close(); err != nil {
		return err
	}
	return uerr
}
