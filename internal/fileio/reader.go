package fileio

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/errclass"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/ratelimit"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
)

// Options configure a Reader.
type Options struct {
	// Stats receives the latency samples and byte counts; nil records
	// nothing.
	Stats *statistics.Statistics
	// Limiter is charged for reads at a priority other than PriorityTotal;
	// nil charges nothing.
	Limiter ratelimit.Limiter
	// Mmap maps the file read-only and serves reads by slicing the mapping
	// (RocksDB's allow_mmap_reads). The file must implement vfs.Mappable.
	Mmap bool
	// LastLevel says the file is in the last level of the tree; it selects
	// which of the last-level and non-last-level read tickers count its bytes.
	LastLevel bool
	// ParallelAfter is how long the first request of a MultiRead must take
	// for the others to be read in parallel; zero means
	// DefaultParallelAfter, negative never.
	ParallelAfter time.Duration
}

// DefaultParallelAfter is the default Options.ParallelAfter: above what a
// 4 KiB read from the page cache takes, which is about what handing a
// request to another goroutine and waking it costs, and below what a read
// from a device takes, whose latency overlapping several reads hides.
// BenchmarkMultiRead measures both ways of reading on the machine at hand.
const DefaultParallelAfter = 25 * time.Microsecond

// Reader reads one file. It is safe for concurrent use.
type Reader struct {
	file   vfs.File
	name   string
	size   int64
	opts   Options
	mapped []byte // the read-only mapping when opts.Mmap

	bytesTicker, countTicker statistics.Ticker
	bytesRead                atomic.Int64
}

// NewReader returns a Reader over f, whose name (for errors) is name and
// whose size is size. It takes ownership of f: Close closes it.
func NewReader(f vfs.File, name string, size int64, opts Options) (*Reader, error) {
	r := &Reader{file: f, name: name, size: size, opts: opts,
		bytesTicker: statistics.NonLastLevelReadBytes, countTicker: statistics.NonLastLevelReadCount}
	if opts.LastLevel {
		r.bytesTicker, r.countTicker = statistics.LastLevelReadBytes, statistics.LastLevelReadCount
	}
	if r.opts.ParallelAfter == 0 {
		r.opts.ParallelAfter = DefaultParallelAfter
	}
	if opts.Mmap {
		m, ok := f.(vfs.Mappable)
		if !ok {
			return nil, base.InvalidArgumentf("fileio: %s cannot be memory-mapped", name)
		}
		data, err := m.Map()
		if err != nil {
			return nil, errors.Wrapf(err, "fileio: mapping %s", name)
		}
		if int64(len(data)) < size {
			_ = m.Unmap()
			return nil, base.CorruptionErrorf("fileio: %s: mapped %d bytes, expected %d", name, len(data), size)
		}
		r.mapped = data[:size:size]
	}
	return r, nil
}

// Open opens name on fs and returns a Reader over it.
func Open(fs vfs.FS, name string, opts Options) (*Reader, error) {
	f, err := fs.Open(name)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, errors.Wrapf(err, "fileio: stat %s", name)
	}
	r, err := NewReader(f, name, info.Size(), opts)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return r, nil
}

// Name returns the file's name.
func (r *Reader) Name() string { return r.name }

// Size returns the file's size.
func (r *Reader) Size() int64 { return r.size }

// Mapped reports whether reads slice a memory mapping. Slices returned by a
// mapped reader point into the mapping and stay valid until Close.
func (r *Reader) Mapped() bool { return r.mapped != nil }

// BytesRead returns the bytes this reader has read so far.
func (r *Reader) BytesRead() int64 { return r.bytesRead.Load() }

// Close unmaps and closes the file.
func (r *Reader) Close() error {
	var err error
	if r.mapped != nil {
		err = r.file.(vfs.Mappable).Unmap()
		r.mapped = nil
	}
	return errors.CombineErrors(err, r.file.Close())
}

// Read reads n bytes at off. The result is scratch[:n] (scratch must hold n
// bytes) or, for a mapped file, a slice of the mapping; scratch may be nil
// then. See the package doc for what a read does.
func (r *Reader) Read(ctx context.Context, opts ioctx.IOOptions, off int64, n int, scratch []byte) ([]byte, error) {
	start, err := r.begin(ctx, &opts, off, n)
	if err != nil {
		return nil, err
	}
	sw := r.opts.Stats.StartStopWatch(statistics.SSTReadMicros, statistics.FileReadHistogram(opts.Activity.RocksDBValue()))
	obs := r.observe(opts, &sw)
	result, err := r.read(ctx, &sw, &obs, opts, off, n, scratch)
	us := sw.Stop()
	if err == nil && opts.Timeout > 0 {
		err = r.checkTimeout(start, opts.Timeout, off, n)
	}
	if err != nil {
		obs.done(0, us, false)
		return nil, err
	}
	obs.done(n, us, false)
	r.account(n)
	return result, nil
}

func (r *Reader) read(ctx context.Context, sw *statistics.StopWatch, obs *observer, opts ioctx.IOOptions, off int64, n int, scratch []byte) ([]byte, error) {
	if off < 0 || n < 0 || off > r.size || int64(n) > r.size-off {
		return nil, base.CorruptionErrorf("fileio: %s: read of %d bytes at offset %d is beyond the file's %d bytes",
			r.name, n, off, r.size)
	}
	if r.mapped != nil {
		// The mapping needs no copy, but the read is still charged.
		if err := r.charge(ctx, opts, sw, obs, off, n, nil); err != nil {
			return nil, err
		}
		return r.mapped[off : off+int64(n) : off+int64(n)], nil
	}
	if len(scratch) < n {
		return nil, base.AssertionFailedf("fileio: scratch of %d bytes for a read of %d", len(scratch), n)
	}
	// Read each granted piece before asking for the next, as RocksDB does.
	err := r.charge(ctx, opts, sw, obs, off, n, func(pos, size int) error {
		got, err := vfs.ReadAtOptions(r.file, opts, scratch[pos:pos+size], off+int64(pos))
		if !complete(got, size, err) {
			return r.readError(err, off, n, pos+got)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return scratch[:n:n], nil
}

// charged reports whether a read with opts is charged to the limiter.
func (r *Reader) charged(opts ioctx.IOOptions) bool {
	return r.opts.Limiter != nil && opts.RateLimiterPriority.Charged() && r.opts.Limiter.IsRateLimited(ratelimit.OpRead)
}

func (r *Reader) account(n int) {
	r.bytesRead.Add(int64(n))
	r.opts.Stats.RecordTick(r.bytesTicker, uint64(n))
	r.opts.Stats.RecordTick(r.countTicker, 1)
}

func (r *Reader) checkTimeout(start time.Time, timeout time.Duration, off int64, n int) error {
	if took := time.Since(start); took > timeout {
		return errors.WithStack(errclass.Timeout(fmt.Sprintf(
			"read of %d bytes at offset %d of %s took %s, longer than its IO timeout %s", n, off, r.name, took, timeout)))
	}
	return nil
}

func (r *Reader) ctxError(err error, off int64, n int) error {
	return errors.Wrapf(err, "fileio: read of %d bytes at offset %d of %s", n, off, r.name)
}

// limiterError reports a failed rate-limiter wait: the caller's context, the
// IO timeout (the wait's own deadline), or a closed limiter.
func (r *Reader) limiterError(ctx context.Context, err error, off int64, n int) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
		err = cause
	}
	return errors.Wrapf(err, "fileio: rate limiter wait for a read of %d bytes at offset %d of %s", n, off, r.name)
}

func (r *Reader) readError(err error, off int64, n, got int) error {
	if err == nil || err == io.EOF {
		return base.CorruptionErrorf("fileio: %s: short read of %d bytes at offset %d: got %d (file truncated?)",
			r.name, n, off, got)
	}
	return errors.Wrapf(err, "fileio: read of %d bytes at offset %d of %s", n, off, r.name)
}

// complete reports whether a ReadAt that returned got bytes and err read all
// of want: io.ReaderAt may report io.EOF along with a full read that ends at
// the end of the file.
func complete(got, want int, err error) bool {
	return got == want && (err == nil || err == io.EOF)
}

// timeIfTimeout reads the clock only when the read has a timeout to check.
func timeIfTimeout(opts ioctx.IOOptions) time.Time {
	if opts.Timeout > 0 {
		return time.Now()
	}
	return time.Time{}
}

// begin checks, before a read of n bytes at off, ctx and the request's
// deadline (opts.Deadline), lowering opts.Timeout to the time left before
// it, as RocksDB's file reader does with ReadOptions::deadline; it returns
// the read's start for the timeout check, read from the clock only when
// the read has a timeout or a deadline (one clock read serves both).
func (r *Reader) begin(ctx context.Context, opts *ioctx.IOOptions, off int64, n int) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, r.ctxError(err, off, n)
	}
	if opts.Deadline.IsZero() {
		return timeIfTimeout(*opts), nil
	}
	now := time.Now()
	left := opts.Deadline.Sub(now)
	if left <= 0 {
		return time.Time{}, r.ctxError(ioctx.CheckDeadline(opts.Deadline), off, n)
	}
	if opts.Timeout == 0 || left < opts.Timeout {
		opts.Timeout = left
	}
	return now, nil
}
