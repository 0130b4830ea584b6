package etcd

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/ioctx"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
)

// The write side of issue 12, mapped onto etcd:
//
//   - Durability. A write that returns was committed by a quorum of the
//     cluster's members, each of which appended it to its WAL and (unless
//     the cluster runs with --unsafe-no-fsync, as the tests' does) fsynced
//     it before acknowledging: every write is already what
//     WriteOptions.Sync asks for, so Sync changes nothing, and SyncWAL has
//     nothing to sync. WriteOptions.DisableWAL asks for the opposite, a
//     write that skips the log; etcd cannot, so such a write fails with an
//     error matching driver.ErrNotSupported and writes nothing, rather
//     than silently being durable (and as slow as a durable write).
//     WriteOptions.RateLimiterPriority changes nothing: the rate limiter
//     charges reads only.
//   - Range deletion. DeleteRange is one etcd DeleteRange RPC of [start,
//     end) within the namespace; in a batch, a DeleteRange request in the
//     batch's Txn (see foldOps for how a batch is made acceptable to etcd).
//     A nil end (every key from start on) is the namespace's end, the first
//     etcd key after all of the DB's, so the deletion never reaches another
//     namespace; a nil start reaches here as the empty key, the namespace's
//     first.

// errDisableWAL is the error of a write asking to skip the WAL.
var errDisableWAL = newError("etcd: WriteOptions.DisableWAL: etcd cannot skip its write-ahead log (every write "+
	"is committed to a quorum's logs before it returns); clear DisableWAL to write durably. Nothing was written",
	nil, driver.ErrNotSupported)

// checkWriteOptions refuses what this driver cannot honour.
func checkWriteOptions(wo ioctx.WriteOptions) error {
	if wo.DisableWAL {
		return errDisableWAL
	}
	return nil
}

var (
	_ driver.RangeDeleter = (*conn)(nil)
	_ driver.WALSyncer    = (*conn)(nil)
)

// DeleteRange deletes the keys in [start, end) with one DeleteRange RPC; a
// nil end deletes every key of the namespace from start on. The façade
// answers an empty or inverted range itself; one reaching here is a no-op
// too.
func (c *conn) DeleteRange(ctx context.Context, wo ioctx.WriteOptions, start, end []byte) error {
	if err := checkWriteOptions(wo); err != nil {
		return err
	}
	if !belowEnd(start, end) {
		return nil
	}
	r := &pb.DeleteRangeRequest{Key: c.key(start), RangeEnd: c.keyEnd(end)}
	return c.write(ctx, "DeleteRange", 1, len(start)+len(end), func(ctx context.Context, opts []grpc.CallOption) error {
		resp, err := c.kv.DeleteRange(ctx, r, opts...)
		if err == nil {
			c.pins.observe(resp.GetHeader().GetRevision())
		}
		return err
	})
}

// SyncWAL returns nil once the cluster has shown it is reachable and has a
// leader (one linearizable read, activity Unknown): every acknowledged
// write is already on a quorum's logs, so there is nothing to sync.
func (c *conn) SyncWAL(ctx context.Context) error {
	_, err := c.currentRevision(ctx, "SyncWAL")
	return err
}

// keyRange is a range deletion of [start, end) in user keys; a nil end is
// unbounded (every key from start on).
type keyRange struct{ start, end []byte }

// belowEnd reports whether k is below the range end end (nil: unbounded).
func belowEnd(k, end []byte) bool { return end == nil || bytes.Compare(k, end) < 0 }

// compareEnds compares two range ends, nil (unbounded) being the largest.
func compareEnds(a, b []byte) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return bytes.Compare(a, b)
}

// keyEnd returns the etcd range end of the DB's range end end: its etcd
// key, or for nil (unbounded) the namespace's end.
func (c *conn) keyEnd(end []byte) []byte {
	if end == nil {
		return bytes.Clone(c.end)
	}
	return c.key(end)
}

// foldOps returns the effect of ops, applied in order, as writes etcd
// accepts in one Txn: etcd refuses a Txn that puts a key twice, or puts a key
// that one of its DeleteRanges covers (its checkIntervals), while deletions
// may overlap. So:
//   - of the point writes of a key only the last one after the last range
//     deletion covering the key is kept (a range deletion erases the writes
//     before it);
//   - the range deletions are merged where they overlap or touch, and cut
//     around the keys that a kept put writes inside them (the put replaces
//     the key anyway);
//   - a kept point deletion inside a range deletion is dropped.
//
// The returned writes are in key order, puts and deletions mixed; the
// ranges in order. ops' slices are not copied.
func foldOps(ops []driver.Op) (points []driver.Op, ranges []keyRange) {
	last := make(map[string]int, len(ops))
	var ranged []keyRange
	for i, op := range ops {
		switch op.Kind {
		case driver.OpPut, driver.OpDelete:
			last[string(op.Key)] = i
		case driver.OpDeleteRange:
			if !belowEnd(op.Key, op.Value) {
				continue // inverted: the façade leaves that to the driver's order
			}
			ranged = append(ranged, keyRange{op.Key, op.Value})
			for k := range last {
				if inRange(k, op.Key, op.Value) {
					delete(last, k)
				}
			}
		}
	}
	ranges = mergeRanges(ranged)
	points = make([]driver.Op, 0, len(last))
	for _, j := range last {
		op := ops[j]
		if op.Kind == driver.OpDelete && covered(ranges, op.Key) {
			continue
		}
		points = append(points, op)
	}
	slices.SortFunc(points, func(a, b driver.Op) int { return bytes.Compare(a.Key, b.Key) })
	return points, cutRanges(ranges, points)
}

func inRange(k string, start, end []byte) bool {
	return k >= string(start) && (end == nil || k < string(end))
}

// mergeRanges sorts rs and merges the ranges that overlap or touch.
func mergeRanges(rs []keyRange) []keyRange {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b keyRange) int { return bytes.Compare(a.start, b.start) })
	var out []keyRange
	for _, r := range rs {
		if n := len(out); n > 0 && compareEnds(r.start, out[n-1].end) <= 0 {
			if compareEnds(r.end, out[n-1].end) > 0 {
				out[n-1].end = r.end
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// searchRanges finds k among rs (sorted, disjoint): the index of the range
// holding k and true, or the index of the first range after k and false.
func searchRanges(rs []keyRange, k []byte) (int, bool) {
	return slices.BinarySearchFunc(rs, k, func(r keyRange, k []byte) int {
		switch {
		case !belowEnd(k, r.end):
			return -1
		case bytes.Compare(r.start, k) > 0:
			return 1
		}
		return 0
	})
}

// covered reports whether a range of rs (sorted, disjoint) holds k.
func covered(rs []keyRange, k []byte) bool {
	i, _ := searchRanges(rs, k)
	return i < len(rs) && inRange(string(k), rs[i].start, rs[i].end)
}

// cutRanges removes from rs (sorted, disjoint) the keys of the puts among
// points (sorted by key): [s, e) around a put of k becomes [s, k) and
// [k+"\x00", e), k+"\x00" being the key right after k. Empty pieces are
// dropped.
func cutRanges(rs []keyRange, points []driver.Op) []keyRange {
	var out []keyRange
	p := 0
	for _, r := range rs {
		start := r.start
		for ; p < len(points) && belowEnd(points[p].Key, r.end); p++ {
			k := points[p].Key
			if points[p].Kind != driver.OpPut || bytes.Compare(k, start) < 0 {
				continue
			}
			if bytes.Compare(start, k) < 0 {
				out = append(out, keyRange{start, k})
			}
			start = append(slices.Clip(k), 0)
		}
		if belowEnd(start, r.end) {
			out = append(out, keyRange{start, r.end})
		}
	}
	return out
}

// txnOps returns the Txn operations of folded writes, and the bytes they
// write (keys and values, for the statistics).
func (c *conn) txnOps(points []driver.Op, ranges []keyRange) ([]*pb.RequestOp, int) {
	out := make([]*pb.RequestOp, 0, len(points)+len(ranges))
	n := 0
	for _, op := range points {
		out = append(out, c.writeOp(op.Key, op.Value, op.Kind == driver.OpDelete))
		n += len(op.Key) + len(op.Value)
	}
	for _, r := range ranges {
		out = append(out, &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{
			RequestDeleteRange: &pb.DeleteRangeRequest{Key: c.key(r.start), RangeEnd: c.keyEnd(r.end)}}})
		n += len(r.start) + len(r.end)
	}
	return out, n
}

// tooManyOps is the error of a Txn of more than max_txn_ops operations.
func (c *conn) tooManyOps(op string, n int, what string) error {
	return invalidArgument(fmt.Sprintf("etcd: %s: %s %d etcd operations, more than max_txn_ops=%d "+
		"(the server's --max-txn-ops)", op, what, n, c.cfg.MaxTxnOps))
}
