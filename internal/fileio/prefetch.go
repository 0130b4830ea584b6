package fileio

import (
	"context"

	"github.com/shaledb/shale/ioctx"
)

// Readahead defaults for automatic mode, RocksDB's (8 KiB initial,
// max_auto_readahead_size 256 KiB).
const (
	DefaultInitialReadahead = 8 << 10
	DefaultMaxReadahead     = 256 << 10
)

// wastedReadahead: while the caller reads fewer than 1/wastedReadahead of
// the blocks it visits through the buffer (finding the rest in a block
// cache), refills read only the initial readahead (see PrefetchBuffer).
const wastedReadahead = 4

// PrefetchBuffer serves a mostly sequential stream of reads of one file from
// a readahead buffer, as RocksDB's FilePrefetchBuffer does for iterators and
// verification.
//
// In automatic mode (fixed size 0) the first read of a run is exact; from the
// second consecutive sequential read on, each refill reads ahead, starting at
// the initial size and doubling up to the maximum. A read that is not
// sequential ends the run. With a fixed size every refill reads that much.
// With async set, each refill also submits a ReadAsync of the following
// range, so the next refill usually finds its bytes already read.
//
// Readahead pays when the caller reads what it brings in. An iterator that
// finds most of its blocks in the block cache (a scan of data a little
// larger than the cache) visits them with Sequential but does not read them,
// and a 256 KiB refill made for the one block it misses copies some sixty
// blocks it will never ask for: on tmpfs (the 2-core test machine) a 4 KiB
// pread cost 2.4-2.6 µs of CPU and a 256 KiB one 37-46 µs, so with one
// block in six missing, 8 KiB refills cost about 2.4 µs per block read and
// 256 KiB ones about 4. So the buffer keeps the share of
// recently visited bytes that were read (see visited), and while it is
// below 1/wastedReadahead, sequential refills read only the initial size;
// above it, where readahead is worth its copying, it grows as above.
//
// Every refill is a Reader.Read (or ReadAsync) with the caller's IO options,
// so readahead is charged, timed and tagged like any other read. A
// PrefetchBuffer is not safe for concurrent use. The slice Read returns is
// valid until the next Read or Close.
type PrefetchBuffer struct {
	r            *Reader
	fixed        int
	initial, max int
	readahead    int
	lastEnd      int64

	// visitOff and visitEnd bound the range Sequential last recorded (-1
	// before the first).
	visitOff, visitEnd int64
	// visited sums the lengths of the forward visits Sequential recorded,
	// and read those of the Reads; both are halved whenever visited passes
	// twice the maximum readahead, so that read/visited is the share of a
	// scan's recent blocks that the caller read rather than found in a
	// cache.
	visited, read int64

	cur prefetchChunk

	// limit, when positive, is where the next refill ends at the latest
	// (see LimitNextRefill).
	limit int64
	// end, when positive, is where every refill ends at the latest, and
	// refills keep the bytes they already hold (see Bound).
	end int64

	async   bool
	next    prefetchChunk
	nextReq ReadRequest
	pending chan struct{} // non-nil while an async read is in flight
}

type prefetchChunk struct {
	off  int64
	data []byte
}

func (c *prefetchChunk) covers(off int64, n int) bool {
	return off >= c.off && off+int64(n) <= c.off+int64(len(c.data))
}

// NewPrefetchBuffer returns a buffer over r. fixed is the readahead size
// (ReadOptions.ReadaheadSize); 0 selects automatic readahead between initial
// and max (0 for either means the default).
func NewPrefetchBuffer(r *Reader, fixed, initial, max int, async bool) *PrefetchBuffer {
	p := &PrefetchBuffer{}
	p.init(r, fixed, initial, max, async)
	return p
}

func (p *PrefetchBuffer) init(r *Reader, fixed, initial, max int, async bool) {
	if initial <= 0 {
		initial = DefaultInitialReadahead
	}
	if max <= 0 {
		max = DefaultMaxReadahead
	}
	initial = min(initial, max)
	*p = PrefetchBuffer{
		r: r, fixed: fixed, initial: initial, max: max, readahead: initial, lastEnd: -1,
		visitOff: -1, visitEnd: -1, async: async,
	}
}

// Reset makes p a new buffer over r, as NewPrefetchBuffer(r, fixed,
// initial, max, async) returns, that reuses p's buffers up to keep bytes
// each (larger ones are dropped): an iterator that moves to another table,
// or is recycled, does not allocate its readahead buffers again. It waits
// for an async read still in flight first, as Close does. The caller must
// own whatever p's buffers held: slices an earlier Read returned must no
// longer be in use by anyone, since the next Read overwrites them.
func (p *PrefetchBuffer) Reset(r *Reader, fixed, initial, max int, async bool, keep int) {
	p.Close()
	cur, next := p.cur.data[:0], p.next.data[:0]
	if cap(cur) > keep {
		cur = nil
	}
	if cap(next) > keep {
		next = nil
	}
	p.init(r, fixed, initial, max, async)
	p.cur.data, p.next.data = cur, next
}

// Sequential records that the caller moves to the n bytes at off (a block it
// is about to read through the buffer, or has found elsewhere, in a block
// cache) and reports whether they adjoin the range it recorded last: right
// after it, as a forward scan moves, or right before it, as a backward one
// does. It is the readahead's own test (a read that starts where the last
// one ended is sequential) applied to every block the caller visits rather
// than to the reads alone, so that blocks found in a cache do not break a
// scan's run. Iterators use it to give the blocks of a scan a scan priority
// in the block cache.
//
// A forward visit also continues the readahead's run, as RocksDB's
// BlockPrefetcher tracks every block an iterator visits: a Read at off after
// visits served from a cache reads ahead as if those blocks had been read.
// Otherwise a scan that finds some of its blocks cached would restart the
// readahead at every cached block and read the rest a block or two at a
// time; the price is that a readahead chunk may cover blocks the caller
// will find cached.
func (p *PrefetchBuffer) Sequential(off int64, n int) bool {
	end := off + int64(n)
	forward := off == p.visitEnd
	if forward {
		p.lastEnd = off
		if p.visited += int64(n); p.visited > 2*int64(p.max) {
			p.visited, p.read = p.visited/2, p.read/2
		}
	}
	seq := forward || end == p.visitOff
	p.visitOff, p.visitEnd = off, end
	return seq
}

// MostlyCached reports whether the caller read fewer than 1/wastedReadahead
// of the bytes it recently visited forward (see Sequential) through the
// buffer, having found the rest elsewhere: in a block cache. Then refills
// read only the initial readahead, and an iterator's look-ahead, which pays
// only for blocks it finds cached, is worth its cache lookups. Before any
// forward visit it reports false.
func (p *PrefetchBuffer) MostlyCached() bool {
	return p.read*wastedReadahead < p.visited
}

// LimitNextRefill makes the next Read that refills the buffer in automatic
// mode read no further than end (but at least the bytes it is asked for):
// an iterator that knows the block after the one it reads is cached says
// so, and the refill does not copy that block, which it would not use.
// Any Read clears the limit, and it changes nothing for a fixed readahead
// size (the caller's ReadaheadSize).
func (p *PrefetchBuffer) LimitNextRefill(end int64) {
	p.limit = end
}

// Bound makes refills read no further than end (but at least the bytes
// they are asked for), in every mode, and keep the bytes of the current
// chunk that the new one starts with instead of reading them again: a
// caller that reads a region once, block after block (verification), then
// reads each of its bytes once, and none beyond it, rather than reading
// again the block that straddles each refill and reading ahead into what
// follows the region.
func (p *PrefetchBuffer) Bound(end int64) {
	p.end = end
}

// Read returns the n bytes at off, from the buffer when they are there and
// from the file otherwise.
func (p *PrefetchBuffer) Read(ctx context.Context, opts ioctx.IOOptions, off int64, n int) ([]byte, error) {
	limit := p.limit
	p.limit = 0
	if p.r.Mapped() {
		return p.r.Read(ctx, opts, off, n, nil)
	}
	sequential := off == p.lastEnd
	p.lastEnd = off + int64(n)
	// Reads of blocks not visited forward (seeks, backward moves) count
	// no more than the visits, so that a scan after many of them is not
	// taken for one that reads its blocks.
	p.read = min(p.read+int64(n), p.visited)
	if p.cur.covers(off, n) {
		return p.slice(off, n), nil
	}
	if p.pending != nil {
		<-p.pending
		p.pending = nil
		if p.nextReq.Err == nil {
			// Result is Scratch cut to its length and capacity: keep
			// Scratch, whose capacity a later refill reuses.
			chunk := prefetchChunk{off: p.nextReq.Offset, data: p.nextReq.Scratch[:len(p.nextReq.Result)]}
			p.cur, p.next = chunk, p.cur
			if p.cur.covers(off, n) {
				p.prefetchNext(ctx, opts)
				return p.slice(off, n), nil
			}
		}
		// A failed or useless async read is not an error of this read: read
		// synchronously below, which reports any persistent problem.
	}
	size := n
	switch {
	case p.fixed > 0:
		size = max(n, p.fixed)
	case sequential:
		if p.MostlyCached() {
			// The caller finds most of the scan's blocks elsewhere (in a
			// block cache): read little ahead, as a non-sequential read.
			p.readahead = p.initial
		}
		size = max(n, p.readahead)
		p.readahead = min(2*p.readahead, p.max)
	default:
		p.readahead = p.initial
	}
	if p.fixed == 0 && limit > off && off+int64(size) > limit {
		size = max(n, int(limit-off))
	}
	if p.end > 0 && off < p.end && off+int64(size) > p.end {
		size = max(n, int(p.end-off))
	}
	if rest := p.r.Size() - off; int64(size) > rest {
		size = max(n, int(rest))
	}
	// keep is how many of the bytes at off the current chunk holds: a
	// bounded buffer moves them to the front instead of reading them again.
	keep, from := 0, p.cur.data
	if p.end > 0 && off > p.cur.off && off < p.cur.off+int64(len(p.cur.data)) {
		from = p.cur.data[off-p.cur.off:]
		keep = len(from)
	}
	if cap(p.cur.data) < size {
		p.cur.data = make([]byte, size)
	}
	buf := p.cur.data[:size]
	copy(buf, from[:keep])
	if _, err := p.r.Read(ctx, opts, off+int64(keep), size-keep, buf[keep:]); err != nil {
		p.cur = prefetchChunk{data: p.cur.data[:0]}
		return nil, err
	}
	// Read returns buf cut to its length and capacity (the file is not
	// mapped): keep buf itself, or the next refill larger than this one,
	// after a short exact read say, would allocate again.
	p.cur = prefetchChunk{off: off, data: buf}
	if size > n {
		p.prefetchNext(ctx, opts)
	}
	return p.slice(off, n), nil
}

func (p *PrefetchBuffer) slice(off int64, n int) []byte {
	start := off - p.cur.off
	return p.cur.data[start : start+int64(n) : start+int64(n)]
}

// prefetchNext submits an async read of the range after the current chunk.
func (p *PrefetchBuffer) prefetchNext(ctx context.Context, opts ioctx.IOOptions) {
	if !p.async {
		return
	}
	off := p.cur.off + int64(len(p.cur.data))
	size := p.fixed
	if size == 0 {
		// The async path is the sequential path: keep growing.
		size = p.readahead
		p.readahead = min(2*p.readahead, p.max)
	}
	if rest := p.r.Size() - off; int64(size) > rest {
		size = int(rest)
	}
	if size <= 0 {
		return
	}
	if cap(p.next.data) < size {
		p.next.data = make([]byte, size)
	}
	p.nextReq = ReadRequest{Offset: off, Len: size, Scratch: p.next.data[:size]}
	done := make(chan struct{})
	if err := p.r.ReadAsync(ctx, opts, &p.nextReq, func(*ReadRequest) { close(done) }); err != nil {
		return
	}
	p.pending = done
}

// Close waits for an async read still in flight, so the buffers are no
// longer written to. It does not close the Reader.
func (p *PrefetchBuffer) Close() {
	if p.pending != nil {
		<-p.pending
		p.pending = nil
	}
}

// NoteRead records a read of the n bytes at off that the caller made
// without the buffer (a block read straight into a block cache), as Read
// records its own: for the share of visited bytes read (MostlyCached) and
// for whether the next Read is sequential. It reads nothing.
func (p *PrefetchBuffer) NoteRead(off int64, n int) {
	p.lastEnd = off + int64(n)
	p.read = min(p.read+int64(n), p.visited)
}

// Holds reports whether a Read of the n bytes at off might be served
// without reading the file: the buffer holds them, or an asynchronous read
// that may is in flight. A caller that reads blocks itself when they are
// not here (NoteRead) asks first, so that it does not read again what
// readahead brought in.
func (p *PrefetchBuffer) Holds(off int64, n int) bool {
	return p.pending != nil || p.cur.covers(off, n)
}
