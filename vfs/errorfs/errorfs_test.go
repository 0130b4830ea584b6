package errorfs_test

import (
	"fmt"
	"io"
	iofs "io/fs"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

func TestOpKind(t *testing.T) {
	cases := []struct {
		kind        errorfs.OpKind
		name        string
		read, write bool
	}{
		{errorfs.OpCreate, "Create", false, true},
		{errorfs.OpOpen, "Open", true, false},
		{errorfs.OpOpenDir, "OpenDir", true, false},
		{errorfs.OpRemove, "Remove", false, true},
		{errorfs.OpRename, "Rename", false, true},
		{errorfs.OpMkdirAll, "MkdirAll", false, true},
		{errorfs.OpList, "List", true, false},
		{errorfs.OpStat, "Stat", true, false},
		{errorfs.OpLock, "Lock", false, true},
		{errorfs.OpFileRead, "FileRead", true, false},
		{errorfs.OpFileWrite, "FileWrite", false, true},
		{errorfs.OpFileSync, "FileSync", false, true},
		{errorfs.OpFileClose, "FileClose", false, false},
		{errorfs.OpFileStat, "FileStat", true, false},
		{errorfs.OpFileMap, "FileMap", true, false},
		{errorfs.OpLink, "Link", false, true},
		{errorfs.OpKind(200), "OpKind(200)", false, false},
	}
	for _, c := range cases {
		require.Equal(t, c.name, c.kind.String())
		require.Equal(t, c.read, c.kind.IsRead(), c.name)
		require.Equal(t, c.write, c.kind.IsWrite(), c.name)
	}
	// Every kind is listed above.
	require.Equal(t, "OpKind(16)", errorfs.OpKind(errorfs.OpLink+1).String())
}

func TestOpString(t *testing.T) {
	cases := []struct {
		op   errorfs.Op
		want string
	}{
		{errorfs.Op{Kind: errorfs.OpCreate, Path: "/db/a"}, "Create /db/a"},
		{errorfs.Op{Kind: errorfs.OpRename, Path: "a", NewPath: "b"}, "Rename a -> b"},
		{errorfs.Op{Kind: errorfs.OpFileWrite, Path: "a", Offset: 10, Len: 3}, "FileWrite a off=10 len=3"},
		{errorfs.Op{Kind: errorfs.OpFileRead, Path: "a", Offset: 4096, Len: 512}, "FileRead a off=4096 len=512"},
		{
			errorfs.Op{Kind: errorfs.OpFileRead, Path: "a", Len: 1, IO: ioctx.IOOptions{
				Activity: ioctx.ActivityGet, RateLimiterPriority: ioctx.PriorityUser, Timeout: time.Millisecond,
			}},
			"FileRead a off=0 len=1 activity=Get priority=User timeout=1ms",
		},
	}
	for _, c := range cases {
		require.Equal(t, c.want, c.op.String())
	}
}

func TestPredicates(t *testing.T) {
	create := errorfs.Op{Kind: errorfs.OpCreate, Path: "/db/000001.sst"}
	open := errorfs.Op{Kind: errorfs.OpOpen, Path: "/db/000001.sst"}
	readSST := errorfs.Op{Kind: errorfs.OpFileRead, Path: "/db/000001.sst", IO: ioctx.IOOptions{Activity: ioctx.ActivityGet}}
	readLog := errorfs.Op{Kind: errorfs.OpFileRead, Path: "/db/000002.log", IO: ioctx.IOOptions{Activity: ioctx.ActivityCompaction}}
	write := errorfs.Op{Kind: errorfs.OpFileWrite, Path: "/db/000002.log"}
	rename := errorfs.Op{Kind: errorfs.OpRename, Path: "/db/tmp", NewPath: "/db/CURRENT"}
	closeOp := errorfs.Op{Kind: errorfs.OpFileClose, Path: "/db/000002.log"}
	ops := []errorfs.Op{create, open, readSST, readLog, write, rename, closeOp}

	cases := []struct {
		pred errorfs.Predicate
		desc string
		want []bool // for ops, in order
	}{
		{errorfs.OnIndex(0), "OnIndex(0)", []bool{true, false, false, false, false, false, false}},
		{errorfs.OnIndex(3), "OnIndex(3)", []bool{false, false, false, true, false, false, false}},
		{errorfs.OnIndex(-1), "OnIndex(-1)", []bool{false, false, false, false, false, false, false}},
		{errorfs.OnIndex(7), "OnIndex(7)", []bool{false, false, false, false, false, false, false}},
		{errorfs.OnKind(errorfs.OpFileRead, errorfs.OpRename), "OnKind(FileRead, Rename)",
			[]bool{false, false, true, true, false, true, false}},
		{errorfs.OnKind(), "OnKind()", []bool{false, false, false, false, false, false, false}},
		{errorfs.Reads(), "Reads", []bool{false, true, true, true, false, false, false}},
		{errorfs.Writes(), "Writes", []bool{true, false, false, false, true, true, false}},
		{errorfs.OnActivity(ioctx.ActivityGet), "OnActivity(Get)",
			[]bool{false, false, true, false, false, false, false}},
		{errorfs.OnActivity(ioctx.ActivityGet, ioctx.ActivityCompaction), "OnActivity(Get, Compaction)",
			[]bool{false, false, true, true, false, false, false}},
		{errorfs.PathMatch("*.sst"), `PathMatch("*.sst")`, []bool{true, true, true, false, false, false, false}},
		{errorfs.PathMatch("/db/*.log"), `PathMatch("/db/*.log")`, []bool{false, false, false, true, true, false, true}},
		{errorfs.PathMatch("*.log"), `PathMatch("*.log")`, []bool{false, false, false, true, true, false, true}},
		{errorfs.PathMatch("db/*.log"), `PathMatch("db/*.log")`, []bool{false, false, false, false, false, false, false}},
		{errorfs.PathMatch("CURRENT"), `PathMatch("CURRENT")`, []bool{false, false, false, false, false, true, false}},
		{errorfs.PathMatch("tmp"), `PathMatch("tmp")`, []bool{false, false, false, false, false, true, false}},
		{errorfs.And(errorfs.Reads(), errorfs.PathMatch("*.sst")), `And(Reads, PathMatch("*.sst"))`,
			[]bool{false, true, true, false, false, false, false}},
		// OnIndex under And counts only the operations that reach it: the
		// second write-class operation.
		{errorfs.And(errorfs.Writes(), errorfs.OnIndex(1)), "And(Writes, OnIndex(1))",
			[]bool{false, false, false, false, true, false, false}},
		{errorfs.Or(errorfs.OnKind(errorfs.OpCreate), errorfs.OnActivity(ioctx.ActivityCompaction)),
			"Or(OnKind(Create), OnActivity(Compaction))", []bool{true, false, false, true, false, false, false}},
		{errorfs.Not(errorfs.Or(errorfs.Reads(), errorfs.Writes())), "Not(Or(Reads, Writes))",
			[]bool{false, false, false, false, false, false, true}},
		{errorfs.And(), "And()", []bool{true, true, true, true, true, true, true}},
		{errorfs.Or(), "Or()", []bool{false, false, false, false, false, false, false}},
		{errorfs.PredicateFunc("IsRename", func(op errorfs.Op) bool { return op.Kind == errorfs.OpRename }),
			"IsRename", []bool{false, false, false, false, false, true, false}},
	}
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			require.Equal(t, c.desc, c.pred.String())
			var got []bool
			for _, op := range ops {
				got = append(got, c.pred.Evaluate(op))
			}
			require.Equal(t, c.want, got)
		})
	}
}

func TestPredicateInjects(t *testing.T) {
	p := errorfs.And(errorfs.Reads(), errorfs.PathMatch("*.sst"))
	require.NoError(t, p.MaybeError(errorfs.Op{Kind: errorfs.OpFileWrite, Path: "a.sst"}))
	err := p.MaybeError(errorfs.Op{Kind: errorfs.OpFileRead, Path: "a.sst", Offset: 5, Len: 7})
	require.True(t, errors.Is(err, errorfs.ErrInjected))
	require.Equal(t, `FileRead a.sst off=5 len=7 (injected by And(Reads, PathMatch("*.sst"))): errorfs: injected error`,
		err.Error())
}

func TestPathMatchBadPattern(t *testing.T) {
	require.Panics(t, func() { errorfs.PathMatch("[") })
}

func TestRandomly(t *testing.T) {
	draw := func(p errorfs.Predicate, n int) []bool {
		out := make([]bool, n)
		for i := range out {
			out[i] = p.Evaluate(errorfs.Op{Kind: errorfs.OpFileRead})
		}
		return out
	}
	count := func(b []bool) int {
		n := 0
		for _, v := range b {
			if v {
				n++
			}
		}
		return n
	}
	const n = 10000
	a, b := draw(errorfs.Randomly(0.25, 7), n), draw(errorfs.Randomly(0.25, 7), n)
	require.Equal(t, a, b, "the same seed selects the same operations")
	require.NotEqual(t, a, draw(errorfs.Randomly(0.25, 8), n), "another seed selects others")
	require.InDelta(t, 0.25*n, count(a), 0.03*n)
	require.Zero(t, count(draw(errorfs.Randomly(0, 1), n)))
	require.Equal(t, n, count(draw(errorfs.Randomly(1, 1), n)))
	require.Equal(t, "Randomly(0.25, 7)", errorfs.Randomly(0.25, 7).String())

	// Through an FS: the same seed fails the same operations of a workload.
	failures := func(seed int64) []string {
		var failed []string
		fs := errorfs.Wrap(vfs.NewMem(), errorfs.Randomly(0.3, seed))
		for i := range 50 {
			if _, err := fs.Stat("x"); errors.Is(err, errorfs.ErrInjected) {
				failed = append(failed, fmt.Sprint("stat", i))
			}
			if err := fs.MkdirAll("d", 0o755); errors.Is(err, errorfs.ErrInjected) {
				failed = append(failed, fmt.Sprint("mkdir", i))
			}
		}
		return failed
	}
	require.Equal(t, failures(3), failures(3))
	require.NotEmpty(t, failures(3))
}

// workload writes a CURRENT file the durable way (temporary file, sync,
// rename, directory sync), then reads it back. It returns the first error.
func workload(fs vfs.FS) (err error) {
	const contents = "MANIFEST-000001\n"
	try := func(e error) {
		if err == nil {
			err = e
		}
	}
	if err := fs.MkdirAll("/db", 0o755); err != nil {
		return err
	}
	f, err := fs.Create("/db/CURRENT.tmp")
	if err != nil {
		return err
	}
	for _, part := range []string{contents[:8], contents[8:]} {
		if _, err := f.Write([]byte(part)); err != nil {
			_ = f.Close()
			return err
		}
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fs.Rename("/db/CURRENT.tmp", "/db/CURRENT"); err != nil {
		return err
	}
	d, err := fs.OpenDir("/db")
	if err != nil {
		return err
	}
	try(d.Sync())
	try(d.Close())
	if err != nil {
		return err
	}
	r, err := fs.Open("/db/CURRENT")
	if err != nil {
		return err
	}
	defer func() { try(r.Close()) }()
	fi, err := r.Stat()
	if err != nil {
		return err
	}
	buf := make([]byte, fi.Size())
	if _, err := vfs.ReadAtOptions(r, ioctx.IOOptions{Activity: ioctx.ActivityDBOpen}, buf, 0); err != nil {
		return err
	}
	if string(buf) != contents {
		return errors.Newf("CURRENT is %q", buf)
	}
	names, err := fs.List("/db")
	if err != nil {
		return err
	}
	if !slices.Equal(names, []string{"CURRENT"}) {
		return errors.Newf("db holds %q", names)
	}
	return nil
}

// TestOnIndexLoop fails each operation of the workload in turn, as pebble's
// TestErrors does, until the workload passes.
func TestOnIndexLoop(t *testing.T) {
	count := errorfs.WrapObserver(vfs.NewMem(), func(errorfs.Op) {})
	require.NoError(t, workload(count))
	total := count.Ops()
	require.Greater(t, total, int64(10))

	failedKinds := map[errorfs.OpKind]bool{}
	for i := int64(0); ; i++ {
		require.LessOrEqual(t, i, total, "the loop must end after the last operation")
		mem := vfs.NewMem()
		var ops []errorfs.Op
		fs := errorfs.Wrap(mem, errorfs.Any(
			errorfs.Observe(func(op errorfs.Op) { ops = append(ops, op) }),
			errorfs.OnIndex(i),
		))
		err := workload(fs)
		if fs.Injected() == 0 {
			require.NoError(t, err)
			require.Equal(t, total, i, "the workload passes once i is past its last operation")
			break
		}
		require.Equal(t, int64(1), fs.Injected())
		require.Error(t, err, "op %d: the injected error was lost", i)
		require.True(t, errors.Is(err, errorfs.ErrInjected), "op %d: %v", i, err)
		failed := ops[i]
		require.Contains(t, err.Error(), failed.String())
		failedKinds[failed.Kind] = true

		// Whatever failed, a crash leaves CURRENT whole or absent.
		crashed := mem.CrashClone()
		if r, err := crashed.Open("/db/CURRENT"); err == nil {
			buf := make([]byte, 64)
			n, _ := r.ReadAt(buf, 0)
			require.Equal(t, "MANIFEST-000001\n", string(buf[:n]), "op %d (%s)", i, failed)
			require.NoError(t, r.Close())
		}
	}
	for _, k := range []errorfs.OpKind{
		errorfs.OpMkdirAll, errorfs.OpCreate, errorfs.OpFileWrite, errorfs.OpFileSync, errorfs.OpFileClose,
		errorfs.OpRename, errorfs.OpOpenDir, errorfs.OpOpen, errorfs.OpFileStat, errorfs.OpFileRead, errorfs.OpList,
	} {
		require.True(t, failedKinds[k], "no %s was failed", k)
	}
}

func TestFailedWriteWritesNothing(t *testing.T) {
	mem := vfs.NewMem()
	var offsets []int64
	fs := errorfs.Wrap(mem, errorfs.Any(
		errorfs.Observe(func(op errorfs.Op) {
			if op.Kind == errorfs.OpFileWrite {
				offsets = append(offsets, op.Offset)
			}
		}),
		errorfs.And(errorfs.OnKind(errorfs.OpFileWrite), errorfs.OnIndex(1)),
	))
	f, err := fs.Create("a")
	require.NoError(t, err)
	for _, c := range []struct {
		data string
		fail bool
	}{{"ab", false}, {"cd", true}, {"ef", false}} {
		n, err := f.Write([]byte(c.data))
		if c.fail {
			require.True(t, errors.Is(err, errorfs.ErrInjected))
			require.Zero(t, n)
		} else {
			require.NoError(t, err)
			require.Equal(t, len(c.data), n)
		}
	}
	require.NoError(t, f.Close())
	require.Equal(t, []int64{0, 2, 2}, offsets, "a failed write does not advance the offset")
	require.Equal(t, "abef", readAll(t, mem, "a"))
}

// TestDiskFull: writes past the budget write what fits and fail as the OS
// does on a full disk; removing, truncating and renaming files and raising
// the budget free space.
func TestDiskFull(t *testing.T) {
	mem := vfs.NewMem()
	full := errorfs.NewDiskFull(10)
	fs := errorfs.Wrap(mem, full)
	write := func(f vfs.File, data string) (int, error) { return f.Write([]byte(data)) }
	isNoSpace := func(t *testing.T, err error, name string) {
		t.Helper()
		require.ErrorIs(t, err, syscall.ENOSPC)
		require.ErrorIs(t, err, errorfs.ErrInjected)
		var pe *iofs.PathError
		require.True(t, errors.As(err, &pe), "%T", err)
		require.Equal(t, "write", pe.Op)
		require.Equal(t, name, pe.Path)
		require.Equal(t, "write "+name+": no space left on device", err.Error())
	}

	a, err := fs.Create("a")
	require.NoError(t, err)
	n, err := write(a, "abcd")
	require.NoError(t, err)
	require.Equal(t, 4, n)
	n, err = write(a, "efghijkl")
	isNoSpace(t, err, "a")
	require.Equal(t, 6, n, "the bytes that fit are written")
	n, err = write(a, "x")
	isNoSpace(t, err, "a")
	require.Zero(t, n)
	require.Equal(t, int64(10), full.Used())
	require.Equal(t, "abcdefghij", readAll(t, mem, "a"))

	// Raising the budget frees space.
	full.SetBudget(12)
	n, err = write(a, "xyz")
	isNoSpace(t, err, "a")
	require.Equal(t, 2, n)
	require.NoError(t, a.Close())

	// Removing a file frees its bytes; renaming moves them; creating over a
	// file truncates it.
	b, err := fs.Create("b")
	require.NoError(t, err)
	_, err = write(b, "1")
	isNoSpace(t, err, "b")
	require.NoError(t, fs.Remove("a"))
	require.Zero(t, full.Used())
	n, err = write(b, "12345")
	require.NoError(t, err)
	require.Equal(t, 5, n)
	require.NoError(t, b.Close())
	require.NoError(t, fs.Rename("b", "c"))
	require.Equal(t, int64(5), full.Used())
	c, err := fs.Create("c")
	require.NoError(t, err)
	require.Zero(t, full.Used(), "Create truncates")
	n, err = write(c, "123456789012")
	require.NoError(t, err)
	require.Equal(t, 12, n)
	require.NoError(t, c.Close())
	require.NoError(t, fs.Remove("c"))
	require.Zero(t, full.Used())
}

func TestFailedSyncLeavesDataUnsynced(t *testing.T) {
	mem := vfs.NewMem()
	fs := errorfs.Wrap(mem, errorfs.And(errorfs.OnKind(errorfs.OpFileSync), errorfs.PathMatch("a"), errorfs.OnIndex(1)))
	f, err := fs.Create("a")
	require.NoError(t, err)
	_, err = f.Write([]byte("abc"))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	_, err = f.Write([]byte("def"))
	require.NoError(t, err)
	require.True(t, errors.Is(f.Sync(), errorfs.ErrInjected))
	d, err := fs.OpenDir("/")
	require.NoError(t, err)
	require.NoError(t, d.Sync(), "the directory's sync is not selected")
	require.NoError(t, d.Close())
	require.NoError(t, f.Close())

	require.Equal(t, "abcdef", readAll(t, mem, "a"))
	require.Equal(t, "abc", readAll(t, mem.CrashClone(), "a"), "the failed sync made nothing durable")
}

func TestFailedCloseCloses(t *testing.T) {
	mem := vfs.NewMem()
	fs := errorfs.Wrap(mem, errorfs.OnKind(errorfs.OpFileClose))
	f, err := fs.Create("a")
	require.NoError(t, err)
	require.True(t, errors.Is(f.Close(), errorfs.ErrInjected))
	// The wrapped file is closed: it refuses further use.
	_, err = f.Write([]byte("x"))
	require.True(t, errors.Is(err, iofs.ErrClosed), "%v", err)
}

func TestFailedMetadataOpsChangeNothing(t *testing.T) {
	mem := vfs.NewMem()
	require.NoError(t, mem.MkdirAll("d", 0o755))
	f, err := mem.Create("d/a")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	before := mem.String()
	fs := errorfs.Wrap(mem, errorfs.Writes())
	_, err = fs.Create("d/b")
	require.True(t, errors.Is(err, errorfs.ErrInjected))
	require.True(t, errors.Is(fs.Rename("d/a", "d/c"), errorfs.ErrInjected))
	require.True(t, errors.Is(fs.Remove("d/a"), errorfs.ErrInjected))
	require.True(t, errors.Is(fs.MkdirAll("e", 0o755), errorfs.ErrInjected))
	_, err = fs.Lock("d/LOCK")
	require.True(t, errors.Is(err, errorfs.ErrInjected))
	require.Equal(t, before, mem.String())
	// Reads still work.
	names, err := fs.List("d")
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, names)
	require.Equal(t, int64(6), fs.Ops())
	require.Equal(t, int64(5), fs.Injected())
}

func TestInjectError(t *testing.T) {
	fs := errorfs.Wrap(vfs.NewMem(), errorfs.InjectError(syscall.ENOSPC, errorfs.OnKind(errorfs.OpFileWrite)))
	f, err := fs.Create("a")
	require.NoError(t, err)
	_, err = f.Write([]byte("x"))
	require.True(t, errors.Is(err, syscall.ENOSPC), "%v", err)
	require.True(t, errors.Is(err, errorfs.ErrInjected), "%v", err)
	require.Contains(t, err.Error(), "FileWrite a off=0 len=1 (injected by OnKind(FileWrite))")
	require.NoError(t, f.Close())
}

func TestAnyStopsAtFirstError(t *testing.T) {
	var second int
	inj := errorfs.Any(
		errorfs.OnKind(errorfs.OpStat),
		errorfs.Observe(func(errorfs.Op) { second++ }),
	)
	fs := errorfs.Wrap(vfs.NewMem(), inj)
	_, err := fs.Stat("/")
	require.True(t, errors.Is(err, errorfs.ErrInjected))
	require.Zero(t, second)
	_, err = fs.List("/")
	require.NoError(t, err)
	require.Equal(t, 1, second)
}

func TestLockThroughErrorFS(t *testing.T) {
	mem := vfs.NewMem()
	fs := errorfs.Wrap(mem, errorfs.Not(errorfs.And()))
	require.Same(t, mem, fs.Unwrap().(*vfs.MemFS))
	l, err := fs.Lock("LOCK")
	require.NoError(t, err)
	_, err = mem.Lock("LOCK")
	require.True(t, errors.Is(err, vfs.ErrLocked), "the lock is the wrapped FS's")
	require.NoError(t, l.Close())
}

// optsFS returns files that implement vfs.ReaderAtWithOptions and record
// the options of each read; they are not vfs.Mappable.
type optsFS struct {
	vfs.FS
	mu   sync.Mutex
	seen []ioctx.IOOptions
}

type optsFile struct {
	f  vfs.File // not embedded, so Map is not promoted
	fs *optsFS
}

func (o *optsFS) Open(name string) (vfs.File, error) {
	f, err := o.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return &optsFile{f: f, fs: o}, nil
}

func (f *optsFile) ReadAt(p []byte, off int64) (int, error) { return f.f.ReadAt(p, off) }
func (f *optsFile) Write(p []byte) (int, error)             { return f.f.Write(p) }
func (f *optsFile) Close() error                            { return f.f.Close() }
func (f *optsFile) Sync() error                             { return f.f.Sync() }
func (f *optsFile) Stat() (iofs.FileInfo, error)            { return f.f.Stat() }

func (f *optsFile) ReadAtWithOptions(opts ioctx.IOOptions, p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	f.fs.seen = append(f.fs.seen, opts)
	f.fs.mu.Unlock()
	return f.f.ReadAt(p, off)
}

func TestReadAtWithOptionsForwarding(t *testing.T) {
	mem := vfs.NewMem()
	writeAll(t, mem, "a", "abcdef")
	under := &optsFS{FS: mem}
	var seen []errorfs.Op
	fs := errorfs.WrapObserver(under, func(op errorfs.Op) {
		if op.Kind == errorfs.OpFileRead {
			seen = append(seen, op)
		}
	})
	f, err := fs.Open("a")
	require.NoError(t, err)
	_, ok := f.(vfs.ReaderAtWithOptions)
	require.True(t, ok)
	_, ok = f.(vfs.Mappable)
	require.False(t, ok, "the wrapped file is not Mappable, so neither is the wrapper")

	opts := ioctx.IOOptions{Activity: ioctx.ActivityMultiGet, RateLimiterPriority: ioctx.PriorityHigh, Timeout: time.Second}
	buf := make([]byte, 3)
	n, err := vfs.ReadAtOptions(f, opts, buf, 1)
	require.NoError(t, err)
	require.Equal(t, "bcd", string(buf[:n]))
	// A plain ReadAt carries no options and does not reach ReadAtWithOptions.
	n, err = f.ReadAt(buf, 3)
	require.NoError(t, err)
	require.Equal(t, "def", string(buf[:n]))
	require.NoError(t, f.Close())

	require.Equal(t, []errorfs.Op{
		{Kind: errorfs.OpFileRead, Path: "a", Offset: 1, Len: 3, IO: opts},
		{Kind: errorfs.OpFileRead, Path: "a", Offset: 3, Len: 3},
	}, seen)
	require.Equal(t, []ioctx.IOOptions{opts}, under.seen, "the options reach the wrapped file")

	// Over a file without the interface, the options still reach the
	// injector and the read falls back to ReadAt.
	g, err := errorfs.Wrap(mem, errorfs.And(
		errorfs.OnKind(errorfs.OpFileRead), errorfs.Not(errorfs.OnActivity(ioctx.ActivityGet)),
	)).Open("a")
	require.NoError(t, err)
	n, err = vfs.ReadAtOptions(g, ioctx.IOOptions{Activity: ioctx.ActivityGet}, buf, 0)
	require.NoError(t, err)
	require.Equal(t, "abc", string(buf[:n]))
	_, err = vfs.ReadAtOptions(g, ioctx.IOOptions{Activity: ioctx.ActivityFlush}, buf, 0)
	require.True(t, errors.Is(err, errorfs.ErrInjected))
	require.NoError(t, g.Close())
}

func TestMappable(t *testing.T) {
	fss := map[string]func(t *testing.T) (vfs.FS, string){
		"mem": func(t *testing.T) (vfs.FS, string) { return vfs.NewMem(), "a" },
	}
	switch runtime.GOOS {
	case "linux", "darwin", "freebsd", "netbsd", "openbsd", "dragonfly":
		fss["disk"] = func(t *testing.T) (vfs.FS, string) {
			return vfs.Default, filepath.Join(t.TempDir(), "a")
		}
	}
	for kind, newFS := range fss {
		t.Run("fs="+kind, func(t *testing.T) {
			under, name := newFS(t)
			writeAll(t, under, name, "mapped")
			fs := errorfs.Wrap(under, errorfs.And(errorfs.OnKind(errorfs.OpFileMap), errorfs.OnIndex(0)))
			f, err := fs.Open(name)
			require.NoError(t, err)
			m, ok := f.(vfs.Mappable)
			require.True(t, ok)
			_, err = m.Map()
			require.True(t, errors.Is(err, errorfs.ErrInjected), "the first Map fails")
			b, err := m.Map()
			require.NoError(t, err)
			require.Equal(t, "mapped", string(b))
			require.NoError(t, m.Unmap())
			require.NoError(t, f.Close())
			require.Equal(t, int64(4), fs.Ops(), "open, map, map, close")
		})
	}
}

func TestReadAllocs(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	mem := vfs.NewMem()
	require.NoError(t, mem.MkdirAll("/db", 0o755))
	writeAll(t, mem, "/db/000001.sst", strings.Repeat("x", 8192))
	fs := errorfs.Wrap(mem, errorfs.And(errorfs.Reads(), errorfs.PathMatch("*.log"), errorfs.Randomly(0.5, 1)))
	f, err := fs.Open("/db/000001.sst")
	require.NoError(t, err)
	defer f.Close()
	buf := make([]byte, 4096)
	opts := ioctx.IOOptions{Activity: ioctx.ActivityGet}
	require.Zero(t, testing.AllocsPerRun(100, func() {
		_, _ = vfs.ReadAtOptions(f, opts, buf, 100)
	}))
	require.Zero(t, testing.AllocsPerRun(100, func() {
		_, _ = f.ReadAt(buf, 100)
	}))
}

func writeAll(t *testing.T, fs vfs.FS, name, data string) {
	t.Helper()
	f, err := fs.Create(name)
	require.NoError(t, err)
	_, err = f.Write([]byte(data))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
}

func readAll(t *testing.T, fs vfs.FS, name string) string {
	t.Helper()
	f, err := fs.Open(name)
	require.NoError(t, err)
	defer f.Close()
	buf := make([]byte, 1<<16)
	n, err := f.ReadAt(buf, 0)
	require.Equal(t, io.EOF, err)
	return string(buf[:n])
}

// TestConcurrent reads through one FS from several goroutines while a
// random predicate injects; every injected error is counted once.
func TestConcurrent(t *testing.T) {
	mem := vfs.NewMem()
	writeAll(t, mem, "a", "0123456789")
	fs := errorfs.Wrap(mem, errorfs.And(
		errorfs.OnKind(errorfs.OpFileRead), errorfs.Or(errorfs.OnIndex(5), errorfs.Randomly(0.1, 1)),
	))
	f, err := fs.Open("a")
	require.NoError(t, err)
	const goroutines, reads = 4, 500
	var wg sync.WaitGroup
	var mu sync.Mutex
	injected := 0
	for range goroutines {
		wg.Go(func() {
			buf := make([]byte, 4)
			for i := range reads {
				n, err := vfs.ReadAtOptions(f, ioctx.IOOptions{Activity: ioctx.ActivityGet}, buf, int64(i%6))
				if err != nil {
					if !errors.Is(err, errorfs.ErrInjected) {
						t.Error(err)
					}
					mu.Lock()
					injected++
					mu.Unlock()
					continue
				}
				if string(buf[:n]) != "0123456789"[i%6:i%6+4] {
					t.Errorf("read %q at %d", buf[:n], i%6)
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, f.Close())
	require.Equal(t, int64(1+goroutines*reads+1), fs.Ops())
	require.Equal(t, int64(injected), fs.Injected())
	require.Greater(t, injected, 0)
}

// noLinkFS hides the wrapped filesystem's Link.
type noLinkFS struct{ vfs.FS }

// TestLink: Link is an operation like the others, injected as OpLink and
// passed through; over a filesystem that cannot link it reports
// errors.ErrUnsupported, which a checkpoint answers with a copy.
func TestLink(t *testing.T) {
	mem := vfs.NewMem()
	f, err := mem.Create("/a")
	require.NoError(t, err)
	require.NoError(t, f.Close())

	fs := errorfs.Wrap(mem, errorfs.OnKind(errorfs.OpLink))
	err = fs.Link("/a", "/b")
	require.ErrorIs(t, err, errorfs.ErrInjected)
	require.Contains(t, err.Error(), "Link /a -> /b")
	_, err = mem.Stat("/b")
	require.ErrorIs(t, err, iofs.ErrNotExist, "an injected Link changes nothing")

	require.NoError(t, errorfs.Wrap(mem, errorfs.OnKind(errorfs.OpRename)).Link("/a", "/b"))
	_, err = mem.Stat("/b")
	require.NoError(t, err)

	err = errorfs.Wrap(noLinkFS{mem}, errorfs.OnKind()).Link("/a", "/c")
	require.ErrorIs(t, err, errors.ErrUnsupported)
}
