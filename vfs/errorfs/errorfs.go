package errorfs

import (
	"io"
	"os"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/vfs"
)

// FS is a vfs.FS that asks an Injector before every operation and fails the
// operation, without running it, when the Injector returns an error. It
// counts the operations it sees and the errors it injects.
//
// FS is safe for concurrent use if the wrapped FS and the Injector are. Its
// files follow the vfs.File contract of the files they wrap.
type FS struct {
	fs       vfs.FS
	inj      Injector
	ops      atomic.Int64
	injected atomic.Int64
}

var _ vfs.FS = (*FS)(nil)

// Wrap returns fs with errors injected by inj. Files it returns implement
// vfs.ReaderAtWithOptions (the options reach inj in Op.IO and are forwarded
// to the wrapped file) and implement vfs.Mappable when the wrapped file does.
func Wrap(fs vfs.FS, inj Injector) *FS {
	return &FS{fs: fs, inj: inj}
}

// WrapObserver returns fs with fn called before every operation; nothing is
// injected. It is Wrap(fs, Observe(fn)). fn must be safe for concurrent use.
// To observe and inject at once, use Wrap(fs, Any(Observe(fn), inj)).
func WrapObserver(fs vfs.FS, fn func(Op)) *FS {
	return Wrap(fs, Observe(fn))
}

// Unwrap returns the wrapped FS.
func (f *FS) Unwrap() vfs.FS { return f.fs }

// Ops returns the number of operations the FS has seen, failed or not. Run
// a workload once without injection to learn how many operations an
// OnIndex loop must cover.
func (f *FS) Ops() int64 { return f.ops.Load() }

// Injected returns the number of operations that failed with an injected
// error.
func (f *FS) Injected() int64 { return f.injected.Load() }

func (f *FS) maybeError(op Op) error {
	f.ops.Add(1)
	err := f.inj.MaybeError(op)
	if err != nil {
		f.injected.Add(1)
	}
	return err
}

func (f *FS) wrapFile(name string, file vfs.File) vfs.File {
	ef := &errorFile{fs: f, f: file, path: name}
	if m, ok := file.(vfs.Mappable); ok {
		return &mappableFile{errorFile: ef, m: m}
	}
	return ef
}

// Create implements vfs.FS.
func (f *FS) Create(name string) (vfs.File, error) {
	if err := f.maybeError(Op{Kind: OpCreate, Path: name}); err != nil {
		return nil, err
	}
	file, err := f.fs.Create(name)
	if err != nil {
		return nil, err
	}
	return f.wrapFile(name, file), nil
}

// Open implements vfs.FS.
func (f *FS) Open(name string) (vfs.File, error) {
	if err := f.maybeError(Op{Kind: OpOpen, Path: name}); err != nil {
		return nil, err
	}
	file, err := f.fs.Open(name)
	if err != nil {
		return nil, err
	}
	return f.wrapFile(name, file), nil
}

// OpenDir implements vfs.FS.
func (f *FS) OpenDir(name string) (vfs.File, error) {
	if err := f.maybeError(Op{Kind: OpOpenDir, Path: name}); err != nil {
		return nil, err
	}
	file, err := f.fs.OpenDir(name)
	if err != nil {
		return nil, err
	}
	return f.wrapFile(name, file), nil
}

// Remove implements vfs.FS.
func (f *FS) Remove(name string) error {
	if err := f.maybeError(Op{Kind: OpRemove, Path: name}); err != nil {
		return err
	}
	return f.fs.Remove(name)
}

// Rename implements vfs.FS.
func (f *FS) Rename(oldname, newname string) error {
	if err := f.maybeError(Op{Kind: OpRename, Path: oldname, NewPath: newname}); err != nil {
		return err
	}
	return f.fs.Rename(oldname, newname)
}

// Link implements vfs.Linker as an OpLink. A wrapped filesystem that cannot
// link fails it with an error matching errors.ErrUnsupported.
func (f *FS) Link(oldname, newname string) error {
	if err := f.maybeError(Op{Kind: OpLink, Path: oldname, NewPath: newname}); err != nil {
		return err
	}
	l, ok := f.fs.(vfs.Linker)
	if !ok {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: errors.ErrUnsupported}
	}
	return l.Link(oldname, newname)
}

// MkdirAll implements vfs.FS.
func (f *FS) MkdirAll(dir string, perm os.FileMode) error {
	if err := f.maybeError(Op{Kind: OpMkdirAll, Path: dir}); err != nil {
		return err
	}
	return f.fs.MkdirAll(dir, perm)
}

// List implements vfs.FS.
func (f *FS) List(dir string) ([]string, error) {
	if err := f.maybeError(Op{Kind: OpList, Path: dir}); err != nil {
		return nil, err
	}
	return f.fs.List(dir)
}

// Stat implements vfs.FS.
func (f *FS) Stat(name string) (os.FileInfo, error) {
	if err := f.maybeError(Op{Kind: OpStat, Path: name}); err != nil {
		return nil, err
	}
	return f.fs.Stat(name)
}

// Lock implements vfs.FS. Closing the lock is not an operation: it cannot
// fail by injection.
func (f *FS) Lock(name string) (io.Closer, error) {
	if err := f.maybeError(Op{Kind: OpLock, Path: name}); err != nil {
		return nil, err
	}
	return f.fs.Lock(name)
}

// errorFile is the vfs.File of an FS. Like the file it wraps, its ReadAt is
// safe for concurrent use and Write and Sync are sequential.
type errorFile struct {
	fs   *FS
	f    vfs.File
	path string
	// woff is the offset of the next Write: the bytes written so far. Only
	// Write uses it, and Write is sequential.
	woff int64
}

var (
	_ vfs.File                = (*errorFile)(nil)
	_ vfs.ReaderAtWithOptions = (*errorFile)(nil)
)

// ReadAt implements io.ReaderAt: an Op with zero IO options.
func (e *errorFile) ReadAt(p []byte, off int64) (int, error) {
	if err := e.fs.maybeError(Op{Kind: OpFileRead, Path: e.path, Offset: off, Len: len(p)}); err != nil {
		return 0, err
	}
	return e.f.ReadAt(p, off)
}

// ReadAtWithOptions implements vfs.ReaderAtWithOptions: the Injector sees
// opts in Op.IO, and the read goes to the wrapped file with opts (through
// vfs.ReadAtOptions).
func (e *errorFile) ReadAtWithOptions(opts ioctx.IOOptions, p []byte, off int64) (int, error) {
	if err := e.fs.maybeError(Op{Kind: OpFileRead, Path: e.path, Offset: off, Len: len(p), IO: opts}); err != nil {
		return 0, err
	}
	return vfs.ReadAtOptions(e.f, opts, p, off)
}

// Write implements io.Writer. A failed Write writes nothing: it returns 0
// and the injected error without calling the wrapped file; except that a
// write DiskFull fails for lack of space first writes what fits, as
// write(2) does, and returns that count with the error.
func (e *errorFile) Write(p []byte) (int, error) {
	if err := e.fs.maybeError(Op{Kind: OpFileWrite, Path: e.path, Offset: e.woff, Len: len(p)}); err != nil {
		sw, ok := err.(*shortWrite)
		if !ok {
			return 0, err
		}
		if sw.n == 0 {
			return 0, sw.err
		}
		n, werr := e.f.Write(p[:sw.n])
		e.woff += int64(n)
		if werr != nil {
			return n, werr
		}
		return n, sw.err
	}
	n, err := e.f.Write(p)
	e.woff += int64(n)
	return n, err
}

// Sync implements vfs.File. A failed Sync does not sync: the data written
// since the last successful Sync stays undurable (a MemFS crash clone drops
// it).
func (e *errorFile) Sync() error {
	if err := e.fs.maybeError(Op{Kind: OpFileSync, Path: e.path}); err != nil {
		return err
	}
	return e.f.Sync()
}

// Stat implements vfs.File.
func (e *errorFile) Stat() (os.FileInfo, error) {
	if err := e.fs.maybeError(Op{Kind: OpFileStat, Path: e.path}); err != nil {
		return nil, err
	}
	return e.f.Stat()
}

// Close implements io.Closer. A failed Close still closes the wrapped file,
// as close(2) releases the descriptor even when it reports an error, so an
// injection loop does not leak files; the injected error is returned.
func (e *errorFile) Close() error {
	ierr := e.fs.maybeError(Op{Kind: OpFileClose, Path: e.path})
	err := e.f.Close()
	if ierr != nil {
		return ierr
	}
	return err
}

// mappableFile is an errorFile whose wrapped file is vfs.Mappable.
type mappableFile struct {
	*errorFile
	m vfs.Mappable
}

var _ vfs.Mappable = (*mappableFile)(nil)

// Map implements vfs.Mappable as an OpFileMap. The slice belongs to the
// wrapped file, with its lifetime; reads from it are memory accesses that
// errorfs cannot see.
func (m *mappableFile) Map() ([]byte, error) {
	if err := m.fs.maybeError(Op{Kind: OpFileMap, Path: m.path}); err != nil {
		return nil, err
	}
	return m.m.Map()
}

// Unmap implements vfs.Mappable. Like closing a lock, it is not an
// operation and cannot fail by injection.
func (m *mappableFile) Unmap() error { return m.m.Unmap() }
