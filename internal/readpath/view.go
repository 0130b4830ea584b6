package readpath

import (
	"context"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/memtable"
	"github.com/shaledb/shale/internal/merge"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/statistics"
)

// View is an immutable picture of the database that reads run over: the
// memtables, newest first, and a version of the table files. The engine
// references a View for the length of a read (for an Iterator, until its
// Close; for a Value read from a memtable, until the Value is no longer used)
// and hands it here; nothing in this package changes it or waits for writers,
// so one View may serve any number of concurrent reads.
type View struct {
	// Mems are the memtables, newest (the mutable one) first.
	Mems []*memtable.MemTable
	// Version lists the table files by level. A nil Version has no tables.
	Version *manifest.Version
	// Tables opens and caches table readers.
	Tables TableSource
	// Stats receives the read tickers and histograms of Get, MultiGet and
	// Iterator (MemtableHit, GetHitL0, NumberDBNext, ...); nil records
	// nothing. Tickers of the layers below (block cache, bloom filter, file
	// reads) go to the statistics those layers were opened with.
	Stats *statistics.Statistics
	// Merge combines merge operands (KindMerge entries) into values; nil
	// when the database has no merge operator, and then a read that meets
	// an operand fails (see errNoMergeOperator).
	Merge merge.Operator
	// Cmp orders user keys, as the memtables and tables do; nil is
	// bytewise.
	Cmp base.Compare
}

// TableSource gives access to open table readers. The engine's table cache
// implements it. It must be safe for concurrent use: MultiGet with
// ReadEnv.AsyncIO acquires the tables of a level from several goroutines.
type TableSource interface {
	// Acquire returns the reader of meta's table, opening it first if it is
	// not open; the open's reads carry env's IO options, so a table opened on
	// behalf of a Get is read with the Get's tag. level is the level the
	// caller found meta in: a reader opened now counts its reads as
	// last-level or not by it, for as long as it stays open (RocksDB's
	// TableCache decides at open too). The caller releases the returned
	// reference.
	Acquire(ctx context.Context, env sstable.ReadEnv, meta *manifest.FileMetadata, level int) (TableRef, error)
}

// Releaser releases a reference. Release is called exactly once per
// reference, possibly on another goroutine than the one that acquired it.
type Releaser interface{ Release() }

// TableRef is a referenced table reader. The reader stays open until the
// reference is released; values read from a memory-mapped table point into
// the mapping, so a Value keeps the TableRef it was read through.
type TableRef struct {
	Reader *sstable.Reader
	ref    Releaser
}

// NewTableRef returns a TableRef for r whose Release calls rel.Release; rel
// may be nil when the reader needs no reference (it lives as long as the
// version that lists it).
func NewTableRef(r *sstable.Reader, rel Releaser) TableRef { return TableRef{Reader: r, ref: rel} }

// Release drops the reference.
func (t TableRef) Release() {
	if t.ref != nil {
		t.ref.Release()
	}
}
