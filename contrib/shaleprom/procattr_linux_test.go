package shaleprom

import (
	"os/exec"
	"syscall"
)

// dieWithTest makes the kernel kill cmd if the test process dies first
// (a go test -timeout, a killed CI job), so no server outlives its test.
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
