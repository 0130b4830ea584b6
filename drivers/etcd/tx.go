package etcd

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/grpc"
)

// tx is a transaction: reads at the revision of BeginTx, merged with its
// own writes, which it keeps until Commit sends them as one Txn guarded by
// a comparison per key it read or wrote.
//
// Commit compares, for every key the transaction read with Get or MultiGet
// and every key it wrote, the key's ModRevision with the one it had at the
// begin revision (0 for a key that was absent, which etcd's comparison
// gives an absent key). Any change in between — a put, a delete, a delete
// and re-create — fails the comparison, and Commit returns an error matching
// driver.ErrConflict having applied nothing. (A key absent at begin that was
// created and deleted again since compares equal: its state is the one the
// transaction saw.) Keys read only through iterators are not compared: scans
// see a consistent snapshot, but a key added or changed in a scanned range
// does not fail the Commit.
//
// A DeleteRange of the transaction hides the snapshot's keys in its range
// from the transaction's reads, and erases the transaction's earlier writes
// there; its later writes there stand. At Commit it becomes the Txn's
// DeleteRange requests (cut around the transaction's puts, as a batch's,
// see foldOps) and one comparison over the whole range: every key in it must
// have a ModRevision no later than the begin revision, so a key created or
// changed in the range by anyone since fails the Commit with ErrConflict.
// etcd evaluates that comparison by visiting every key of the range, so a
// DeleteRange costs the Commit time in proportion to the keys the range
// holds (one comparison, whatever their number, against max_txn_ops). A key
// of the range that someone else deleted since begin is not a conflict: the
// transaction deletes it too, and the outcome is the one of the
// transaction committed after that deletion.
type tx struct {
	c   *conn
	rev int64
	pin *pin
	// writes are the transaction's writes, the last per key.
	writes map[string]txWrite
	// ranges are the transaction's range deletions, merged: sorted and
	// disjoint.
	ranges []keyRange
	// reads are the ModRevisions at rev of the keys read from the
	// snapshot (0: absent); nil for a read-only transaction.
	reads map[string]int64
}

type txWrite struct {
	del   bool
	value []byte
}

var (
	_ driver.DriverTx       = (*tx)(nil)
	_ driver.TxMultiGetter  = (*tx)(nil)
	_ driver.TxRangeDeleter = (*tx)(nil)
)

// BeginTx reads the current revision, which the transaction reads at and
// pins until it ends. ctx is for that read only. A read-write transaction
// whose commit would have to skip the WAL (TxOptions.WriteOptions.DisableWAL)
// is refused, as such a write is (see write.go).
func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.DriverTx, error) {
	if !opts.ReadOnly {
		if err := checkWriteOptions(opts.WriteOptions); err != nil {
			return nil, err
		}
	}
	pn := c.pins.add()
	rev, err := c.currentRevision(ctx, "BeginTx")
	if err != nil {
		c.pins.remove(pn)
		return nil, err
	}
	c.pins.resolve(pn, rev)
	t := &tx{c: c, rev: rev, pin: pn, writes: make(map[string]txWrite)}
	if !opts.ReadOnly {
		t.reads = make(map[string]int64)
	}
	return t, nil
}

// recordRead remembers the revision of a key read from the snapshot.
func (t *tx) recordRead(key []byte, kv *mvccpb.KeyValue) {
	if t.reads == nil {
		return
	}
	if _, ok := t.reads[string(key)]; !ok {
		var mod int64
		if kv != nil {
			mod = kv.ModRevision
		}
		t.reads[string(key)] = mod
	}
}

// Get returns the transaction's own write of key, or else the snapshot's
// value.
func (t *tx) Get(ctx context.Context, req ioctx.ReadRequest, key []byte) ([]byte, error) {
	if w, ok := t.writes[string(key)]; ok {
		if w.del {
			return nil, errNotFound
		}
		return append([]byte{}, w.value...), nil
	}
	if covered(t.ranges, key) {
		return nil, errNotFound
	}
	kv, err := t.c.timedGet(ctx, req, "Tx.Get", key, t.rev)
	if err != nil {
		return nil, err
	}
	t.recordRead(key, kv)
	if kv == nil {
		return nil, errNotFound
	}
	return valueOf(kv), nil
}

// MultiGet reads the keys the transaction did not write from the snapshot,
// in Txns as the DB's MultiGet does, and merges its writes.
func (t *tx) MultiGet(ctx context.Context, req ioctx.ReadRequest, keys [][]byte) ([][]byte, error) {
	vals := make([][]byte, len(keys))
	var fetch [][]byte
	var at []int
	for i, k := range keys {
		if w, ok := t.writes[string(k)]; ok {
			if !w.del {
				vals[i] = append([]byte{}, w.value...)
			}
			continue
		}
		if covered(t.ranges, k) {
			continue
		}
		fetch, at = append(fetch, k), append(at, i)
	}
	if len(fetch) == 0 {
		return vals, nil
	}
	kvs, err := t.c.timedMultiGet(ctx, req, fetch, t.rev)
	if err != nil {
		return nil, err
	}
	for j, kv := range kvs {
		t.recordRead(fetch[j], kv)
		if kv != nil {
			vals[at[j]] = valueOf(kv)
		}
	}
	return vals, nil
}

// NewIterator returns an iterator over the snapshot merged with the
// transaction's writes as they are now (later writes of the transaction
// are not seen by it). It fetches nothing until its first move.
func (t *tx) NewIterator(ctx context.Context, req ioctx.ReadRequest, opts driver.IterOptions) (driver.Iter, error) {
	snap := t.c.newIter(ctx, req, opts, t.rev)
	if snap.emptyBounds() {
		snap.havePage, snap.loStart, snap.hiEnd = true, true, true
	}
	var ws []txEntry
	for k, w := range t.writes {
		kb := []byte(k)
		if opts.LowerBound != nil && bytes.Compare(kb, opts.LowerBound) < 0 ||
			opts.UpperBound != nil && bytes.Compare(kb, opts.UpperBound) >= 0 {
			continue
		}
		ws = append(ws, txEntry{key: kb, txWrite: w})
	}
	slices.SortFunc(ws, func(a, b txEntry) int { return bytes.Compare(a.key, b.key) })
	return &txIter{snap: snap, ws: ws, ranges: slices.Clone(t.ranges)}, nil
}

func (t *tx) Put(_ context.Context, key, value []byte) error {
	t.writes[string(key)] = txWrite{value: append([]byte{}, value...)}
	return nil
}

func (t *tx) Delete(_ context.Context, key []byte) error {
	t.writes[string(key)] = txWrite{del: true}
	return nil
}

// DeleteRange records a deletion of [start, end) (a nil end: every key
// from start on): the transaction's writes in the range are erased, and the
// snapshot's keys in it hidden from its reads. Nothing is sent before
// Commit.
func (t *tx) DeleteRange(_ context.Context, start, end []byte) error {
	if !belowEnd(start, end) {
		return nil
	}
	for k := range t.writes {
		if inRange(k, start, end) {
			delete(t.writes, k)
		}
	}
	// Never nil, even for an empty start: the iterators seek to it, and
	// a nil SeekLT key means "the last key".
	// A nil end stays nil: unbounded.
	var e []byte
	if end != nil {
		e = append([]byte{}, end...)
	}
	t.ranges = mergeRanges(append(t.ranges, keyRange{append([]byte{}, start...), e}))
	return nil
}

// Rollback discards the writes and unpins the revision.
func (t *tx) Rollback() error {
	t.c.pins.remove(t.pin)
	t.pin = nil
	return nil
}

// Commit sends the writes as one Txn guarded by the comparisons described
// on tx. It has no context: it is bounded by request_timeout. A failure
// that does not tell whether the Txn was applied (a timeout, a lost
// connection) is an error matching ErrOutcomeUnknown, never a success.
func (t *tx) Commit() error {
	defer t.Rollback()
	if len(t.writes) == 0 && len(t.ranges) == 0 {
		return nil // nothing to apply, and the reads were one snapshot
	}
	ctx := context.Background()
	keys := make([]string, 0, len(t.writes)+len(t.reads))
	for k := range t.writes {
		keys = append(keys, k)
	}
	for k := range t.reads {
		if _, ok := t.writes[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	if len(keys)+len(t.ranges) > t.c.cfg.MaxTxnOps {
		return invalidArgument(fmt.Sprintf("etcd: Commit: the transaction read and wrote %d keys and deleted %d "+
			"ranges, more than max_txn_ops=%d (the server's --max-txn-ops): etcd cannot compare them in one Txn",
			len(keys), len(t.ranges), t.c.cfg.MaxTxnOps))
	}
	if err := t.readWrittenRevisions(ctx, keys); err != nil {
		return err
	}
	r := &pb.TxnRequest{}
	var points []driver.Op
	for _, k := range keys {
		ek := t.c.key([]byte(k))
		r.Compare = append(r.Compare, &pb.Compare{Key: ek, Target: pb.Compare_MOD, Result: pb.Compare_EQUAL,
			TargetUnion: &pb.Compare_ModRevision{ModRevision: t.reads[k]}})
		r.Failure = append(r.Failure, &pb.RequestOp{Request: &pb.RequestOp_RequestRange{
			RequestRange: &pb.RangeRequest{Key: ek, KeysOnly: true}}})
		if w, ok := t.writes[k]; ok {
			kind := driver.OpPut
			if w.del {
				kind = driver.OpDelete
			}
			points = append(points, driver.Op{Kind: kind, Key: []byte(k), Value: w.value})
		}
	}
	for _, rg := range t.ranges {
		// No key of the range changed since the begin revision; the
		// failure branch lists the ones that did.
		ek, eEnd := t.c.key(rg.start), t.c.keyEnd(rg.end)
		r.Compare = append(r.Compare, &pb.Compare{Key: ek, RangeEnd: eEnd, Target: pb.Compare_MOD,
			Result: pb.Compare_LESS, TargetUnion: &pb.Compare_ModRevision{ModRevision: t.rev + 1}})
		r.Failure = append(r.Failure, &pb.RequestOp{Request: &pb.RequestOp_RequestRange{
			RequestRange: &pb.RangeRequest{Key: ek, RangeEnd: eEnd, KeysOnly: true, MinModRevision: t.rev + 1,
				Limit: 8}}})
	}
	var n int
	r.Success, n = t.c.txnOps(points, cutRanges(t.ranges, points))
	if len(r.Success) > t.c.cfg.MaxTxnOps {
		// The ranges cut around the puts inside them.
		return t.c.tooManyOps("Commit", len(r.Success), "the transaction's writes take")
	}
	if err := t.c.checkSize("Commit", r); err != nil {
		return err
	}
	var resp *pb.TxnResponse
	err := t.c.write(ctx, "Commit", len(r.Success), n, func(ctx context.Context, opts []grpc.CallOption) error {
		var err error
		resp, err = t.c.kv.Txn(ctx, r, opts...)
		if err == nil {
			t.c.pins.observe(resp.GetHeader().GetRevision())
		}
		return err
	})
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		t.c.stats.RecordTick(statistics.TxnConflicts, 1)
		return t.conflict(keys, resp)
	}

	return nil
}

// readWrittenRevisions reads, at the begin revision, the ModRevisions of
// the written keys the transaction did not read, which Commit compares.
// These reads are internal (activity Unknown): they count in the aggregate
// histogram only.
func (t *tx) readWrittenRevisions(ctx context.Context, keys []string) error {
	if t.reads == nil {
		t.reads = make(map[string]int64)
	}
	var missing [][]byte
	for _, k := range keys {
		if _, ok := t.reads[k]; !ok {
			missing = append(missing, []byte(k))
		}
	}
	for start := 0; start < len(missing); {
		end := t.c.chunkEnd(missing, start)
		ops := make([]*pb.RequestOp, 0, end-start)
		for _, k := range missing[start:end] {
			ops = append(ops, &pb.RequestOp{Request: &pb.RequestOp_RequestRange{
				RequestRange: &pb.RangeRequest{Key: t.c.key(k), Revision: t.rev, KeysOnly: true}}})
		}
		resp, err := t.c.readTxn(ctx, ioctx.ReadRequest{}, "Commit: reading the written keys at the begin revision",
			&pb.TxnRequest{Success: ops})
		if err != nil {
			return err
		}
		for i, r := range resp.Responses {
			var mod int64
			if kvs := r.GetResponseRange().GetKvs(); len(kvs) > 0 {
				mod = kvs[0].ModRevision
			}
			t.reads[string(missing[start+i])] = mod
		}
		start = end
	}
	return nil
}

// conflict names the keys whose comparison failed, from the Failure
// branch's Ranges.
func (t *tx) conflict(keys []string, resp *pb.TxnResponse) error {
	var changed []string
	for i, r := range resp.Responses {
		if i >= len(keys) {
			// A range's Range: the keys written in it since begin.
			rg := t.ranges[i-len(keys)]
			for _, kv := range r.GetResponseRange().GetKvs() {
				end := fmt.Sprintf("%q", rg.end)
				if rg.end == nil {
					end = "nil"
				}
				changed = append(changed, fmt.Sprintf("%q (in the deleted range [%q, %s), written at revision %d)",
					t.c.userKey(kv.Key), rg.start, end, kv.ModRevision))
			}
			continue
		}
		var mod int64
		if kvs := r.GetResponseRange().GetKvs(); len(kvs) > 0 {
			mod = kvs[0].ModRevision
		}
		if want := t.reads[keys[i]]; mod != want {
			changed = append(changed, fmt.Sprintf("%q (revision %d at begin, %d now)", keys[i], want, mod))
		}
	}
	return newError(fmt.Sprintf("etcd: Commit: the transaction began at revision %d and since then another writer "+
		"changed %s", t.rev, strings.Join(changed, ", ")), nil, driver.ErrConflict)
}

// txEntry is one of a transaction's writes, as its iterators see it.
type txEntry struct {
	key []byte
	txWrite
}

// txIter merges a transaction's writes over its snapshot iterator: a write
// hides the snapshot's value of its key, a delete hides the key. The source
// not shown is kept past the key shown, in the direction of travel; a change
// of direction re-seeks both.
type txIter struct {
	snap   *iter
	snapOK bool
	ws     []txEntry
	wi     int
	// ranges are the transaction's range deletions when the iterator was
	// made (sorted, disjoint): the snapshot's keys in them are hidden.
	ranges []keyRange
	// fromW says the key shown is ws[wi]'s.
	fromW   bool
	forward bool
	valid   bool
	err     error
	key     []byte
	value   []byte
}

var _ driver.Iter = (*txIter)(nil)

func (t *txIter) First() bool {
	t.err = nil
	t.snapOK, t.wi, t.forward = t.snap.First(), 0, true
	return t.settle()
}

func (t *txIter) Last() bool {
	t.err = nil
	t.snapOK, t.wi, t.forward = t.snap.Last(), len(t.ws)-1, false
	return t.settle()
}

func (t *txIter) SeekGE(key []byte) bool {
	t.err = nil
	t.snapOK, t.wi, t.forward = t.snap.SeekGE(key), t.searchW(key), true
	return t.settle()
}

func (t *txIter) SeekLT(key []byte) bool {
	t.err = nil
	t.snapOK, t.wi, t.forward = t.snap.SeekLT(key), t.searchW(key)-1, false
	return t.settle()
}

// searchW returns the index of the first write >= key.
func (t *txIter) searchW(key []byte) int {
	i, _ := slices.BinarySearchFunc(t.ws, key, func(e txEntry, k []byte) int { return bytes.Compare(e.key, k) })
	return i
}

func (t *txIter) Next() bool {
	if !t.valid {
		return false
	}
	if !t.forward {
		// Both sources to the first key after the one shown.
		k := append(slices.Clip(t.key), 0)
		t.snapOK, t.wi, t.forward = t.snap.SeekGE(k), t.searchW(k), true
		return t.settle()
	}
	if t.fromW {
		t.wi++
	} else {
		t.snapOK = t.snap.Next()
	}
	return t.settle()
}

func (t *txIter) Prev() bool {
	if !t.valid {
		return false
	}
	if t.forward {
		k := bytes.Clone(t.key)
		t.snapOK, t.wi, t.forward = t.snap.SeekLT(k), t.searchW(k)-1, false
		return t.settle()
	}
	if t.fromW {
		t.wi--
	} else {
		t.snapOK = t.snap.Prev()
	}
	return t.settle()
}

// settle shows the nearer of the two sources' keys in the direction of
// travel, skipping the snapshot's keys the writes shadow and the deleted
// ones.
func (t *txIter) settle() bool {
	for {
		if !t.snapOK {
			if err := t.snap.Error(); err != nil {
				t.err, t.valid = err, false
				return false
			}
		}
		wOK := t.wi >= 0 && t.wi < len(t.ws)
		if !wOK && !t.snapOK {
			t.valid = false
			return false
		}
		if wOK {
			var cmp int
			if t.snapOK {
				cmp = bytes.Compare(t.ws[t.wi].key, t.snap.Key())
			}
			if !t.snapOK || cmp == 0 || (cmp < 0) == t.forward {
				if t.snapOK && cmp == 0 {
					// The write shadows the snapshot's key.
					if t.forward {
						t.snapOK = t.snap.Next()
					} else {
						t.snapOK = t.snap.Prev()
					}
					if !t.snapOK && t.snap.Error() != nil {
						continue // report it above
					}
				}
				e := &t.ws[t.wi]
				if e.del {
					if t.forward {
						t.wi++
					} else {
						t.wi--
					}
					continue
				}
				t.fromW, t.valid, t.key, t.value = true, true, e.key, e.value
				if t.value == nil {
					t.value = emptyValue[:0:0]
				}
				return true
			}
		}
		if t.skipRange() {
			continue
		}
		t.fromW, t.valid, t.key, t.value = false, true, t.snap.Key(), t.snap.Value()
		return true
	}
}

// skipRange moves the snapshot iterator past the range deletion covering
// its key, if one does, with one seek (not key by key), and reports whether
// it moved.
func (t *txIter) skipRange() bool {
	i, found := searchRanges(t.ranges, t.snap.Key())
	if !found {
		return false
	}
	switch {
	case t.forward && t.ranges[i].end == nil:
		// The range covers every key after this one.
		t.snapOK = false
	case t.forward:
		t.snapOK = t.snap.SeekGE(t.ranges[i].end)
	default:
		t.snapOK = t.snap.SeekLT(t.ranges[i].start)
	}
	return true
}

func (t *txIter) Key() []byte {
	if !t.valid {
		return nil
	}
	return t.key
}

func (t *txIter) Value() []byte {
	if !t.valid {
		return nil
	}
	return t.value
}

func (t *txIter) Error() error { return t.err }

func (t *txIter) Close() error {
	err := t.snap.Close()
	if t.err != nil {
		err = t.err
	}
	t.valid = false
	return err
}
