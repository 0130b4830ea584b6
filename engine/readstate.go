package engine

import (
	"sync/atomic"

	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/memtable"
	"github.com/shaledb/shale/readpath"
	"github.com/shaledb/shale/statistics"
)

// memTable is a memtable with the WAL that holds its writes.
type memTable struct {
	*memtable.MemTable
	// logNum is the WAL file whose records this memtable holds; the WAL can
	// be deleted once the memtable is flushed.
	logNum manifest.FileNum
}

// readState is an immutable picture of the database for readers: the
// memtables and the current version. A reader references one for the length
// of its call (or its iterator's life), so flushes and compactions never wait
// for readers and never free what a reader uses (the pebble readState
// pattern).
type readState struct {
	refs atomic.Int32
	view readpath.View
	// current is the version view.Version points to; kept for the unref.
	current *manifest.Version
}

func newReadState(mems []*memtable.MemTable, v *manifest.Version, tables readpath.TableSource, stats *statistics.Statistics) *readState {
	rs := &readState{current: v}
	rs.view = readpath.View{Mems: mems, Version: v, Tables: tables, Stats: stats}
	rs.refs.Store(1)
	return rs
}

func (rs *readState) ref() { rs.refs.Add(1) }

// unref drops a reference; the last one releases the version, which lets the
// engine delete tables only this state still used.
func (rs *readState) unref() {
	if rs.refs.Add(-1) == 0 {
		rs.current.Unref()
	}
}

// loadReadState returns the current read state, referenced.
func (d *DB) loadReadState() *readState {
	d.readState.RLock()
	rs := d.readState.val
	rs.ref()
	d.readState.RUnlock()
	return rs
}

// updateReadStateLocked installs a read state built from the current
// memtables and version. d.mu must be held.
func (d *DB) updateReadStateLocked() {
	mems := make([]*memtable.MemTable, 0, 1+len(d.mu.imm))
	if d.mu.mem != nil {
		mems = append(mems, d.mu.mem.MemTable)
	}
	for i := len(d.mu.imm) - 1; i >= 0; i-- {
		mems = append(mems, d.mu.imm[i].MemTable)
	}
	rs := newReadState(mems, d.vs.Current(), d.tables, d.stats)
	d.readState.Lock()
	old := d.readState.val
	d.readState.val = rs
	d.readState.Unlock()
	if old != nil {
		old.unref()
	}
}
