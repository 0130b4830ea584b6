package driver

import (
	"context"
	"sync/atomic"

	"github.com/shaledb/shale/ioctx"
)

// Conn is a session on a DB: the DB's read and write methods with session
// default [ioctx.ReadOptions] and [ioctx.WriteOptions], both taken from the
// ctx given to DB.Conn and replaced with SetReadOptions and
// SetWriteOptions. Each read merges the ReadOptions its ctx
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
	// writeDefaults are the session's default WriteOptions, replaced
	// likewise.
	writeDefaults atomic.Pointer[ioctx.WriteOptions]
	closed        atomic.Bool
}

// SetReadOptions replaces the session's default ReadOptions for the calls
// that start after it returns.
func (c *Conn) SetReadOptions(ro ioctx.ReadOptions) { c.defaults.Store(&ro) }

// ReadOptions returns the session's default ReadOptions.
func (c *Conn) ReadOptions() ioctx.ReadOptions { return *c.defaults.Load() }

// SetWriteOptions replaces the session's default WriteOptions for the
// writes that start after it returns. Each write merges the WriteOptions
// its ctx carries over them with [ioctx.MergeWrite]: Sync or DisableWAL set
// in either applies, and a priority other than Total in ctx overrides the
// session's.
func (c *Conn) SetWriteOptions(wo ioctx.WriteOptions) { c.writeDefaults.Store(&wo) }

// WriteOptions returns the session's default WriteOptions.
func (c *Conn) WriteOptions() ioctx.WriteOptions { return *c.writeDefaults.Load() }

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
	return c.db.get(ctx, c, key)
}

// MultiGet is [DB.MultiGet] with the session's defaults.
func (c *Conn) MultiGet(ctx context.Context, keys [][]byte) ([][]byte, error) {
	return c.db.multiGet(ctx, c, keys)
}

// NewIterator is [DB.NewIterator] with the session's defaults.
func (c *Conn) NewIterator(ctx context.Context, opts *IterOptions) (*Iterator, error) {
	return c.db.newIterator(ctx, c, opts)
}

// VerifyChecksum is [DB.VerifyChecksum] with the session's defaults.
func (c *Conn) VerifyChecksum(ctx context.Context) error {
	return c.db.verify(ctx, c, false)
}

// VerifyFileChecksums is [DB.VerifyFileChecksums] with the session's
// defaults.
func (c *Conn) VerifyFileChecksums(ctx context.Context) error {
	return c.db.verify(ctx, c, true)
}

// BeginTx is [DB.BeginTx]; the transaction's reads use the session's
// defaults as they were when it began.
func (c *Conn) BeginTx(ctx context.Context, opts *TxOptions) (*Tx, error) {
	return c.db.beginTx(ctx, c, opts)
}

// Put is [DB.Put] with the session's default write options.
func (c *Conn) Put(ctx context.Context, key, value []byte) error {
	return c.db.put(ctx, c, key, value)
}

// Delete is [DB.Delete] with the session's default write options.
func (c *Conn) Delete(ctx context.Context, key []byte) error {
	return c.db.delete(ctx, c, key)
}

// Write is [DB.Write] with the session's default write options.
func (c *Conn) Write(ctx context.Context, b *Batch) error {
	return c.db.write(ctx, c, b)
}

// DeleteRange is [DB.DeleteRange] with the session's default write options.
func (c *Conn) DeleteRange(ctx context.Context, start, end []byte) error {
	return c.db.deleteRange(ctx, c, start, end)
}

// SyncWAL is [DB.SyncWAL].
func (c *Conn) SyncWAL(ctx context.Context) error {
	return c.db.syncWAL(ctx, c)
}

// NewSnapshot is [DB.NewSnapshot]; the snapshot's reads use the session's
// default ReadOptions as they are now.
func (c *Conn) NewSnapshot(ctx context.Context) (*Snapshot, error) {
	return c.db.newSnapshot(ctx, c)
}

// Checkpoint is [DB.Checkpoint].
func (c *Conn) Checkpoint(ctx context.Context, dir string) error {
	return c.db.checkpoint(ctx, c, dir)
}
