package driver

import (
	"context"
	"fmt"

	"github.com/shaledb/shale/internal/errclass"
)

// Ingester is an optional interface of a [DriverConn]: Ingest adds the
// table files at paths, written outside the database by the driver's own
// table writer (shale's engine.TableWriter), to the database atomically
// (RocksDB's IngestExternalFile): when it returns nil every entry of every
// file is visible, newer than every write acknowledged before the call; on
// an error nothing changed. The files must not overlap one another. Whether
// the source files are kept or moved is the driver's to document (shale
// keeps them: it hard-links or copies them). Without it, DB.Ingest returns
// an error matching ErrNotSupported.
type Ingester interface {
	Ingest(ctx context.Context, paths []string) error
}

// Ingest adds the table files at paths to the database atomically, a bulk
// load (see [Ingester]): all of them or, on an error, none. The files are
// written with the driver's table writer, which is specific to the driver
// (shale: engine.NewTableWriter). No paths is an error matching
// ErrInvalidArgument; a driver without Ingester returns one matching
// ErrNotSupported that names the driver's connection type. paths is not
// retained.
func (db *DB) Ingest(ctx context.Context, paths []string) error {
	if len(paths) == 0 {
		return errNoIngestPaths
	}
	cs, err := db.start(ctx, nil)
	if err != nil {
		return err
	}
	defer db.exit()
	ing, ok := cs.conn.(Ingester)
	if !ok {
		return errclass.New(fmt.Sprintf("driver: Ingest is not supported by this driver "+
			"(its connection, %T, does not implement driver.Ingester)", cs.conn), ErrNotSupported, nil)
	}
	return ing.Ingest(ctx, paths)
}

var errNoIngestPaths error = errclass.New("driver: Ingest of no files", ErrInvalidArgument, nil)
