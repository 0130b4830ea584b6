package engine

import (
	"bufio"
	"bytes"
	"cmp"
	"slices"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/rangedel"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/vfs"
)

// TableWriter writes a table file outside any database, for a bulk load:
// driver.DB.Ingest adds finished tables to a database atomically (RocksDB's
// SstFileWriter, Pebble's sstable.Writer). It needs no open database.
//
// Points (Set, Delete) must be added in strictly increasing key order, that
// of Options.Comparer (the table records it, and Ingest refuses the table in
// a database with another order); a key equal to or below the previous one
// is an error matching ErrInvalidArgument that names both keys, and the
// writer stays usable.
// Range deletions (DeleteRange) may come in any order, before, between or
// after the points. Every entry is written with sequence number 0; an ingest
// gives all the entries of its tables one new sequence number, newer than
// every write before it. So a table's range deletions delete the database's
// older keys in their range, not the table's own points (they have the same
// sequence number), as in RocksDB.
//
// The table is written with the Options' block size, restart interval,
// compression (CompressionPerLevel's L0 entry, or Compression), checksum,
// bloom filter, prefix extractor and index partitioning, so an ingested
// table reads like one the database flushed; the database ingesting it
// should use the same PrefixExtractor for its filter to serve prefix scans.
// The table is marked as external (property shale.external.sst.version),
// which Ingest requires.
//
// A TableWriter is not safe for concurrent use. Finish or Abort must be
// called to release the file.
type TableWriter struct {
	fs   vfs.FS
	path string
	file vfs.File // nil once finished or aborted
	// buf batches the table's block writes into large file writes.
	buf *bufio.Writer
	w   *sstable.Writer
	// err is the first write error: the writer is unusable after it.
	err     error
	lastKey []byte
	points  uint64
	dels    []rangedel.Tombstone
	// cmp is Options.Comparer's order, which keys must follow; nil is
	// bytewise.
	cmp base.Compare
}

// tableWriterBufferSize is the size of TableWriter's file writes.
const tableWriterBufferSize = 256 << 10

// WrittenTable describes a table TableWriter.Finish wrote.
type WrittenTable struct {
	// Path is the file's name, as given to NewTableWriter.
	Path string
	// Smallest and Largest are the smallest and largest user keys the
	// table holds, points and range deletions; a range deletion's end is
	// exclusive, and LargestExclusive says Largest is one.
	Smallest, Largest []byte
	LargestExclusive  bool
	// Entries is the number of points (Set and Delete), RangeDeletions the
	// number of range deletions after overlapping ones were merged.
	Entries, RangeDeletions uint64
	// Size is the file's length in bytes.
	Size uint64
}

// NewTableWriter creates the table file path, truncating any file there, in
// opts.FS (the operating system's filesystem when nil); opts may be nil for
// the defaults. The options are checked as Open checks them.
func NewTableWriter(path string, opts *Options) (*TableWriter, error) {
	o, err := resolveOptions(opts)
	if err != nil {
		return nil, err
	}
	if path == "" {
		return nil, base.InvalidArgumentf("engine: NewTableWriter with an empty path")
	}
	fs := o.FS
	if fs == nil {
		fs = vfs.Default
	}
	f, err := fs.Create(path)
	if err != nil {
		return nil, errors.Wrapf(err, "engine: creating table %s", path)
	}
	wo := o.writerOptions(0)
	wo.External = true
	buf := bufio.NewWriterSize(f, tableWriterBufferSize)
	return &TableWriter{fs: fs, path: path, file: f, buf: buf, w: sstable.NewWriter(buf, wo),
		cmp: o.Comparer.UserCompare()}, nil
}

// Set adds key with value. key and value are copied.
func (tw *TableWriter) Set(key, value []byte) error {
	return tw.add(key, value, base.KindSet)
}

// Delete adds a deletion of key: once ingested, it hides the database's
// older versions of key. key is copied.
func (tw *TableWriter) Delete(key []byte) error {
	return tw.add(key, nil, base.KindDelete)
}

func (tw *TableWriter) add(key, value []byte, kind base.Kind) error {
	if err := tw.usable(); err != nil {
		return err
	}
	if tw.points > 0 && base.CompareUser(tw.cmp, key, tw.lastKey) <= 0 {
		return base.InvalidArgumentf("engine: TableWriter %s: key %q added after %q: keys must be strictly increasing",
			tw.path, key, tw.lastKey)
	}
	if err := tw.w.Add(base.MakeInternalKey(key, 0, kind), value); err != nil {
		tw.err = errors.Wrapf(err, "engine: writing table %s", tw.path)
		return tw.err
	}
	tw.points++
	tw.lastKey = append(tw.lastKey[:0], key...)
	return nil
}

// DeleteRange adds a deletion of the keys in [start, end), which must not be
// empty: once ingested, it hides the database's older keys in the range.
// start and end are copied.
func (tw *TableWriter) DeleteRange(start, end []byte) error {
	if err := tw.usable(); err != nil {
		return err
	}
	if start == nil || end == nil || base.CompareUser(tw.cmp, start, end) >= 0 {
		return base.InvalidArgumentf("engine: TableWriter %s: DeleteRange [%q, %q) is empty or unbounded", tw.path, start, end)
	}
	tw.dels = append(tw.dels, rangedel.Tombstone{Start: bytes.Clone(start), End: bytes.Clone(end)})
	return nil
}

func (tw *TableWriter) usable() error {
	if tw.file == nil {
		return base.InvalidArgumentf("engine: TableWriter %s is finished or aborted", tw.path)
	}
	return tw.err
}

// Finish completes the table, syncs and closes the file, and describes it.
// A table with neither points nor range deletions is refused (an error
// matching ErrInvalidArgument). On any failure the file is removed.
func (tw *TableWriter) Finish() (WrittenTable, error) {
	if tw.file == nil {
		return WrittenTable{}, base.InvalidArgumentf("engine: TableWriter %s is finished or aborted", tw.path)
	}
	err := tw.err
	if err == nil && tw.points == 0 && len(tw.dels) == 0 {
		err = base.InvalidArgumentf("engine: TableWriter %s: a table needs at least one entry", tw.path)
	}
	dels := mergeTombstones(tw.cmp, tw.dels)
	for _, t := range dels {
		if err != nil {
			break
		}
		err = tw.w.AddRangeDeletion(rangedel.Fragment{Start: t.Start, End: t.End, Seqs: []base.SeqNum{0}})
	}
	var meta sstable.WriterMetadata
	if err == nil {
		meta, err = tw.w.Close()
	}
	if err == nil {
		err = tw.buf.Flush()
	}
	if err == nil {
		err = tw.file.Sync()
	}
	if err != nil {
		tw.abort()
		return WrittenTable{}, errors.Wrapf(err, "engine: writing table %s", tw.path)
	}
	err = tw.file.Close()
	tw.file = nil
	tw.w = nil
	if err != nil {
		_ = tw.remove()
		return WrittenTable{}, errors.Wrapf(err, "engine: closing table %s", tw.path)
	}
	info := WrittenTable{
		Path:           tw.path,
		Smallest:       bytes.Clone(meta.Smallest.UserKey),
		Largest:        bytes.Clone(meta.Largest.UserKey),
		Entries:        tw.points,
		RangeDeletions: uint64(len(dels)),
		Size:           meta.Size,
	}
	info.LargestExclusive = meta.Largest.IsExclusiveSentinel()
	return info, nil
}

// Abort gives the table up and removes its file. It does nothing after
// Finish or Abort.
func (tw *TableWriter) Abort() error {
	if tw.file == nil {
		return nil
	}
	return tw.abort()
}

func (tw *TableWriter) abort() error {
	err := tw.file.Close()
	tw.file = nil
	tw.w = nil
	return errors.CombineErrors(err, tw.remove())
}

// remove deletes the writer's own file, which no database names.
func (tw *TableWriter) remove() error { return tw.fs.Remove(tw.path) }

// mergeTombstones returns ts sorted by ucmp (nil: bytewise) and with
// overlapping or adjacent ranges merged: a table's tombstones all have
// sequence number 0, and a fragment holds each sequence number once.
func mergeTombstones(ucmp base.Compare, ts []rangedel.Tombstone) []rangedel.Tombstone {
	slices.SortFunc(ts, func(a, b rangedel.Tombstone) int {
		return cmp.Or(base.CompareUser(ucmp, a.Start, b.Start), base.CompareUser(ucmp, a.End, b.End))
	})
	var out []rangedel.Tombstone
	for _, t := range ts {
		if n := len(out); n > 0 && base.CompareUser(ucmp, t.Start, out[n-1].End) <= 0 {
			if base.CompareUser(ucmp, t.End, out[n-1].End) > 0 {
				out[n-1].End = t.End
			}
			continue
		}
		out = append(out, t)
	}
	return out
}
