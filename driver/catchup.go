package driver

import "context"

// CatchUpper is an optional interface of a [DriverConn]: CatchUp brings a
// read-only view of a database that another process is writing (shale's
// secondary instance, DSN secondary=true; RocksDB's
// DB::TryCatchUpWithPrimary) up to what that process has written so far.
// A connection that is not such a view returns nil: it is always up to
// date. Without the interface, DB.CatchUp returns an error matching
// ErrNotSupported.
type CatchUpper interface {
	CatchUp(ctx context.Context) error
}

var errNoCatchUp = notSupported("CatchUp", "CatchUpper")

// CatchUp brings a secondary instance, a read-only view of a database that
// another process holds open and writes, up to that process's latest
// durable state (see [CatchUpper]): reads that start after it returns see
// every write the primary had made visible to other processes when it
// started. Iterators and snapshots opened before keep their view. On a
// database that is not a secondary it does nothing and returns nil;
// ErrNotSupported when the driver has no such notion.
func (db *DB) CatchUp(ctx context.Context) error {
	cs, err := db.start(ctx, nil)
	if err != nil {
		return err
	}
	defer db.exit()
	c, ok := cs.conn.(CatchUpper)
	if !ok {
		return errNoCatchUp
	}
	return c.CatchUp(ctx)
}
