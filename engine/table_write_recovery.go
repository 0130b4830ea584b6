package engine

import (
	"context"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/memtable"
	"github.com/shaledb/shale/ioctx"
)

// This file bridges recovery.go until it holds the tableWriters of the
// tables it writes (r.tables.release() at the commit, r.tables.abandon() in
// abandon): meanwhile recovery ends their reservations by file number, as
// every site did before tableWriter owned its reservation. Delete the file
// with that change.

// writeMemTable is flushMemTable returning only the table's metadata; the
// reservation stays until recovery ends it with removePendingOutput or at
// its commit.
func (d *DB) writeMemTable(ctx context.Context, mem *memtable.MemTable, activity ioctx.Activity, snapshots []base.SeqNum) (*manifest.FileMetadata, error) {
	tw, err := d.flushMemTable(ctx, mem, activity, snapshots)
	if tw == nil {
		return nil, err
	}
	return tw.meta, nil
}

func (d *DB) removePendingOutput(n manifest.FileNum) {
	d.mu.Lock()
	delete(d.mu.pendingOutputs, n)
	d.mu.Unlock()
}
