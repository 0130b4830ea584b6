package vfs

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDiskLockOfRemovedFile covers the race a failed Open's removal of the
// LOCK file it created opens: a Lock that opened the file just before
// another process removed it (still holding it), and takes the lock once
// that process let go, must not end up holding a lock on a file no longer
// named LOCK while a third process creates and locks a new one. Lock checks,
// once it holds the lock, that the name still leads to the file it locked,
// and tries again if not.
func TestDiskLockOfRemovedFile(t *testing.T) {
	if !hasMmap {
		t.Skipf("no flock on %s: Lock excludes only this process", runtime.GOOS)
	}
	name := filepath.Join(t.TempDir(), "LOCK")
	require.NoError(t, os.WriteFile(name, nil, 0o644))
	calls := 0
	lockOpenedHook = func(string) {
		calls++
		if calls == 1 {
			// The other holder removes the file and releases it between
			// this Lock's open and its flock.
			require.NoError(t, os.Remove(name))
		}
	}
	defer func() { lockOpenedHook = nil }()
	l, err := Default.Lock(name)
	require.NoError(t, err)
	defer l.Close()
	require.Equal(t, 2, calls, "the lock of the removed file is given up and the file opened again")
	_, err = os.Stat(name)
	require.NoError(t, err, "LOCK exists again")
	code, out := runLockHelper(t, name)
	require.Equal(t, helperLocked, code, "another process cannot lock what the name leads to: %s", out)
}
