package etcd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/ratelimit"
	"github.com/shaledb/shale/statistics"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/peer"
)

// conn is a DB's connection: one namespace of one cluster, through a client
// that it may share with other conns. It is safe for concurrent use.
type conn struct {
	cfg    *Config
	client *clientv3.Client
	// kv is the client's KV service at the protobuf level: requests are
	// built here, so their exact size is known before they are sent, and
	// responses are used without conversion.
	kv       pb.KVClient
	callOpts []grpc.CallOption

	// prefix is the namespace and a zero byte: every key of the DB is
	// stored as prefix+key. end is the first key after all of them.
	prefix, end []byte

	stats   *statistics.Statistics
	limiter *ratelimit.Generic
	pins    pins

	// owner, when set, is closed by Close: a connection from Driver.Open
	// owns its connector (and so its client).
	owner io.Closer
}

var (
	_ driver.DriverConn    = (*conn)(nil)
	_ driver.MultiGetter   = (*conn)(nil)
	_ driver.Flusher       = (*conn)(nil)
	_ driver.Compacter     = (*conn)(nil)
	_ driver.Verifier      = (*conn)(nil)
	_ driver.TxBeginner    = (*conn)(nil)
	_ driver.StatsReporter = (*conn)(nil)
)

// grpcOverheadBytes is what etcd allows a gRPC message beyond
// --max-request-bytes (its embed.grpcOverheadBytes).
const grpcOverheadBytes = 512 << 10

// raftOverheadBytes bounds what etcd adds to a write request before it
// compares the request's size with --max-request-bytes: the
// InternalRaftRequest envelope and its header (request ID, auth revision,
// user name; the name's length is added separately).
const raftOverheadBytes = 64

func newConn(cfg *Config, client *clientv3.Client, stats *statistics.Statistics, limiter *ratelimit.Generic) *conn {
	prefix := append([]byte(cfg.Namespace), 0)
	end := append([]byte(cfg.Namespace), 1)
	return &conn{
		cfg:    cfg,
		client: client,
		kv:     clientv3.RetryKVClient(client),
		callOpts: []grpc.CallOption{
			// Fail at once, rather than wait for request_timeout, when
			// no member has a connection: every endpoint refused, or
			// none connected within dial_timeout (the client's
			// MinConnectTimeout). A write that fails so reached no
			// member, and is reported as not applied.
			grpc.WaitForReady(false),
			grpc.MaxCallSendMsgSize(int(min(cfg.MaxRequestBytes+grpcOverheadBytes, math.MaxInt32))),
			grpc.MaxCallRecvMsgSize(math.MaxInt32),
		},
		prefix:  prefix,
		end:     end,
		stats:   stats,
		limiter: limiter,
	}
}

// key returns the etcd key of the DB's key k, in a new slice.
func (c *conn) key(k []byte) []byte {
	out := make([]byte, 0, len(c.prefix)+len(k))
	return append(append(out, c.prefix...), k...)
}

// userKey returns the DB's key of an etcd key of the namespace.
func (c *conn) userKey(k []byte) []byte { return k[len(c.prefix):] }

// rpcContext returns the context of one RPC made for ctx: it carries
// require_leader when configured and expires at the earliest of ctx's
// deadline, request_timeout, timeout (a read's IO timeout; 0 for none) and
// deadline (a read's deadline that ctx does not carry; zero for none).
func (c *conn) rpcContext(ctx context.Context, timeout time.Duration, deadline time.Time) (context.Context, context.CancelFunc) {
	if t := c.cfg.RequestTimeout; t > 0 {
		deadline = earlier(deadline, time.Now().Add(t))
	}
	ctx, cancel := withDeadline(ctx, timeout, deadline)
	if c.cfg.RequireLeader {
		ctx = clientv3.WithRequireLeader(ctx)
	}
	return ctx, cancel
}

// withDeadline returns ctx expiring at the earlier of deadline (zero: none)
// and timeout from now (0: none); ctx itself when neither is set.
func withDeadline(ctx context.Context, timeout time.Duration, deadline time.Time) (context.Context, context.CancelFunc) {
	if timeout > 0 {
		deadline = earlier(deadline, time.Now().Add(timeout))
	}
	if deadline.IsZero() {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, deadline)
}

// earlier returns the earlier of a and b, a zero time meaning none.
func earlier(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

// readRange runs one Range for a read with req, timed as the read's IO and
// its response charged to the rate limiter at the read's priority.
func (c *conn) readRange(ctx context.Context, req ioctx.ReadRequest, op string, r *pb.RangeRequest) (*pb.RangeResponse, error) {
	rctx, cancel := c.rpcContext(ctx, req.IO.Timeout, req.Deadline)
	defer cancel()
	sw := c.startRead(req.IO)
	resp, err := c.kv.Range(rctx, r, c.callOpts...)
	sw.Stop()
	if err != nil {
		return nil, rpcError(ctx, rctx, op, err, readRPC)
	}
	c.pins.observe(resp.GetHeader().GetRevision())
	if err := c.chargeResponse(ctx, req, op, resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// readTxn runs one read-only Txn (a MultiGet chunk), as readRange does.
func (c *conn) readTxn(ctx context.Context, req ioctx.ReadRequest, op string, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	rctx, cancel := c.rpcContext(ctx, req.IO.Timeout, req.Deadline)
	defer cancel()
	sw := c.startRead(req.IO)
	resp, err := c.kv.Txn(rctx, r, c.callOpts...)
	sw.Stop()
	if err != nil {
		return nil, rpcError(ctx, rctx, op, err, readRPC)
	}
	c.pins.observe(resp.GetHeader().GetRevision())
	if err := c.chargeResponse(ctx, req, op, resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// chargeResponse charges a response's wire size, computed only when the
// read is charged. The wait is bounded by ctx and the read's own deadline
// and IO timeout, as the engine bounds its file reads' waits, not by
// request_timeout, which bounds RPCs.
func (c *conn) chargeResponse(ctx context.Context, req ioctx.ReadRequest, op string, resp message) error {
	if c.limiter == nil || !req.IO.RateLimiterPriority.Charged() {
		return nil
	}
	wctx, cancel := withDeadline(ctx, req.IO.Timeout, req.Deadline)
	defer cancel()
	if err := c.charge(wctx, req.IO, messageSize(resp)); err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return newError("etcd: "+op, err)
	}
	return nil
}

// errNotFound is Get's error for an absent key, built once.
var errNotFound = newError("etcd: key not found", nil, driver.ErrNotFound)

// emptyValue is the value of a found key whose value is empty: etcd returns
// nil for it, and a found value must not be nil. It has no capacity, so no
// caller can write through it.
var emptyValue = []byte{}

// valueOf returns a found kv's value, never nil.
func valueOf(kv *mvccpb.KeyValue) []byte {
	if kv.Value == nil {
		return emptyValue[:0:0]
	}
	return kv.Value
}

// getAt reads key at rev (0: the latest) and returns its kv, nil when
// absent.
func (c *conn) getAt(ctx context.Context, req ioctx.ReadRequest, op string, key []byte, rev int64) (*mvccpb.KeyValue, int64, error) {
	resp, err := c.readRange(ctx, req, op, &pb.RangeRequest{Key: c.key(key), Revision: rev})
	if err != nil {
		return nil, 0, err
	}
	if len(resp.Kvs) == 0 {
		return nil, resp.GetHeader().GetRevision(), nil
	}
	return resp.Kvs[0], resp.GetHeader().GetRevision(), nil
}

// Get reads key with one Range. The returned value is the response's own
// slice, which nothing else holds.
func (c *conn) Get(ctx context.Context, req ioctx.ReadRequest, key []byte) ([]byte, error) {
	return c.getValue(ctx, req, "Get", key, 0)
}

// getValue is timedGet returning the value, or errNotFound.
func (c *conn) getValue(ctx context.Context, req ioctx.ReadRequest, op string, key []byte, rev int64) ([]byte, error) {
	kv, err := c.timedGet(ctx, req, op, key, rev)
	switch {
	case err != nil:
		return nil, err
	case kv == nil:
		return nil, errNotFound
	}
	return valueOf(kv), nil
}

// timedGet is getAt recording the engine's Get statistics: the DBGet
// latency, NumberKeysRead, and the value's bytes in BytesRead and
// BytesPerRead (0 when not found).
func (c *conn) timedGet(ctx context.Context, req ioctx.ReadRequest, op string, key []byte, rev int64) (*mvccpb.KeyValue, error) {
	sw := c.stats.StartStopWatch(statistics.DBGet, statistics.HistogramNone)
	kv, _, err := c.getAt(ctx, req, op, key, rev)
	sw.Stop()
	c.stats.RecordTick(statistics.NumberKeysRead, 1)
	var n int
	if kv != nil {
		n = len(kv.Value)
		c.stats.RecordTick(statistics.BytesRead, uint64(n))
	}
	c.stats.RecordInHistogram(statistics.BytesPerRead, uint64(n))
	return kv, err
}

// MultiGet reads keys with Txns of at most max_txn_ops Ranges, all at the
// revision of the first, so the result is one snapshot.
func (c *conn) MultiGet(ctx context.Context, req ioctx.ReadRequest, keys [][]byte) ([][]byte, error) {
	return c.multiGetValues(ctx, req, keys, 0)
}

// multiGetValues is timedMultiGet returning the values, nil for a key not
// found.
func (c *conn) multiGetValues(ctx context.Context, req ioctx.ReadRequest, keys [][]byte, rev int64) ([][]byte, error) {
	kvs, err := c.timedMultiGet(ctx, req, keys, rev)
	if err != nil {
		return nil, err
	}
	vals := make([][]byte, len(keys))
	for i, kv := range kvs {
		if kv != nil {
			vals[i] = valueOf(kv)
		}
	}
	return vals, nil
}

// timedMultiGet is multiGetAt recording the engine's MultiGet statistics:
// the DBMultiGet latency, the calls, keys read and found, and the bytes
// found in NumberMultiGetBytesRead and BytesPerMultiGet.
func (c *conn) timedMultiGet(ctx context.Context, req ioctx.ReadRequest, keys [][]byte, rev int64) ([]*mvccpb.KeyValue, error) {
	sw := c.stats.StartStopWatch(statistics.DBMultiGet, statistics.HistogramNone)
	kvs, err := c.multiGetAt(ctx, req, keys, rev)
	sw.Stop()
	var found, n uint64
	for _, kv := range kvs {
		if kv != nil {
			found++
			n += uint64(len(kv.Value))
		}
	}
	c.stats.RecordTick(statistics.NumberMultiGetCalls, 1)
	c.stats.RecordTick(statistics.NumberMultiGetKeysRead, uint64(len(keys)))
	c.stats.RecordTick(statistics.NumberMultiGetKeysFound, found)
	c.stats.RecordTick(statistics.NumberMultiGetBytesRead, n)
	c.stats.RecordInHistogram(statistics.BytesPerMultiGet, n)
	return kvs, err
}

// multiGetAt reads keys at rev (0: the latest) and returns one kv per key,
// nil for an absent one. Each Range of a Txn has its own response, so
// duplicate keys get values of their own.
func (c *conn) multiGetAt(ctx context.Context, req ioctx.ReadRequest, keys [][]byte, rev int64) ([]*mvccpb.KeyValue, error) {
	out := make([]*mvccpb.KeyValue, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	var pn *pin
	defer func() { c.pins.remove(pn) }()
	for start := 0; start < len(keys); {
		end := c.chunkEnd(keys, start)
		if rev == 0 && end < len(keys) {
			// More than one Txn: the later ones read at the first's
			// revision, which must survive a Compact of this DB meanwhile.
			pn = c.pins.add()
		}
		ops := make([]*pb.RequestOp, 0, end-start)
		for _, k := range keys[start:end] {
			ops = append(ops, &pb.RequestOp{Request: &pb.RequestOp_RequestRange{
				RequestRange: &pb.RangeRequest{Key: c.key(k), Revision: rev}}})
		}
		resp, err := c.readTxn(ctx, req, "MultiGet", &pb.TxnRequest{Success: ops})
		if err != nil {
			return nil, err
		}
		if len(resp.Responses) != end-start {
			return nil, fmt.Errorf("etcd: MultiGet: a Txn of %d Ranges returned %d responses", end-start, len(resp.Responses))
		}
		if rev == 0 {
			rev = resp.GetHeader().GetRevision()
			if pn != nil {
				c.pins.resolve(pn, rev)
			}
		}
		for i, r := range resp.Responses {
			if kvs := r.GetResponseRange().GetKvs(); len(kvs) > 0 {
				out[start+i] = kvs[0]
			}
		}
		start = end
	}
	return out, nil
}

// chunkEnd returns the end of the MultiGet chunk that starts at keys[start]:
// at most max_txn_ops keys, and at most max_request_bytes of them (at least
// one key).
func (c *conn) chunkEnd(keys [][]byte, start int) int {
	end, size := start, int64(0)
	for end < len(keys) && end-start < c.cfg.MaxTxnOps {
		size += int64(len(c.prefix)+len(keys[end])) + 16
		if end > start && size > c.cfg.MaxRequestBytes {
			break
		}
		end++
	}
	return end
}

// write runs one write RPC, which must pass opts to the call, and records
// its statistics: keys written and their bytes. opts hold the connection's
// call options and a grpc.Peer, which gRPC fills in once an attempt of the
// RPC has a connection to a member: a failed write whose peer is still
// empty never left the client, and is reported as not applied.
func (c *conn) write(ctx context.Context, op string, keys, bytes int,
	rpc func(ctx context.Context, opts []grpc.CallOption) error) error {
	sw := c.stats.StartStopWatch(statistics.DBWrite, statistics.HistogramNone)
	rctx, cancel := c.rpcContext(ctx, 0, time.Time{})
	defer cancel()
	var p peer.Peer
	err := rpc(rctx, append(c.callOpts[:len(c.callOpts):len(c.callOpts)], grpc.Peer(&p)))
	sw.Stop()
	if err != nil {
		kind := sentWrite
		if p.Addr == nil {
			kind = unsentWrite
			if c.client.ActiveConnection().GetState() != connectivity.Ready {
				kind = unreachableWrite
			}
		}
		return rpcError(ctx, rctx, op, err, kind)
	}
	c.stats.RecordTick(statistics.NumberKeysWritten, uint64(keys))
	c.stats.RecordTick(statistics.BytesWritten, uint64(bytes))
	return nil
}

// checkSize fails a write request that etcd would refuse as too large, before
// it is sent.
func (c *conn) checkSize(op string, r message) error {
	size := int64(messageSize(r)) + raftOverheadBytes + int64(len(c.cfg.Username))
	if size > c.cfg.MaxRequestBytes {
		return invalidArgument(fmt.Sprintf("etcd: %s: the request is %d bytes, more than max_request_bytes=%d "+
			"(the server's --max-request-bytes)", op, size, c.cfg.MaxRequestBytes))
	}
	return nil
}

// Put sets key with one Put RPC. etcd's writes are durable when
// acknowledged: of the write options only DisableWAL matters, and is refused
// (see write.go).
func (c *conn) Put(ctx context.Context, wo ioctx.WriteOptions, key, value []byte) error {
	if err := checkWriteOptions(wo); err != nil {
		return err
	}
	r := &pb.PutRequest{Key: c.key(key), Value: value}
	if err := c.checkSize("Put", r); err != nil {
		return err
	}
	return c.write(ctx, "Put", 1, len(key)+len(value), func(ctx context.Context, opts []grpc.CallOption) error {
		resp, err := c.kv.Put(ctx, r, opts...)
		if err == nil {
			c.pins.observe(resp.GetHeader().GetRevision())
		}
		return err
	})
}

// Delete removes key with one DeleteRange RPC.
func (c *conn) Delete(ctx context.Context, wo ioctx.WriteOptions, key []byte) error {
	if err := checkWriteOptions(wo); err != nil {
		return err
	}
	r := &pb.DeleteRangeRequest{Key: c.key(key)}
	return c.write(ctx, "Delete", 1, len(key), func(ctx context.Context, opts []grpc.CallOption) error {
		resp, err := c.kv.DeleteRange(ctx, r, opts...)
		if err == nil {
			c.pins.observe(resp.GetHeader().GetRevision())
		}
		return err
	})
}

// Write applies the batch as one Txn holding its effect as foldOps computes
// it (the last write of each key, range deletions merged and cut around the
// puts that follow them), so that etcd, which refuses a Txn that writes a
// key twice or puts a key one of its deletions covers, accepts it and the
// batch keeps its in-order meaning. A batch whose Txn would hold more than
// max_txn_ops operations, or be larger than max_request_bytes, fails before
// anything is sent.
func (c *conn) Write(ctx context.Context, wo ioctx.WriteOptions, b *driver.Batch) error {
	if err := checkWriteOptions(wo); err != nil {
		return err
	}
	ops := make([]driver.Op, 0, b.Len())
	br := b.Reader()
	for op, ok := br.Next(); ok; op, ok = br.Next() {
		ops = append(ops, op)
	}
	points, ranges := foldOps(ops)
	if n := len(points) + len(ranges); n > c.cfg.MaxTxnOps {
		what := "the batch writes"
		if len(ranges) == 0 {
			what = "the batch writes distinct keys in"
		}
		return c.tooManyOps("Write", n, what)
	}
	txnOps, n := c.txnOps(points, ranges)
	r := &pb.TxnRequest{Success: txnOps}
	if err := c.checkSize("Write", r); err != nil {
		return err
	}
	return c.write(ctx, "Write", len(txnOps), n, func(ctx context.Context, opts []grpc.CallOption) error {
		resp, err := c.kv.Txn(ctx, r, opts...)
		if err == nil {
			c.pins.observe(resp.GetHeader().GetRevision())
		}
		return err
	})
}

// writeOp returns the Txn operation that puts value at key, or deletes key.
func (c *conn) writeOp(key, value []byte, del bool) *pb.RequestOp {
	if del {
		return &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{
			RequestDeleteRange: &pb.DeleteRangeRequest{Key: c.key(key)}}}
	}
	return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{
		RequestPut: &pb.PutRequest{Key: c.key(key), Value: value}}}
}

// currentRevision returns the cluster's current revision, with one
// linearizable Range of a single key. Its IO counts in the aggregate
// histogram only (activity Unknown), as the engine's internal reads do.
func (c *conn) currentRevision(ctx context.Context, op string) (int64, error) {
	resp, err := c.readRange(ctx, ioctx.ReadRequest{}, op, &pb.RangeRequest{Key: c.prefix, CountOnly: true})
	if err != nil {
		return 0, err
	}
	return resp.GetHeader().GetRevision(), nil
}

// Flush does nothing: a write that returned is committed by a quorum.
func (c *conn) Flush(context.Context) error { return nil }

// Compact compacts the cluster's history up to the current revision, or up
// to the lowest revision an open iterator, transaction or MultiGet of this
// DB reads at, whichever is lower. Revision compaction is cluster-wide: it
// drops the old versions of every key, of every namespace, so start and end
// do not limit it. It waits for the compaction to reach the members' disks
// (etcd's physical compaction). It does not defragment the members'
// database files.
func (c *conn) Compact(ctx context.Context, _, _ []byte) error {
	current, err := c.currentRevision(ctx, "Compact")
	if err != nil {
		return err
	}
	target := current
	if lowest, ok := c.pins.min(); ok {
		target = min(target, lowest)
	}
	if target <= 1 {
		return nil
	}
	rctx, cancel := c.rpcContext(ctx, 0, time.Time{})
	defer cancel()
	_, err = c.kv.Compact(rctx, &pb.CompactionRequest{Revision: target, Physical: true}, c.callOpts...)
	if err != nil {
		err = rpcError(ctx, rctx, fmt.Sprintf("Compact to revision %d", target), err, readRPC)
		if errors.Is(err, ErrSnapshotCompacted) {
			return nil // someone compacted as far already
		}
		return err
	}
	return nil
}

// Statistics returns the DB's statistics, nil when disabled.
func (c *conn) Statistics() *statistics.Statistics { return c.stats }

// Close closes the connector when the connection owns it (Driver.Open);
// otherwise the connector owns the client and DB.Close closes it.
func (c *conn) Close() error {
	if c.owner != nil {
		return c.owner.Close()
	}
	return nil
}
