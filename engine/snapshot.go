package engine

import (
	"context"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
)

// snapshot is a consistent point-in-time view of the database: reads through
// it see exactly the writes acknowledged before it was taken. Compactions
// keep every version a snapshot can see until it is closed. Safe for
// concurrent use; Close it when done.
//
// Its reads (Get, MultiGet, NewIterator, in iterator.go) follow the
// database's: the context's ReadOptions apply, checked and tagged with the
// API's activity. An iterator opened on a snapshot keeps reading it after
// the snapshot's Close (it holds the table files it reads).
type snapshot struct {
	db  *database
	seq base.SeqNum
	// prev and next link the DB's snapshot list, guarded by db.mu.
	prev, next *snapshot
	// released is set by Close; reads check it without taking db.mu.
	released atomic.Bool
	// rs is, on a secondary instance, the read state the snapshot was
	// taken in, referenced until Close: the primary knows nothing of the
	// secondary's snapshots, and its compactions may drop what one sees,
	// so the snapshot keeps reading the tables and memtables of its time.
	rs *readState
}

// snapshotList is a doubly linked list of open snapshots in creation order,
// which is sequence-number order. Its zero value is not ready: init first.
type snapshotList struct {
	root snapshot
	n    int
}

func (l *snapshotList) lazyInit() {
	if l.root.next == nil {
		l.root.next, l.root.prev = &l.root, &l.root
	}
}

func (l *snapshotList) pushBack(s *snapshot) {
	l.lazyInit()
	s.prev, s.next = l.root.prev, &l.root
	s.prev.next, l.root.prev = s, s
	l.n++
}

func (l *snapshotList) remove(s *snapshot) {
	s.prev.next, s.next.prev = s.next, s.prev
	s.prev, s.next = nil, nil
	l.n--
}

// seqNums returns the sequence numbers of the open snapshots, ascending and
// without duplicates.
func (l *snapshotList) seqNums() []base.SeqNum {
	if l.n == 0 {
		return nil
	}
	seqs := make([]base.SeqNum, 0, l.n)
	for s := l.root.next; s != &l.root; s = s.next {
		if len(seqs) == 0 || seqs[len(seqs)-1] != s.seq {
			seqs = append(seqs, s.seq)
		}
	}
	return seqs
}

// NewSnapshot returns a snapshot of the database as of now.
func (d *database) NewSnapshot() (*snapshot, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.mu.closed || d.mu.closing {
		return nil, base.Mark(errors.New("engine: NewSnapshot on a closed database"), ErrClosed)
	}
	s := &snapshot{db: d, seq: base.SeqNum(d.visibleSeq.Load())}
	if d.sec != nil {
		// CatchUp installs the state and visibleSeq under d.mu.
		rs, err := d.loadReadState()
		if err != nil {
			return nil, err
		}
		s.rs = rs
	}
	d.mu.snapshots.pushBack(s)
	return s, nil
}

// Close releases the snapshot. Closing twice returns an error marked
// ErrClosed.
func (s *snapshot) Close() error {
	d := s.db
	d.mu.Lock()
	defer d.mu.Unlock()
	if s.released.Swap(true) {
		return base.Mark(errors.New("engine: snapshot already closed"), ErrClosed)
	}
	d.mu.snapshots.remove(s)
	if s.rs != nil {
		s.rs.unref()
	}
	return nil
}

// startRead checks the snapshot and the database and starts a read with
// the resolved request (the driver snapshot's reads: the façade resolved it).
func (s *snapshot) startRead(ctx context.Context, call *readCall) error {
	if s.released.Load() {
		return errSnapshotClosed
	}
	call.rs = s.rs
	return s.db.startRead(ctx, call)
}

var errSnapshotClosed = base.Mark(errors.New("engine: read of a closed snapshot"), ErrClosed)
