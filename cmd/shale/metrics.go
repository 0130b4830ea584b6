package main

import (
	"context"
	"fmt"
	"io"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/driver"
)

// lsmMetrics returns the database's LSM metrics, or nil when its driver
// does not report them.
func lsmMetrics(ctx context.Context, db *driver.DB) (*driver.Metrics, error) {
	m, err := db.Metrics(ctx)
	if errors.Is(err, driver.ErrNotSupported) {
		return nil, nil
	}
	return m, err
}

// printMetrics prints the LSM shape of db (driver.Metrics.String) under a
// heading, after a blank line; nothing when the driver does not report it.
func printMetrics(ctx context.Context, w io.Writer, db *driver.DB) error {
	m, err := lsmMetrics(ctx, db)
	if err != nil || m == nil {
		return err
	}
	_, err = fmt.Fprintf(w, "\nLSM shape\n%s", m)
	return err
}
