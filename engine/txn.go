package engine

import (
	"bytes"
	"context"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/batch"
	"github.com/shaledb/shale/internal/rangedel"
	"github.com/shaledb/shale/internal/readpath"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
)

// txnOptions configure a transaction. A nil *txnOptions means the defaults.
type txnOptions struct {
	// ReadOnly rejects writes in the transaction.
	ReadOnly bool
	// Sync makes Commit wait until the transaction's writes are durable.
	Sync bool
	// DisableWAL commits the writes to the memtable only, as
	// WriteOptions.DisableWAL: a crash before the next flush loses them.
	// It cannot be combined with Sync.
	DisableWAL bool
	// RateLimiterPriority charges the commit's WAL bytes to the rate
	// limiter at this priority, as WriteOptions.RateLimiterPriority.
	RateLimiterPriority ioctx.Priority
}

// errTxDone is returned by calls on a transaction after Commit or Rollback.
// It is marked ErrClosed.
var errTxDone = base.Mark(errors.New("engine: transaction has already been committed or rolled back"), ErrClosed)

// txn is an optimistic transaction. It reads a snapshot taken at BeginTx with
// its own writes merged over it (read-your-writes), buffers its writes in an
// indexed batch, and at Commit checks that no key it wrote was written by
// anyone else since it began: if one was, Commit returns an error marked
// ErrConflict and applies nothing. Otherwise its writes apply atomically.
// A range deletion in a txn hides the range from its own reads, and
// conflicts with any write committed in the range since the txn began; a
// concurrent range deletion over a key the txn writes conflicts too.
//
// A txn is not safe for concurrent use.
type txn struct {
	db       *database
	snap     *snapshot
	b        batch.Batch
	index    *batch.Index
	readOnly bool
	wo       writeOptions // the commit's
	done     bool
}

// BeginTx starts a transaction.
func (d *database) BeginTx(ctx context.Context, opts *txnOptions) (*txn, error) {
	if err := ctx.Err(); err != nil {
		return nil, errors.Wrap(err, "engine: BeginTx")
	}
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	snap, err := d.NewSnapshot()
	if err != nil {
		return nil, err
	}
	tx := &txn{db: d, snap: snap}
	tx.index = batch.NewIndex(&tx.b)
	tx.index.SetCompare(d.ucmp())
	if opts != nil {
		tx.readOnly = opts.ReadOnly
		tx.wo = writeOptions{Sync: opts.Sync, DisableWAL: opts.DisableWAL, RateLimiterPriority: opts.RateLimiterPriority}
	}
	if tx.wo.Sync && tx.wo.DisableWAL {
		_ = snap.Close()
		return nil, errSyncWithoutWAL
	}
	return tx, nil
}

func (tx *txn) check() error {
	if tx.done {
		return errTxDone
	}
	return nil
}

// Put buffers a write of value to key.
func (tx *txn) Put(ctx context.Context, key, value []byte) error {
	if err := tx.checkWrite(ctx); err != nil {
		return err
	}
	tx.b.Set(key, value)
	return nil
}

// Delete buffers a deletion of key.
func (tx *txn) Delete(ctx context.Context, key []byte) error {
	if err := tx.checkWrite(ctx); err != nil {
		return err
	}
	tx.b.Delete(key)
	return nil
}

func (tx *txn) checkWrite(ctx context.Context) error {
	if err := tx.check(); err != nil {
		return err
	}
	if tx.readOnly {
		return base.InvalidArgumentf("engine: write in a read-only transaction")
	}
	if err := ctx.Err(); err != nil {
		return errors.Wrap(err, "engine: transaction write")
	}
	return nil
}

// getImpl reads key with the caller's tag and returns a copy of its value.
func (tx *txn) getImpl(call *readCall, key []byte) ([]byte, error) {
	v, err := tx.getPinnedImpl(call, key)
	if err != nil {
		return nil, err
	}
	out := append(make([]byte, 0, len(v.Data)), v.Data...)
	v.Release()
	return out, nil
}

// getPinnedImpl reads key with the caller's tag, without a copy: the
// transaction's own latest write of key, from its batch (valid until the
// transaction's next write), else the snapshot's value, pinned (see
// database.getImpl). Release the result.
func (tx *txn) getPinnedImpl(call *readCall, key []byte) (pinnedValue, error) {
	if v, kind, ok := tx.index.Get(key); ok {
		if kind == base.KindDelete {
			return pinnedValue{}, base.Mark(errors.Newf("engine: key %q deleted in this transaction", key), ErrNotFound)
		}
		return pinnedValue{Data: v}, nil
	}
	return tx.db.getImpl(call, key, tx.snap.seq)
}

func (tx *txn) multiGetImpl(call *readCall, keys [][]byte) ([][]byte, error) {
	out := make([][]byte, len(keys))
	var rest [][]byte
	var restIdx []int
	for i, k := range keys {
		if v, kind, ok := tx.index.Get(k); ok {
			if kind == base.KindSet {
				out[i] = append(make([]byte, 0, len(v)), v...)
			}
			continue
		}
		rest = append(rest, k)
		restIdx = append(restIdx, i)
	}
	if len(rest) == 0 {
		return out, nil
	}
	vals, err := tx.db.multiGetImpl(call, rest, tx.snap.seq)
	if err != nil {
		return nil, err
	}
	for j, i := range restIdx {
		out[i] = vals[j]
	}
	return out, nil
}

// newIteratorImpl creates the transaction's iterator with the caller's tag.
func (tx *txn) newIteratorImpl(call *readCall, opts *iterOptions) (*txnIterator, error) {
	var lower, upper []byte
	if opts != nil {
		lower, upper = opts.LowerBound, opts.UpperBound
	}
	it, err := tx.db.newIteratorImpl(call, opts, tx.snap.seq)
	if err != nil {
		return nil, err
	}
	return &txnIterator{
		db:    it,
		batch: tx.index.NewIter(lower, upper),
		dels:  tx.rangeDels(),
		cmp:   tx.db.ucmp(),
	}, nil
}

// Commit applies the transaction's writes atomically, unless a key it wrote
// was written by someone else after it began: then it returns an error
// marked ErrConflict and applies nothing. Either way the transaction is
// over.
func (tx *txn) Commit() error {
	if err := tx.check(); err != nil {
		return err
	}
	tx.done = true
	defer tx.snap.Close()
	if tx.b.Empty() {
		return nil
	}
	d := tx.db
	return d.writeOpts(context.Background(), &tx.b, tx.wo, tx.checkConflicts)
}

// checkConflicts runs in the commit leader, with every earlier write
// applied and no later one: a key this transaction wrote whose newest entry
// is newer than the snapshot was written by someone else since BeginTx.
// Its reads are internal (not on behalf of a public read API), so they
// carry activity Unknown and count only in the aggregate histogram.
func (tx *txn) checkConflicts() error {
	d := tx.db
	rs, err := d.loadReadState()
	if err != nil {
		return err
	}
	defer rs.unref()
	env := conflictCheckReadEnv
	r := tx.b.Reader()
	// With range tombstones anywhere, a key's newest write may be a range
	// deletion: ask whether anything was written in its range since.
	ranged := readpath.HasRangeDels(&rs.view)
	for {
		kind, key, value, ok, err := r.Next()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if kind == base.KindRangeDelete || ranged {
			if err := tx.checkRangeConflict(&rs.view, kind, key, value); err != nil {
				return err
			}
			continue
		}
		seq, found, err := readpath.LatestSeqNum(context.Background(), &rs.view, env, key)
		if err != nil {
			return errors.Wrapf(err, "engine: checking key %q for conflicts", key)
		}
		if found && seq > tx.snap.seq {
			d.stats.RecordTick(statistics.TxnConflicts, 1)
			return base.Mark(errors.Newf("engine: key %q was written at sequence number %d, after the transaction "+
				"began at %d", key, seq, tx.snap.seq), ErrConflict)
		}
	}
}

// Rollback discards the transaction's writes. Rolling back a finished
// transaction returns errTxDone.
func (tx *txn) Rollback() error {
	if err := tx.check(); err != nil {
		return err
	}
	tx.done = true
	return tx.snap.Close()
}

// txnIterator iterates over a transaction's view: its snapshot with the
// transaction's own writes merged over it (a write in the transaction hides
// the snapshot's value of the key; a delete hides the key). It merges at
// the user-key level, in either direction. Not safe for concurrent use.
type txnIterator struct {
	db    *iterator
	batch base.InternalIterator
	// dels are the transaction's range deletions (as of the iterator's
	// creation), which hide snapshot keys; nil when it has none.
	dels *rangedel.Set
	cmp  base.Compare // the database's order; nil is bytewise
	bkv  *base.InternalKV
	dbOK bool
	// fromBatch says the current key comes from the batch.
	fromBatch bool
	valid     bool
	forward   bool
	err       error
}

// First moves to the first key.
func (t *txnIterator) First() bool {
	t.dbOK, t.bkv, t.forward = t.db.First(), t.batch.First(), true
	return t.settle()
}

// Last moves to the last key.
func (t *txnIterator) Last() bool {
	t.dbOK, t.bkv, t.forward = t.db.Last(), t.batch.Last(), false
	return t.settle()
}

// SeekGE moves to the first key >= key.
func (t *txnIterator) SeekGE(key []byte) bool {
	t.dbOK, t.bkv, t.forward = t.db.SeekGE(key), t.batch.SeekGE(key), true
	return t.settle()
}

// SeekLT moves to the last key < key.
func (t *txnIterator) SeekLT(key []byte) bool {
	t.dbOK, t.bkv, t.forward = t.db.SeekLT(key), t.batch.SeekLT(key), false
	return t.settle()
}

// Next moves to the next key.
func (t *txnIterator) Next() bool {
	if !t.valid {
		return false
	}
	if !t.forward {
		// Reposition both children just after the current key.
		key := append([]byte(nil), t.Key()...)
		return t.SeekGE(append(key, 0))
	}
	t.advance(true)
	return t.settle()
}

// Prev moves to the previous key.
func (t *txnIterator) Prev() bool {
	if !t.valid {
		return false
	}
	if t.forward {
		key := append([]byte(nil), t.Key()...)
		return t.SeekLT(key)
	}
	t.advance(false)
	return t.settle()
}

// advance steps past the current key: the child it came from, and the other
// child too when both were at it.
func (t *txnIterator) advance(forward bool) {
	cur := t.Key()
	step := func() {
		if forward {
			t.dbOK = t.db.Next()
		} else {
			t.dbOK = t.db.Prev()
		}
	}
	if t.fromBatch {
		if t.dbOK && bytes.Equal(t.db.Key(), cur) {
			step()
		}
		if forward {
			t.bkv = t.batch.Next()
		} else {
			t.bkv = t.batch.Prev()
		}
		return
	}
	step()
}

// settle picks the current key from the two children in the iteration
// direction, skipping keys the transaction deleted.
func (t *txnIterator) settle() bool {
	for {
		if err := t.childErr(); err != nil {
			t.err, t.valid = err, false
			return false
		}
		switch {
		case !t.dbOK && t.bkv == nil:
			t.valid = false
			return false
		case t.bkv == nil:
			t.fromBatch = false
		case !t.dbOK:
			t.fromBatch = true
		default:
			c := base.CompareUser(t.cmp, t.bkv.K.UserKey, t.db.Key())
			if !t.forward {
				c = -c
			}
			t.fromBatch = c <= 0
		}
		if t.fromBatch && t.bkv.K.Kind() == base.KindDelete {
			t.advance(t.forward)
			continue
		}
		if !t.fromBatch && t.skipDeletedRange() {
			continue
		}
		t.valid = true
		return true
	}
}

func (t *txnIterator) childErr() error {
	if err := t.db.Error(); err != nil {
		return err
	}
	return t.batch.Error()
}

// Valid reports whether the iterator is at a key.
func (t *txnIterator) Valid() bool { return t.valid }

// Key returns the current key, valid until the next move.
func (t *txnIterator) Key() []byte {
	if t.fromBatch {
		return t.bkv.K.UserKey
	}
	return t.db.Key()
}

// Value returns the current value, valid until the next move.
func (t *txnIterator) Value() []byte {
	if t.fromBatch {
		return t.bkv.V
	}
	return t.db.Value()
}

// Error returns the error that stopped the iterator.
func (t *txnIterator) Error() error { return t.err }

// Close releases the iterator.
func (t *txnIterator) Close() error {
	err := t.db.Close()
	return errors.CombineErrors(err, t.batch.Close())
}

// conflictCheckReadEnv tags the conflict check's reads Unknown: they are
// made on behalf of Commit, not of a public read API.
var conflictCheckReadEnv = sstable.ReadEnv{VerifyChecksums: true, FillCache: true}
