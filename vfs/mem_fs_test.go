package vfs

import (
	"io"
	"path"
	"testing"

	"github.com/stretchr/testify/require"
)

// tree returns every entry under dir of fs: a directory as "name/" with an
// empty value, a file with its contents.
func tree(t *testing.T, fs FS, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	names, err := fs.List(dir)
	require.NoError(t, err)
	for _, n := range names {
		p := path.Join(dir, n)
		fi, err := fs.Stat(p)
		require.NoError(t, err)
		if fi.IsDir() {
			out[p+"/"] = ""
			for k, v := range tree(t, fs, p) {
				out[k] = v
			}
			continue
		}
		out[p] = readFile(t, fs, p)
	}
	return out
}

func syncDir(t *testing.T, fs FS, dir string) {
	t.Helper()
	d, err := fs.OpenDir(dir)
	require.NoError(t, err)
	require.NoError(t, d.Sync())
	require.NoError(t, d.Close())
}

// create makes name with data, syncing the file when syncFile is set; the
// directory is not synced.
func create(t *testing.T, fs FS, name, data string, syncFile bool) File {
	t.Helper()
	f, err := fs.Create(name)
	require.NoError(t, err)
	_, err = f.Write([]byte(data))
	require.NoError(t, err)
	if syncFile {
		require.NoError(t, f.Sync())
	}
	return f
}

func TestCrashClone(t *testing.T) {
	// Every case starts with /db made and durable.
	cases := []struct {
		name  string
		setup func(t *testing.T, m *MemFS)
		want  map[string]string
	}{
		{
			name:  "empty",
			setup: func(t *testing.T, m *MemFS) {},
			want:  map[string]string{"/db/": ""},
		},
		{
			name: "unsynced data lost",
			setup: func(t *testing.T, m *MemFS) {
				create(t, m, "/db/a", "abc", false)
				syncDir(t, m, "/db")
			},
			want: map[string]string{"/db/": "", "/db/a": ""},
		},
		{
			name: "synced data kept",
			setup: func(t *testing.T, m *MemFS) {
				create(t, m, "/db/a", "abc", true)
				syncDir(t, m, "/db")
			},
			want: map[string]string{"/db/": "", "/db/a": "abc"},
		},
		{
			name: "partial sync keeps the synced prefix",
			setup: func(t *testing.T, m *MemFS) {
				f := create(t, m, "/db/a", "abc", true)
				_, err := f.Write([]byte("def"))
				require.NoError(t, err)
				syncDir(t, m, "/db")
			},
			want: map[string]string{"/db/": "", "/db/a": "abc"},
		},
		{
			name: "two syncs",
			setup: func(t *testing.T, m *MemFS) {
				f := create(t, m, "/db/a", "abc", true)
				_, err := f.Write([]byte("def"))
				require.NoError(t, err)
				require.NoError(t, f.Sync())
				_, err = f.Write([]byte("ghi"))
				require.NoError(t, err)
				syncDir(t, m, "/db")
			},
			want: map[string]string{"/db/": "", "/db/a": "abcdef"},
		},
		{
			name: "sync through a read-only handle",
			setup: func(t *testing.T, m *MemFS) {
				create(t, m, "/db/a", "abc", false)
				r, err := m.Open("/db/a")
				require.NoError(t, err)
				require.NoError(t, r.Sync())
				syncDir(t, m, "/db")
			},
			want: map[string]string{"/db/": "", "/db/a": "abc"},
		},
		{
			name: "synced file without a directory sync does not exist",
			setup: func(t *testing.T, m *MemFS) {
				create(t, m, "/db/a", "abc", true)
			},
			want: map[string]string{"/db/": ""},
		},
		{
			name: "directory synced before the file was created",
			setup: func(t *testing.T, m *MemFS) {
				syncDir(t, m, "/db")
				create(t, m, "/db/a", "abc", true)
			},
			want: map[string]string{"/db/": ""},
		},
		{
			name: "rename without directory sync is undone",
			setup: func(t *testing.T, m *MemFS) {
				create(t, m, "/db/a", "abc", true)
				syncDir(t, m, "/db")
				require.NoError(t, m.Rename("/db/a", "/db/b"))
			},
			want: map[string]string{"/db/": "", "/db/a": "abc"},
		},
		{
			name: "rename with directory sync is kept",
			setup: func(t *testing.T, m *MemFS) {
				create(t, m, "/db/a", "abc", true)
				syncDir(t, m, "/db")
				require.NoError(t, m.Rename("/db/a", "/db/b"))
				syncDir(t, m, "/db")
			},
			want: map[string]string{"/db/": "", "/db/b": "abc"},
		},
		{
			name: "replacing rename without directory sync restores both",
			setup: func(t *testing.T, m *MemFS) {
				create(t, m, "/db/CURRENT", "old", true)
				create(t, m, "/db/CURRENT.tmp", "new", true)
				syncDir(t, m, "/db")
				require.NoError(t, m.Rename("/db/CURRENT.tmp", "/db/CURRENT"))
			},
			want: map[string]string{"/db/": "", "/db/CURRENT": "old", "/db/CURRENT.tmp": "new"},
		},
		{
			name: "replacing rename with directory sync",
			setup: func(t *testing.T, m *MemFS) {
				create(t, m, "/db/CURRENT", "old", true)
				syncDir(t, m, "/db")
				create(t, m, "/db/CURRENT.tmp", "new", true)
				require.NoError(t, m.Rename("/db/CURRENT.tmp", "/db/CURRENT"))
				syncDir(t, m, "/db")
			},
			want: map[string]string{"/db/": "", "/db/CURRENT": "new"},
		},
		{
			name: "remove without directory sync is undone",
			setup: func(t *testing.T, m *MemFS) {
				f := create(t, m, "/db/a", "abc", true)
				syncDir(t, m, "/db")
				_, err := f.Write([]byte("unsynced"))
				require.NoError(t, err)
				require.NoError(t, m.Remove("/db/a"))
			},
			want: map[string]string{"/db/": "", "/db/a": "abc"},
		},
		{
			name: "remove with directory sync is kept",
			setup: func(t *testing.T, m *MemFS) {
				create(t, m, "/db/a", "abc", true)
				syncDir(t, m, "/db")
				require.NoError(t, m.Remove("/db/a"))
				syncDir(t, m, "/db")
			},
			want: map[string]string{"/db/": ""},
		},
		{
			name: "truncating create without sync is undone",
			setup: func(t *testing.T, m *MemFS) {
				create(t, m, "/db/a", "abc", true)
				syncDir(t, m, "/db")
				create(t, m, "/db/a", "x", false)
			},
			want: map[string]string{"/db/": "", "/db/a": "abc"},
		},
		{
			name: "truncating create with sync",
			setup: func(t *testing.T, m *MemFS) {
				create(t, m, "/db/a", "abc", true)
				syncDir(t, m, "/db")
				create(t, m, "/db/a", "x", true)
			},
			want: map[string]string{"/db/": "", "/db/a": "x"},
		},
		{
			name: "new directory without parent sync is lost",
			setup: func(t *testing.T, m *MemFS) {
				require.NoError(t, m.MkdirAll("/db/sub", 0o755))
				create(t, m, "/db/sub/a", "abc", true)
				syncDir(t, m, "/db/sub")
			},
			want: map[string]string{"/db/": ""},
		},
		{
			name: "new directory with parent sync is kept",
			setup: func(t *testing.T, m *MemFS) {
				require.NoError(t, m.MkdirAll("/db/sub", 0o755))
				create(t, m, "/db/sub/a", "abc", true)
				syncDir(t, m, "/db/sub")
				syncDir(t, m, "/db")
			},
			want: map[string]string{"/db/": "", "/db/sub/": "", "/db/sub/a": "abc"},
		},
		{
			name: "cross-directory rename with only the target synced",
			setup: func(t *testing.T, m *MemFS) {
				require.NoError(t, m.MkdirAll("/db/sub", 0o755))
				create(t, m, "/db/a", "abc", true)
				syncDir(t, m, "/db")
				require.NoError(t, m.Rename("/db/a", "/db/sub/a"))
				syncDir(t, m, "/db/sub")
			},
			want: map[string]string{"/db/": "", "/db/sub/": "", "/db/a": "abc", "/db/sub/a": "abc"},
		},
		{
			name: "lock file",
			setup: func(t *testing.T, m *MemFS) {
				_, err := m.Lock("/db/LOCK")
				require.NoError(t, err)
				syncDir(t, m, "/db")
			},
			want: map[string]string{"/db/": "", "/db/LOCK": ""},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := NewMem()
			require.NoError(t, m.MkdirAll("/db", 0o755))
			syncDir(t, m, "/")
			c.setup(t, m)
			before := m.String()
			crashed := m.CrashClone()
			require.Equal(t, c.want, tree(t, crashed, "/"), "before the crash:\n%s", before)
			require.Equal(t, before, m.String(), "CrashClone changed the original")
			// The clone is all durable: crashing it again changes nothing.
			require.Equal(t, c.want, tree(t, crashed.CrashClone(), "/"))
		})
	}
}

func TestCrashCloneIndependent(t *testing.T) {
	m := NewMem()
	f := create(t, m, "a", "abc", true)
	syncDir(t, m, "/")
	c := m.CrashClone()

	// Writes to the original after the clone do not show in the clone, though
	// the clone shares the original's synced bytes.
	_, err := f.Write([]byte("def"))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.Equal(t, "abc", readFile(t, c, "a"))

	// Writes to the clone do not show in the original.
	create(t, c, "b", "clone", true)
	create(t, c, "a", "xyz", true)
	require.Equal(t, "xyz", readFile(t, c, "a"))
	require.Equal(t, "abcdef", readFile(t, m, "a"))
	_, err = m.Stat("b")
	require.Error(t, err)

	// Locks are not carried over.
	l, err := m.Lock("LOCK")
	require.NoError(t, err)
	defer l.Close()
	l2, err := m.CrashClone().Lock("LOCK")
	require.NoError(t, err)
	require.NoError(t, l2.Close())
}

func TestMemString(t *testing.T) {
	m := NewMem()
	require.NoError(t, m.MkdirAll("/db", 0o755))
	syncDir(t, m, "/")
	log := create(t, m, "/db/000001.log", "0123456789", true)
	_, err := log.Write([]byte("abc"))
	require.NoError(t, err)
	create(t, m, "/db/CURRENT", "MANIFEST-1\n", true)
	create(t, m, "/db/OLD", "old", true)
	create(t, m, "/db/GONE", "gone", true)
	syncDir(t, m, "/db")
	create(t, m, "/db/NEW", "new", false)
	create(t, m, "/db/OLD.tmp", "replacement", true)
	require.NoError(t, m.Rename("/db/OLD.tmp", "/db/OLD"))
	require.NoError(t, m.Remove("/db/GONE"))
	require.NoError(t, m.MkdirAll("/db/archive", 0o755))
	create(t, m, "/db/archive/x", "", false)
	require.NoError(t, m.MkdirAll("/tmp", 0o755))

	const want = `/
  db/
    000001.log 13 bytes, 10 synced
    CURRENT 11 bytes, 11 synced
    GONE 4 bytes, 4 synced [unsynced remove]
    NEW 3 bytes, 0 synced [unsynced entry]
    OLD 11 bytes, 11 synced [unsynced replace]
    archive/ [unsynced entry]
      x 0 bytes, 0 synced [unsynced entry]
  tmp/ [unsynced entry]
`
	require.Equal(t, want, m.String())
	require.Equal(t, "/\n  db/\n    000001.log 10 bytes, 10 synced\n    CURRENT 11 bytes, 11 synced\n"+
		"    GONE 4 bytes, 4 synced\n    OLD 3 bytes, 3 synced\n", m.CrashClone().String())
}

// TestMemReadAtDirectory checks that a directory opened as a file cannot be
// read or mapped, as on disk.
func TestMemReadAtDirectory(t *testing.T) {
	m := NewMem()
	require.NoError(t, m.MkdirAll("d", 0o755))
	f, err := m.Open("d")
	require.NoError(t, err)
	_, err = f.ReadAt(make([]byte, 1), 0)
	require.Error(t, err)
	require.NotEqual(t, io.EOF, err)
	_, err = f.(Mappable).Map()
	require.Error(t, err)
	require.NoError(t, f.Close())
}
