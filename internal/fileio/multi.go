package fileio

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/iobatch"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
)

// ReadRequest is one range of a MultiRead or ReadAsync.
type ReadRequest struct {
	Offset int64
	Len    int
	// Scratch receives the bytes; it must hold Len bytes unless the reader is
	// mapped.
	Scratch []byte

	// Result is set by the read: Scratch[:Len] or a slice of the mapping.
	Result []byte
	// Err is the request's own error.
	Err error
}

// MultiRead reads several ranges of the file in one call, in the order given.
// Requests must not overlap and must be sorted by offset; MultiGet coalesces
// neighbouring blocks into one request before calling it. It charges the rate
// limiter for the sum of the lengths in burst-sized pieces (waits count in the
// latency sample, as in RocksDB), records one sample for the whole call and
// the batch size in MultiGetIOBatchSize. Each request's outcome is in its Err;
// the returned error is the first of them, or the error that stopped the call
// before any read (a done context, a failed limiter wait).
func (r *Reader) MultiRead(ctx context.Context, opts ioctx.IOOptions, reqs []ReadRequest) error {
	if len(reqs) == 0 {
		return nil
	}
	start, err := r.begin(ctx, &opts, reqs[0].Offset, reqs[0].Len)
	if err != nil {
		return err
	}
	for i := range reqs {
		q := &reqs[i]
		q.Result, q.Err = nil, nil
		if i > 0 && q.Offset < reqs[i-1].Offset+int64(reqs[i-1].Len) {
			return base.AssertionFailedf("fileio: MultiRead requests overlap or are unsorted at %d", i)
		}
	}
	sw := r.opts.Stats.StartStopWatch(statistics.SSTReadMicros, statistics.FileReadHistogram(opts.Activity.RocksDBValue()))
	obs := r.observe(opts, &sw)
	err = r.charge(ctx, opts, nil, &obs, reqs[0].Offset, totalLen(reqs), nil)
	read := 0
	if err == nil {
		r.readAll(opts, reqs)
		for i := range reqs {
			q := &reqs[i]
			if q.Err == nil {
				r.account(q.Len)
				read += q.Len
			} else if err == nil {
				err = q.Err
			}
		}
	}
	us := sw.Stop()
	obs.done(read, us, true)
	r.opts.Stats.RecordInHistogram(statistics.MultiGetIOBatchSize, uint64(len(reqs)))
	if err == nil && opts.Timeout > 0 {
		if err = r.checkTimeout(start, opts.Timeout, reqs[0].Offset, totalLen(reqs)); err != nil {
			for i := range reqs {
				reqs[i].Result, reqs[i].Err = nil, err
			}
		}
	}
	return err
}

// parallelMinRequests is the smallest MultiRead whose requests may be read
// in parallel, and maxParallelReads bounds the goroutines one MultiRead uses.
// Below the threshold a goroutine's start costs more than the reads it would
// overlap.
const (
	parallelMinRequests = 4
	maxParallelReads    = 4
)

// readAll reads every request. A file with an iobatch.Reader reads them in
// one call where it can (see readBatch). Otherwise readAll reads the first
// one alone and times it:
// when that took at least Options.ParallelAfter, the file is on a device
// whose latency overlapping hides, and up to maxParallelReads goroutines read
// the rest (RocksDB's MultiRead overlaps them with io_uring). Otherwise the
// rest are read in turn: on the page cache a read can cost less than
// handing it to another goroutine and waking that goroutine, so reading in
// parallel can be slower (BenchmarkMultiRead compares the two). A mapped
// file needs no reading.
func (r *Reader) readAll(opts ioctx.IOOptions, reqs []ReadRequest) {
	if r.readBatch(opts, reqs) {
		return
	}
	workers := min(len(reqs)-1, maxParallelReads, runtime.GOMAXPROCS(0))
	if r.mapped != nil || len(reqs) < parallelMinRequests || workers < 2 || r.opts.ParallelAfter < 0 {
		for i := range reqs {
			reqs[i].Result, reqs[i].Err = r.readRequest(opts, &reqs[i])
		}
		return
	}
	start := time.Now()
	reqs[0].Result, reqs[0].Err = r.readRequest(opts, &reqs[0])
	rest := reqs[1:]
	if time.Since(start) < r.opts.ParallelAfter {
		for i := range rest {
			rest[i].Result, rest[i].Err = r.readRequest(opts, &rest[i])
		}
		return
	}
	var next atomic.Int32
	work := func() {
		for {
			i := int(next.Add(1)) - 1
			if i >= len(rest) {
				return
			}
			rest[i].Result, rest[i].Err = r.readRequest(opts, &rest[i])
		}
	}
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
}

// batchPool recycles the iobatch.Read slices of readBatch.
var batchPool = sync.Pool{New: func() any { return new([]iobatch.Read) }}

// readBatch reads reqs with one iobatch.Reader call and reports whether it
// did. On Linux the OS file's batch is one io_uring_enter instead of a pread
// per request: on a VM, where a system call costs microseconds, that is most
// of the CPU time of reading cached blocks. It leaves to the request-by-request
// path (and reports false) a single request, a mapped file, a read with a
// timeout (checked per request), a request readRequest would refuse without
// reading (it gives the error), and a batch the file declines; nothing is
// set then.
func (r *Reader) readBatch(opts ioctx.IOOptions, reqs []ReadRequest) bool {
	br, ok := r.file.(iobatch.Reader)
	if !ok || r.mapped != nil || len(reqs) < 2 || opts.Timeout != 0 {
		return false
	}
	bp := batchPool.Get().(*[]iobatch.Read)
	defer batchPool.Put(bp)
	batch := (*bp)[:0]
	defer func() {
		clear(batch) // the pooled slice must not keep the buffers alive
		*bp = batch[:0]
	}()
	for i := range reqs {
		q := &reqs[i]
		if !r.inBounds(q) || len(q.Scratch) < q.Len {
			return false
		}
		batch = append(batch, iobatch.Read{P: q.Scratch[:q.Len:q.Len], Off: q.Offset})
	}
	if !br.ReadAtBatch(opts, batch) {
		return false
	}
	for i := range reqs {
		q, b := &reqs[i], &batch[i]
		if complete(b.N, q.Len, b.Err) {
			q.Result, q.Err = q.Scratch[:q.Len:q.Len], nil
		} else {
			q.Result, q.Err = nil, r.readError(b.Err, q.Offset, q.Len, b.N)
		}
	}
	return true
}

// inBounds reports whether q lies within the file.
func (r *Reader) inBounds(q *ReadRequest) bool {
	return q.Offset >= 0 && q.Len >= 0 && q.Offset <= r.size && int64(q.Len) <= r.size-q.Offset
}

func (r *Reader) readRequest(opts ioctx.IOOptions, q *ReadRequest) ([]byte, error) {
	if !r.inBounds(q) {
		return nil, base.CorruptionErrorf("fileio: %s: read of %d bytes at offset %d is beyond the file's %d bytes",
			r.name, q.Len, q.Offset, r.size)
	}
	end := q.Offset + int64(q.Len)
	if r.mapped != nil {
		return r.mapped[q.Offset:end:end], nil
	}
	if len(q.Scratch) < q.Len {
		return nil, base.AssertionFailedf("fileio: scratch of %d bytes for a read of %d", len(q.Scratch), q.Len)
	}
	got, err := vfs.ReadAtOptions(r.file, opts, q.Scratch[:q.Len], q.Offset)
	if !complete(got, q.Len, err) {
		return nil, r.readError(err, q.Offset, q.Len, got)
	}
	return q.Scratch[:q.Len:q.Len], nil
}

func totalLen(reqs []ReadRequest) int {
	n := 0
	for i := range reqs {
		n += reqs[i].Len
	}
	return n
}

// ReadAsync submits a read of req and returns at once; done is called, on
// another goroutine, once the read has finished (req.Result and req.Err are
// set then). The latency sample in SSTReadMicros and the activity's histogram
// is the time to submit the read, as in RocksDB; ReadAsyncMicros counts the
// same time, AsyncReadBytes the bytes of each successful read and
// AsyncReadErrorCount the failures. The read itself is charged to the rate
// limiter on the reading goroutine, its wait bounded by ctx and by the IO
// timeout as every read's is (see charge). If ReadAsync returns an error,
// done is not called.
func (r *Reader) ReadAsync(ctx context.Context, opts ioctx.IOOptions, req *ReadRequest, done func(*ReadRequest)) error {
	if err := ctx.Err(); err != nil {
		return r.ctxError(err, req.Offset, req.Len)
	}
	req.Result, req.Err = nil, nil
	sw := r.opts.Stats.StartStopWatch(statistics.SSTReadMicros, statistics.FileReadHistogram(opts.Activity.RocksDBValue()))
	go r.completeAsync(ctx, opts, req, done)
	r.opts.Stats.RecordTick(statistics.ReadAsyncMicros, sw.Stop())
	return nil
}

func (r *Reader) completeAsync(ctx context.Context, opts ioctx.IOOptions, req *ReadRequest, done func(*ReadRequest)) {
	start, err := r.begin(ctx, &opts, req.Offset, req.Len)
	obs := r.observe(opts, nil)
	if err == nil {
		err = r.charge(ctx, opts, nil, &obs, req.Offset, req.Len, nil)
	}
	if err == nil {
		req.Result, err = r.readRequest(opts, req)
	}
	if err == nil && opts.Timeout > 0 {
		err = r.checkTimeout(start, opts.Timeout, req.Offset, req.Len)
	}
	if err != nil {
		req.Result, req.Err = nil, err
		if !errors.Is(err, context.Canceled) {
			r.opts.Stats.RecordTick(statistics.AsyncReadErrorCount, 1)
		}
		obs.done(0, 0, false)
	} else {
		obs.done(req.Len, 0, false)
		r.account(req.Len)
		r.opts.Stats.RecordInHistogram(statistics.AsyncReadBytes, uint64(req.Len))
	}
	done(req)
}

// prefetcher is implemented by files that accept a readahead hint.
type prefetcher interface {
	Prefetch(off, n int64) error
}

// Prefetch hints that [off, off+n) will be read soon. Like RocksDB's, it is
// neither charged nor timed; files that take no hints ignore it.
func (r *Reader) Prefetch(ctx context.Context, opts ioctx.IOOptions, off int64, n int) error {
	if err := ctx.Err(); err != nil {
		return r.ctxError(err, off, n)
	}
	if r.mapped != nil {
		return nil
	}
	if p, ok := r.file.(prefetcher); ok {
		return p.Prefetch(off, int64(n))
	}
	return nil
}
