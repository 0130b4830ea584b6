package engine

import (
	"bytes"
	"sync"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/errclass"
	"github.com/shaledb/shale/internal/readpath"
)

// iterOptions bound an iterator to the user keys [LowerBound, UpperBound);
// a nil bound is open. A nil *iterOptions means no bounds.
type iterOptions struct {
	LowerBound, UpperBound []byte
	// Prefix is driver.IterOptions.Prefix: the façade has already narrowed
	// the bounds to it; the engine uses it only to consult prefix filters.
	Prefix []byte
}

// iterator iterates over the database's keys in order, as of the moment it
// was created (or of its snapshot). It is not safe for concurrent use. Key
// and Value are valid until the next positioning call; copy them to keep
// them. Close it when done: it holds the tables it reads open.
//
// Key and Value are always Go heap memory or memory the iterator keeps
// alive until Close: bytes that live outside the Go heap (a memtable's
// mapped arena, a block in the block cache's off-heap region, a block of a
// memory-mapped table) are copied into the iterator's own buffers first. A caller that keeps a slice past the point
// the contract allows, or drops the iterator without Close while keeping
// one, therefore sees stale bytes at worst, never a fault or another
// database's memory.
type iterator struct {
	// it is embedded, so that an iterator is one allocation.
	it     readpath.Iterator
	rs     *readState
	closed bool
	// copyAll says every key and value may point into a mapped table
	// (mmap_reads), so all are copied; otherwise only those in a mapped
	// memtable arena or the block cache's off-heap region are.
	copyAll        bool
	keyBuf, valBuf []byte
	// deadline is the request's deadline that the caller's context does not
	// carry (see ioctx.ReadRequest), zero when none; expired is the error
	// once a move found it passed.
	deadline time.Time
	expired  error
}

// newIteratorImpl creates an iterator at seq (readLatest: the latest visible write)
// with the caller's tag.
func (d *database) newIteratorImpl(call *readCall, opts *iterOptions, seq base.SeqNum) (*iterator, error) {
	rs, err := d.readStateFor(call)
	if err != nil {
		return nil, err
	}
	seq = d.readSeq(seq)
	if err := d.checkPrefixOrder(opts); err != nil {
		rs.unref()
		return nil, err
	}
	var io readpath.IterOptions
	if opts != nil {
		io = readpath.IterOptions{LowerBound: opts.LowerBound, UpperBound: opts.UpperBound}
		if fp := d.opts.PrefixExtractor.filterPrefix(opts.Prefix); fp != nil && boundsWithin(fp, opts.LowerBound, opts.UpperBound) {
			io.FilterPrefix, io.PrefixExtractorName = fp, prefixExtractorName(d.opts.PrefixExtractor)
		}
	}
	i := &iterator{
		rs:       rs,
		copyAll:  d.opts.MmapReads,
		deadline: call.env.Deadline,
	}
	i.it.Init(call.ctx, &rs.view, call.env, seq, io)
	return i, nil
}

// live reports whether the iterator may move: it is open and its request's
// deadline, if any, has not passed. The deadline is carried by value (no
// context is derived for it), so each move reads the clock here, as the
// table reads below check it before each file read.
func (i *iterator) live() bool {
	switch {
	case i.closed || i.expired != nil:
		return false
	case !i.deadline.IsZero() && !time.Now().Before(i.deadline):
		i.expired = errclass.Timeout("Deadline exceeded")
		return false
	}
	return true
}

// First moves to the first key and reports whether there is one.
func (i *iterator) First() bool { return i.live() && i.it.First() }

// Last moves to the last key.
func (i *iterator) Last() bool { return i.live() && i.it.Last() }

// SeekGE moves to the first key >= key.
func (i *iterator) SeekGE(key []byte) bool { return i.live() && i.it.SeekGE(key) }

// SeekLT moves to the last key < key.
func (i *iterator) SeekLT(key []byte) bool { return i.live() && i.it.SeekLT(key) }

// Next moves to the next key.
func (i *iterator) Next() bool { return i.live() && i.it.Next() }

// Prev moves to the previous key.
func (i *iterator) Prev() bool { return i.live() && i.it.Prev() }

// Valid reports whether the iterator is at a key.
func (i *iterator) Valid() bool { return !i.closed && i.expired == nil && i.it.Valid() }

// Key returns the current key.
func (i *iterator) Key() []byte { return i.heapBytes(i.it.Key(), &i.keyBuf) }

// Value returns the current value.
func (i *iterator) Value() []byte { return i.heapBytes(i.it.Value(), &i.valBuf) }

// heapBytes returns b, or a copy of it in *buf when b lives outside the Go
// heap (see Iterator).
func (i *iterator) heapBytes(b []byte, buf *[]byte) []byte {
	if cap(b) == 0 || !(i.copyAll || i.rs.offHeap(b)) {
		return b
	}
	if len(b) == 0 {
		return b[:0:0] // nothing to read, and an append must not write there
	}
	*buf = append((*buf)[:0], b...)
	return *buf
}

// Error returns the error that stopped the iterator, if any.
func (i *iterator) Error() error {
	switch {
	case i.closed:
		return base.Mark(errors.New("engine: iterator is closed"), ErrClosed)
	case i.expired != nil:
		return i.expired
	}
	return i.it.Error()
}

// Close releases the iterator and returns its error, if any. Closing twice
// returns an error marked ErrClosed.
func (i *iterator) Close() error {
	if i.closed {
		return base.Mark(errors.New("engine: iterator already closed"), ErrClosed)
	}
	i.closed = true
	err := i.it.Close()
	if i.expired != nil {
		err = i.expired
	}
	i.rs.unref()
	return err
}

// boundsWithin reports whether every key in [lower, upper) starts with
// prefix: lower starts with it and upper is at most its successor (any
// upper when it has none). The façade narrows the bounds to
// IterOptions.Prefix, so this holds for its iterators; checking it keeps a
// filter from skipping tables for a caller that did not.
func boundsWithin(prefix, lower, upper []byte) bool {
	if lower == nil || !bytes.HasPrefix(lower, prefix) {
		return false
	}
	n := len(prefix)
	for n > 0 && prefix[n-1] == 0xff {
		n--
	}
	if n == 0 {
		return true // no successor: every key >= lower starts with prefix
	}
	if upper == nil {
		return false
	}
	// upper <= succ, succ being prefix[:n] with its last byte one higher,
	// compared without building succ.
	for j := range n {
		if j == len(upper) {
			return true // a proper prefix of succ
		}
		s := prefix[j]
		if j == n-1 {
			s++
		}
		if upper[j] != s {
			return upper[j] < s
		}
	}
	return len(upper) == n
}

// prefixExtractorNames holds PrefixExtractor.String of the fixed and capped
// extractors, so that an iterator with a prefix does not format it.
var prefixExtractorNames = sync.OnceValue(func() *[2][256]string {
	t := new([2][256]string)
	for n := 1; n < 256; n++ {
		t[0][n] = PrefixExtractor{Kind: PrefixFixed, Len: n}.String()
		t[1][n] = PrefixExtractor{Kind: PrefixCapped, Len: n}.String()
	}
	return t
})

// prefixExtractorName is p.String(), without allocating for the kinds
// ParsePrefixExtractor accepts.
func prefixExtractorName(p PrefixExtractor) string {
	if p.Len > 0 && p.Len < 256 {
		switch p.Kind {
		case PrefixFixed:
			return prefixExtractorNames()[0][p.Len]
		case PrefixCapped:
			return prefixExtractorNames()[1][p.Len]
		}
	}
	return p.String()
}
