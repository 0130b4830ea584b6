package vfs

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/ioctx"
	"github.com/stretchr/testify/require"
)

// hasMmap reports whether files of Default implement Mappable and Lock uses
// flock here: the platforms of disk_mmap.go.
var hasMmap = slices.Contains([]string{"linux", "darwin", "freebsd", "netbsd", "openbsd", "dragonfly"}, runtime.GOOS)

// testFS is a filesystem under test with a fresh directory to work in.
type testFS struct {
	fs   FS
	root string
	join func(elem ...string) string
}

func (f testFS) p(name string) string { return f.join(f.root, name) }

// fsKinds returns a fresh instance of every FS implementation.
func fsKinds(t *testing.T) map[string]func(t *testing.T) testFS {
	return map[string]func(t *testing.T) testFS{
		"disk": func(t *testing.T) testFS {
			if runtime.GOOS == "windows" {
				// MemFS models POSIX (rename over an open file, removal
				// of an open file), which Windows does not follow.
				t.Skip("POSIX semantics")
			}
			return testFS{fs: Default, root: t.TempDir(), join: filepath.Join}
		},
		"mem": func(t *testing.T) testFS {
			m := NewMem()
			require.NoError(t, m.MkdirAll("/t", 0o755))
			return testFS{fs: m, root: "/t", join: path.Join}
		},
	}
}

func writeFile(t *testing.T, fs FS, name, data string) {
	t.Helper()
	f, err := fs.Create(name)
	require.NoError(t, err)
	n, err := f.Write([]byte(data))
	require.NoError(t, err)
	require.Equal(t, len(data), n)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
}

func readFile(t *testing.T, fs FS, name string) string {
	t.Helper()
	f, err := fs.Open(name)
	require.NoError(t, err)
	defer func() { require.NoError(t, f.Close()) }()
	fi, err := f.Stat()
	require.NoError(t, err)
	buf := make([]byte, fi.Size())
	n, err := f.ReadAt(buf, 0)
	if err != io.EOF {
		require.NoError(t, err)
	}
	require.Equal(t, len(buf), n)
	return string(buf)
}

// TestFS runs the contract of FS and File against every implementation, so
// MemFS is held to the OS filesystem's behaviour.
func TestFS(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, f testFS)
	}{
		{"create-write-read", func(t *testing.T, f testFS) {
			w, err := f.fs.Create(f.p("a"))
			require.NoError(t, err)
			for _, s := range []string{"hello", "world"} {
				n, err := w.Write([]byte(s))
				require.NoError(t, err)
				require.Equal(t, len(s), n)
			}
			// The writing handle reads what it wrote.
			buf := make([]byte, 10)
			n, err := w.ReadAt(buf, 0)
			require.NoError(t, err)
			require.Equal(t, "helloworld", string(buf[:n]))
			require.NoError(t, w.Sync())
			require.NoError(t, w.Close())

			r, err := f.fs.Open(f.p("a"))
			require.NoError(t, err)
			defer r.Close()
			n, err = r.ReadAt(buf[:4], 3)
			require.NoError(t, err)
			require.Equal(t, "lowo", string(buf[:n]))
			// A read that runs past the end returns what there is and io.EOF.
			n, err = r.ReadAt(buf, 6)
			require.Equal(t, io.EOF, err)
			require.Equal(t, "orld", string(buf[:n]))
			n, err = r.ReadAt(buf, 10)
			require.Equal(t, io.EOF, err)
			require.Zero(t, n)
			n, err = r.ReadAt(buf, 100)
			require.Equal(t, io.EOF, err)
			require.Zero(t, n)
			_, err = r.ReadAt(buf, -1)
			require.Error(t, err)

			fi, err := r.Stat()
			require.NoError(t, err)
			require.Equal(t, "a", fi.Name())
			require.Equal(t, int64(10), fi.Size())
			require.False(t, fi.IsDir())
			fi, err = f.fs.Stat(f.p("a"))
			require.NoError(t, err)
			require.Equal(t, "a", fi.Name())
			require.Equal(t, int64(10), fi.Size())
		}},
		{"create-truncates", func(t *testing.T, f testFS) {
			writeFile(t, f.fs, f.p("a"), "long contents")
			writeFile(t, f.fs, f.p("a"), "x")
			require.Equal(t, "x", readFile(t, f.fs, f.p("a")))
		}},
		{"missing", func(t *testing.T, f testFS) {
			_, err := f.fs.Open(f.p("nope"))
			require.True(t, errors.Is(err, os.ErrNotExist), "%v", err)
			_, err = f.fs.OpenDir(f.p("nope"))
			require.True(t, errors.Is(err, os.ErrNotExist), "%v", err)
			_, err = f.fs.Stat(f.p("nope"))
			require.True(t, errors.Is(err, os.ErrNotExist), "%v", err)
			err = f.fs.Remove(f.p("nope"))
			require.True(t, errors.Is(err, os.ErrNotExist), "%v", err)
			err = f.fs.Rename(f.p("nope"), f.p("b"))
			require.True(t, errors.Is(err, os.ErrNotExist), "%v", err)
			_, err = f.fs.List(f.p("nope"))
			require.True(t, errors.Is(err, os.ErrNotExist), "%v", err)
			_, err = f.fs.Create(f.p("nodir/a"))
			require.True(t, errors.Is(err, os.ErrNotExist), "%v", err)
		}},
		{"read-only", func(t *testing.T, f testFS) {
			writeFile(t, f.fs, f.p("a"), "abc")
			r, err := f.fs.Open(f.p("a"))
			require.NoError(t, err)
			defer r.Close()
			_, err = r.Write([]byte("x"))
			require.Error(t, err)
			require.Equal(t, "abc", readFile(t, f.fs, f.p("a")))
		}},
		{"opendir", func(t *testing.T, f testFS) {
			writeFile(t, f.fs, f.p("a"), "abc")
			_, err := f.fs.OpenDir(f.p("a"))
			require.Error(t, err)
			d, err := f.fs.OpenDir(f.root)
			require.NoError(t, err)
			require.NoError(t, d.Sync())
			fi, err := d.Stat()
			require.NoError(t, err)
			require.True(t, fi.IsDir())
			_, err = d.Write([]byte("x"))
			require.Error(t, err)
			require.NoError(t, d.Close())
		}},
		{"list", func(t *testing.T, f testFS) {
			names, err := f.fs.List(f.root)
			require.NoError(t, err)
			require.Empty(t, names)
			for _, n := range []string{"c", "a", "b"} {
				writeFile(t, f.fs, f.p(n), n)
			}
			require.NoError(t, f.fs.MkdirAll(f.p("d"), 0o755))
			writeFile(t, f.fs, f.p("d/x"), "x")
			names, err = f.fs.List(f.root)
			require.NoError(t, err)
			require.Equal(t, []string{"a", "b", "c", "d"}, names)
			names, err = f.fs.List(f.p("d"))
			require.NoError(t, err)
			require.Equal(t, []string{"x"}, names)
			_, err = f.fs.List(f.p("a"))
			require.Error(t, err)
		}},
		{"rename", func(t *testing.T, f testFS) {
			writeFile(t, f.fs, f.p("a"), "new")
			writeFile(t, f.fs, f.p("b"), "old")
			require.NoError(t, f.fs.Rename(f.p("a"), f.p("b")))
			require.Equal(t, "new", readFile(t, f.fs, f.p("b")))
			_, err := f.fs.Stat(f.p("a"))
			require.True(t, errors.Is(err, os.ErrNotExist))
			// Renaming onto itself changes nothing.
			require.NoError(t, f.fs.Rename(f.p("b"), f.p("b")))
			require.Equal(t, "new", readFile(t, f.fs, f.p("b")))
			// A directory moves with its contents.
			require.NoError(t, f.fs.MkdirAll(f.p("d"), 0o755))
			require.NoError(t, f.fs.Rename(f.p("b"), f.p("d/b")))
			require.NoError(t, f.fs.Rename(f.p("d"), f.p("e")))
			require.Equal(t, "new", readFile(t, f.fs, f.p("e/b")))
			// A file does not replace a directory, nor a directory a file.
			writeFile(t, f.fs, f.p("c"), "c")
			require.Error(t, f.fs.Rename(f.p("c"), f.p("e")))
			require.Error(t, f.fs.Rename(f.p("e"), f.p("c")))
			// A directory cannot move into itself.
			require.Error(t, f.fs.Rename(f.p("e"), f.p("e/sub")))
		}},
		{"remove", func(t *testing.T, f testFS) {
			writeFile(t, f.fs, f.p("a"), "a")
			require.NoError(t, f.fs.Remove(f.p("a")))
			_, err := f.fs.Stat(f.p("a"))
			require.True(t, errors.Is(err, os.ErrNotExist))
			require.NoError(t, f.fs.MkdirAll(f.p("d"), 0o755))
			writeFile(t, f.fs, f.p("d/x"), "x")
			require.Error(t, f.fs.Remove(f.p("d")), "a non-empty directory")
			require.NoError(t, f.fs.Remove(f.p("d/x")))
			require.NoError(t, f.fs.Remove(f.p("d")))
		}},
		{"remove-open-file", func(t *testing.T, f testFS) {
			writeFile(t, f.fs, f.p("a"), "abc")
			r, err := f.fs.Open(f.p("a"))
			require.NoError(t, err)
			require.NoError(t, f.fs.Remove(f.p("a")))
			buf := make([]byte, 3)
			_, err = r.ReadAt(buf, 0)
			require.NoError(t, err)
			require.Equal(t, "abc", string(buf))
			require.NoError(t, r.Close())
		}},
		{"mkdirall", func(t *testing.T, f testFS) {
			require.NoError(t, f.fs.MkdirAll(f.p("x/y/z"), 0o755))
			require.NoError(t, f.fs.MkdirAll(f.p("x/y/z"), 0o755))
			fi, err := f.fs.Stat(f.p("x/y"))
			require.NoError(t, err)
			require.True(t, fi.IsDir())
			require.Equal(t, "y", fi.Name())
			writeFile(t, f.fs, f.p("x/file"), "")
			require.Error(t, f.fs.MkdirAll(f.p("x/file/sub"), 0o755))
			_, err = f.fs.Create(f.p("x/y"))
			require.Error(t, err, "a directory")
		}},
		{"lock", func(t *testing.T, f testFS) {
			name := f.p("LOCK")
			l, err := f.fs.Lock(name)
			require.NoError(t, err)
			_, err = f.fs.Lock(name)
			require.True(t, errors.Is(err, ErrLocked), "%v", err)
			require.Contains(t, err.Error(), name)
			names, err := f.fs.List(f.root)
			require.NoError(t, err)
			require.Equal(t, []string{"LOCK"}, names)
			// Another name is another lock.
			l2, err := f.fs.Lock(f.p("LOCK2"))
			require.NoError(t, err)
			require.NoError(t, l2.Close())
			require.NoError(t, l.Close())
			require.NoError(t, l.Close(), "a second Close does nothing")
			l, err = f.fs.Lock(name)
			require.NoError(t, err)
			require.NoError(t, l.Close())
			_, err = f.fs.Lock(f.p("nodir/LOCK"))
			require.True(t, errors.Is(err, os.ErrNotExist), "%v", err)
		}},
		{"lock-keeps-contents", func(t *testing.T, f testFS) {
			writeFile(t, f.fs, f.p("LOCK"), "pid")
			l, err := f.fs.Lock(f.p("LOCK"))
			require.NoError(t, err)
			require.NoError(t, l.Close())
			require.Equal(t, "pid", readFile(t, f.fs, f.p("LOCK")))
		}},
		{"read-while-appending", func(t *testing.T, f testFS) {
			w, err := f.fs.Create(f.p("log"))
			require.NoError(t, err)
			r, err := f.fs.Open(f.p("log"))
			require.NoError(t, err)
			var want []byte
			buf := make([]byte, 64)
			for i := range 10 {
				chunk := []byte(strconv.Itoa(i) + ";")
				_, err := w.Write(chunk)
				require.NoError(t, err)
				want = append(want, chunk...)
				n, err := r.ReadAt(buf, 0)
				require.Equal(t, io.EOF, err)
				require.Equal(t, string(want), string(buf[:n]))
			}
			require.NoError(t, w.Close())
			require.NoError(t, r.Close())
		}},
		{"closed", func(t *testing.T, f testFS) {
			w, err := f.fs.Create(f.p("a"))
			require.NoError(t, err)
			require.NoError(t, w.Close())
			require.Error(t, w.Close())
			_, err = w.Write([]byte("x"))
			require.Error(t, err)
			_, err = w.ReadAt(make([]byte, 1), 0)
			require.Error(t, err)
			require.Error(t, w.Sync())
			_, err = w.Stat()
			require.Error(t, err)
		}},
		{"map", func(t *testing.T, f testFS) {
			writeFile(t, f.fs, f.p("a"), "mapped bytes")
			r, err := f.fs.Open(f.p("a"))
			require.NoError(t, err)
			m, ok := r.(Mappable)
			if !ok && !hasMmap {
				t.Skip("no mmap on " + runtime.GOOS)
			}
			require.True(t, ok, "%T is not Mappable", r)
			b, err := m.Map()
			require.NoError(t, err)
			require.Equal(t, "mapped bytes", string(b))
			b2, err := m.Map()
			require.NoError(t, err)
			require.Equal(t, &b[0], &b2[0], "a second Map returns the same mapping")
			require.NoError(t, m.Unmap())
			require.NoError(t, m.Unmap(), "Unmap without a mapping")
			// Map again, then Close unmaps.
			b, err = m.Map()
			require.NoError(t, err)
			require.Equal(t, "mapped bytes", string(b))
			require.NoError(t, r.Close())
			_, err = m.Map()
			require.Error(t, err, "Map after Close")

			writeFile(t, f.fs, f.p("empty"), "")
			r, err = f.fs.Open(f.p("empty"))
			require.NoError(t, err)
			b, err = r.(Mappable).Map()
			require.NoError(t, err)
			require.Empty(t, b)
			require.NoError(t, r.Close())
		}},
		{"map-snapshot", func(t *testing.T, f testFS) {
			// A mapping covers the file as it was when mapped; a file that
			// grows later does not change it.
			w, err := f.fs.Create(f.p("a"))
			require.NoError(t, err)
			_, err = w.Write([]byte("first"))
			require.NoError(t, err)
			require.NoError(t, w.Sync())
			r, err := f.fs.Open(f.p("a"))
			require.NoError(t, err)
			m, ok := r.(Mappable)
			if !ok && !hasMmap {
				t.Skip("no mmap on " + runtime.GOOS)
			}
			b, err := m.Map()
			require.NoError(t, err)
			_, err = w.Write([]byte("second"))
			require.NoError(t, err)
			require.Equal(t, "first", string(b))
			require.NoError(t, r.Close())
			require.NoError(t, w.Close())
		}},
	}
	for kind, newFS := range fsKinds(t) {
		t.Run("fs="+kind, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) { c.run(t, newFS(t)) })
			}
		})
	}
}

// optsFile is a File that implements ReaderAtWithOptions and remembers the
// options of its last read.
type optsFile struct {
	File
	last ioctx.IOOptions
}

func (f *optsFile) ReadAtWithOptions(opts ioctx.IOOptions, p []byte, off int64) (int, error) {
	f.last = opts
	return f.ReadAt(p, off)
}

func TestReadAtOptions(t *testing.T) {
	m := NewMem()
	writeFile(t, m, "a", "abcdef")
	plain, err := m.Open("a")
	require.NoError(t, err)
	defer plain.Close()
	withOpts := &optsFile{File: plain}
	opts := ioctx.IOOptions{Activity: ioctx.ActivityGet, RateLimiterPriority: ioctx.PriorityUser, Timeout: 5}

	for _, c := range []struct {
		name string
		f    File
	}{{"plain", plain}, {"with-options", withOpts}} {
		t.Run(c.name, func(t *testing.T) {
			buf := make([]byte, 3)
			n, err := ReadAtOptions(c.f, opts, buf, 2)
			require.NoError(t, err)
			require.Equal(t, "cde", string(buf[:n]))
		})
	}
	require.Equal(t, opts, withOpts.last, "the options reach the file")
}

// TestMemMatchesDisk runs one random sequence of operations against MemFS
// and the OS filesystem and requires the same outcome from both: the same
// errors (by class) and the same contents.
func TestMemMatchesDisk(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("MemFS models POSIX semantics")
	}
	disk := testFS{fs: Default, root: t.TempDir(), join: filepath.Join}
	mem := testFS{fs: NewMem(), root: "/", join: path.Join}
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"a", "b", "c", "d", "d/a", "d/b", "d/e", "d/e/a", "e"}
	pick := func() string { return names[rng.IntN(len(names))] }
	errClass := func(err error) string {
		switch {
		case err == nil:
			return "ok"
		case errors.Is(err, os.ErrNotExist):
			return "not-exist"
		case errors.Is(err, os.ErrExist):
			return "exist"
		default:
			return "error"
		}
	}
	ops := 2000
	if testing.Short() {
		ops = 300
	}
	for i := range ops {
		var desc string
		outcome := map[string]string{}
		// Writes and renames are weighted up so that renames often find
		// something to move.
		op := []int{0, 0, 0, 1, 2, 2, 2, 3, 4, 5, 6}[rng.IntN(11)]
		a, b := pick(), pick()
		data := make([]byte, rng.IntN(40))
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		for _, f := range []testFS{disk, mem} {
			var res string
			switch op {
			case 0:
				desc = "write " + a
				w, err := f.fs.Create(f.p(a))
				res = errClass(err)
				if err == nil {
					_, err = w.Write(data)
					res += "," + errClass(err)
					res += "," + errClass(w.Close())
				}
			case 1:
				desc = "read " + a
				r, err := f.fs.Open(f.p(a))
				res = errClass(err)
				if err == nil {
					buf := make([]byte, 64)
					n, err := r.ReadAt(buf, 0)
					if err == io.EOF {
						err = nil
					}
					res += "," + errClass(err) + "," + string(buf[:n])
					res += "," + errClass(r.Close())
				}
			case 2:
				desc = "rename " + a + " " + b
				res = errClass(f.fs.Rename(f.p(a), f.p(b)))
			case 3:
				desc = "remove " + a
				res = errClass(f.fs.Remove(f.p(a)))
			case 4:
				desc = "mkdirall " + a
				res = errClass(f.fs.MkdirAll(f.p(a), 0o755))
			case 5:
				desc = "list " + a
				l, err := f.fs.List(f.p(a))
				res = errClass(err) + "," + path.Join(l...)
			case 6:
				desc = "stat " + a
				fi, err := f.fs.Stat(f.p(a))
				res = errClass(err)
				if err == nil {
					res += "," + fi.Name() + "," + strconv.FormatBool(fi.IsDir())
					if !fi.IsDir() {
						res += "," + strconv.FormatInt(fi.Size(), 10)
					}
				}
			}
			outcome[f.root] = res
		}
		require.Equal(t, outcome[disk.root], outcome[mem.root], "op %d: %s", i, desc)
	}
}

func TestMemNames(t *testing.T) {
	m := NewMem()
	require.NoError(t, m.MkdirAll("db", 0o755))
	writeFile(t, m, "/db/000001.sst", "sst")
	for _, name := range []string{"db/000001.sst", "/db/000001.sst", "//db/./000001.sst", "db/x/../000001.sst"} {
		require.Equal(t, "sst", readFile(t, m, name), name)
	}
	names, err := m.List("/")
	require.NoError(t, err)
	require.Equal(t, []string{"db"}, names)
	names, err = m.List("")
	require.NoError(t, err)
	require.Equal(t, []string{"db"}, names)
	fi, err := m.Stat("/")
	require.NoError(t, err)
	require.True(t, fi.IsDir())
	require.Error(t, m.Remove("/"))
	_, err = m.Create("/")
	require.Error(t, err)
	require.Error(t, m.Rename("/", "x"))
}

func TestMemConcurrent(t *testing.T) {
	m := NewMem()
	require.NoError(t, m.MkdirAll("db", 0o755))
	w, err := m.Create("db/log")
	require.NoError(t, err)
	const chunks, chunkLen = 1000, 97
	pattern := func(i int) byte { return byte(i % 251) }

	done := make(chan struct{})
	errs := make(chan error, 16)
	// The writer appends and syncs.
	go func() {
		defer close(done)
		chunk := make([]byte, chunkLen)
		off := 0
		for range chunks {
			for j := range chunk {
				chunk[j] = pattern(off + j)
			}
			if _, err := w.Write(chunk); err != nil {
				errs <- err
				return
			}
			off += chunkLen
			if off%(3*chunkLen) == 0 {
				if err := w.Sync(); err != nil {
					errs <- err
					return
				}
			}
		}
	}()
	var readers []chan struct{}
	// Readers see a growing prefix of the pattern, through ReadAt and Map.
	// Each read checks a window at a random offset, which keeps the test
	// fast under the race detector.
	for reader := range 3 {
		fin := make(chan struct{})
		readers = append(readers, fin)
		go func() {
			defer close(fin)
			r, err := m.Open("db/log")
			if err != nil {
				errs <- err
				return
			}
			defer r.Close()
			rng := rand.New(rand.NewPCG(uint64(reader), 2))
			check := func(what string, b []byte, off int64) error {
				for i := range b {
					if want := pattern(int(off) + i); b[i] != want {
						return errors.Newf("%s: byte %d is %d, want %d", what, int(off)+i, b[i], want)
					}
				}
				return nil
			}
			buf := make([]byte, 512)
			var last int64
			for {
				select {
				case <-done:
					return
				default:
				}
				fi, err := r.Stat()
				if err != nil {
					errs <- err
					return
				}
				size := fi.Size()
				if size < last {
					errs <- errors.Newf("file shrank from %d to %d", last, size)
					return
				}
				last = size
				off := rng.Int64N(size + 1)
				n, err := r.ReadAt(buf, off)
				if err != nil && err != io.EOF {
					errs <- err
					return
				}
				if int64(n) < min(int64(len(buf)), size-off) {
					errs <- errors.Newf("short read: %d bytes at %d of %d", n, off, size)
					return
				}
				if err := check("ReadAt", buf[:n], off); err != nil {
					errs <- err
					return
				}
				mb, err := r.(Mappable).Map()
				if err != nil {
					errs <- err
					return
				}
				if int64(len(mb)) < size {
					errs <- errors.Newf("mapping of %d bytes, file has %d", len(mb), size)
					return
				}
				moff := rng.Int64N(int64(len(mb)) + 1)
				if err := check("Map", mb[moff:min(moff+512, int64(len(mb)))], moff); err != nil {
					errs <- err
					return
				}
				if err := r.(Mappable).Unmap(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	// Other goroutines change the tree and crash-clone it meanwhile.
	fin := make(chan struct{})
	readers = append(readers, fin)
	go func() {
		defer close(fin)
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			name := "db/tmp" + strconv.Itoa(i%4)
			f, err := m.Create(name)
			if err == nil {
				_, err = f.Write([]byte("x"))
			}
			if err == nil {
				err = f.Close()
			}
			if err == nil {
				err = m.Rename(name, "db/tmp")
			}
			if err == nil {
				var d File
				if d, err = m.OpenDir("db"); err == nil {
					err = d.Sync()
				}
			}
			if err != nil {
				errs <- err
				return
			}
			c := m.CrashClone()
			if _, err := c.List("/"); err != nil {
				errs <- err
				return
			}
			_ = m.String()
		}
	}()
	<-done
	for _, r := range readers {
		<-r
	}
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	got := readFile(t, m, "db/log")
	require.Len(t, got, chunks*chunkLen)
	for i := range len(got) {
		require.Equal(t, pattern(i), got[i])
	}
}

func TestReadAllocs(t *testing.T) {
	m := NewMem()
	writeFile(t, m, "a", string(bytes.Repeat([]byte("x"), 8192)))
	f, err := m.Open("a")
	require.NoError(t, err)
	defer f.Close()
	buf := make([]byte, 4096)
	opts := ioctx.IOOptions{Activity: ioctx.ActivityGet}
	for _, c := range []struct {
		name string
		fn   func()
	}{
		{"ReadAt", func() { _, _ = f.ReadAt(buf, 100) }},
		{"ReadAtOptions", func() { _, _ = ReadAtOptions(f, opts, buf, 100) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if invariants.RaceEnabled {
				t.Skip("the race detector allocates")
			}
			require.Zero(t, testing.AllocsPerRun(100, c.fn))
		})
	}
}

// TestLink runs Linker's contract against every implementation: a second
// name for the same file, os.Link's errors, and (MemFS) durability only
// after the directory's Sync.
func TestLink(t *testing.T) {
	for name, mk := range fsKinds(t) {
		t.Run(name, func(t *testing.T) {
			tf := mk(t)
			l, ok := tf.fs.(Linker)
			require.True(t, ok, "%T implements Linker", tf.fs)
			writeFile(t, tf.fs, tf.p("a"), "contents")
			require.NoError(t, l.Link(tf.p("a"), tf.p("b")))
			require.Equal(t, "contents", readFile(t, tf.fs, tf.p("b")))
			// Removing one name leaves the other.
			require.NoError(t, tf.fs.Remove(tf.p("a")))
			require.Equal(t, "contents", readFile(t, tf.fs, tf.p("b")))

			writeFile(t, tf.fs, tf.p("c"), "other")
			require.ErrorIs(t, l.Link(tf.p("b"), tf.p("c")), os.ErrExist, "an existing name is not replaced")
			require.Equal(t, "other", readFile(t, tf.fs, tf.p("c")))
			require.ErrorIs(t, l.Link(tf.p("missing"), tf.p("d")), os.ErrNotExist)
			require.NoError(t, tf.fs.MkdirAll(tf.p("dir"), 0o755))
			require.Error(t, l.Link(tf.p("dir"), tf.p("dir2")), "a directory cannot be linked")
		})
	}

	m := NewMem()
	require.NoError(t, m.MkdirAll("/d", 0o755))
	writeFile(t, m, "/d/a", "x")
	syncDir := func(dir string) {
		d, err := m.OpenDir(dir)
		require.NoError(t, err)
		require.NoError(t, d.Sync())
		require.NoError(t, d.Close())
	}
	syncDir("/")
	syncDir("/d")
	require.NoError(t, m.Link("/d/a", "/d/b"))
	require.Equal(t, "x", readFile(t, m.CrashClone(), "/d/a"))
	_, err := m.CrashClone().Stat("/d/b")
	require.ErrorIs(t, err, os.ErrNotExist, "a link is not durable before its directory's Sync")
	syncDir("/d")
	require.Equal(t, "x", readFile(t, m.CrashClone(), "/d/b"))
}
