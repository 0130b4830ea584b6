//go:build !(mips || mipsle || mips64 || mips64le)

package vfs

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/shaledb/shale/internal/iobatch"
)

// This file reads a batch of ranges of a file with io_uring: one
// io_uring_enter submits every read and waits for all of them, where pread
// takes one system call per range. On a VM where a system call costs
// microseconds that is most of a cached read's CPU time. Nothing here is
// required: any failure to set up a ring, or the lack of a free one, falls
// back to pread, so seccomp profiles that forbid io_uring (Docker's default)
// and kernel.io_uring_disabled behave as before.
//
// The system call numbers are those of every architecture using the generic
// table (and of x86); mips, which offsets them, is left to uring_other.go.

const (
	sysIOUringSetup = 425
	sysIOUringEnter = 426

	uringOpRead          = 22     // IORING_OP_READ
	uringEnterGetEvents  = 1 << 0 // IORING_ENTER_GETEVENTS
	uringSetupSubmitAll  = 1 << 7 // IORING_SETUP_SUBMIT_ALL (5.18)
	uringFeatSingleMmap  = 1 << 0 // IORING_FEAT_SINGLE_MMAP
	uringOffSQRing       = 0
	uringOffCQRing       = 0x8000000
	uringOffSQEs         = 0x10000000
	uringEntries         = 32 // SQ entries, a power of two; the CQ gets twice as many
	uringMaxRings        = 16
	uringMaxRead         = 1 << 30 // larger reads go to the ring in part; pread reads the rest
	uringParamsSize      = 120
	uringSQESize         = 64
	uringCQESize         = 16
	uringSQRingArrayElem = 4
)

// uringParams is struct io_uring_params. Every field before a uint64 is a
// uint32 in pairs, so the layout is the same on 32-bit targets, whose uint64
// alignment is 4 (the size checks below fail the build otherwise).
type uringParams struct {
	sqEntries    uint32
	cqEntries    uint32
	flags        uint32
	sqThreadCPU  uint32
	sqThreadIdle uint32
	features     uint32
	wqFD         uint32
	resv         [3]uint32
	sqOff        uringSQOffsets
	cqOff        uringCQOffsets
}

// uringSQOffsets is struct io_sqring_offsets.
type uringSQOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

// uringCQOffsets is struct io_cqring_offsets.
type uringCQOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// uringSQE is struct io_uring_sqe, with the unions named after the members
// a read uses.
type uringSQE struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64
	len         uint32
	rwFlags     uint32
	userData    uint64
	bufIndex    uint16
	personality uint16
	spliceFDIn  int32
	addr3       uint64
	pad2        uint64
}

// uringCQE is struct io_uring_cqe.
type uringCQE struct {
	userData uint64
	res      int32
	flags    uint32
}

// The build fails if a layout differs from the kernel's.
var (
	_ [unsafe.Sizeof(uringParams{}) - uringParamsSize]byte
	_ [uringParamsSize - unsafe.Sizeof(uringParams{})]byte
	_ [unsafe.Sizeof(uringSQE{}) - uringSQESize]byte
	_ [uringSQESize - unsafe.Sizeof(uringSQE{})]byte
	_ [unsafe.Sizeof(uringCQE{}) - uringCQESize]byte
	_ [uringCQESize - unsafe.Sizeof(uringCQE{})]byte
)

// uring is one ring. It is used by one goroutine at a time (the pool hands
// it out) and lives for the process: its mappings are never released, so no
// read the kernel still holds can outlive them.
type uring struct {
	fd int

	sqHead  *atomic.Uint32 // written by the kernel
	sqTail  *atomic.Uint32
	sqMask  uint32
	sqes    []uringSQE
	cqHead  *atomic.Uint32
	cqTail  *atomic.Uint32 // written by the kernel
	cqMask  uint32
	cqes    []uringCQE
	entries int

	// bufs holds the buffer of every read in flight. It keeps the buffers
	// reachable until their completions are reaped, and because it is on
	// the heap, storing into it makes the callers' buffers escape to the
	// heap too: the kernel writes to an address taken once, and a goroutine
	// stack may move.
	bufs []unsafe.Pointer
}

// newURing sets up a ring and maps its queues.
func newURing() (*uring, error) {
	var p uringParams
	p.flags = uringSetupSubmitAll
	fd, _, errno := syscall.RawSyscall(sysIOUringSetup, uringEntries, uintptr(unsafe.Pointer(&p)), 0)
	if errno == syscall.EINVAL {
		// Before 5.18 the flag is unknown; without it the kernel stops
		// submitting at a read it cannot prepare, which wait handles.
		p = uringParams{}
		fd, _, errno = syscall.RawSyscall(sysIOUringSetup, uringEntries, uintptr(unsafe.Pointer(&p)), 0)
	}
	if errno != 0 {
		return nil, os.NewSyscallError("io_uring_setup", errno)
	}
	r := &uring{fd: int(fd)}
	if err := r.mapRings(&p); err != nil {
		_ = syscall.Close(r.fd)
		return nil, err
	}
	return r, nil
}

func (r *uring) mapRings(p *uringParams) error {
	sqSize := int(p.sqOff.array) + int(p.sqEntries)*uringSQRingArrayElem
	cqSize := int(p.cqOff.cqes) + int(p.cqEntries)*uringCQESize
	single := p.features&uringFeatSingleMmap != 0
	if single {
		sqSize = max(sqSize, cqSize)
	}
	// Mappings are released only on failure here, before any read used them.
	var maps [][]byte
	mapped := func(off int64, size int) ([]byte, error) {
		b, err := syscall.Mmap(r.fd, off, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_POPULATE)
		if err != nil {
			for _, m := range maps {
				_ = syscall.Munmap(m)
			}
			return nil, os.NewSyscallError("mmap io_uring", err)
		}
		maps = append(maps, b)
		return b, nil
	}
	sq, err := mapped(uringOffSQRing, sqSize)
	if err != nil {
		return err
	}
	cq := sq
	if !single {
		if cq, err = mapped(uringOffCQRing, cqSize); err != nil {
			return err
		}
	}
	sqeMem, err := mapped(uringOffSQEs, int(p.sqEntries)*uringSQESize)
	if err != nil {
		return err
	}
	r.sqHead = (*atomic.Uint32)(unsafe.Pointer(&sq[p.sqOff.head]))
	r.sqTail = (*atomic.Uint32)(unsafe.Pointer(&sq[p.sqOff.tail]))
	r.sqMask = *(*uint32)(unsafe.Pointer(&sq[p.sqOff.ringMask]))
	r.cqHead = (*atomic.Uint32)(unsafe.Pointer(&cq[p.cqOff.head]))
	r.cqTail = (*atomic.Uint32)(unsafe.Pointer(&cq[p.cqOff.tail]))
	r.cqMask = *(*uint32)(unsafe.Pointer(&cq[p.cqOff.ringMask]))
	r.sqes = unsafe.Slice((*uringSQE)(unsafe.Pointer(&sqeMem[0])), p.sqEntries)
	r.cqes = unsafe.Slice((*uringCQE)(unsafe.Pointer(&cq[p.cqOff.cqes])), p.cqEntries)
	// SQ slot i always names SQE i, so the indirection array is set once.
	array := unsafe.Slice((*uint32)(unsafe.Pointer(&sq[p.sqOff.array])), p.sqEntries)
	for i := range array {
		array[i] = uint32(i)
	}
	// Never more reads in flight than the CQ holds, so it cannot overflow.
	r.entries = int(min(p.sqEntries, p.cqEntries, uringEntries))
	r.bufs = make([]unsafe.Pointer, r.entries)
	return nil
}

// uringRead is one read of a batch on the ring: the index of its request
// and, once reaped, the kernel's result (bytes read, or a negated errno).
type uringRead struct {
	req  int
	res  int32
	done bool
}

// read submits the reads of batch (at most r.entries) and returns once every
// submitted one has completed. It returns false if the ring failed in a way
// that makes it unfit for reuse; the reads without a completion (done false)
// were then never submitted, and are the caller's to redo.
func (r *uring) read(fd int32, reqs []iobatch.Read, batch []uringRead) bool {
	tail := r.sqTail.Load()
	for i := range batch {
		c := &batch[i]
		c.done = false
		q := &reqs[c.req]
		r.bufs[i] = unsafe.Pointer(unsafe.SliceData(q.P))
		r.sqes[(tail+uint32(i))&r.sqMask] = uringSQE{
			opcode:   uringOpRead,
			fd:       fd,
			off:      uint64(q.Off),
			addr:     uint64(uintptr(r.bufs[i])),
			len:      uint32(min(len(q.P), uringMaxRead)),
			userData: uint64(i),
		}
	}
	// The atomic store publishes the SQEs written above to the kernel (Go's
	// atomics are sequentially consistent, so at least a release).
	r.sqTail.Store(tail + uint32(len(batch)))
	ok := r.wait(tail, batch)
	clear(r.bufs[:len(batch)])
	runtime.KeepAlive(reqs)
	return ok
}

// wait submits the SQEs from start on, one per read of batch, and reaps
// their completions. io_uring_enter both submits what the kernel has not
// consumed yet and waits for the reads not reaped yet; it is retried after
// a signal (EINTR) and while reads complete or are submitted, and a few
// times when a call does nothing at all, which the kernel should not do.
func (r *uring) wait(start uint32, batch []uringRead) bool {
	reaped, idle := 0, 0
	for reaped < len(batch) {
		toSubmit := uint32(len(batch)) - (r.sqHead.Load() - start)
		_, _, errno := syscall.Syscall6(sysIOUringEnter, uintptr(r.fd), uintptr(toSubmit),
			uintptr(len(batch)-reaped), uringEnterGetEvents, 0, 0)
		n := r.reap(batch)
		reaped += n
		progress := n > 0 || r.sqHead.Load()-start > uint32(len(batch))-toSubmit
		if progress {
			idle = 0
		} else {
			idle++
		}
		if errno == syscall.EINTR || (errno == 0 || errno == syscall.EAGAIN || errno == syscall.EBUSY) && (progress || idle < 3) {
			continue
		}
		r.abandon(start, batch, reaped)
		return false
	}
	return true
}

// abandon withdraws the SQEs the kernel has not consumed and waits for the
// completions of those it has, polling the CQ since io_uring_enter is what
// failed: a read still in flight would write into a buffer its caller may
// reuse.
func (r *uring) abandon(start uint32, batch []uringRead, reaped int) {
	// Without SQPOLL the kernel reads the SQ only inside io_uring_enter, so
	// moving the tail back to its head withdraws the rest.
	head := r.sqHead.Load()
	r.sqTail.Store(head)
	for inFlight := int(head-start) - reaped; inFlight > 0; {
		n := r.reap(batch)
		if n == 0 {
			time.Sleep(50 * time.Microsecond)
		}
		inFlight -= n
	}
}

// reap moves the completions in the CQ to their reads and returns how many
// it found.
func (r *uring) reap(batch []uringRead) int {
	head := r.cqHead.Load()
	tail := r.cqTail.Load() // an acquire: the CQEs up to tail are written
	n := 0
	for ; head != tail; head++ {
		c := r.cqes[head&r.cqMask]
		if i := c.userData; i < uint64(len(batch)) && !batch[i].done {
			batch[i].res, batch[i].done = c.res, true
			n++
		}
	}
	r.cqHead.Store(head)
	return n
}

// uringPool is the process's rings, made on demand up to uringMaxRings (and
// GOMAXPROCS), each used by one goroutine at a time.
var uringPool struct {
	disabled atomic.Bool // set by the first failed setup or failed ring
	free     chan *uring
	mu       sync.Mutex
	made     int
}

func init() { uringPool.free = make(chan *uring, uringMaxRings) }

// getURing returns a free ring, a new one, or nil when io_uring is disabled
// or every ring is busy: the caller then reads with pread instead of waiting.
func getURing() *uring {
	if uringPool.disabled.Load() {
		return nil
	}
	select {
	case r := <-uringPool.free:
		return r
	default:
	}
	uringPool.mu.Lock()
	defer uringPool.mu.Unlock()
	if uringPool.made >= min(uringMaxRings, runtime.GOMAXPROCS(0)) {
		return nil
	}
	r, err := newURing()
	if err != nil {
		// ENOSYS, EPERM (seccomp, kernel.io_uring_disabled), ENOMEM, ...:
		// the answer will not change, so the process stops asking.
		uringPool.disabled.Store(true)
		return nil
	}
	uringPool.made++
	return r
}

func putURing(r *uring) { uringPool.free <- r }

// Filesystems whose buffered reads io_uring completes inline when the pages
// are cached (they set FMODE_NOWAIT). On others, tmpfs among them, every read
// goes to an io_uring worker thread, whose wake-ups cost as much CPU as the
// system calls saved and more time (BenchmarkReadAtBatch), so pread is used.
const (
	ext4SuperMagic  = 0xEF53
	xfsSuperMagic   = 0x58465342
	btrfsSuperMagic = 0x9123683E
)

// uringAnyFS makes every filesystem use the ring; tests set it to exercise
// the ring on whatever filesystem holds their temporary directory.
var uringAnyFS atomic.Bool

// Values of diskFile.ring.
const (
	ringUnknown int32 = iota
	ringYes
	ringNo
)

// ringSuits reports whether reads of d go to the ring, deciding it once
// per file from its filesystem.
func (d *diskFile) ringSuits() bool {
	if uringAnyFS.Load() {
		return true
	}
	switch d.ring.Load() {
	case ringYes:
		return true
	case ringNo:
		return false
	}
	var st syscall.Statfs_t
	var serr error
	if err := rawControl(d.f, func(fd uintptr) { serr = syscall.Fstatfs(int(fd), &st) }); err != nil {
		return false // closed: pread reports it
	}
	v := ringNo
	if serr == nil {
		switch uint32(st.Type) {
		case ext4SuperMagic, xfsSuperMagic, btrfsSuperMagic:
			v = ringYes
		}
	}
	d.ring.Store(v)
	return v == ringYes
}

// readRing reads reqs with io_uring and reports whether it did; if not, no
// request's outcome was set (the file is closed, on a filesystem the ring does
// not suit, or no ring is free). It runs the ring while the descriptor is held
// (rawControl), so a concurrent Close cannot recycle it under a read.
func (d *diskFile) readRing(reqs []iobatch.Read) bool {
	if !d.ringSuits() {
		return false
	}
	r := getURing()
	if r == nil {
		return false
	}
	ok := true
	if err := rawControl(d.f, func(fd uintptr) { ok = d.readOnRing(r, int32(fd), reqs) }); err != nil {
		putURing(r)
		return false // closed: pread reports it as ReadAt does
	}
	if ok {
		putURing(r)
	} else {
		// The ring is dropped, still mapped, and with it the path: a ring
		// that failed once would fail again.
		uringPool.disabled.Store(true)
	}
	return true
}

// readOnRing reads reqs on r, r.entries at a time, and sets every request's
// outcome. It returns false if the ring failed; the reads it did not do are
// then read with pread.
func (d *diskFile) readOnRing(r *uring, fd int32, reqs []iobatch.Read) bool {
	var buf [uringEntries]uringRead
	for i := 0; i < len(reqs); {
		batch := buf[:0]
		for ; i < len(reqs) && len(batch) < r.entries; i++ {
			q := &reqs[i]
			if len(q.P) == 0 || q.Off < 0 {
				// ReadAt's answer: nothing to read, or its offset error.
				q.N, q.Err = d.f.ReadAt(q.P, q.Off)
				continue
			}
			batch = append(batch, uringRead{req: i})
		}
		if len(batch) == 0 {
			continue
		}
		ok := r.read(fd, reqs, batch)
		for j := range batch {
			d.finish(&reqs[batch[j].req], &batch[j])
		}
		if !ok {
			d.readEach(reqs[i:])
			return false
		}
	}
	return true
}

// readEach reads reqs one by one, as a caller does when ReadAtBatch declines.
func (d *diskFile) readEach(reqs []iobatch.Read) {
	for i := range reqs {
		reqs[i].N, reqs[i].Err = d.f.ReadAt(reqs[i].P, reqs[i].Off)
	}
}

// finish sets the outcome of one read from its completion, as ReadAt would
// have it: a short read continues with pread, which reads the rest or finds
// the end of the file and returns io.EOF; an error is ReadAt's
// *os.PathError (op "read", the file's name, the errno). A read the ring did not do, or that the kernel could not do then
// (EAGAIN, EINTR, ECANCELED when the submitting thread exited), is read
// with pread.
func (d *diskFile) finish(q *iobatch.Read, c *uringRead) {
	switch {
	case !c.done || c.res == -int32(syscall.EAGAIN) || c.res == -int32(syscall.EINTR) || c.res == -int32(syscall.ECANCELED):
		q.N, q.Err = d.f.ReadAt(q.P, q.Off)
	case c.res < 0:
		// ReadAt's error, which names the file only: the caller (the file
		// reader) names the length and the offset, as it does for ReadAt.
		q.N = 0
		q.Err = &os.PathError{Op: "read", Path: d.f.Name(), Err: syscall.Errno(-c.res)}
	case int(c.res) == len(q.P):
		q.N, q.Err = len(q.P), nil
	default:
		n := int(c.res)
		m, err := d.f.ReadAt(q.P[n:], q.Off+int64(n))
		q.N, q.Err = n+m, err
	}
}
