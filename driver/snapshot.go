package driver

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/shaledb/shale/ioctx"
)

// Snapshot is a consistent point-in-time view of a database, taken by
// [DB.NewSnapshot] or [Conn.NewSnapshot]: its reads see exactly the writes
// acknowledged before it was taken, whatever is written, deleted or
// compacted afterwards, until it is closed. An engine keeps the versions a
// snapshot can see, so close snapshots when done.
//
// Reads go through the same check → tag → driver path as the DB's (see the
// package doc, "The read path"), with the session's default ReadOptions as
// they were when the snapshot was taken when it came from a Conn; a
// MultiGet without the driver's batched lookup loops the snapshot's Get,
// which is still consistent.
//
// A Snapshot is safe for concurrent use. After Close, or DB.Close, every
// call returns an error matching ErrClosed. Iterators opened on a snapshot
// keep reading it after the snapshot's Close: the driver's snapshot is
// released when the snapshot and all its iterators are closed.
type Snapshot struct {
	db          *DB
	snap        DriverSnapshot
	multiGetter SnapshotMultiGetter
	// snap as a Haser, a ValueSizer and a PinnedGetter, nil when it is not
	// one.
	haser        Haser
	valueSizer   ValueSizer
	pinnedGetter PinnedGetter
	defaults     *ioctx.ReadOptions // the Conn's at NewSnapshot; nil for a DB's

	closed atomic.Bool // Close was called
	mu     struct {
		sync.Mutex
		iters    int  // open iterators, which keep the driver's snapshot
		released bool // snap.Close was called
	}
}

// NewSnapshot returns a snapshot of the database as of now (see [Snapshot]);
// an error matching ErrNotSupported when the driver has no snapshots (see
// [Snapshotter]). Close it when done; DB.Close closes the ones left open.
func (db *DB) NewSnapshot(ctx context.Context) (*Snapshot, error) {
	return db.newSnapshot(ctx, nil)
}

func (db *DB) newSnapshot(ctx context.Context, sess *Conn) (*Snapshot, error) {
	cs, err := db.start(ctx, sess)
	if err != nil {
		return nil, err
	}
	defer db.exit()
	if cs.snapshotter == nil {
		return nil, errNoSnapshot
	}
	ds, err := cs.snapshotter.NewSnapshot(ctx)
	if err != nil {
		return nil, err
	}
	s := &Snapshot{db: db, snap: ds}
	s.multiGetter, _ = ds.(SnapshotMultiGetter)
	s.haser, _ = ds.(Haser)
	s.valueSizer, _ = ds.(ValueSizer)
	s.pinnedGetter, _ = ds.(PinnedGetter)
	if sess != nil {
		s.defaults = sess.defaults.Load()
	}
	db.mu.Lock()
	if db.mu.snaps == nil {
		db.mu.snaps = make(map[*Snapshot]struct{})
	}
	db.mu.snaps[s] = struct{}{}
	db.mu.Unlock()
	return s, nil
}

// startRead is the prologue of a snapshot read, DB.startRead's with the
// snapshot's closed check and defaults. On success the caller must call
// s.db.exit.
func (s *Snapshot) startRead(ctx context.Context, api string, want ioctx.Activity) (ioctx.ReadRequest, error) {
	if s.closed.Load() {
		return ioctx.ReadRequest{}, errSnapshotClosed
	}
	_, req, err := s.db.startReadWith(ctx, s.defaults, api, want)
	return req, err
}

// Get returns the value of key in the snapshot, or an error matching
// ErrNotFound. The returned slice is the caller's; key is not retained.
func (s *Snapshot) Get(ctx context.Context, key []byte) ([]byte, error) {
	req, err := s.startRead(ctx, "Get", ioctx.ActivityGet)
	if err != nil {
		return nil, err
	}
	defer s.db.exit()
	return s.snap.Get(ctx, req, key)
}

// MultiGet is [DB.MultiGet] in the snapshot.
func (s *Snapshot) MultiGet(ctx context.Context, keys [][]byte) ([][]byte, error) {
	req, err := s.startRead(ctx, "MultiGet", ioctx.ActivityMultiGet)
	if err != nil {
		return nil, err
	}
	defer s.db.exit()
	return multiGet(ctx, s.multiGetter, s.snap, req, keys)
}

// NewIterator is [DB.NewIterator] over the snapshot. The iterator keeps
// reading the snapshot after the snapshot's Close; DB.Close closes it.
func (s *Snapshot) NewIterator(ctx context.Context, opts *IterOptions) (*Iterator, error) {
	req, err := s.startRead(ctx, "NewIterator", ioctx.ActivityDBIterator)
	if err != nil {
		return nil, err
	}
	defer s.db.exit()
	// Count the iterator before creating it, so a concurrent Close cannot
	// release the driver's snapshot under the driver's NewIterator.
	s.mu.Lock()
	if s.mu.released {
		s.mu.Unlock()
		return nil, errSnapshotClosed
	}
	s.mu.iters++
	s.mu.Unlock()
	iter, err := s.snap.NewIterator(ctx, req, copyIterOptions(opts))
	if err != nil {
		_ = s.iterClosed()
		return nil, err
	}
	it := s.db.trackIter(ctx, req, iter, nil)
	it.snap = s
	return it, nil
}

// Close releases the snapshot: later calls on it return an error matching
// ErrClosed, as does a second Close. The driver's snapshot is released now,
// or when the last of the snapshot's iterators is closed; Close returns the
// driver's close error when it released it.
func (s *Snapshot) Close() error {
	if err := s.db.enter(); err != nil {
		return err
	}
	defer s.db.exit()
	if s.closed.Swap(true) {
		return errSnapshotClosed
	}
	s.mu.Lock()
	release := s.mu.iters == 0 && !s.mu.released
	s.mu.released = s.mu.released || release
	s.mu.Unlock()
	if !release {
		return nil
	}
	return s.release()
}

// iterClosed forgets a closed iterator of the snapshot, releasing the
// driver's snapshot if it was the last one after Close. The caller has
// entered the DB.
func (s *Snapshot) iterClosed() error {
	s.mu.Lock()
	s.mu.iters--
	release := s.mu.iters == 0 && s.closed.Load() && !s.mu.released
	s.mu.released = s.mu.released || release
	s.mu.Unlock()
	if !release {
		return nil
	}
	return s.release()
}

// release closes the driver's snapshot; its caller set mu.released, so it
// runs once.
func (s *Snapshot) release() error {
	s.db.mu.Lock()
	delete(s.db.mu.snaps, s)
	s.db.mu.Unlock()
	return s.snap.Close()
}
