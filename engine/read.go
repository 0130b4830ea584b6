package engine

import (
	"context"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/readpath"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
)

// Reads follow one pattern (RocksDB #11444): the call's ReadOptions are
// resolved once, at the API boundary, by the façade (ioctx.ResolveRead) —
// taken from the context, checked (the activity must be Unknown or the
// API's own) and tagged, the deadline turned into the IO timeout — and the
// driver connection (conn, driverSnapshot, driverTx) receives the resulting
// request, starts the call (startRead) and runs the implementation with it.
// Internal callers (transactions, conflict checks) call the implementations
// with their own caller's request.

// readLatest asks an implementation to read at the latest visible write. It
// is above every real sequence number, so a snapshot at 0 (an empty
// database) is not mistaken for it.
const readLatest = ^base.SeqNum(0)

// readCall is a read under way: its resolved request, passed down by value
// as the table reads' environment, and the caller's context to check. A
// deadline of the request that the context does not carry stays in the
// request (env.Deadline, env.IO.Deadline), checked by value before each
// table and file read, as RocksDB checks ReadOptions::deadline: deriving a
// context for it cost a Get four allocations.
type readCall struct {
	ctx context.Context
	env ioctx.ReadRequest
	// rs, when set, is the read state to read instead of the current one:
	// a secondary's snapshot keeps the state it was taken in (see
	// readStateFor).
	rs *readState
}

// startRead starts a read whose request, call.env, is resolved: the
// database must be open. A deadline the context does not carry is checked
// by value along the read path (before each table and each file read), so
// it costs no allocation.
func (d *database) startRead(ctx context.Context, call *readCall) error {
	if err := d.checkOpen(); err != nil {
		return err
	}
	call.ctx = ctx
	return nil
}

func (d *database) checkOpen() error {
	if d.closedFlag.Load() {
		return base.Mark(errors.New("engine: database is closed"), ErrClosed)
	}
	return nil
}

// getCopyImpl is getImpl returning a copy of the value, the one allocation
// of a copying Get.
func (d *database) getCopyImpl(call *readCall, key []byte, seq base.SeqNum) ([]byte, error) {
	v, err := d.getImpl(call, key, seq)
	if err != nil {
		return nil, err
	}
	out := append(make([]byte, 0, len(v.Data)), v.Data...)
	v.Release()
	return out, nil
}

// pinnedValue is a value read without copying: Data points into the block
// cache, a memory-mapped table or the Go heap, and stays valid until
// Release, which must be called exactly once. A value found in memory
// outside the Go heap that the engine unmaps on its own schedule (a
// memtable's mapped arena, the block cache's off-heap region) is copied
// into a Go heap buffer the pinnedValue holds, so that Data never points
// into memory the engine may unmap while a caller still holds it.
type pinnedValue struct {
	Data []byte
	v    readpath.Value
	rs   *readState
	// buf holds Data when it is such a copy, of generation bufGen;
	// Release recycles it.
	buf    *pinnedBuf
	bufGen uint32
}

// Release unpins the value.
func (p *pinnedValue) Release() {
	p.v.Release()
	if p.rs != nil {
		p.rs.unref()
		p.rs = nil
	}
	if p.buf != nil {
		p.buf.release(p.bufGen)
		p.buf = nil
	}
	p.Data = nil
}

// valueSizeImpl is the size of key's value at seq, read pinned and
// released: no copy, and no allocation on a cached hit.
func (d *database) valueSizeImpl(call *readCall, key []byte, seq base.SeqNum) (int, error) {
	v, err := d.getImpl(call, key, seq)
	if err != nil {
		return 0, err
	}
	n := len(v.Data)
	v.Release()
	return n, nil
}

// getPinnedImpl is getImpl for a value handed out pinned, beyond the
// engine's control: a value found in memory outside the Go heap that the
// engine unmaps on its own schedule (a memtable's mapped arena, the block
// cache's off-heap region; see readState.offHeap) is copied into a Go heap
// buffer recycled through the database's pinnedBufs, so that the value
// stays valid until Release, also after the database is closed. Other
// values stay where they are: a block on the Go heap, kept alive by the
// value itself, or a memory-mapped table, which the value's table
// reference and read state keep mapped.
func (d *database) getPinnedImpl(call *readCall, key []byte, seq base.SeqNum) (pinnedValue, error) {
	v, err := d.getImpl(call, key, seq)
	if err != nil || !v.rs.offHeap(v.Data) {
		return v, err
	}
	pb, gen := newPinnedBuf(&d.pinnedBufs, v.Data)
	v.Release()
	return pinnedValue{Data: pb.b[:len(pb.b):len(pb.b)], buf: pb, bufGen: gen}, nil
}

// readSeq resolves readLatest to the latest visible write. Readers call it
// after loadReadState, so every write it makes visible is in the state's
// memtables.
func (d *database) readSeq(seq base.SeqNum) base.SeqNum {
	if seq == readLatest {
		return base.SeqNum(d.visibleSeq.Load())
	}
	return seq
}

// getImpl reads key at seq (readLatest: the latest visible write). The caller's tag
// is kept.
func (d *database) getImpl(call *readCall, key []byte, seq base.SeqNum) (pinnedValue, error) {
	// A one-word timer, not a StopWatch: DBGet is its only histogram.
	timer := d.stats.StartGet()
	rs, err := d.readStateFor(call)
	if err != nil {
		return pinnedValue{}, err
	}
	seq = d.readSeq(seq)
	// The Get's tickers and its DBGet sample are recorded together, in one
	// shard access (readpath.Get stops the timer).
	v, err := readpath.Get(call.ctx, &rs.view, call.env, key, seq, &timer)
	if err != nil {
		rs.unref()
		return pinnedValue{}, err
	}
	return pinnedValue{Data: v.Data, v: v, rs: rs}, nil
}

func (d *database) multiGetImpl(call *readCall, keys [][]byte, seq base.SeqNum) ([][]byte, error) {
	sw := d.stats.StartStopWatch(statistics.DBMultiGet, statistics.HistogramNone)
	defer sw.Stop()
	rs, err := d.readStateFor(call)
	if err != nil {
		return nil, err
	}
	defer rs.unref()
	seq = d.readSeq(seq)
	results := make([]readpath.Result, len(keys))
	err = readpath.MultiGet(call.ctx, &rs.view, call.env, keys, seq, results)
	for i := range results {
		if r := &results[i]; err == nil && r.Err != nil {
			err = errors.Wrapf(r.Err, "engine: MultiGet of key %q", keys[i])
		}
	}
	var out [][]byte
	if err == nil {
		out = make([][]byte, len(keys))
		copyValues(results, out)
	}
	for i := range results {
		results[i].Value.Release()
	}
	return out, err
}

// Found values up to sharedValueMax bytes are copied into shared chunks of
// up to sharedChunkBytes: a batch of small values costs an allocation a
// chunk, not one a key (16 of a MultiGet(16)'s 18). A caller that keeps one
// value keeps its chunk, at most sharedChunkBytes; larger values get an
// allocation of their own, so they are never kept by a small one.
const (
	sharedValueMax   = 4 << 10
	sharedChunkBytes = 64 << 10
)

// copyValues sets out[i] to a copy of each found result's value, with its
// capacity ending where it does, so that appending to one value cannot
// overwrite the next. A found empty value is a non-nil empty slice.
func copyValues(results []readpath.Result, out [][]byte) {
	small := 0 // bytes of small values not yet copied
	for i := range results {
		if r := &results[i]; r.Found && len(r.Value.Data) <= sharedValueMax {
			small += len(r.Value.Data)
		}
	}
	var chunk []byte
	for i := range results {
		r := &results[i]
		v := r.Value.Data
		switch {
		case !r.Found:
		case len(v) == 0:
			out[i] = []byte{}
		case len(v) > sharedValueMax:
			out[i] = append(make([]byte, 0, len(v)), v...)
		default:
			if cap(chunk)-len(chunk) < len(v) {
				chunk = make([]byte, 0, min(small, sharedChunkBytes))
			}
			off := len(chunk)
			chunk = append(chunk, v...)
			out[i] = chunk[off:len(chunk):len(chunk)]
			small -= len(v)
		}
	}
}

// Statistics returns the database's statistics, or nil when they are
// disabled.
func (d *database) Statistics() *statistics.Statistics { return d.stats }

func (d *database) verifyChecksumImpl(call *readCall) error {
	rs, err := d.loadReadState()
	if err != nil {
		return err
	}
	defer rs.unref()
	return d.secondaryVerifyErr(readpath.VerifyChecksum(call.ctx, d.readEnv(), &rs.view, call.env))
}

func (d *database) verifyFileChecksumsImpl(call *readCall) error {
	rs, err := d.loadReadState()
	if err != nil {
		return err
	}
	defer rs.unref()
	return d.secondaryVerifyErr(readpath.VerifyFileChecksums(call.ctx, d.readEnv(), &rs.view, call.env))
}

func (d *database) readEnv() *readpath.Env {
	return &readpath.Env{FS: d.fs, Dir: d.dirname, Stats: d.stats, Limiter: d.opts.RateLimiter, Mmap: d.opts.MmapReads,
		Comparer: d.opts.Comparer}
}
