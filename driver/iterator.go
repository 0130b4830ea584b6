package driver

import (
	"context"
	"sync"
	"time"

	"github.com/shaledb/shale/internal/errclass"
)

// Iterator walks the keys of a DB, a Tx or a Snapshot in order, within its bounds.
//
//	it, err := db.NewIterator(ctx, nil)
//	if err != nil { ... }
//	defer it.Close()
//	for ok := it.First(); ok; ok = it.Next() {
//		use(it.Key(), it.Value())
//	}
//	if err := it.Error(); err != nil { ... }
//
// A new iterator is unpositioned. First, Last, SeekGE and SeekLT position it;
// Next and Prev move from the current key. Each move reports whether the
// iterator is at a key (Valid). Next and Prev on an iterator that is not at
// a key — never positioned, or already moved past either end — return false
// and leave Error unchanged: call First, Last, SeekGE or SeekLT to position
// it again.
//
// Key and Value return slices that belong to the iterator: they are valid
// until the next move or Close (of the iterator or its DB), and must not be
// modified. Copy them to keep them. A driver never frees memory under a
// slice it returned: a DB.Close, even one running while another goroutine
// reads the slice, cannot make it fault or show another database's bytes
// (the conformance case HeldSlices checks it).
//
// After Close, or after DB.Close, moves return false and Error reports an
// error matching ErrClosed. When the context given to NewIterator is done,
// moves return false and Error reports ctx.Err(); likewise, with an error
// matching context.DeadlineExceeded, once the ReadOptions' Deadline passed.
//
// An Iterator is not safe for concurrent use, but DB.Close may run
// concurrently with it.
type Iterator struct {
	db   *DB
	tx   *Tx       // the transaction the iterator reads, if any
	snap *Snapshot // the snapshot the iterator reads, if any
	iter Iter
	// ctx is kept, as sql.Rows keeps its, because the iterator's moves
	// take no context of their own; done is ctx.Done() (nil when ctx can
	// never be done), polled without blocking on each move.
	ctx  context.Context
	done <-chan struct{}
	// deadline is the request's deadline that ctx does not carry (see
	// ioctx.ReadRequest), zero when none: moves after it fail as a done
	// ctx's do.
	deadline time.Time

	// guard is held by each move and by DB.Close while it closes iter;
	// dbClosed (under guard) says DB.Close did. A move takes this lock of
	// its own iterator rather than registering with the DB (DB.enter):
	// the DB's call count is one cache line that every goroutine's every
	// move would write.
	guard    sync.Mutex
	dbClosed bool

	// The fields below are used only by the iterator's goroutine; DB.Close
	// touches none of them, only iter.
	key, value []byte // the driver's, cached at each move
	valid      bool
	closed     bool
	err        error // the façade's own error (ctx, closed), or the one captured at Close
}

// errDeadlineExceeded is RocksDB's IOStatus::TimedOut("Deadline exceeded"),
// as the engine reports a read that starts after its deadline.
var errDeadlineExceeded = errclass.Timeout("Deadline exceeded")

type move uint8

const (
	moveFirst move = iota
	moveLast
	moveSeekGE
	moveSeekLT
	moveNext // relative moves from here on
	movePrev
)

// First moves to the first key and reports whether there is one.
func (it *Iterator) First() bool { return it.move(moveFirst, nil) }

// Last moves to the last key and reports whether there is one.
func (it *Iterator) Last() bool { return it.move(moveLast, nil) }

// SeekGE moves to the first key >= key and reports whether there is one.
// key is not retained.
func (it *Iterator) SeekGE(key []byte) bool { return it.move(moveSeekGE, key) }

// SeekLT moves to the last key < key and reports whether there is one. key
// is not retained.
func (it *Iterator) SeekLT(key []byte) bool { return it.move(moveSeekLT, key) }

// Next moves to the next key and reports whether there is one; false on an
// iterator that is not at a key.
func (it *Iterator) Next() bool { return it.move(moveNext, nil) }

// Prev moves to the previous key and reports whether there is one; false on
// an iterator that is not at a key.
func (it *Iterator) Prev() bool { return it.move(movePrev, nil) }

func (it *Iterator) move(m move, key []byte) bool {
	it.guard.Lock()
	defer it.guard.Unlock()
	return it.moveLocked(m, key)
}

func (it *Iterator) moveLocked(m move, key []byte) bool {
	switch {
	case it.dbClosed:
		it.invalidate(errDBClosed)
		return false
	case it.closed:
		it.invalidate(errIterClosed)
		return false
	case m >= moveNext && !it.valid:
		return false
	}
	if it.done != nil {
		select {
		case <-it.done:
			it.invalidate(it.ctx.Err())
			return false
		default:
		}
	}
	if !it.deadline.IsZero() && !time.Now().Before(it.deadline) {
		it.invalidate(errDeadlineExceeded)
		return false
	}
	var ok bool
	switch m {
	case moveFirst:
		it.err = nil
		ok = it.iter.First()
	case moveLast:
		it.err = nil
		ok = it.iter.Last()
	case moveSeekGE:
		it.err = nil
		ok = it.iter.SeekGE(key)
	case moveSeekLT:
		it.err = nil
		ok = it.iter.SeekLT(key)
	case moveNext:
		ok = it.iter.Next()
	case movePrev:
		ok = it.iter.Prev()
	}
	it.valid = ok
	if ok {
		it.key, it.value = it.iter.Key(), it.iter.Value()
	} else {
		it.key, it.value = nil, nil
	}
	return ok
}

func (it *Iterator) invalidate(err error) {
	it.valid = false
	it.key, it.value = nil, nil
	it.err = err
}

// Valid reports whether the iterator is at a key: whether its last move
// returned true. A DB.Close that runs after that move does not change it;
// the next move returns false.
func (it *Iterator) Valid() bool { return it.valid }

// Key returns the current key, or nil when the iterator is not at one. The
// slice is valid until the next move or Close; copy it to keep it.
//
// A move that returned true always has its entry: Key and Value return it
// even when DB.Close ran after the move (the driver never frees memory
// under a slice it returned), so an entry read while the database closes is
// never mistaken for an empty one. The next move returns false, and Error
// reports ErrClosed.
func (it *Iterator) Key() []byte {
	if !it.valid {
		return nil
	}
	return it.key
}

// Value returns the current value, or nil when the iterator is not at a key.
// The slice is valid until the next move or Close; copy it to keep it. See
// Key for a DB.Close after the move.
func (it *Iterator) Value() []byte {
	if !it.valid {
		return nil
	}
	return it.value
}

// Error returns the error that stopped the iterator, or nil when it simply
// ran out of keys. A First, Last, SeekGE or SeekLT clears it. After Close it
// returns what Close returned, until a move reports ErrClosed.
func (it *Iterator) Error() error {
	if it.err != nil || it.closed {
		return it.err
	}
	if err := it.db.enter(); err != nil {
		return err
	}
	defer it.db.exit()
	return it.iter.Error()
}

// Close releases the iterator. It returns the error the iteration met, as
// Error would have, or else the driver's close error. A second Close, or a
// Close after DB.Close closed the iterator, returns an error matching
// ErrClosed.
func (it *Iterator) Close() error {
	if err := it.db.enter(); err != nil {
		return err
	}
	defer it.db.exit()
	if it.closed {
		return errIterClosed
	}
	return it.closeEntered()
}

// closeEntered closes an open iterator; the caller has entered the DB.
func (it *Iterator) closeEntered() error {
	err := it.err
	if err == nil {
		err = it.iter.Error()
	}
	if cerr := it.iter.Close(); err == nil {
		err = cerr
	}
	it.closed = true
	it.valid = false
	it.key, it.value = nil, nil
	it.err = err
	it.db.untrackIter(it)
	if it.tx != nil {
		it.tx.untrackIter(it)
	}
	if it.snap != nil {
		if serr := it.snap.iterClosed(); err == nil {
			err = serr
		}
	}
	return err
}
