package driver

import (
	"context"

	"github.com/shaledb/shale/ioctx"
)

// Tx is a transaction, begun by [DB.BeginTx] or [Conn.BeginTx]. Its reads
// see a snapshot taken at begin plus its own writes; Commit fails with an
// error matching ErrConflict when another transaction committed a write to
// a key this one wrote after this one began.
//
// Reads go through the same check → tag → driver path as the DB's (a
// MultiGet loops the driver transaction's Get with the MultiGet tag). After
// Commit or Rollback every call returns ErrTxDone; after DB.Close, which
// rolls back open transactions, every call returns an error matching
// ErrClosed.
//
// A Tx is not safe for concurrent use, and neither are its Iterators while
// it is in use: use a Tx and its Iterators from one goroutine at a time.
// (DB.Close may run concurrently with it.)
type Tx struct {
	db          *DB
	tx          DriverTx
	multiGetter TxMultiGetter
	// tx as a Haser, a ValueSizer and a PinnedGetter, nil when it is not
	// one.
	haser        Haser
	valueSizer   ValueSizer
	pinnedGetter PinnedGetter
	// rangeDeleter is tx as a TxRangeDeleter, nil when it is not one.
	rangeDeleter TxRangeDeleter
	defaults     *ioctx.ReadOptions // the Conn's at begin; nil for a DB's Tx
	opts         TxOptions
	done         bool
	iters        []*Iterator // open iterators, closed before Commit/Rollback
}

// enter enters the DB for a call on the transaction, refusing one after
// Commit or Rollback. On success the caller must call tx.db.exit.
func (tx *Tx) enter() error {
	if err := tx.db.enter(); err != nil {
		return err
	}
	if tx.done {
		tx.db.exit()
		return ErrTxDone
	}
	return nil
}

// start is the prologue of a transaction's write: enter and the context's
// check. On success the caller must call tx.db.exit; on failure start has
// already exited.
func (tx *Tx) start(ctx context.Context) error {
	if err := tx.enter(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		tx.db.exit()
		return err
	}
	return nil
}

// startRead is the prologue of a read of the public API api, whose own
// activity is want: enter, and the options resolved once over the session
// defaults the Tx was begun with. On success the caller must call
// tx.db.exit; on failure startRead has already exited.
func (tx *Tx) startRead(ctx context.Context, api string, want ioctx.Activity) (ioctx.ReadRequest, error) {
	if err := tx.enter(); err != nil {
		return ioctx.ReadRequest{}, err
	}
	req, err := ioctx.ResolveRead(ctx, tx.defaults, api, want)
	if err != nil {
		tx.db.exit()
		return ioctx.ReadRequest{}, err
	}
	return req, nil
}

// Get returns the value of key as the transaction sees it, or an error
// matching ErrNotFound. The returned slice is the caller's.
func (tx *Tx) Get(ctx context.Context, key []byte) ([]byte, error) {
	req, err := tx.startRead(ctx, "Get", ioctx.ActivityGet)
	if err != nil {
		return nil, err
	}
	defer tx.db.exit()
	return tx.tx.Get(ctx, req, key)
}

// MultiGet is [DB.MultiGet] as the transaction sees the keys.
func (tx *Tx) MultiGet(ctx context.Context, keys [][]byte) ([][]byte, error) {
	req, err := tx.startRead(ctx, "MultiGet", ioctx.ActivityMultiGet)
	if err != nil {
		return nil, err
	}
	defer tx.db.exit()
	return multiGet(ctx, tx.multiGetter, tx.tx, req, keys)
}

// NewIterator is [DB.NewIterator] over the transaction's view. Commit and
// Rollback close the transaction's iterators.
func (tx *Tx) NewIterator(ctx context.Context, opts *IterOptions) (*Iterator, error) {
	req, err := tx.startRead(ctx, "NewIterator", ioctx.ActivityDBIterator)
	if err != nil {
		return nil, err
	}
	defer tx.db.exit()
	iter, err := tx.tx.NewIterator(ctx, req, copyIterOptions(opts))
	if err != nil {
		return nil, err
	}
	it := tx.db.trackIter(ctx, req, iter, tx)
	tx.iters = append(tx.iters, it)
	return it, nil
}

// Put sets key to value in the transaction; an error matching
// ErrInvalidArgument in a read-only one. The slices are not retained.
func (tx *Tx) Put(ctx context.Context, key, value []byte) error {
	if err := tx.start(ctx); err != nil {
		return err
	}
	defer tx.db.exit()
	if tx.opts.ReadOnly {
		return errReadOnlyPut
	}
	return tx.tx.Put(ctx, key, value)
}

// Delete removes key in the transaction; an error matching
// ErrInvalidArgument in a read-only one. key is not retained.
func (tx *Tx) Delete(ctx context.Context, key []byte) error {
	if err := tx.start(ctx); err != nil {
		return err
	}
	defer tx.db.exit()
	if tx.opts.ReadOnly {
		return errReadOnlyDel
	}
	return tx.tx.Delete(ctx, key)
}

// DeleteRange deletes every key in [start, end) in the transaction, a nil
// end meaning "after every key" and a nil start "before every key" (as for
// [DB.DeleteRange]); an empty or inverted range deletes nothing. An error matching
// ErrInvalidArgument in a read-only transaction, one matching
// ErrNotSupported when the driver's transactions cannot (see
// [TxRangeDeleter]). The slices are not retained.
func (tx *Tx) DeleteRange(ctx context.Context, start, end []byte) error {
	if err := tx.start(ctx); err != nil {
		return err
	}
	defer tx.db.exit()
	switch {
	case tx.opts.ReadOnly:
		return errReadOnlyDelRange
	case tx.rangeDeleter == nil:
		return errNoTxRangeDel
	}
	start, ok := rangeEnds(start, end)
	if !ok {
		return nil
	}
	return tx.rangeDeleter.DeleteRange(ctx, start, end)
}

// Commit closes the transaction's open iterators and commits it, with the
// write options resolved at BeginTx (TxOptions.WriteOptions merged with
// those of BeginTx's ctx and, for a Conn's transaction, the session's): the
// commit takes no context of its own. The
// transaction is over whatever Commit returns: an error matching
// ErrConflict means it was rolled back.
func (tx *Tx) Commit() error {
	return tx.end(true)
}

// Rollback closes the transaction's open iterators and discards its writes.
func (tx *Tx) Rollback() error {
	return tx.end(false)
}

func (tx *Tx) end(commit bool) error {
	if err := tx.enter(); err != nil {
		return err
	}
	defer tx.db.exit()
	tx.done = true
	iters := tx.iters
	tx.iters = nil
	for _, it := range iters {
		if !it.closed {
			_ = it.closeEntered()
		}
	}
	tx.db.untrackTx(tx)
	if commit {
		return tx.tx.Commit()
	}
	return tx.tx.Rollback()
}

// untrackIter forgets a closed iterator of the transaction.
func (tx *Tx) untrackIter(it *Iterator) {
	for i, x := range tx.iters {
		if x == it {
			last := len(tx.iters) - 1
			tx.iters[i] = tx.iters[last]
			tx.iters[last] = nil
			tx.iters = tx.iters[:last]
			return
		}
	}
}
