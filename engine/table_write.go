package engine

import (
	"context"
	"encoding/binary"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/internal/vfs"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/ratelimit"
	"github.com/shaledb/shale/statistics"
)

// tableWriter writes one new table file for a flush or a compaction.
type tableWriter struct {
	d       *DB
	fileNum manifest.FileNum
	name    string
	file    vfs.File
	w       *sstable.Writer
	limited *limitedWriter
}

// newTableWriter creates table fileNum. Its writes are charged to the rate
// limiter at pri (RocksDB: flushes at High, compactions at Low) when the
// limiter limits writes.
func (d *DB) newTableWriter(ctx context.Context, fileNum manifest.FileNum, pri ioctx.Priority) (*tableWriter, error) {
	name := manifest.TableFileName(d.dirname, fileNum)
	f, err := d.fs.Create(name)
	if err != nil {
		return nil, errors.Wrapf(err, "engine: creating table %s", name)
	}
	tw := &tableWriter{d: d, fileNum: fileNum, name: name, file: f}
	lw := &limitedWriter{ctx: ctx, w: f, limiter: d.opts.RateLimiter, pri: pri, stats: d.stats}
	tw.limited = lw
	tw.w = sstable.NewWriter(lw, d.writerOptions())
	return tw, nil
}

func (d *DB) writerOptions() sstable.WriterOptions {
	bits := d.opts.BloomBitsPerKey
	if bits < 0 {
		bits = 0
	}
	return sstable.WriterOptions{
		BlockSize:            d.opts.BlockSize,
		BlockRestartInterval: d.opts.BlockRestartInterval,
		BloomBitsPerKey:      bits,
		Compression:          d.opts.Compression.internal(),
		Checksum:             d.opts.ChecksumType.internal(),
	}
}

// finish completes the table, makes it durable and returns its metadata.
func (tw *tableWriter) finish() (*manifest.FileMetadata, error) {
	meta, err := tw.w.Close()
	if err == nil {
		err = tw.limited.err
	}
	if err == nil {
		err = tw.file.Sync()
	}
	err = errors.CombineErrors(err, tw.file.Close())
	tw.file = nil
	if err != nil {
		return nil, errors.Wrapf(err, "engine: writing table %s", tw.name)
	}
	fm := &manifest.FileMetadata{
		FileNum:        tw.fileNum,
		Size:           meta.Size,
		Smallest:       meta.Smallest,
		Largest:        meta.Largest,
		SmallestSeqNum: meta.SmallestSeqNum,
		LargestSeqNum:  meta.LargestSeqNum,
	}
	if !tw.d.opts.DisableFileChecksums {
		fm.FileChecksum = binary.BigEndian.AppendUint32(nil, meta.FileChecksum)
		fm.FileChecksumFunc = manifest.ChecksumFuncCRC32C
	}
	return fm, nil
}

// abandon removes a table that will not be installed.
func (tw *tableWriter) abandon() {
	if tw.file != nil {
		_ = tw.file.Close()
		tw.file = nil
	}
	_ = tw.d.fs.Remove(tw.name)
}

// limitedWriter charges table writes to the rate limiter and counts the
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
	if lw.limiter != nil && lw.limiter.IsRateLimited(ratelimit.OpWrite) {
		burst := lw.limiter.SingleBurstBytes()
		for rest := int64(len(p)); rest > 0; rest -= burst {
			if err := lw.limiter.Request(lw.ctx, min(rest, burst), lw.pri, lw.stats, ratelimit.OpWrite); err != nil {
				lw.err = errors.Wrap(err, "engine: rate limiter wait for a table write")
				return 0, lw.err
			}
		}
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
func (d *DB) openAndCheckTable(ctx context.Context, meta *manifest.FileMetadata, level int, activity ioctx.Activity, pri ioctx.Priority) error {
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
// to one new table and returns its metadata; nil metadata means it was empty.
func (d *DB) writeTableFrom(ctx context.Context, it interface {
	First() *base.InternalKV
	Next() *base.InternalKV
	Error() error
}, pri ioctx.Priority) (*manifest.FileMetadata, error) {
	kv := it.First()
	if kv == nil {
		return nil, it.Error()
	}
	fileNum := d.vs.NewFileNum()
	d.addPendingOutput(fileNum)
	tw, err := d.newTableWriter(ctx, fileNum, pri)
	if err != nil {
		d.removePendingOutput(fileNum)
		return nil, err
	}
	for ; kv != nil; kv = it.Next() {
		if err := tw.w.Add(kv.K, kv.V); err != nil {
			tw.abandon()
			d.removePendingOutput(fileNum)
			return nil, err
		}
	}
	if err := it.Error(); err != nil {
		tw.abandon()
		d.removePendingOutput(fileNum)
		return nil, err
	}
	meta, err := tw.finish()
	if err != nil {
		tw.abandon()
		d.removePendingOutput(fileNum)
		return nil, err
	}
	return meta, nil
}

func (d *DB) addPendingOutput(n manifest.FileNum) {
	d.mu.Lock()
	d.mu.pendingOutputs[n] = struct{}{}
	d.mu.Unlock()
}

func (d *DB) removePendingOutput(n manifest.FileNum) {
	d.mu.Lock()
	delete(d.mu.pendingOutputs, n)
	d.mu.Unlock()
}
