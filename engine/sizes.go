package engine

import (
	"context"
	"path/filepath"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/ioctx"
)

// ApproximateSize estimates the bytes of the keys in [start, end), a nil
// bound being unbounded (RocksDB's GetApproximateSizes with INCLUDE_FILES
// and INCLUDE_MEMTABLES, see driver.ApproximateSize), in the database's
// current state:
//
//   - OnDisk: every table whose keys all lie in the range counts whole (its
//     file size). A table that straddles a bound counts the share of its
//     file that its index puts between the bounds: the offset of the data
//     block holding the first entry >= start to that of the block holding
//     end (sstable.Reader.ApproximateOffsetOf), over its data's end,
//     times its file size (so the index, filter and meta blocks are shared
//     out in proportion). Each straddled bound is off by at most one data
//     block (BlockSize, 4 KiB by default, compressed) of each table it
//     cuts; tables wholly inside or outside are exact. Every version of a
//     key and every tombstone still in the tables counts, as in RocksDB.
//   - InMemory and InMemoryEntries: memtable.MemTable.ApproximateStats of
//     every memtable (mutable and immutable): exact for ranges of fewer
//     than 512 entries per memtable, beyond that a sample of the skiplist
//     within about 6% (one standard deviation). Bytes are arena bytes:
//     keys, values and the skiplist's nodes.
//
// It reads no data block. A table's index is the one the table reader
// keeps, or with CacheIndexAndFilterBlocks the cached one, read on a miss
// with req (tagged ActivityUnknown, as RocksDB tags the reads of
// GetApproximateSizes); a table not open yet is opened, as a Get would.
func (d *database) approximateSize(ctx context.Context, req ioctx.ReadRequest, start, end []byte) (driver.RangeSize, error) {
	var out driver.RangeSize
	if start != nil && end != nil && base.CompareUser(d.ucmp(), start, end) >= 0 {
		return out, nil
	}
	rs, err := d.loadReadState()
	if err != nil {
		return out, err
	}
	defer rs.unref()
	for _, m := range rs.mems {
		n, b := m.ApproximateStats(start, end)
		out.InMemoryEntries += n
		out.InMemory += b
	}
	v := rs.current
	for level := range manifest.NumLevels {
		for _, f := range v.Levels[level] {
			if err := ctx.Err(); err != nil {
				return driver.RangeSize{}, err
			}
			n, err := d.tableBytesIn(ctx, req, f, level, start, end)
			if err != nil {
				return driver.RangeSize{}, err
			}
			out.OnDisk += n
		}
	}
	return out, nil
}

// tableBytesIn estimates the bytes of table f (of level) holding keys in
// [start, end); see approximateSize.
func (d *database) tableBytesIn(ctx context.Context, req ioctx.ReadRequest, f *manifest.FileMetadata, level int, start, end []byte) (uint64, error) {
	lo, hi := f.Smallest.UserKey, f.Largest.UserKey
	cmp := d.ucmp()
	if (end != nil && base.CompareUser(cmp, lo, end) >= 0) || (start != nil && base.CompareUser(cmp, hi, start) < 0) {
		return 0, nil // outside
	}
	cutLow := start != nil && base.CompareUser(cmp, start, lo) > 0
	cutHigh := end != nil && base.CompareUser(cmp, end, hi) <= 0
	if !cutLow && !cutHigh {
		return f.Size, nil // inside
	}
	t, err := d.tables.Acquire(ctx, req, f, level)
	if err != nil {
		return 0, err
	}
	defer t.Release()
	r := t.Reader
	dataEnd := r.DataEnd()
	if dataEnd == 0 {
		return 0, nil
	}
	from, to := uint64(0), dataEnd
	if cutLow {
		if from, err = r.ApproximateOffsetOf(ctx, req, start); err != nil {
			return 0, err
		}
	}
	if cutHigh {
		if to, err = r.ApproximateOffsetOf(ctx, req, end); err != nil {
			return 0, err
		}
	}
	if to <= from {
		return 0, nil
	}
	return uint64(float64(f.Size) * float64(to-from) / float64(dataEnd)), nil
}

// DiskUsage returns the bytes of every file in the database's directory:
// tables, WALs, MANIFESTs, CURRENT, LOCK, OPTIONS and temporary files, and
// the files recovery set aside (NNNNNN.sst.orphan, NNNNNN.log.corrupt),
// which are on disk until someone removes them — the figure a disk quota
// sees, with tables that a reader or a checkpoint still holds after a
// compaction replaced them. Subdirectories are not entered. It lists and
// stats the directory, so it sees the files as they are at the call; a
// file deleted between the listing and its stat is left out.
func (d *database) DiskUsage(ctx context.Context) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := d.checkOpen(); err != nil {
		return 0, err
	}
	names, err := d.fs.List(d.dirname)
	if err != nil {
		return 0, errors.Wrapf(err, "engine: listing %s for its disk usage", d.dirname)
	}
	var n uint64
	for _, name := range names {
		info, err := d.fs.Stat(filepath.Join(d.dirname, name))
		if err != nil || info.IsDir() {
			continue // deleted since the listing, or a directory
		}
		n += uint64(info.Size())
	}
	return n, nil
}

// ApproximateSize makes the engine's connection a driver.ApproximateSizer
// (see database.approximateSize).
func (c *conn) ApproximateSize(ctx context.Context, req ioctx.ReadRequest, start, end []byte) (driver.RangeSize, error) {
	call := readCall{env: req}
	if err := c.db.startRead(ctx, &call); err != nil {
		return driver.RangeSize{}, err
	}
	return c.db.approximateSize(call.ctx, call.env, start, end)
}

// DiskUsage makes the engine's connection a driver.DiskUsager (see
// database.DiskUsage).
func (c *conn) DiskUsage(ctx context.Context) (uint64, error) { return c.db.DiskUsage(ctx) }

var (
	_ driver.ApproximateSizer = (*conn)(nil)
	_ driver.DiskUsager       = (*conn)(nil)
)
