//go:build !(mips || mipsle || mips64 || mips64le)

package vfs

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/shaledb/shale/internal/iobatch"
)

// TestReadAtBatchErrorIsReadAts pins that a read the ring fails gives
// ReadAt's error: an *os.PathError with op "read", the file's name and the
// bare errno, in the same words. The file reader wraps it with the length,
// the offset and the file ("fileio: read of N bytes at offset X of NAME"),
// as it wraps pread's; the ring used to add "vfs: read of N bytes at
// offset X" itself, so a failed batch read named its offset twice. A
// directory opened as a file fails every read, on the ring (-EISDIR) as
// with pread.
func TestReadAtBatchErrorIsReadAts(t *testing.T) {
	useBatchMode(t, modeRing)
	dir := t.TempDir()
	f, err := Default.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	d := f.(*diskFile)
	batch := []iobatch.Read{{P: make([]byte, 100), Off: 0}, {P: make([]byte, 10), Off: 4096}}
	readBatch(t, d, batch, true)
	for _, q := range batch {
		sameOutcome(t, d, q)
		var pe *os.PathError
		if !errors.As(q.Err, &pe) || pe.Op != "read" || pe.Path != dir || !errors.Is(pe.Err, syscall.EISDIR) {
			t.Fatalf("read of %d at %d: error %#v, want ReadAt's *os.PathError{read %s: EISDIR}", len(q.P), q.Off, q.Err, dir)
		}
	}
}

// TestRingFinishError is TestReadAtBatchErrorIsReadAts for an errno a test
// cannot provoke (EIO, a failing disk): a completion with it becomes the
// error ReadAt gives for it.
func TestRingFinishError(t *testing.T) {
	d, _ := openRandomFile(t, 4096)
	q := iobatch.Read{P: make([]byte, 512), Off: 1024}
	d.finish(&q, &uringRead{done: true, res: -int32(syscall.EIO)})
	want := &os.PathError{Op: "read", Path: d.f.Name(), Err: syscall.EIO}
	if q.N != 0 || q.Err == nil || q.Err.Error() != want.Error() {
		t.Fatalf("finish of -EIO: (%d, %v), want (0, %v)", q.N, q.Err, want)
	}
	var pe *os.PathError
	if !errors.As(q.Err, &pe) || !errors.Is(q.Err, syscall.EIO) {
		t.Fatalf("finish of -EIO: %#v is not a *os.PathError of EIO", q.Err)
	}
}
