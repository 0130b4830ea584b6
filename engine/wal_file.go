package engine

import (
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/vfs"
)

// walMaxPending bounds the WAL bytes waiting for the background writer: a
// writer that gets this far ahead of the disk waits, so memory stays bounded.
const walMaxPending = 4 << 20

// walFile sits between the WAL's record writer and its file and takes the
// write system call off the commit path: Write appends to a buffer and wakes
// a background goroutine that writes the buffer to the file; Sync writes
// whatever is buffered and fsyncs. A write that does not ask for sync is
// therefore acknowledged once its record is in this buffer and reaches the
// operating system a few microseconds later (Pebble's WAL does the same);
// a sync write returns only after fsync. A process crash can lose the
// unsynced writes still buffered — never a synced one.
//
// Write and Sync are called by the commit leader (one at a time); the
// background goroutine runs concurrently with them. Errors are sticky.
type walFile struct {
	f vfs.File

	mu      sync.Mutex
	cond    sync.Cond // signalled when a write to the file finishes
	pending []byte    // bytes not yet handed to the file
	spare   []byte    // the buffer being written, reused as pending
	writing bool      // a write to the file is in progress
	// idle says the background goroutine found nothing left to write and
	// waits for wake: only then does Write wake it. A write that finds it
	// at work leaves its bytes for the drain in progress, which writes
	// until nothing is pending, and pays no channel operation; the
	// goroutine wakes once per batch of bytes, not once per record.
	idle     bool
	err      error
	closed   bool
	wake     chan struct{}
	finished chan struct{}
}

func newWALFile(f vfs.File) *walFile {
	w := &walFile{f: f, idle: true, wake: make(chan struct{}, 1), finished: make(chan struct{})}
	w.cond.L = &w.mu
	go w.writeLoop()
	return w
}

// Write buffers p. It blocks only when walMaxPending bytes are already
// waiting.
func (w *walFile) Write(p []byte) (int, error) {
	w.mu.Lock()
	for w.err == nil && len(w.pending) >= walMaxPending {
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
	w.pending = append(w.pending, p...)
	wake := w.idle
	w.idle = false
	w.mu.Unlock()
	if wake {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	return len(p), nil
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
	for len(w.pending) > 0 && w.err == nil {
		buf := w.pending
		w.pending, w.spare = w.spare[:0], nil
		w.writing = true
		w.mu.Unlock()
		_, err := w.f.Write(buf)
		w.mu.Lock()
		w.writing = false
		w.spare = buf[:0]
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
	w.mu.Unlock()
	close(w.wake)
	<-w.finished
	return errors.CombineErrors(err, w.f.Close())
}
