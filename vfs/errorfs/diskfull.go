package errorfs

import (
	"os"
	"sync"
	"syscall"

	"github.com/shaledb/shale/internal/errclass"
)

// DiskFull is an Injector that gives the filesystem a limited amount of
// space, as a full disk or an exhausted quota does: the files written
// through the FS may hold at most Budget bytes in all. A write that does not
// fit writes what does (possibly nothing) and fails as write(2) does on a
// full disk: it returns the bytes written and an *os.PathError{Op: "write"}
// wrapping syscall.ENOSPC, marked ErrInjected. Raising the budget with
// SetBudget frees space: later writes succeed again. Every other operation
// passes.
//
// Space is counted per name, by the operations DiskFull allows: a write adds
// its bytes to its file, Create truncates the file, Remove frees its bytes,
// Rename moves them (freeing the bytes of a file it replaces). Files that
// existed before take no space, and a removed file's space is free at once,
// even if a handle is still open. Directories, the lock file and syncs take
// none. Under Any, put DiskFull last: the operations it allows are counted
// even if an injector after it fails them.
//
// DiskFull is safe for concurrent use.
type DiskFull struct {
	mu     sync.Mutex
	budget int64
	used   int64
	sizes  map[string]int64
}

var _ Injector = (*DiskFull)(nil)

// NewDiskFull returns a DiskFull with budget bytes of space.
func NewDiskFull(budget int64) *DiskFull {
	return &DiskFull{budget: budget, sizes: make(map[string]int64)}
}

// SetBudget sets the space the files may take. Setting it below Used fails
// every later write until files are removed or the budget is raised again.
func (d *DiskFull) SetBudget(budget int64) {
	d.mu.Lock()
	d.budget = budget
	d.mu.Unlock()
}

// Used returns the bytes the files take now.
func (d *DiskFull) Used() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.used
}

// MaybeError implements Injector.
func (d *DiskFull) MaybeError(op Op) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch op.Kind {
	case OpCreate:
		d.free(op.Path)
	case OpRemove:
		d.free(op.Path)
	case OpRename:
		if op.Path != op.NewPath {
			d.free(op.NewPath)
			if n, ok := d.sizes[op.Path]; ok {
				d.sizes[op.NewPath] = n
				delete(d.sizes, op.Path)
			}
		}
	case OpFileWrite:
		n := int64(op.Len)
		if room := max(d.budget-d.used, 0); n > room {
			n = room
			d.take(op.Path, n)
			err := &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
			return &shortWrite{n: int(n), err: errclass.Mark(err, ErrInjected)}
		}
		d.take(op.Path, n)
	}
	return nil
}

func (d *DiskFull) take(name string, n int64) {
	d.sizes[name] += n
	d.used += n
}

func (d *DiskFull) free(name string) {
	d.used -= d.sizes[name]
	delete(d.sizes, name)
}

// shortWrite is an injected error that lets a FileWrite write its first n
// bytes before failing with err. Only DiskFull returns it, unwrapped; the
// errorFile's Write unpacks it, so callers see err.
type shortWrite struct {
	n   int
	err error
}

func (s *shortWrite) Error() string { return s.err.Error() }
func (s *shortWrite) Unwrap() error { return s.err }
