package engine

import (
	"context"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/ioctx"
)

// The engine's former Go API, kept for its tests: methods on database,
// snapshot and txn that resolve the call's ReadOptions (and WriteOptions)
// from the context themselves, as the façade does for programs. Production
// code has one entry point per operation, the driver connection's (conn,
// driverSnapshot, driverTx in driver.go), which receives the façade's
// resolved request; these reach the same implementations.

// beginRead resolves the context's ReadOptions for the read API api, whose
// own activity is want, into call, and starts the read, as the façade does
// before calling the conn.
func (d *database) beginRead(ctx context.Context, api string, want ioctx.Activity, call *readCall) error {
	req, err := ioctx.ResolveRead(ctx, nil, api, want)
	if err != nil {
		return err
	}
	call.env = req
	return d.startRead(ctx, call)
}

// Get returns a copy of the newest value of key, or an error marked
// ErrNotFound. The context's ReadOptions apply; their activity must be
// Unknown or Get.
func (d *database) Get(ctx context.Context, key []byte) ([]byte, error) {
	var call readCall
	if err := d.beginRead(ctx, "Get", ioctx.ActivityGet, &call); err != nil {
		return nil, err
	}
	return d.getCopyImpl(&call, key, readLatest)
}

// GetPinned is Get without the copy: the value stays pinned until Release.
// A value found in a memtable's mapped arena or in the block cache's
// off-heap region (where the platform has one, 64-bit unix) is copied into
// a recycled Go heap buffer (see pinnedValue): the cost of the copy, but no
// allocation once warm.
func (d *database) GetPinned(ctx context.Context, key []byte) (pinnedValue, error) {
	var call readCall
	if err := d.beginRead(ctx, "Get", ioctx.ActivityGet, &call); err != nil {
		return pinnedValue{}, err
	}
	return d.getPinnedImpl(&call, key, readLatest)
}

// MultiGet returns the values of keys in their order; a nil entry means the
// key was not found and an empty value is a non-nil empty slice. The values
// are the caller's; small ones share allocations of up to 64 KiB, each
// value's capacity ending at its length. The
// context's activity must be Unknown or MultiGet. A per-key read error fails
// the call (the first one is returned, naming the key).
func (d *database) MultiGet(ctx context.Context, keys [][]byte) ([][]byte, error) {
	var call readCall
	if err := d.beginRead(ctx, "MultiGet", ioctx.ActivityMultiGet, &call); err != nil {
		return nil, err
	}
	return d.multiGetImpl(&call, keys, readLatest)
}

// VerifyChecksum reads every block of every table and checks its checksum,
// opening each table anew with the caller's IO options. The context's
// activity must be Unknown or VerifyDBChecksum; its priority charges the
// rate limiter, so a background verification can be throttled.
func (d *database) VerifyChecksum(ctx context.Context) error {
	var call readCall
	if err := d.beginRead(ctx, "VerifyChecksum", ioctx.ActivityVerifyDBChecksum, &call); err != nil {
		return err
	}
	return d.verifyChecksumImpl(&call)
}

// VerifyFileChecksums reads every table whole and compares its CRC32C with
// the one the MANIFEST recorded when the table was written. The context's
// activity must be Unknown or VerifyFileChecksums.
func (d *database) VerifyFileChecksums(ctx context.Context) error {
	var call readCall
	if err := d.beginRead(ctx, "VerifyFileChecksums", ioctx.ActivityVerifyFileChecksums, &call); err != nil {
		return err
	}
	return d.verifyFileChecksumsImpl(&call)
}

// NewIterator returns an iterator over the latest state of the database.
// The context's ReadOptions apply to every read the iterator makes; their
// activity must be Unknown or DBIterator. The context is also checked
// before each table block read, so cancelling it stops a long scan (the
// iterator then reports the context's error).
func (d *database) NewIterator(ctx context.Context, opts *iterOptions) (*iterator, error) {
	var call readCall
	if err := d.beginRead(ctx, "NewIterator", ioctx.ActivityDBIterator, &call); err != nil {
		return nil, err
	}
	return d.newIteratorImpl(&call, opts, readLatest)
}

// beginRead is DB.beginRead for a read of the snapshot, which must not be
// closed: a closed snapshot no longer holds back compaction, so its sequence
// number may no longer see what it saw.
func (s *snapshot) beginRead(ctx context.Context, api string, want ioctx.Activity, call *readCall) error {
	req, err := ioctx.ResolveRead(ctx, nil, api, want)
	if err != nil {
		return err
	}
	call.env = req
	return s.startRead(ctx, call)
}

// Get returns a copy of the value of key as of the snapshot.
func (s *snapshot) Get(ctx context.Context, key []byte) ([]byte, error) {
	var call readCall
	if err := s.beginRead(ctx, "Get", ioctx.ActivityGet, &call); err != nil {
		return nil, err
	}
	return s.db.getCopyImpl(&call, key, s.seq)
}

// MultiGet returns the values of keys as of the snapshot.
func (s *snapshot) MultiGet(ctx context.Context, keys [][]byte) ([][]byte, error) {
	var call readCall
	if err := s.beginRead(ctx, "MultiGet", ioctx.ActivityMultiGet, &call); err != nil {
		return nil, err
	}
	return s.db.multiGetImpl(&call, keys, s.seq)
}

// NewIterator returns an iterator over the database as of the snapshot.
func (s *snapshot) NewIterator(ctx context.Context, opts *iterOptions) (*iterator, error) {
	var call readCall
	if err := s.beginRead(ctx, "NewIterator", ioctx.ActivityDBIterator, &call); err != nil {
		return nil, err
	}
	return s.db.newIteratorImpl(&call, opts, s.seq)
}

// Get returns the value of key as the transaction sees it: its own latest
// write of key if any, else the snapshot's. The context's activity must be
// Unknown or Get.
func (tx *txn) Get(ctx context.Context, key []byte) ([]byte, error) {
	if err := tx.check(); err != nil {
		return nil, err
	}
	var call readCall
	if err := tx.db.beginRead(ctx, "Get", ioctx.ActivityGet, &call); err != nil {
		return nil, err
	}
	return tx.getImpl(&call, key)
}

// MultiGet returns the values of keys as the transaction sees them. The
// context's activity must be Unknown or MultiGet, and every read it makes is
// tagged MultiGet (keys the transaction has not written are read with one
// multiGetImpl call, never with a Get per key).
func (tx *txn) MultiGet(ctx context.Context, keys [][]byte) ([][]byte, error) {
	if err := tx.check(); err != nil {
		return nil, err
	}
	var call readCall
	if err := tx.db.beginRead(ctx, "MultiGet", ioctx.ActivityMultiGet, &call); err != nil {
		return nil, err
	}
	return tx.multiGetImpl(&call, keys)
}

// NewIterator returns an iterator over the transaction's view: the snapshot
// with the transaction's writes (as of this call) merged over it. The
// context's activity must be Unknown or DBIterator.
func (tx *txn) NewIterator(ctx context.Context, opts *iterOptions) (*txnIterator, error) {
	if err := tx.check(); err != nil {
		return nil, err
	}
	var call readCall
	if err := tx.db.beginRead(ctx, "NewIterator", ioctx.ActivityDBIterator, &call); err != nil {
		return nil, err
	}
	return tx.newIteratorImpl(&call, opts)
}

// Put writes value under key, with the WriteOptions ctx carries
// (ioctx.WithWriteOptions).
func (d *database) Put(ctx context.Context, key, value []byte) error {
	return d.putImpl(ctx, ioctx.WriteOptionsFrom(ctx), key, value)
}

// Delete deletes key, with the WriteOptions ctx carries. Deleting a missing
// key is not an error.
func (d *database) Delete(ctx context.Context, key []byte) error {
	return d.deleteImpl(ctx, ioctx.WriteOptionsFrom(ctx), key)
}

// Write applies b atomically. opts may be nil, meaning the WriteOptions ctx
// carries (ioctx.WithWriteOptions); non-nil opts are used instead of
// them. The caller may reuse b at once (a large batch's buffer is kept, but
// b moves off it when next changed; see Batch).
func (d *database) Write(ctx context.Context, b *writeBatch, opts *writeOptions) error {
	if b == nil {
		return base.InvalidArgumentf("engine: Write of a nil batch")
	}
	var wo writeOptions
	if opts != nil {
		wo = *opts
	} else {
		wo = ioctx.WriteOptionsFrom(ctx)
	}
	return d.writeOpts(ctx, &b.b, wo, nil)
}
