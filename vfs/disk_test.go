package vfs

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/require"
)

// lockHelperEnv, when set in the environment, turns the test binary into a
// helper process that tries to Lock the file it names and reports the
// outcome through its exit code and output.
const lockHelperEnv = "SHALE_VFS_LOCK_HELPER"

// Exit codes of the lock helper.
const (
	helperAcquired = 0
	helperLocked   = 10 // Lock failed with an error marked ErrLocked
	helperFailed   = 11 // Lock failed otherwise
)

func TestMain(m *testing.M) {
	if name := os.Getenv(lockHelperEnv); name != "" {
		os.Exit(lockHelper(name))
	}
	os.Exit(m.Run())
}

func lockHelper(name string) int {
	l, err := Default.Lock(name)
	if err != nil {
		fmt.Println(err)
		if errors.Is(err, ErrLocked) {
			return helperLocked
		}
		return helperFailed
	}
	fmt.Println("acquired")
	if err := l.Close(); err != nil {
		fmt.Println(err)
		return helperFailed
	}
	return helperAcquired
}

// runLockHelper runs this test binary as a second process that tries to
// lock name.
func runLockHelper(t *testing.T, name string) (code int, out string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), lockHelperEnv+"="+name)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return exitErr.ExitCode(), buf.String()
	}
	require.NoError(t, err)
	return 0, buf.String()
}

func TestDiskLockOtherProcess(t *testing.T) {
	if !hasMmap {
		t.Skipf("no flock on %s: Lock excludes only this process", runtime.GOOS)
	}
	name := filepath.Join(t.TempDir(), "LOCK")
	l, err := Default.Lock(name)
	require.NoError(t, err)

	code, out := runLockHelper(t, name)
	require.Equal(t, helperLocked, code, "helper output: %s", out)
	require.Contains(t, out, name)
	require.Contains(t, out, "another process")

	require.NoError(t, l.Close())
	code, out = runLockHelper(t, name)
	require.Equal(t, helperAcquired, code, "helper output: %s", out)
	require.Contains(t, out, "acquired")

	// Locked again here after the helper released it.
	l, err = Default.Lock(name)
	require.NoError(t, err)
	require.NoError(t, l.Close())
}

func TestDiskLockSameProcess(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "LOCK")
	l, err := Default.Lock(name)
	require.NoError(t, err)
	defer l.Close()
	// Another spelling of the same file is the same lock.
	for _, other := range []string{name, filepath.Join(dir, ".", "x", "..", "LOCK")} {
		_, err = Default.Lock(other)
		require.True(t, errors.Is(err, ErrLocked), "%v", err)
		require.Contains(t, err.Error(), other)
		require.Contains(t, err.Error(), "this process")
	}
}

func TestDiskLockFileBypassingRegistry(t *testing.T) {
	if !hasMmap {
		t.Skipf("no flock on %s", runtime.GOOS)
	}
	// The OS lock alone refuses a second descriptor on the file, which is
	// what stops a process that does not share our registry.
	name := filepath.Join(t.TempDir(), "LOCK")
	l, err := Default.Lock(name)
	require.NoError(t, err)
	f, err := os.Open(name)
	require.NoError(t, err)
	defer f.Close()
	err = lockFile(f)
	require.True(t, errors.Is(err, ErrLocked), "%v", err)
	require.NoError(t, l.Close())
	require.NoError(t, lockFile(f))
}

func TestDiskOpenDirSync(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, Default, filepath.Join(dir, "a"), "abc")
	require.NoError(t, Default.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "b")))
	d, err := Default.OpenDir(dir)
	require.NoError(t, err)
	require.NoError(t, d.Sync())
	require.NoError(t, d.Close())
	names, err := Default.List(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"b"}, names)
}
