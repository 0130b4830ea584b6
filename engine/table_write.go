package engine

import (
	"context"
	"encoding/binary"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/rangedel"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/ratelimit"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
)

// tableWriter writes one new table file, for a flush, a compaction or a
// recovery, and owns the reservation of its file number in
// d.mu.pendingOutputs, which keeps deleteObsoleteFiles away from a table no
// version names yet. The reservation is taken with the file number and
// ends exactly once, in one of two ways:
//
//   - abandon: the table will not be installed (writing or checking it
//     failed, or no version edit naming it was attempted). Its file is
//     deleted.
//   - release: the version edit naming the table was applied, and the
//     version now keeps the file; or the edit failed, when the MANIFEST may
//     name the table, so the file stays (manifestFailed then stops every
//     deletion until a reopen).
//
// Both do nothing once the reservation has ended, so cleanup code may
// abandon whatever it still holds. A tableWriter is used by one goroutine.
type tableWriter struct {
	d       *database
	fileNum manifest.FileNum
	name    string
	file    vfs.File // nil once finished or abandoned
	w       *sstable.Writer
	limited *limitedWriter
	// meta describes the table once finish has succeeded.
	meta     *manifest.FileMetadata
	released bool
}

// newTableWriter reserves a new file number and creates its table. Its
// writes are charged to the rate limiter at pri (RocksDB: flushes at High,
// compactions at Low) when the limiter limits writes.
func (d *database) newTableWriter(ctx context.Context, pri ioctx.Priority, level int) (*tableWriter, error) {
	fileNum := d.vs.NewFileNum()
	tw := &tableWriter{d: d, fileNum: fileNum, name: manifest.TableFileName(d.dirname, fileNum)}
	d.mu.Lock()
	d.mu.pendingOutputs[fileNum] = struct{}{}
	d.mu.Unlock()
	f, err := d.fs.Create(tw.name)
	if err != nil {
		tw.release() // there is no file to delete
		return nil, errors.Wrapf(err, "engine: creating table %s", tw.name)
	}
	tw.file = f
	tw.limited = &limitedWriter{ctx: ctx, w: f, limiter: d.opts.RateLimiter, pri: pri, stats: d.stats}
	tw.w = sstable.NewWriter(tw.limited, d.writerOptions(level))
	return tw, nil
}

// writerOptions returns the options of a new table for level.
func (d *database) writerOptions(level int) sstable.WriterOptions { return d.opts.writerOptions(level) }

// writerOptions returns the options of a new table for level, for a
// database's tables and for TableWriter's.
func (o *Options) writerOptions(level int) sstable.WriterOptions {
	bits := o.BloomBitsPerKey
	if bits < 0 || (o.OptimizeFiltersForHits && level == manifest.NumLevels-1) {
		bits = 0
	}
	partition := 0
	if o.PartitionIndexAndFilters {
		partition = o.MetadataBlockSize
	}
	wo := sstable.WriterOptions{
		BlockSize:            o.BlockSize,
		BlockRestartInterval: o.BlockRestartInterval,
		BloomBitsPerKey:      bits,
		Compression:          o.compressionFor(level).internal(),
		ZstdLevel:            o.ZstdLevel,
		Checksum:             o.ChecksumType.internal(),
		IndexPartitionSize:   partition,
		Comparer:             o.Comparer,
	}
	if pe := o.PrefixExtractor; pe.Kind != PrefixNone && bits > 0 {
		wo.PrefixExtractor = pe.prefix
		wo.PrefixExtractorName = pe.String()
	}
	return wo
}

// finish completes the table, makes it durable and sets tw.meta. On failure
// the table is abandoned. Either way it drops the closed sstable.Writer,
// which still holds every index and filter partition of its table and its
// block buffers: a flush's writer lives until the version edit is applied,
// and a compaction's outputs until the whole compaction is installed, so
// keeping it held that much per output (a full compaction's memory grew
// with the data).
func (tw *tableWriter) finish() error {
	meta, err := tw.w.Close()
	tw.w = nil
	if err == nil {
		err = tw.limited.err
	}
	if err == nil {
		err = tw.file.Sync()
	}
	err = errors.CombineErrors(err, tw.file.Close())
	tw.file = nil
	if err != nil {
		tw.abandon()
		return errors.Wrapf(err, "engine: writing table %s", tw.name)
	}
	tw.meta = &manifest.FileMetadata{
		FileNum:        tw.fileNum,
		Size:           meta.Size,
		Smallest:       meta.Smallest,
		Largest:        meta.Largest,
		SmallestSeqNum: meta.SmallestSeqNum,
		LargestSeqNum:  meta.LargestSeqNum,
		HasRangeDels:   meta.NumRangeDeletions > 0,
	}
	if !tw.d.opts.DisableFileChecksums {
		tw.meta.FileChecksum = binary.BigEndian.AppendUint32(nil, meta.FileChecksum)
		tw.meta.FileChecksumFunc = manifest.ChecksumFuncCRC32C
	}
	return nil
}

// abandon deletes a table that will not be installed, with any reader of it
// in the table cache, and ends the reservation.
func (tw *tableWriter) abandon() {
	if tw.released {
		return
	}
	if tw.file != nil {
		_ = tw.file.Close()
		tw.file = nil
	}
	tw.d.removeAbandonedTable(tw.fileNum, tw.name)
	tw.release()
}

// release ends the reservation and leaves the file alone: for after the
// version edit that names the table was applied, or failed and
// d.mu.manifestFailed is set (before that, deleteObsoleteFiles could delete
// a table the MANIFEST may name).
func (tw *tableWriter) release() {
	if tw.released {
		return
	}
	tw.released = true
	tw.d.mu.Lock()
	delete(tw.d.mu.pendingOutputs, tw.fileNum)
	tw.d.mu.Unlock()
}

// tableOutputs are the finished tables of one version edit, in order.
type tableOutputs []*tableWriter

func (ts tableOutputs) metas() []*manifest.FileMetadata {
	metas := make([]*manifest.FileMetadata, len(ts))
	for i, tw := range ts {
		metas[i] = tw.meta
	}
	return metas
}

func (ts tableOutputs) abandon() {
	for _, tw := range ts {
		tw.abandon()
	}
}

func (ts tableOutputs) release() {
	for _, tw := range ts {
		tw.release()
	}
}

// limitedWriter charges table writes to the rate limiter and keeps the
// first error, so a write error is not lost behind the table writer's own.
type limitedWriter struct {
	ctx     context.Context
	w       vfs.File
	limiter ratelimit.Limiter
	pri     ioctx.Priority
	stats   *statistics.Statistics
	err     error
}

func (lw *limitedWriter) Write(p []byte) (int, error) {
	if lw.err != nil {
		return 0, lw.err
	}
	if err := ratelimit.RequestBursts(lw.ctx, lw.limiter, int64(len(p)), lw.pri, lw.stats, ratelimit.OpWrite); err != nil {
		lw.err = errors.Wrap(err, "engine: rate limiter wait for a table write")
		return 0, lw.err
	}
	n, err := lw.w.Write(p)
	if err != nil {
		lw.err = err
	}
	return n, err
}

// openAndCheckTable opens a table the engine just wrote for level, reading
// it with activity (Flush, Compaction or DBOpen): the open verifies its footer,
// index, filter and properties, and with ParanoidFileChecks every data block
// is read back and verified too. The open reader goes into the table cache.
// A table that does not read back is not installed.
func (d *database) openAndCheckTable(ctx context.Context, meta *manifest.FileMetadata, level int, activity ioctx.Activity, pri ioctx.Priority) error {
	env := sstable.ReadEnv{
		IO:              ioctx.IOOptions{Activity: activity, RateLimiterPriority: pri},
		VerifyChecksums: true,
	}
	ref, err := d.tables.Acquire(ctx, env, meta, level)
	if err != nil {
		return errors.Wrapf(err, "engine: opening new table %s", meta.FileNum)
	}
	defer ref.Release()
	if !d.opts.ParanoidFileChecks {
		return nil
	}
	if err := ref.Reader.VerifyChecksums(ctx, env); err != nil {
		return errors.Wrapf(err, "engine: checking new table %s", meta.FileNum)
	}
	return nil
}

// writeTableFrom writes the entries of it (already filtered by the caller)
// and the range tombstones dels (may be nil) to one new table and returns
// its finished writer, holding the reservation; nil means both were empty.
func (d *database) writeTableFrom(ctx context.Context, it interface {
	First() *base.InternalKV
	Next() *base.InternalKV
	Error() error
}, dels []rangedel.Fragment, pri ioctx.Priority) (*tableWriter, error) {
	kv := it.First()
	if kv == nil && len(dels) == 0 {
		return nil, it.Error()
	}
	tw, err := d.newTableWriter(ctx, pri, 0)
	if err != nil {
		return nil, err
	}
	for _, f := range dels {
		if err = tw.w.AddRangeDeletion(f); err != nil {
			tw.abandon()
			return nil, err
		}
	}
	for ; kv != nil; kv = it.Next() {
		if err = tw.w.Add(kv.K, kv.V); err != nil {
			break
		}
	}
	if err == nil {
		err = it.Error()
	}
	if err != nil {
		tw.abandon()
		return nil, err
	}
	if err := tw.finish(); err != nil {
		return nil, err
	}
	return tw, nil
}
