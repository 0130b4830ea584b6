//go:build linux && amd64

package vfs

import (
	"bytes"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"unsafe"

	"github.com/shaledb/shale/internal/iobatch"
	"github.com/shaledb/shale/ioctx"
)

// uringSeccompEnv makes TestReadAtBatchSeccomp's child process the one that
// installs the filter.
const uringSeccompEnv = "SHALE_URING_SECCOMP_CHILD"

// TestReadAtBatchSeccomp runs, in a child process, under a seccomp filter
// that fails io_uring_setup with EPERM, as Docker's default profile does:
// ReadAtBatch declines, io_uring is off for the process after that one try,
// and the reads go through pread.
func TestReadAtBatchSeccomp(t *testing.T) {
	if os.Getenv(uringSeccompEnv) == "" {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestReadAtBatchSeccomp$", "-test.count", "1", "-test.v")
		cmd.Env = append(os.Environ(), uringSeccompEnv+"=1")
		out, err := cmd.CombinedOutput()
		switch {
		case err != nil:
			t.Fatalf("child: %v\n%s", err, out)
		case bytes.Contains(out, []byte("--- SKIP")):
			t.Skipf("child skipped:\n%s", out)
		case !bytes.Contains(out, []byte("--- PASS: TestReadAtBatchSeccomp")):
			t.Fatalf("child did not pass:\n%s", out)
		}
		return
	}
	if err := denyIOURingSetup(); err != nil {
		t.Skipf("cannot install a seccomp filter here: %v", err)
	}
	if _, _, errno := syscall.RawSyscall(sysIOUringSetup, 1, 0, 0); errno != syscall.EPERM {
		t.Fatalf("io_uring_setup under the filter: %v, want EPERM", errno)
	}
	uringAnyFS.Store(true)
	d, data := openRandomFile(t, 10_000)
	batch := []iobatch.Read{{Off: 0, P: make([]byte, 100)}, {Off: 5000, P: make([]byte, 100)}}
	if d.ReadAtBatch(ioctx.IOOptions{}, batch) {
		t.Fatal("ReadAtBatch read a batch without io_uring")
	}
	if !uringPool.disabled.Load() {
		t.Fatal("a failed io_uring_setup did not turn io_uring off")
	}
	d.readEach(batch)
	for _, q := range batch {
		if q.Err != nil || string(q.P) != string(data[q.Off:q.Off+100]) {
			t.Fatalf("read at %d: %v", q.Off, q.Err)
		}
	}
}

// denyIOURingSetup installs, for every thread of the process, a seccomp
// filter failing io_uring_setup with EPERM and allowing everything else.
func denyIOURingSetup() error {
	const (
		prSetNoNewPrivs     = 38
		sysSeccomp          = 317
		seccompSetModeFlt   = 1
		seccompFlagTSync    = 1
		auditArchX86_64     = 0xc000003e
		bpfLdWAbs           = 0x20
		bpfJeqK             = 0x15
		bpfRetK             = 0x06
		seccompRetAllow     = 0x7fff0000
		seccompRetErrno     = 0x00050000
		seccompRetKillProc  = 0x80000000
		seccompDataArchOff  = 4
		seccompDataNumberOf = 0
	)
	type sockFilter struct {
		code   uint16
		jt, jf uint8
		k      uint32
	}
	prog := []sockFilter{
		{bpfLdWAbs, 0, 0, seccompDataArchOff},
		{bpfJeqK, 1, 0, auditArchX86_64},
		{bpfRetK, 0, 0, seccompRetKillProc},
		{bpfLdWAbs, 0, 0, seccompDataNumberOf},
		{bpfJeqK, 0, 1, sysIOUringSetup},
		{bpfRetK, 0, 0, seccompRetErrno | uint32(syscall.EPERM)},
		{bpfRetK, 0, 0, seccompRetAllow},
	}
	fprog := struct {
		len    uint16
		filter *sockFilter
	}{uint16(len(prog)), &prog[0]}
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0, 0, 0, 0); errno != 0 {
		return errno
	}
	if _, _, errno := syscall.RawSyscall(sysSeccomp, seccompSetModeFlt, seccompFlagTSync, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return errno
	}
	return nil
}
