package engine

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/vfs"
)

// walMaxPending bounds the WAL bytes waiting for the background writer: a
// writer that gets this far ahead of the disk waits, so memory stays bounded.
// 1 MiB, not a whole default memtable's 4: on a busy machine the background
// writer can go without the CPU for tens of milliseconds, and the backlog
// it leaves is live heap, which the garbage collector's headroom doubles in
// the process's peak RSS (bench/'s fill at the defaults peaked about 4 MiB
// lower with 1 MiB).
const walMaxPending = 1 << 20

// walChunkSize is the size of the buffers pending bytes are kept in. The
// background writer hands chunks to the file and Write reuses them, so a
// backlog of any size up to walMaxPending is held without allocating or
// copying: a single buffer grown by append would allocate and copy about
// twice the largest backlog for every WAL, and a writer that runs ahead of
// the background writer (issue 15's fill, on a loaded machine) builds a
// backlog of megabytes. TestWriteAllocations pins the single-key write path
// at no allocation.
const walChunkSize = 64 << 10

// walMaxFreeChunks bounds the drained chunks a walFile keeps for reuse, and
// those walChunks keeps for the next WAL: as many as a full backlog needs,
// now that walMaxPending is 1 MiB. A walFile lives as long as its WAL (one
// memtable's worth, 256 KiB to 4 MiB at the defaults): chunks kept per file
// were dropped at every switch and allocated again for the next WAL (45% of
// the bytes a 128 MiB fill at the defaults allocated). Keeping only 4
// instead saved another MiB of peak RSS in bench/'s fill at the defaults,
// but its garbage cost 8% more CPU per put (5 interleaved rounds).
const walMaxFreeChunks = walMaxPending / walChunkSize

// walChunks keeps the drained chunks of closed walFiles for the next WAL.
var walChunks struct {
	mu   sync.Mutex
	free [][]byte
}

// putChunks gives closed walFile's chunks to walChunks, up to its cap.
func putChunks(cs [][]byte) {
	walChunks.mu.Lock()
	for _, c := range cs {
		if len(walChunks.free) >= walMaxFreeChunks {
			break
		}
		walChunks.free = append(walChunks.free, c[:0])
	}
	walChunks.mu.Unlock()
}

// getChunk takes a chunk from walChunks, or returns nil.
func getChunk() []byte {
	walChunks.mu.Lock()
	defer walChunks.mu.Unlock()
	n := len(walChunks.free)
	if n == 0 {
		return nil
	}
	c := walChunks.free[n-1]
	walChunks.free[n-1] = nil
	walChunks.free = walChunks.free[:n-1]
	return c
}

// walInlineAfter is how long the file must have had nothing to write
// before a lone write goes to it from the leader rather than through the
// background goroutine. Below it the writes are taken for a stream, whose
// hand-offs are cheap (the background goroutine is still at work or its
// thread still awake) and gather several records per system call: writing
// each inline cost a fill of 1 KB puts about a fifth more CPU per put.
// Above it the background thread has usually gone to sleep.
const walInlineAfter = 20 * time.Microsecond

// walSlowWake is how long waking the background goroutine must take for
// lone writes to go inline. Where another goroutine keeps the second
// processor busy (YCSB E with four threads), a wake only queues the
// background goroutine, in about a microsecond, and handing off is cheaper
// than the leader's own write system call after a scan has evicted the
// caches (a put's median was 8.4 µs with hand-offs, 12 written inline);
// where a processor is idle, it wakes a parked thread, 13-50 µs.
const walSlowWake = 2 * time.Microsecond

// walWakeProbe is how many lone records in a row go inline before one is
// handed off again, to measure the wake anew: whether a processor is idle
// changes with the load, which the runtime does not tell.
const walWakeProbe = 16

// walInlineAfterHook, when a test sets it, replaces walInlineAfter and
// walFile's measure of wakes: 0 writes every lone record inline, a long
// time none.
var walInlineAfterHook atomic.Pointer[time.Duration]

// walHint is what the commit leader tells a walFile about the bytes it
// hands over next (walFile.hint).
type walHint uint8

const (
	// walQueued: other writes wait behind these bytes; hand them off, so
	// that the next commit group starts sooner.
	walQueued walHint = iota
	// walLone: no other write waits; write them inline unless the file
	// wrote something within walInlineAfter.
	walLone
	// walSyncing: a Sync follows, which would write them anyway; write
	// them inline rather than wake the background goroutine for them.
	walSyncing
)

// walFile sits between the WAL's record writer and its file and takes the
// write system call off the commit path when writes come in streams: Write
// appends to the pending chunks and, when it is idle, wakes a background
// goroutine that writes them to the file; Sync writes whatever is pending
// and fsyncs. A write that does not ask for sync is therefore acknowledged
// once its record is pending and reaches the operating system when the
// background goroutine next hands the chunks on (how soon depends on the
// scheduler and, behind a slow disk, on up to walMaxPending bytes ahead of
// it); a sync write returns only after fsync. A process crash can lose the
// unsynced writes still pending — never a synced one.
//
// Waking the background goroutine costs when it has gone to sleep: the
// runtime wakes a parked thread (a futex wake), which on a busy machine the
// kernel runs on the writer's own CPU, ahead of the writer. A write after
// some idle time (a put between scans) waited 13-50 µs for that. So the
// leader tells Write what follows its bytes (hint): when no other write is
// queued, the file has had nothing to write for walInlineAfter and the
// last wake measured was slow (walSlowWake), and before a Sync, Write
// writes the bytes itself, as RocksDB's write thread does, when nothing is
// pending before them (so the file's order stays the records' order).
// Writes that come close together keep the hand-off, which gathers them
// into fewer system calls on the other core, and so do lone writes while
// wakes are cheap.
//
// Write and Sync are called by the commit leader (one at a time); the
// background goroutine runs concurrently with them. Errors are sticky.
type walFile struct {
	f vfs.File

	mu   sync.Mutex
	cond sync.Cond // signalled when a write to the file finishes
	// pending holds the bytes not yet handed to the file, in chunks of
	// capacity walChunkSize; Write fills the last one.
	pending      [][]byte
	pendingBytes int
	// free holds drained chunks for reuse, spare the slice of chunks
	// being written, reused as pending.
	free    [][]byte
	spare   [][]byte
	writing bool // a write to the file is in progress
	// idle says the background goroutine found nothing left to write and
	// waits for wake: only then does Write wake it. A write that finds it
	// at work leaves its bytes for the drain in progress, which writes
	// until nothing is pending, and pays no channel operation; the
	// goroutine wakes once per batch of bytes, not once per record.
	idle bool
	// hint is set by the leader before it writes a record and read by
	// Write, on the leader's goroutine only.
	hint walHint
	// slowWake says the last wake of the background goroutine for a lone
	// record took walSlowWake or longer (at first, none was measured);
	// inlined counts the lone records written inline since. Both are the
	// leader's, as hint is.
	slowWake bool
	inlined  int
	// lastWrite is when a write to the file last ended (at first, when
	// the walFile was made).
	lastWrite time.Time
	err       error
	closed    bool
	wake      chan struct{}
	finished  chan struct{}
}

func newWALFile(f vfs.File) *walFile {
	w := &walFile{f: f, idle: true, slowWake: true, lastWrite: time.Now(), wake: make(chan struct{}, 1), finished: make(chan struct{})}
	w.cond.L = &w.mu
	go w.writeLoop()
	return w
}

// Write buffers p, or writes it to the file when w.hint asks and nothing
// is pending or being written. It blocks only when walMaxPending bytes are
// already waiting.
func (w *walFile) Write(p []byte) (int, error) {
	w.mu.Lock()
	for w.err == nil && w.pendingBytes >= walMaxPending {
		w.cond.Wait()
	}
	if w.err == nil && w.closed {
		w.err = errors.New("engine: write to a closed WAL")
	}
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return 0, err
	}
	if w.pendingBytes == 0 && !w.writing && w.inlineLocked() {
		return w.writeInlineLocked(p)
	}
	w.appendLocked(p)
	wake := w.idle
	w.idle = false
	w.mu.Unlock()
	if wake {
		start := time.Now()
		select {
		case w.wake <- struct{}{}:
		default:
		}
		if w.hint == walLone {
			w.slowWake = time.Since(start) >= walSlowWake
			w.inlined = 0
		}
	}
	return len(p), nil
}

// inlineLocked reports whether Write writes to the file itself (see
// walHint); nothing is pending or being written.
func (w *walFile) inlineLocked() bool {
	switch w.hint {
	case walSyncing:
		return true
	case walLone:
		if p := walInlineAfterHook.Load(); p != nil {
			return time.Since(w.lastWrite) >= *p
		}
		if !w.slowWake || w.inlined >= walWakeProbe || time.Since(w.lastWrite) < walInlineAfter {
			return false
		}
		w.inlined++
		return true
	}
	return false
}

// writeInlineLocked writes p to the file from the caller's goroutine and
// unlocks w.mu. Nothing is pending or being written, so p follows every
// byte written before it; writing keeps a drain (Sync, or the background
// goroutine woken for an earlier Write) from starting meanwhile.
func (w *walFile) writeInlineLocked(p []byte) (int, error) {
	w.writing = true
	w.mu.Unlock()
	_, err := w.f.Write(p)
	end := time.Now()
	w.mu.Lock()
	w.writing = false
	w.lastWrite = end
	if err != nil && w.err == nil {
		w.err = errors.Wrap(err, "engine: writing the WAL")
	}
	err = w.err
	w.cond.Broadcast()
	w.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// appendLocked copies p to the end of the pending chunks, taking further
// chunks from the free list or, when it is empty, allocating them.
func (w *walFile) appendLocked(p []byte) {
	w.pendingBytes += len(p)
	for len(p) > 0 {
		n := len(w.pending)
		if n == 0 || len(w.pending[n-1]) == cap(w.pending[n-1]) {
			w.pending = append(w.pending, w.newChunkLocked())
			n++
		}
		c := w.pending[n-1]
		k := copy(c[len(c):cap(c)], p)
		w.pending[n-1] = c[:len(c)+k]
		p = p[k:]
	}
}

// newChunkLocked returns an empty chunk.
func (w *walFile) newChunkLocked() []byte {
	if n := len(w.free); n > 0 {
		c := w.free[n-1]
		w.free[n-1] = nil
		w.free = w.free[:n-1]
		return c
	}
	if c := getChunk(); c != nil {
		return c
	}
	return make([]byte, 0, walChunkSize)
}

// writeLoop writes buffered bytes to the file until Close.
func (w *walFile) writeLoop() {
	defer close(w.finished)
	for range w.wake {
		w.mu.Lock()
		w.drainLocked()
		// Nothing is pending (or an error stops every later write): the
		// next Write must wake the loop again.
		w.idle = true
		w.mu.Unlock()
	}
}

// drainLocked writes pending bytes to the file, releasing w.mu during each
// write, until none is left (or an error). Only one goroutine writes at a
// time.
func (w *walFile) drainLocked() {
	for w.writing {
		w.cond.Wait()
	}
	for w.pendingBytes > 0 && w.err == nil {
		bufs := w.pending
		w.pending, w.spare = w.spare[:0], nil
		w.pendingBytes = 0
		w.writing = true
		w.mu.Unlock()
		var err error
		for _, b := range bufs {
			if _, err = w.f.Write(b); err != nil {
				break
			}
		}
		end := time.Now()
		w.mu.Lock()
		w.writing = false
		w.lastWrite = end
		// Every chunk is newChunkLocked's, of capacity walChunkSize.
		for i, b := range bufs {
			if len(w.free) < walMaxFreeChunks {
				w.free = append(w.free, b[:0])
			}
			bufs[i] = nil
		}
		w.spare = bufs[:0]
		if err != nil && w.err == nil {
			w.err = errors.Wrap(err, "engine: writing the WAL")
		}
		w.cond.Broadcast()
	}
}

// Sync writes every buffered byte and fsyncs the file.
func (w *walFile) Sync() error {
	w.mu.Lock()
	w.drainLocked()
	err := w.err
	w.mu.Unlock()
	if err != nil {
		return err
	}
	if err := w.f.Sync(); err != nil {
		w.mu.Lock()
		if w.err == nil {
			w.err = errors.Wrap(err, "engine: syncing the WAL")
		}
		err = w.err
		w.mu.Unlock()
		return err
	}
	return nil
}

// Close writes what is buffered, stops the background goroutine and closes
// the file. It does not sync.
func (w *walFile) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.drainLocked()
	err := w.err
	// The next WAL takes these.
	putChunks(w.free)
	clear(w.free)
	w.free = w.free[:0]
	w.mu.Unlock()
	close(w.wake)
	<-w.finished
	return errors.CombineErrors(err, w.f.Close())
}
