//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package vfs

import "os"

// lockFile takes no OS lock on platforms without flock in package syscall
// (windows, plan9, solaris, aix, wasm): there, Lock excludes only other Locks
// of this process, through the in-process registry. Other processes are not
// stopped; run one process per database directory on such platforms.
func lockFile(*os.File) error { return nil }

// Files do not implement Mappable on these platforms, so the file reader
// falls back to ReadAt; there is no mapping to release.
func (d *diskFile) closeMapping() error { return nil }
