package driver

import (
	"context"
	"sync/atomic"

	"github.com/shaledb/shale/ioctx"
)

// Conn is a session on a DB: the DB's read and write methods with session
// default [ioctx.ReadOptions]. Each read merges the ReadOptions its ctx
// carries over the session's (ioctx.Merge: a field the call sets wins, the
// earlier deadline and smaller timeout win, flags add up), so a service can
// set, say, a low rate-limiter priority once for a background job's session.
// A session default activity other than Unknown limits the session to that
// activity's API, as it would a single call.
//
// A Conn is safe for concurrent use. It holds no driver resources: Close only
// ends the session, and the DB stays open. Iterators and transactions
// started on a Conn belong to the DB and outlive the Conn's Close.
type Conn struct {
	db *DB
	// defaults is replaced, never modified, so a read can use the loaded
	// pointer without a lock or a copy.
	defaults atomic.Pointer[ioctx.ReadOptions]
	closed   atomic.Bool
}

// SetReadOptions replaces the session's default ReadOptions for the calls
// that start after it returns.
func (c *Conn) SetReadOptions(ro ioctx.ReadOptions) { c.defaults.Store(&ro) }

// ReadOptions returns the session's default ReadOptions.
func (c *Conn) ReadOptions() ioctx.ReadOptions { return *c.defaults.Load() }

// Close ends the session: later calls on the Conn return an error matching
// ErrClosed, as does a second Close. Calls in flight are not waited for.
func (c *Conn) Close() error {
	if c.closed.Swap(true) {
		return errConnClosed
	}
	return nil
}

// Get is [DB.Get] with the session's defaults.
func (c *Conn) Get(ctx context.Context, key []byte) ([]byte, error) {
	if c.closed.Load() {
		return nil, errConnClosed
	}
	return c.db.get(ctx, c.defaults.Load(), key)
}

// MultiGet is [DB.MultiGet] with the session's defaults.
func (c *Conn) MultiGet(ctx context.Context, keys [][]byte) ([][]byte, error) {
	if c.closed.Load() {
		return nil, errConnClosed
	}
	return c.db.multiGet(ctx, c.defaults.Load(), keys)
}

// NewIterator is [DB.NewIterator] with the session's defaults.
func (c *Conn) NewIterator(ctx context.Context, opts *IterOptions) (*Iterator, error) {
	if c.closed.Load() {
		return nil, errConnClosed
	}
	return c.db.newIterator(ctx, c.defaults.Load(), opts)
}

// VerifyChecksum is [DB.VerifyChecksum] with the session's defaults.
func (c *Conn) VerifyChecksum(ctx context.Context) error {
	if c.closed.Load() {
		return errConnClosed
	}
	return c.db.verify(ctx, c.defaults.Load(), false)
}

// VerifyFileChecksums is [DB.VerifyFileChecksums] with the session's
// defaults.
func (c *Conn) VerifyFileChecksums(ctx context.Context) error {
	if c.closed.Load() {
		return errConnClosed
	}
	return c.db.verify(ctx, c.defaults.Load(), true)
}

// BeginTx is [DB.BeginTx]; the transaction's reads use the session's
// defaults as they were when it began.
func (c *Conn) BeginTx(ctx context.Context, opts *TxOptions) (*Tx, error) {
	if c.closed.Load() {
		return nil, errConnClosed
	}
	return c.db.beginTx(ctx, c.defaults.Load(), opts)
}

// Put is [DB.Put].
func (c *Conn) Put(ctx context.Context, key, value []byte) error {
	if c.closed.Load() {
		return errConnClosed
	}
	return c.db.Put(ctx, key, value)
}

// Delete is [DB.Delete].
func (c *Conn) Delete(ctx context.Context, key []byte) error {
	if c.closed.Load() {
		return errConnClosed
	}
	return c.db.Delete(ctx, key)
}

// Write is [DB.Write].
func (c *Conn) Write(ctx context.Context, b *Batch) error {
	if c.closed.Load() {
		return errConnClosed
	}
	return c.db.Write(ctx, b)
}
