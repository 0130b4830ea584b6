package vfs

import (
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/errclass"
)

// MemFS is an in-memory FS that can simulate a crash (see CrashClone).
//
// Names are slash-separated paths resolved from the root, with or without a
// leading slash: "/db/000001.sst" and "db/000001.sst" name the same file.
// They are cleaned with path.Clean, so "db//x/../y" is "db/y". The root
// always exists and cannot be removed.
//
// MemFS is safe for concurrent use. Each file has its own lock, so a ReadAt
// does not wait for a Write to another file, and a ReadAt of a file being
// appended sees every byte whose Write has returned.
type MemFS struct {
	// mu guards the directory tree: the entries of every directory (live and
	// synced), directory modification times, and the lock registry. File
	// contents are guarded by each file's memNode.mu. Lock order: MemFS.mu
	// before memNode.mu.
	mu struct {
		sync.RWMutex
		root   *memNode
		locked map[string]struct{}
	}
}

var _ FS = (*MemFS)(nil)

// NewMem returns an empty MemFS: a root directory and nothing else.
func NewMem() *MemFS {
	m := &MemFS{}
	m.mu.root = newDirNode(os.ModeDir | 0o755)
	m.mu.locked = make(map[string]struct{})
	return m
}

// memNode is a file or a directory. A file's contents obey one invariant
// that lets slices of them be shared without copying: bytes below len(data)
// in a backing array are never written again. Write appends (so it writes
// only at or past len(data)), and truncation (Create of an existing file)
// drops the array instead of overwriting it. So synced, Map's result and a
// crash clone may alias data's array and stay valid while the file grows or
// is truncated.
type memNode struct {
	isDir bool

	// Directory state, guarded by MemFS.mu.
	//
	// children are the live entries. syncedChildren are the entries as of
	// the last Sync of a handle on this directory (nil if never synced);
	// they are what a crash leaves.
	children       map[string]*memNode
	syncedChildren map[string]*memNode
	dirMode        os.FileMode
	dirModTime     time.Time

	// File state.
	mu struct {
		sync.RWMutex
		// data is the live contents.
		data []byte
		// synced is the contents as of the last Sync: what a crash leaves.
		synced  []byte
		modTime time.Time
	}
}

func newDirNode(mode os.FileMode) *memNode {
	return &memNode{
		isDir:      true,
		children:   make(map[string]*memNode),
		dirMode:    mode,
		dirModTime: time.Now(),
	}
}

func newFileNode() *memNode {
	n := &memNode{}
	n.mu.modTime = time.Now()
	return n
}

// split cleans name and returns its components; the root has none.
func split(name string) []string {
	p := path.Clean("/" + name)
	if p == "/" {
		return nil
	}
	return strings.Split(p[1:], "/")
}

// walkLocked returns the directory that holds the last component of name,
// and that component. For the root, it returns (nil, ""). m.mu must be held.
func (m *MemFS) walkLocked(op, name string) (dir *memNode, base string, err error) {
	dir, base, errno := m.walkErrnoLocked(name)
	if errno != 0 {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: errno}
	}
	return dir, base, nil
}

// walkErrnoLocked is walkLocked returning a bare errno, for callers that
// build their own error.
func (m *MemFS) walkErrnoLocked(name string) (dir *memNode, base string, errno syscall.Errno) {
	parts := split(name)
	if len(parts) == 0 {
		return nil, "", 0
	}
	dir = m.mu.root
	for _, p := range parts[:len(parts)-1] {
		child, ok := dir.children[p]
		if !ok {
			return nil, "", syscall.ENOENT
		}
		if !child.isDir {
			return nil, "", syscall.ENOTDIR
		}
		dir = child
	}
	return dir, parts[len(parts)-1], 0
}

// lookupLocked returns the node name refers to. m.mu must be held.
func (m *MemFS) lookupLocked(op, name string) (*memNode, error) {
	dir, base, err := m.walkLocked(op, name)
	if err != nil {
		return nil, err
	}
	if dir == nil {
		return m.mu.root, nil
	}
	n, ok := dir.children[base]
	if !ok {
		return nil, &fs.PathError{Op: op, Path: name, Err: syscall.ENOENT}
	}
	return n, nil
}

// Create implements FS. Creating an existing file truncates it in place, as
// O_TRUNC does: the file keeps its directory entry (durable or not) and its
// synced contents until its next Sync.
func (m *MemFS) Create(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.walkLocked("open", name)
	if err != nil {
		return nil, err
	}
	if dir == nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EISDIR}
	}
	n, ok := dir.children[base]
	switch {
	case !ok:
		n = newFileNode()
		dir.children[base] = n
		dir.dirModTime = time.Now()
	case n.isDir:
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EISDIR}
	default:
		n.mu.Lock()
		n.mu.data = nil
		n.mu.modTime = time.Now()
		n.mu.Unlock()
	}
	return &memFile{n: n, fs: m, name: name, write: true}, nil
}

// Open implements FS. A directory can be opened; reading it fails.
func (m *MemFS) Open(name string) (File, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n, err := m.lookupLocked("open", name)
	if err != nil {
		return nil, err
	}
	return &memFile{n: n, fs: m, name: name}, nil
}

// OpenDir implements FS.
func (m *MemFS) OpenDir(name string) (File, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n, err := m.lookupLocked("opendir", name)
	if err != nil {
		return nil, err
	}
	if !n.isDir {
		return nil, &fs.PathError{Op: "opendir", Path: name, Err: syscall.ENOTDIR}
	}
	return &memFile{n: n, fs: m, name: name}, nil
}

// Remove implements FS. Open handles on a removed file keep working, as on
// POSIX.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.walkLocked("remove", name)
	if err != nil {
		return err
	}
	if dir == nil {
		return &fs.PathError{Op: "remove", Path: name, Err: syscall.EBUSY}
	}
	n, ok := dir.children[base]
	if !ok {
		return &fs.PathError{Op: "remove", Path: name, Err: syscall.ENOENT}
	}
	if n.isDir && len(n.children) > 0 {
		return &fs.PathError{Op: "remove", Path: name, Err: syscall.ENOTEMPTY}
	}
	delete(dir.children, base)
	dir.dirModTime = time.Now()
	return nil
}

// namePair is the two names of a Rename or a Link, resolved: the node at
// the old name, and the directory and base name of each.
type namePair struct {
	n            *memNode
	odir, ndir   *memNode
	obase, nbase string
}

// walkPairLocked resolves oldname, which must exist, and newname's
// directory. rootErrno is the error when either name is the root itself.
func (m *MemFS) walkPairLocked(oldname, newname string, rootErrno syscall.Errno) (p namePair, errno syscall.Errno) {
	if p.odir, p.obase, errno = m.walkErrnoLocked(oldname); errno != 0 {
		return namePair{}, errno
	}
	if p.ndir, p.nbase, errno = m.walkErrnoLocked(newname); errno != 0 {
		return namePair{}, errno
	}
	if p.odir == nil || p.ndir == nil {
		return namePair{}, rootErrno
	}
	var ok bool
	if p.n, ok = p.odir.children[p.obase]; !ok {
		return namePair{}, syscall.ENOENT
	}
	return p, 0
}

// Link implements Linker with os.Link's rules on Unix: newname must not
// exist (EEXIST) and oldname must not be a directory (EPERM). Both names
// then share the file; a crash keeps each name as its directory's last Sync
// left it (see CrashClone).
func (m *MemFS) Link(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	linkErr := func(errno syscall.Errno) error {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: errno}
	}
	p, errno := m.walkPairLocked(oldname, newname, syscall.EPERM)
	switch {
	case errno != 0:
		return linkErr(errno)
	case p.n.isDir:
		return linkErr(syscall.EPERM)
	}
	n, ndir, nbase := p.n, p.ndir, p.nbase
	if _, ok := ndir.children[nbase]; ok {
		return linkErr(syscall.EEXIST)
	}
	ndir.children[nbase] = n
	ndir.dirModTime = time.Now()
	return nil
}

// Rename implements FS with os.Rename's rules on Unix: a file may replace a
// file; an existing directory is never replaced (EEXIST), not even by
// itself; a directory cannot replace a file (ENOTDIR) nor move into itself
// (EINVAL).
func (m *MemFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	linkErr := func(errno syscall.Errno) error {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: errno}
	}
	p, errno := m.walkPairLocked(oldname, newname, syscall.EBUSY)
	if errno != 0 {
		return linkErr(errno)
	}
	n, odir, obase, ndir, nbase := p.n, p.odir, p.obase, p.ndir, p.nbase
	if existing, ok := ndir.children[nbase]; ok {
		switch {
		case existing.isDir:
			return linkErr(syscall.EEXIST)
		case existing == n:
			return nil
		case n.isDir:
			return linkErr(syscall.ENOTDIR)
		}
	}
	if n.isDir && strings.HasPrefix(path.Clean("/"+newname), path.Clean("/"+oldname)+"/") {
		return linkErr(syscall.EINVAL)
	}
	delete(odir.children, obase)
	ndir.children[nbase] = n
	now := time.Now()
	odir.dirModTime, ndir.dirModTime = now, now
	return nil
}

// MkdirAll implements FS.
func (m *MemFS) MkdirAll(dir string, perm os.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.mu.root
	for _, p := range split(dir) {
		child, ok := n.children[p]
		if !ok {
			child = newDirNode(os.ModeDir | perm.Perm())
			n.children[p] = child
			n.dirModTime = time.Now()
		} else if !child.isDir {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		n = child
	}
	return nil
}

// List implements FS.
func (m *MemFS) List(dir string) ([]string, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n, err := m.lookupLocked("open", dir)
	if err != nil {
		return nil, err
	}
	if !n.isDir {
		return nil, &fs.PathError{Op: "readdirent", Path: dir, Err: syscall.ENOTDIR}
	}
	names := make([]string, 0, len(n.children))
	for name := range n.children {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// Stat implements FS.
func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n, err := m.lookupLocked("stat", name)
	if err != nil {
		return nil, err
	}
	return n.statLocked(path.Base(path.Clean("/" + name))), nil
}

// Lock implements FS. Other processes cannot see a MemFS, so the lock
// excludes other Locks of the same MemFS; the file is created (not
// truncated) so that it shows in List, as on disk. A crash releases every
// lock: a CrashClone starts with none.
func (m *MemFS) Lock(name string) (io.Closer, error) {
	key := path.Clean("/" + name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.mu.locked[key]; ok {
		return nil, errclass.Mark(errors.Newf("vfs: lock %s: already held", name), ErrLocked)
	}
	dir, base, err := m.walkLocked("open", name)
	if err != nil {
		return nil, errors.Wrapf(err, "vfs: lock %s", name)
	}
	if dir == nil {
		return nil, errors.Wrapf(&fs.PathError{Op: "open", Path: name, Err: syscall.EISDIR}, "vfs: lock %s", name)
	}
	if n, ok := dir.children[base]; !ok {
		dir.children[base] = newFileNode()
		dir.dirModTime = time.Now()
	} else if n.isDir {
		return nil, errors.Wrapf(&fs.PathError{Op: "open", Path: name, Err: syscall.EISDIR}, "vfs: lock %s", name)
	}
	m.mu.locked[key] = struct{}{}
	return &memLock{fs: m, key: key}, nil
}

// memLock is a held MemFS lock. Close is safe for concurrent use; only the
// first call releases.
type memLock struct {
	fs       *MemFS
	key      string
	released atomic.Bool
}

func (l *memLock) Close() error {
	if l.released.Swap(true) {
		return nil
	}
	l.fs.mu.Lock()
	defer l.fs.mu.Unlock()
	delete(l.fs.mu.locked, l.key)
	return nil
}

// CrashClone returns a new MemFS holding what would be left if the machine
// crashed now: exactly the durable state, and nothing that was not synced.
//
//   - A directory holds the entries it had at the last Sync of a handle on
//     it (FS.OpenDir(dir).Sync()); a directory never synced is empty. So a
//     creation, rename or removal is kept only if a Sync of its directory
//     followed it: a file created (even written and synced) in a directory
//     that was not synced afterwards does not exist, a rename not followed by
//     a Sync of the directory is undone (the file is back under its old
//     name, and a file it replaced is back), and a removed file comes back.
//     This holds for directories too: a directory made by MkdirAll survives
//     only if its parent was synced after it was made. The root always
//     exists.
//   - A file holds its contents as of its last File.Sync (a Sync on any
//     handle of it, including a read-only one); a file never synced is
//     empty. Bytes written after the last Sync are lost. A Create that
//     truncated the file counts as a change to its contents: it is undone
//     unless a Sync followed.
//   - Each directory is judged on its own: a rename from one directory to
//     another, with only one of them synced, leaves the file under both names
//     or neither. A file left under two names becomes two independent files
//     in the clone.
//   - Locks are not held in the clone.
//
// Everything in the clone is durable (it is its own synced state), so
// CrashClone of a clone gives the same tree. The clone shares no mutable
// state with m: writes to either never show in the other. CrashClone is
// safe for concurrent use with every other method; operations that run
// concurrently with it may or may not be reflected, as with a real crash.
func (m *MemFS) CrashClone() *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := &MemFS{}
	c.mu.root = crashCloneLocked(m.mu.root)
	c.mu.locked = make(map[string]struct{})
	return c
}

// crashCloneLocked returns the durable state of n. MemFS.mu must be held.
func crashCloneLocked(n *memNode) *memNode {
	if n.isDir {
		c := newDirNode(n.dirMode)
		c.dirModTime = n.dirModTime
		for name, child := range n.syncedChildren {
			c.children[name] = crashCloneLocked(child)
		}
		c.syncedChildren = maps.Clone(c.children)
		return c
	}
	c := &memNode{}
	n.mu.RLock()
	// The synced bytes are never overwritten (see memNode), so the clone can
	// share them. Capping the capacity makes the clone's first Write copy
	// them rather than write into an array the original still uses.
	synced := n.mu.synced[:len(n.mu.synced):len(n.mu.synced)]
	c.mu.data, c.mu.synced, c.mu.modTime = synced, synced, n.mu.modTime
	n.mu.RUnlock()
	return c
}

// String returns a dump of the tree for debugging tests, one entry a line,
// indented two spaces a level, sorted by name. The root is "/"; a directory
// is followed by "/", a file by its live size and its synced size. Entries
// whose change is not durable yet carry a note:
//
//	[unsynced entry]    created or renamed here since the directory's last Sync
//	[unsynced replace]  as above, replacing a durable entry that a crash restores
//	[unsynced remove]   removed since the last Sync; a crash restores it (its
//	                    durable state is shown)
//
// For example:
//
//	/
//	  db/ [unsynced entry]
//	    000001.log 120 bytes, 100 synced
//	    CURRENT 16 bytes, 16 synced
//	    OLD.log 5 bytes, 5 synced [unsynced remove]
func (m *MemFS) String() string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var b strings.Builder
	b.WriteString("/\n")
	dumpLocked(&b, m.mu.root, 1)
	return b.String()
}

func dumpLocked(b *strings.Builder, dir *memNode, depth int) {
	names := slices.Collect(maps.Keys(dir.children))
	for name := range dir.syncedChildren {
		if _, ok := dir.children[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		live, synced := dir.children[name], dir.syncedChildren[name]
		var note string
		n := live
		switch {
		case live == nil:
			n, note = synced, " [unsynced remove]"
		case synced == nil:
			note = " [unsynced entry]"
		case synced != live:
			note = " [unsynced replace]"
		}
		b.WriteString(strings.Repeat("  ", depth))
		b.WriteString(name)
		if n.isDir {
			b.WriteString("/")
			b.WriteString(note)
			b.WriteString("\n")
			if live != nil {
				dumpLocked(b, n, depth+1)
			}
			continue
		}
		n.mu.RLock()
		size, syncedSize := len(n.mu.data), len(n.mu.synced)
		n.mu.RUnlock()
		if live == nil {
			size = syncedSize
		}
		fmt.Fprintf(b, " %d bytes, %d synced%s\n", size, syncedSize, note)
	}
}

// statLocked describes n. For a directory, MemFS.mu must be held.
func (n *memNode) statLocked(name string) os.FileInfo {
	if n.isDir {
		return &memFileInfo{name: name, mode: n.dirMode, modTime: n.dirModTime}
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	return &memFileInfo{name: name, size: int64(len(n.mu.data)), mode: 0o644, modTime: n.mu.modTime}
}

// memFileInfo implements os.FileInfo. It is immutable.
type memFileInfo struct {
	name    string
	size    int64
	mode    os.FileMode
	modTime time.Time
}

func (i *memFileInfo) Name() string       { return i.name }
func (i *memFileInfo) Size() int64        { return i.size }
func (i *memFileInfo) Mode() os.FileMode  { return i.mode }
func (i *memFileInfo) ModTime() time.Time { return i.modTime }
func (i *memFileInfo) IsDir() bool        { return i.mode.IsDir() }
func (i *memFileInfo) Sys() any           { return nil }

// memFile is a handle on a memNode. ReadAt, Map, Unmap and Stat are safe for
// concurrent use, also with Write and Sync; Close must not race with other
// methods.
type memFile struct {
	n      *memNode
	fs     *MemFS
	name   string
	write  bool
	closed atomic.Bool

	// mu guards the mapping Map returned, nil when not mapped.
	mu struct {
		sync.Mutex
		mapped []byte
	}
}

var (
	_ File     = (*memFile)(nil)
	_ Mappable = (*memFile)(nil)
)

func (f *memFile) errClosed(op string) error {
	return &fs.PathError{Op: op, Path: f.name, Err: fs.ErrClosed}
}

// ReadAt implements io.ReaderAt. It does not allocate.
func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if f.closed.Load() {
		return 0, f.errClosed("read")
	}
	if f.n.isDir {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: syscall.EISDIR}
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "readat", Path: f.name, Err: syscall.EINVAL}
	}
	f.n.mu.RLock()
	defer f.n.mu.RUnlock()
	if off >= int64(len(f.n.mu.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.n.mu.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Write appends p to the file; p is copied, not retained.
func (f *memFile) Write(p []byte) (int, error) {
	if f.closed.Load() {
		return 0, f.errClosed("write")
	}
	if !f.write {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: syscall.EBADF}
	}
	f.n.mu.Lock()
	defer f.n.mu.Unlock()
	d := f.n.mu.data
	if len(d)+len(p) > cap(d) {
		// Grow by doubling: append grows large slices by only 1.25x, which
		// copies a file written in blocks about five times over.
		grown := make([]byte, len(d), max(2*cap(d), len(d)+len(p), 4<<10))
		copy(grown, d)
		d = grown
	}
	f.n.mu.data = append(d, p...)
	f.n.mu.modTime = time.Now()
	return len(p), nil
}

// Sync makes the file's contents durable, or, on a directory, its entries.
func (f *memFile) Sync() error {
	if f.closed.Load() {
		return f.errClosed("sync")
	}
	if f.n.isDir {
		f.fs.mu.Lock()
		defer f.fs.mu.Unlock()
		f.n.syncedChildren = maps.Clone(f.n.children)
		return nil
	}
	f.n.mu.Lock()
	defer f.n.mu.Unlock()
	// No copy: bytes below len(data) are never overwritten (see memNode).
	f.n.mu.synced = f.n.mu.data[:len(f.n.mu.data):len(f.n.mu.data)]
	return nil
}

func (f *memFile) Stat() (os.FileInfo, error) {
	if f.closed.Load() {
		return nil, f.errClosed("stat")
	}
	name := path.Base(path.Clean("/" + f.name))
	if f.n.isDir {
		f.fs.mu.RLock()
		defer f.fs.mu.RUnlock()
	}
	return f.n.statLocked(name), nil
}

func (f *memFile) Close() error {
	if f.closed.Swap(true) {
		return f.errClosed("close")
	}
	return f.Unmap()
}

// Map returns the file's contents as of the first Map since the last Unmap,
// without copying: the bytes are never overwritten (see memNode), so the
// slice stays valid and unchanged while the file grows or is truncated. The
// caller must not modify it.
func (f *memFile) Map() ([]byte, error) {
	if f.closed.Load() {
		return nil, f.errClosed("mmap")
	}
	if f.n.isDir {
		return nil, &fs.PathError{Op: "mmap", Path: f.name, Err: syscall.EISDIR}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mu.mapped != nil {
		return f.mu.mapped, nil
	}
	f.n.mu.RLock()
	d := f.n.mu.data
	f.n.mu.RUnlock()
	f.mu.mapped = d[:len(d):len(d)]
	if f.mu.mapped == nil {
		f.mu.mapped = []byte{}
	}
	return f.mu.mapped, nil
}

// Unmap forgets the mapping. Nothing else is released: a MemFS mapping is
// ordinary memory that the garbage collector reclaims once the caller drops
// it.
func (f *memFile) Unmap() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.mapped = nil
	return nil
}
