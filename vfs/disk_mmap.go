//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package vfs

import (
	"math"
	"os"
	"syscall"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/errclass"
)

var _ Mappable = (*diskFile)(nil)

// lockFile takes flock(LOCK_EX|LOCK_NB) on f. flock locks belong to the open
// file description, so they conflict between processes and between separate
// opens in one process, and closing f releases them. A lock held elsewhere
// gives an error marked ErrLocked.
func lockFile(f *os.File) error {
	var lerr error
	if err := rawControl(f, func(fd uintptr) {
		lerr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
	}); err != nil {
		return err
	}
	if lerr == syscall.EWOULDBLOCK || lerr == syscall.EAGAIN {
		return errclass.Mark(lerr, ErrLocked)
	}
	return lerr
}

func rawControl(f *os.File, fn func(fd uintptr)) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(fn)
}

// Map maps the whole file with mmap(PROT_READ, MAP_SHARED). The mapping has
// the file's size at the time of the call; an empty file maps to an empty
// slice without a system call (mmap rejects length 0).
func (d *diskFile) Map() ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.mu.mapped != nil {
		return d.mu.mapped, nil
	}
	fi, err := d.f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	if size == 0 {
		d.mu.mapped = []byte{}
		return d.mu.mapped, nil
	}
	if size > math.MaxInt {
		return nil, errors.Newf("vfs: map %s: size %d does not fit in memory", d.f.Name(), size)
	}
	var b []byte
	var merr error
	if err := rawControl(d.f, func(fd uintptr) {
		b, merr = syscall.Mmap(int(fd), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	}); err != nil {
		return nil, err
	}
	if merr != nil {
		return nil, errors.Wrapf(merr, "vfs: map %s", d.f.Name())
	}
	d.mu.mapped = b
	return b, nil
}

// Unmap releases the mapping made by Map, if any.
func (d *diskFile) Unmap() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	b := d.mu.mapped
	d.mu.mapped = nil
	if len(b) == 0 {
		return nil
	}
	if err := syscall.Munmap(b); err != nil {
		return errors.Wrapf(err, "vfs: unmap %s", d.f.Name())
	}
	return nil
}

func (d *diskFile) closeMapping() error { return d.Unmap() }
