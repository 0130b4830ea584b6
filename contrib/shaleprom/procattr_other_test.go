//go:build !linux

package shaleprom

import "os/exec"

// dieWithTest does nothing here: only Linux has a parent-death signal; a
// test that fails still stops the server in its cleanup.
func dieWithTest(*exec.Cmd) {}
