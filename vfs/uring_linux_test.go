//go:build !(mips || mipsle || mips64 || mips64le)

package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/shaledb/shale/internal/iobatch"
	"github.com/shaledb/shale/ioctx"
)

// batchMode is how a test makes diskFile.ReadAtBatch read.
type batchMode string

const (
	modeRing  batchMode = "ring"  // io_uring, whatever the filesystem
	modePread batchMode = "pread" // io_uring disabled for the process
)

// useBatchMode sets the mode for the rest of the test. The ring mode skips
// where io_uring is unavailable (seccomp, kernel.io_uring_disabled).
func useBatchMode(t *testing.T, m batchMode) {
	t.Helper()
	switch m {
	case modeRing:
		if !uringAvailable() {
			t.Skip("io_uring is not available here")
		}
		uringAnyFS.Store(true)
		t.Cleanup(func() { uringAnyFS.Store(false) })
	case modePread:
		was := uringPool.disabled.Swap(true)
		t.Cleanup(func() { uringPool.disabled.Store(was) })
	}
}

// ringSubmissions is how many reads the pool's rings have submitted so far.
// The caller must be the only user of the pool: it takes every ring out.
func ringSubmissions(t *testing.T) uint32 {
	t.Helper()
	uringPool.mu.Lock()
	made := uringPool.made
	uringPool.mu.Unlock()
	var n uint32
	for range made {
		select {
		case r := <-uringPool.free:
			n += r.sqHead.Load()
			defer putURing(r)
		default:
			t.Fatal("a ring is in use or was dropped")
		}
	}
	return n
}

func openRandomFile(t *testing.T, size int) (*diskFile, []byte) {
	t.Helper()
	name := filepath.Join(t.TempDir(), "f")
	writeRandomFile(t, name, size)
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Default.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f.(*diskFile), data
}

// errNotSet marks a request ReadAtBatch has not read.
var errNotSet = errors.New("not set")

// readBatch reads batch as the file reader does: with ReadAtBatch, and one
// ReadAt per request if it declines, which it must do exactly when accept is
// false, reading nothing.
func readBatch(t *testing.T, d *diskFile, batch []iobatch.Read, accept bool) {
	t.Helper()
	for i := range batch {
		batch[i].N, batch[i].Err = -1, errNotSet
	}
	if ok := d.ReadAtBatch(ioctx.IOOptions{}, batch); ok != accept {
		t.Fatalf("ReadAtBatch of %d requests returned %t", len(batch), ok)
	}
	for i := range batch {
		if q := &batch[i]; accept == (q.Err == errNotSet) {
			t.Fatalf("ReadAtBatch returned %t but request %d has (%d, %v)", accept, i, q.N, q.Err)
		}
	}
	if !accept {
		d.readEach(batch)
	}
}

// sameOutcome compares a request's outcome with ReadAt's on the same file.
func sameOutcome(t *testing.T, d *diskFile, q iobatch.Read) {
	t.Helper()
	want := make([]byte, len(q.P))
	n, err := d.ReadAt(want, q.Off)
	if q.N != n || (q.Err == nil) != (err == nil) || errors.Is(q.Err, io.EOF) != errors.Is(err, io.EOF) {
		t.Fatalf("read of %d at %d: got (%d, %v), ReadAt gives (%d, %v)", len(q.P), q.Off, q.N, q.Err, n, err)
	}
	if err != nil && !errors.Is(err, io.EOF) && q.Err.Error() != err.Error() {
		t.Fatalf("read of %d at %d: error %q, ReadAt's is %q", len(q.P), q.Off, q.Err, err)
	}
	if !bytes.Equal(q.P[:q.N], want[:n]) {
		t.Fatalf("read of %d at %d: bytes differ from ReadAt's", len(q.P), q.Off)
	}
}

func TestReadAtBatchMatchesReadAt(t *testing.T) {
	const size = 100_000
	for _, mode := range []batchMode{modeRing, modePread} {
		t.Run(string(mode), func(t *testing.T) {
			useBatchMode(t, mode)
			d, _ := openRandomFile(t, size)
			submitted := ringSubmissions(t)
			rng := rand.New(rand.NewPCG(5, 6))
			// Fixed edge cases, then random batches of every size around
			// the ring's 32 entries.
			edges := []iobatch.Read{
				{Off: 0, P: make([]byte, 4096)},
				{Off: size - 4096, P: make([]byte, 4096)},   // ends at EOF
				{Off: size - 100, P: make([]byte, 4096)},    // crosses EOF
				{Off: size, P: make([]byte, 10)},            // at EOF
				{Off: size + 5000, P: make([]byte, 10)},     // past EOF
				{Off: 17, P: make([]byte, 0)},               // empty
				{Off: -1, P: make([]byte, 10)},              // negative offset
				{Off: 0, P: make([]byte, size+1)},           // the whole file and more
				{Off: 12345, P: make([]byte, 4300)},         // unaligned
				{Off: size - 1, P: make([]byte, 1)},         // the last byte
				{Off: 1 << 40, P: make([]byte, 4096)},       // far past EOF
				{Off: 4096 * 3, P: make([]byte, 3*4096)},    // aligned, several pages
				{Off: size / 2, P: make([]byte, size/2+1)},  // crosses EOF by one
				{Off: size / 3, P: make([]byte, size/3)},    // inside
				{Off: 1, P: make([]byte, size-1)},           // ends at EOF, unaligned
				{Off: size - 4300, P: make([]byte, 4300+1)}, // crosses EOF by one
			}
			batches := [][]iobatch.Read{edges}
			for _, n := range []int{1, 2, 3, 16, 31, 32, 33, 64, 70} {
				batch := make([]iobatch.Read, n)
				for i := range batch {
					l := rng.IntN(9000)
					batch[i] = iobatch.Read{Off: rng.Int64N(size + 2000), P: make([]byte, l)}
				}
				batches = append(batches, batch)
			}
			for _, batch := range batches {
				readBatch(t, d, batch, mode == modeRing && len(batch) > 1)
				for _, q := range batch {
					sameOutcome(t, d, q)
				}
			}
			// The two modes read the same, but only one of them on a ring.
			if n := ringSubmissions(t) - submitted; (n > 0) != (mode == modeRing) {
				t.Fatalf("%d reads submitted to a ring in mode %s", n, mode)
			}
		})
	}
}

// TestReadAtBatchClosed: ReadAtBatch declines a batch of a closed file, so
// each request fails as ReadAt does.
func TestReadAtBatchClosed(t *testing.T) {
	for _, mode := range []batchMode{modeRing, modePread} {
		t.Run(string(mode), func(t *testing.T) {
			useBatchMode(t, mode)
			d, _ := openRandomFile(t, 10_000)
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			batch := []iobatch.Read{{Off: 0, P: make([]byte, 100)}, {Off: 500, P: make([]byte, 100)}}
			readBatch(t, d, batch, false)
			for _, q := range batch {
				if q.N != 0 || !errors.Is(q.Err, os.ErrClosed) {
					t.Fatalf("read at %d of a closed file: (%d, %v), want os.ErrClosed", q.Off, q.N, q.Err)
				}
			}
		})
	}
}

// TestReadAtBatchDescriptorClosedUnderneath closes the descriptor behind the
// *os.File's back: the kernel fails every read (EBADF in each completion on
// the ring), and each request reports it, as ReadAt does, naming the file.
// The descriptor is restored afterwards, for the *os.File's Close; the
// package's tests run one at a time, so no other open takes its number
// meanwhile.
func TestReadAtBatchDescriptorClosedUnderneath(t *testing.T) {
	for _, mode := range []batchMode{modeRing, modePread} {
		t.Run(string(mode), func(t *testing.T) {
			useBatchMode(t, mode)
			d, _ := openRandomFile(t, 10_000)
			var fd, spare int
			var cerr error
			if err := rawControl(d.f, func(u uintptr) {
				fd = int(u)
				if spare, cerr = syscall.Dup(fd); cerr == nil {
					cerr = syscall.Close(fd)
				}
			}); err != nil || cerr != nil {
				t.Fatal(err, cerr)
			}
			defer func() {
				if err := syscall.Dup3(spare, fd, 0); err != nil {
					t.Error(err)
				}
				_ = syscall.Close(spare)
			}()
			batch := []iobatch.Read{{Off: 0, P: make([]byte, 100)}, {Off: 500, P: make([]byte, 100)}, {Off: 9000, P: make([]byte, 4096)}}
			readBatch(t, d, batch, mode == modeRing)
			for _, q := range batch {
				var pe *os.PathError
				if q.N != 0 || !errors.Is(q.Err, syscall.EBADF) || !errors.As(q.Err, &pe) || pe.Path != d.f.Name() {
					t.Fatalf("read at %d: (%d, %v), want EBADF naming %s", q.Off, q.N, q.Err, d.f.Name())
				}
			}
		})
	}
}

// TestReadAtBatchConcurrent reads from more goroutines than there are
// rings, so some batches find none free and use pread; every batch must see
// the file's bytes. Run it with -race.
func TestReadAtBatchConcurrent(t *testing.T) {
	useBatchMode(t, modeRing)
	const size = 1 << 20
	d, data := openRandomFile(t, size)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			batch := make([]iobatch.Read, 16)
			for range 200 {
				for i := range batch {
					batch[i] = iobatch.Read{Off: rng.Int64N(size - 5000), P: make([]byte, 1+rng.IntN(5000))}
				}
				if !d.ReadAtBatch(ioctx.IOOptions{}, batch) {
					d.readEach(batch) // every ring busy
				}
				for _, q := range batch {
					if q.Err != nil || q.N != len(q.P) || !bytes.Equal(q.P, data[q.Off:q.Off+int64(q.N)]) {
						errs <- fmt.Errorf("read of %d at %d: (%d, %v) or wrong bytes", len(q.P), q.Off, q.N, q.Err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestRingSuitsTmpfs: files on tmpfs are read with pread, whose reads
// io_uring would hand to a worker thread (see ringSuits).
func TestRingSuitsTmpfs(t *testing.T) {
	const tmpfsMagic = 0x01021994
	var st syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &st); err != nil || uint32(st.Type) != tmpfsMagic {
		t.Skip("no tmpfs at /dev/shm")
	}
	name := filepath.Join("/dev/shm", fmt.Sprintf("shale_uring_test_%d", os.Getpid()))
	writeRandomFile(t, name, 100)
	defer os.Remove(name)
	f, err := Default.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.(*diskFile).ringSuits() {
		t.Fatal("a file on tmpfs would be read on the ring")
	}
}
