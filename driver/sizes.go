package driver

import (
	"context"

	"github.com/shaledb/shale/ioctx"
)

// This file holds the size and property queries: DB.ApproximateSize,
// DB.DiskUsage and DB.Property, each backed by an optional interface of the
// DriverConn and ErrNotSupported without it.

// RangeSize is the estimated size of a key range (RocksDB's
// GetApproximateSizes with files and with memtables). Both figures are
// estimates; a driver documents their accuracy.
type RangeSize struct {
	// OnDisk is the bytes of table files estimated to hold the range:
	// every table inside the range whole, and of a table that straddles a
	// bound the share its index puts in the range.
	OnDisk uint64
	// InMemory is the bytes of memtable entries estimated in the range,
	// InMemoryEntries their number (RocksDB's GetApproximateMemTableStats).
	InMemory        uint64
	InMemoryEntries uint64
}

// ApproximateSizer is an optional interface of a [DriverConn]:
// ApproximateSize estimates the bytes the keys in [start, end) take, a nil
// bound meaning unbounded on that side. start and end are valid only during
// the call. req is tagged ActivityUnknown, RocksDB's tag for the index
// reads of GetApproximateSizes: the estimate must not read data blocks,
// only what locates them (indexes, which a driver usually keeps in memory
// or in its cache). Without it, DB.ApproximateSize returns an error
// matching ErrNotSupported.
type ApproximateSizer interface {
	ApproximateSize(ctx context.Context, req ioctx.ReadRequest, start, end []byte) (RangeSize, error)
}

// DiskUsager is an optional interface of a [DriverConn]: DiskUsage returns
// the bytes every file of the database takes on disk at the moment of the
// call — tables, logs, manifests and whatever else the driver keeps in its
// directory — as one figure. Without it, DB.DiskUsage returns an error
// matching ErrNotSupported.
type DiskUsager interface {
	DiskUsage(ctx context.Context) (uint64, error)
}

// PropertyReader is an optional interface of a [DriverConn]: Property
// returns the value of the named property (RocksDB's DB::GetProperty), as
// text, or an error matching ErrNotFound for a name the driver does not
// know. Without it, DB.Property returns an error matching ErrNotSupported.
type PropertyReader interface {
	Property(ctx context.Context, name string) (string, error)
}

// ApproximateSize estimates the size of the keys in [start, end), nil
// bounds meaning unbounded (RocksDB's GetApproximateSizes with
// INCLUDE_FILES and INCLUDE_MEMTABLES): the bytes of tables and of memtable
// entries the range holds (see [RangeSize]). It reads no data block,
// only indexes; the read is tagged ActivityUnknown, as RocksDB tags the
// index reads of GetApproximateSizes. An empty or inverted range is zero.
// An error matching ErrNotSupported when the driver cannot estimate (see
// [ApproximateSizer]). The slices are not retained.
func (db *DB) ApproximateSize(ctx context.Context, start, end []byte) (RangeSize, error) {
	cs, req, err := db.startRead(ctx, nil, "ApproximateSize", ioctx.ActivityUnknown)
	if err != nil {
		return RangeSize{}, err
	}
	defer db.exit()
	as, ok := cs.conn.(ApproximateSizer)
	if !ok {
		return RangeSize{}, notSupported("ApproximateSize", "ApproximateSizer")
	}
	if start != nil && end != nil && string(start) >= string(end) {
		return RangeSize{}, nil
	}
	return as.ApproximateSize(ctx, req, start, end)
}

// DiskUsage returns the bytes the database's files take on disk, as one
// figure (see [DiskUsager]); an error matching ErrNotSupported when the
// driver cannot tell.
func (db *DB) DiskUsage(ctx context.Context) (uint64, error) {
	cs, err := db.start(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer db.exit()
	du, ok := cs.conn.(DiskUsager)
	if !ok {
		return 0, notSupported("DiskUsage", "DiskUsager")
	}
	return du.DiskUsage(ctx)
}

// Property returns the value of the named property of the database, as
// text (RocksDB's DB::GetProperty; shale's engine lists its names in
// engine.PropertyNames). An unknown name is an error matching ErrNotFound;
// a driver without properties returns one matching ErrNotSupported (see
// [PropertyReader]).
func (db *DB) Property(ctx context.Context, name string) (string, error) {
	cs, err := db.start(ctx, nil)
	if err != nil {
		return "", err
	}
	defer db.exit()
	pr, ok := cs.conn.(PropertyReader)
	if !ok {
		return "", notSupported("Property", "PropertyReader")
	}
	return pr.Property(ctx, name)
}
