package wal

import (
	"encoding/binary"
	"io"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/invariants"
)

// flushThreshold is how many framed bytes the Writer buffers before handing
// them to the underlying writer. One block keeps writes large without holding
// a big record in memory twice.
const flushThreshold = BlockSize

// zeros is the block padding source.
var zeros [headerSize]byte

// Writer frames records into a log. It buffers up to about a block of framed
// bytes; Flush hands them to the underlying io.Writer and Sync also makes
// them durable.
//
// Errors are sticky: once a write or sync of the underlying file fails, every
// later call returns that error. The log's end is then unknown, and after a
// failed fsync the kernel may already have dropped the dirty pages, so a
// retried Sync could report success for data that is gone.
//
// A Writer is not safe for concurrent use.
type Writer struct {
	w    io.Writer
	sync func() error // w's Sync method, or nil

	buf     []byte // framed bytes not yet written to w; capacity is fixed
	size    int64  // bytes framed so far (written and buffered)
	written int64  // bytes handed to w
	err     error
	closed  bool
}

// NewWriter returns a Writer that appends a log to w, which must be empty or
// end where a previous log of this format ended on a block boundary: the
// Writer assumes it starts at offset 0 of a block. If w has a method
// Sync() error (as *os.File and vfs.File do), Writer.Sync calls it.
func NewWriter(w io.Writer) *Writer {
	lw := &Writer{
		w: w,
		// Before a chunk is added the buffer holds under flushThreshold
		// bytes; a chunk adds at most padding and one block.
		buf: make([]byte, 0, flushThreshold+headerSize+BlockSize),
	}
	if s, ok := w.(interface{ Sync() error }); ok {
		lw.sync = s.Sync
	}
	return lw
}

// WriteRecord appends p as one record and returns the record's offset (the
// offset of its first chunk, after any block padding). The record may stay
// buffered until Flush, Sync or Close. p is read only during the call.
func (w *Writer) WriteRecord(p []byte) (int64, error) {
	if err := w.check(); err != nil {
		return 0, err
	}
	start := int64(-1)
	for first := true; ; first = false {
		blockOff := int(w.size % BlockSize)
		if left := BlockSize - blockOff; left < headerSize {
			w.buf = append(w.buf, zeros[:left]...)
			w.size += int64(left)
			blockOff = 0
		}
		if first {
			start = w.size
		}
		n := min(len(p), BlockSize-blockOff-headerSize)
		last := n == len(p)
		var typ byte
		switch {
		case first && last:
			typ = fullType
		case first:
			typ = firstType
		case last:
			typ = lastType
		default:
			typ = middleType
		}
		w.appendChunk(typ, p[:n])
		p = p[n:]
		if len(w.buf) >= flushThreshold {
			if err := w.flush(); err != nil {
				return 0, err
			}
		}
		if last {
			return start, nil
		}
	}
}

// appendChunk frames one chunk into buf.
func (w *Writer) appendChunk(typ byte, payload []byte) {
	if invariants.Enabled && len(w.buf)+headerSize+len(payload) > cap(w.buf) {
		// NewWriter's capacity rules this out; appending would still be
		// correct, but WriteRecord would allocate.
		_ = base.AssertionFailedf("wal: chunk of %d bytes overflows the %d-byte buffer holding %d",
			headerSize+len(payload), cap(w.buf), len(w.buf))
	}
	i := len(w.buf)
	w.buf = append(w.buf, zeros[:headerSize]...)
	w.buf = append(w.buf, payload...)
	binary.LittleEndian.PutUint32(w.buf[i:], typeCRC[typ].Update(payload).Value())
	binary.LittleEndian.PutUint16(w.buf[i+4:], uint16(len(payload)))
	w.buf[i+6] = typ
	w.size += int64(headerSize + len(payload))
}

// Flush writes the buffered bytes to the underlying writer. It does not make
// them durable; see Sync.
func (w *Writer) Flush() error {
	if err := w.check(); err != nil {
		return err
	}
	return w.flush()
}

// Sync flushes, then calls the underlying writer's Sync method if it has
// one. Without one (a bytes.Buffer, say) there is nothing to make durable and
// Sync is Flush.
func (w *Writer) Sync() error {
	if err := w.check(); err != nil {
		return err
	}
	if err := w.flush(); err != nil {
		return err
	}
	if w.sync == nil {
		return nil
	}
	if err := w.sync(); err != nil {
		w.err = errors.Wrapf(err, "wal: sync after %d bytes", w.written)
		return w.err
	}
	return nil
}

// Size returns the number of bytes framed so far, buffered ones included:
// the offset at which the next chunk or padding would go.
func (w *Writer) Size() int64 { return w.size }

// Close flushes the buffered bytes. It does not sync and does not close the
// underlying writer. Calls after Close return an error marked
// base.ErrClosed.
func (w *Writer) Close() error {
	if w.closed {
		return base.Mark(errors.New("wal: writer already closed"), base.ErrClosed)
	}
	err := w.Flush()
	w.closed = true
	return err
}

func (w *Writer) check() error {
	if w.closed {
		return base.Mark(errors.New("wal: writer closed"), base.ErrClosed)
	}
	return w.err
}

func (w *Writer) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	n, err := w.w.Write(w.buf)
	if err == nil && n < len(w.buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.err = errors.Wrapf(err, "wal: writing %d bytes at offset %d", len(w.buf), w.written)
		return w.err
	}
	w.written += int64(n)
	w.buf = w.buf[:0]
	return nil
}
