package engine

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"

	"github.com/shaledb/shale/internal/base"

	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/memtable"
	"github.com/shaledb/shale/internal/readpath"
	"github.com/shaledb/shale/statistics"
)

// memTable is a memtable with the WAL that holds its writes.
//
// It is reference-counted so its arena can be reused once nothing can read
// it: the database holds one reference while the memtable is mutable or
// waiting to be flushed, and every readState that lists it holds one. Values
// and iterators read from a memtable keep their readState, so they keep the
// memtable too.
type memTable struct {
	*memtable.MemTable
	// logNum is the WAL file whose records this memtable holds; the WAL can
	// be deleted once the memtable is flushed.
	logNum manifest.FileNum
	refs   atomic.Int32
	// free takes the memtable back when the last reference is dropped.
	free *arenaPool
	// size is what the memtable is filled to before the engine rotates it
	// (ApproximateSize): WriteBufferSize, or less while memtables grow
	// (see nextMemTableSizeLocked).
	size int
	// unpooled marks an arena not of the write buffer's standard size (one
	// made for a big batch, or a small one while memtables grow): the pool
	// frees it rather than keep it for the next memtable.
	unpooled bool
}

func (m *memTable) ref() { m.refs.Add(1) }

func (m *memTable) unref() {
	switch n := m.refs.Add(-1); {
	case n == 0:
		m.free.put(m)
	case n < 0:
		panic(base.AssertionFailedf("engine: memtable released more often than referenced"))
	}
}

// readState is an immutable picture of the database for readers: the
// memtables and the current version. A reader references one for the length
// of its call (or its iterator's life), so flushes and compactions never wait
// for readers and never free what a reader uses (the pebble readState
// pattern).
type readState struct {
	// refs is alone on its cache lines: every read adds to it and takes
	// from it, and sharing a line with view, which every read loads, made
	// each of those writes cost every other core its copy of view as well.
	_    [cacheLinePad]byte
	refs atomic.Int32
	_    [cacheLinePad - 4]byte
	view readpath.View
	// current is the version view.Version points to; kept for the unref.
	current *manifest.Version
	// mems are the memtables of view.Mems, referenced by this state.
	mems []*memTable
	// tables is the table cache, used by this state (tableCache.use).
	tables *tableCache
}

func newReadState(mems []*memTable, v *manifest.Version, tables *tableCache, stats *statistics.Statistics) *readState {
	tables.use()
	rs := &readState{current: v, mems: mems, tables: tables}
	views := make([]*memtable.MemTable, len(mems))
	for i, m := range mems {
		m.ref()
		views[i] = m.MemTable
	}
	rs.view = readpath.View{Mems: views, Version: v, Tables: tables, Stats: stats, Cmp: v.Cmp}
	rs.refs.Store(1)
	return rs
}

// cacheLinePad is two cache lines: the adjacent-line prefetcher of x86
// CPUs moves lines in pairs.
const cacheLinePad = 128

// tryRef takes a reference unless the last one is gone: a reader that
// loaded rs just before it was replaced and released must not revive it.
// A compare-and-swap, not an add taken back on failure: two readers racing
// the last unref could otherwise see each other's passing increment as a
// live reference.
func (rs *readState) tryRef() bool {
	for {
		n := rs.refs.Load()
		if n <= 0 {
			return false
		}
		if rs.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// offHeap reports whether b points into memory outside the Go heap that the
// engine may unmap while a user still holds a slice of it, and so must be
// copied before it leaves the engine: the block cache's region (unmapped
// once the cache is unreachable, which a slice does not prevent) or the
// mapped arena of one of the state's memtables.
func (rs *readState) offHeap(b []byte) bool {
	if rs.tables.cache.OffHeap(b) {
		return true
	}
	for _, m := range rs.mems {
		if m.OffHeap(b) {
			return true
		}
	}
	return false
}

// unref drops a reference; the last one releases the version, which lets the
// engine delete tables only this state still used, and the memtables, whose
// arenas can then be reused.
func (rs *readState) unref() {
	if rs.refs.Add(-1) == 0 {
		rs.current.Unref()
		for _, m := range rs.mems {
			m.unref()
		}
		rs.tables.unuse()
	}
}

// arenaPool keeps the arenas of memtables nobody can read any more, so a new
// memtable reuses one instead of mapping another. A kept arena's memory is
// released (memtable.Release) as it comes in, so the pool holds address
// space, not memory: an idle database, or one between flushes, has only its
// memtables' written bytes resident. The arenas it does not keep are freed
// (unmapped) at once.
type arenaPool struct {
	mu     sync.Mutex
	free   []*memtable.MemTable
	closed bool // the database is closed: nothing more is kept
}

// arenaPoolSize bounds the arenas kept: one being filled, one flushing, one
// spare cover the steady state.
const arenaPoolSize = 2

func (p *arenaPool) put(m *memTable) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed && !m.unpooled && len(p.free) < arenaPoolSize {
		m.MemTable.Release()
		p.free = append(p.free, m.MemTable)
		return
	}
	m.MemTable.Free()
}

// close frees the kept arenas; memtables released later (by iterators or
// pinned values that outlive the database) are freed as they come.
func (p *arenaPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, m := range p.free {
		m.Free()
	}
	p.free = nil
}

// get returns an empty memtable with at least size bytes of arena, reusing
// a free one when it is big enough.
func (p *arenaPool) get(size int) *memtable.MemTable {
	p.mu.Lock()
	for i, m := range p.free {
		if m.Capacity() >= size {
			p.free = append(p.free[:i], p.free[i+1:]...)
			p.mu.Unlock()
			m.Reset()
			return m
		}
	}
	p.mu.Unlock()
	return memtable.New(size)
}

// loadReadState returns the current read state, referenced, or an error
// marked ErrClosed once Close has released it. It takes no lock: a Get
// pays one load and one compare-and-swap instead of a read lock, an
// increment and an unlock (about a tenth of a Get that misses every
// filter). A state is replaced before its installer's reference is
// dropped, so tryRef fails only on a state that is no longer current, and
// the next load sees its successor.
func (d *database) loadReadState() (*readState, error) {
	for {
		rs := d.readState.Load()
		if rs == nil {
			return nil, base.Mark(errors.New("engine: database is closed"), ErrClosed)
		}
		if rs.tryRef() {
			return rs, nil
		}
	}
}

// readStateFor returns the read state call reads, referenced: the one it
// names (a secondary's snapshot's), else the current one.
func (d *database) readStateFor(call *readCall) (*readState, error) {
	if call.rs != nil && call.rs.tryRef() {
		return call.rs, nil
	}
	return d.loadReadState()
}

// updateReadStateLocked installs a read state built from the current
// memtables and version. d.mu must be held.
func (d *database) updateReadStateLocked() {
	v := d.vs.Current()
	imm := d.mu.imm
	if f := d.mu.flushApplying; f != nil && len(imm) > 0 && slices.ContainsFunc(v.Levels[0], func(g *manifest.FileMetadata) bool { return g.FileNum == f.FileNum }) {
		// The flush of imm[0] is current but not yet installed: the
		// version holds imm[0]'s entries already. Listing both made a
		// scan return a merge operand twice (the metamorphic history
		// merge-operand-doubled-after-large-batch).
		imm = imm[1:]
	}
	mems := make([]*memTable, 0, 1+len(imm))
	if d.mu.mem != nil {
		mems = append(mems, d.mu.mem)
	}
	for i := len(imm) - 1; i >= 0; i-- {
		mems = append(mems, imm[i])
	}
	rs := newReadState(mems, v, d.tables, d.stats)
	if op := d.opts.MergeOperator; op != nil {
		rs.view.Merge = op
	}
	if old := d.readState.Swap(rs); old != nil {
		old.unref()
	}
}
