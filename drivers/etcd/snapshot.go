package etcd

import (
	"context"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/ioctx"
)

// snapshot is a pinned revision: every read is an etcd read at that
// revision, which etcd serves from its MVCC history until a compaction
// passes it. The pin keeps this DB's Compact below the revision until
// Close; a compaction by anyone else past it makes the snapshot's reads fail
// with an error matching ErrSnapshotCompacted. It holds nothing else, so it
// costs the cluster only the history it keeps from being compacted.
type snapshot struct {
	c   *conn
	rev int64
	pin *pin
}

var (
	_ driver.Snapshotter         = (*conn)(nil)
	_ driver.DriverSnapshot      = (*snapshot)(nil)
	_ driver.SnapshotMultiGetter = (*snapshot)(nil)
)

// NewSnapshot reads the current revision (one linearizable read, activity
// Unknown), so the snapshot sees every write acknowledged before the call,
// and pins it.
func (c *conn) NewSnapshot(ctx context.Context) (driver.DriverSnapshot, error) {
	pn := c.pins.add()
	rev, err := c.currentRevision(ctx, "NewSnapshot")
	if err != nil {
		c.pins.remove(pn)
		return nil, err
	}
	c.pins.resolve(pn, rev)
	return &snapshot{c: c, rev: rev, pin: pn}, nil
}

// Get reads key at the snapshot's revision, with one Range.
func (s *snapshot) Get(ctx context.Context, req ioctx.ReadRequest, key []byte) ([]byte, error) {
	return s.c.getValue(ctx, req, "Snapshot.Get", key, s.rev)
}

// MultiGet reads keys at the snapshot's revision, in Txns of at most
// max_txn_ops Ranges as the DB's MultiGet does.
func (s *snapshot) MultiGet(ctx context.Context, req ioctx.ReadRequest, keys [][]byte) ([][]byte, error) {
	return s.c.multiGetValues(ctx, req, keys, s.rev)
}

// NewIterator returns an iterator at the snapshot's revision. It fetches
// nothing until its first move, and holds no pin of its own: the façade
// closes the driver's snapshot only after its iterators.
func (s *snapshot) NewIterator(ctx context.Context, req ioctx.ReadRequest, opts driver.IterOptions) (driver.Iter, error) {
	it := s.c.newIter(ctx, req, opts, s.rev)
	if it.emptyBounds() {
		it.havePage, it.loStart, it.hiEnd = true, true, true
	}
	return it, nil
}

// Close unpins the revision.
func (s *snapshot) Close() error {
	s.c.pins.remove(s.pin)
	s.pin = nil
	return nil
}
