package ratelimit

import (
	"sync"

	"github.com/shaledb/shale/ioctx"
)

// request is one queued Request: RocksDB's GenericRateLimiter::Req. All
// fields but signal are guarded by Generic.mu.
type request struct {
	// remaining is what is still to be granted (RocksDB's request_bytes). A
	// refill lowers it by partial grants; zero means granted.
	remaining int64
	// bytes is what was enqueued. It is added to the priority's
	// TotalBytesThrough when the request is granted in full, never before.
	bytes int64
	pri   ioctx.Priority

	// signal wakes the goroutine waiting on this request: for a grant, for
	// the duty of waiting for the next refill, or for Close. It has room for
	// one token, so a signal sent under Generic.mu never blocks and never
	// gets lost; a waiter that finds a stale token just re-checks its state.
	signal chan struct{}

	// The links of the priority's FIFO queue. They make leaving from the
	// middle (a cancelled waiter) O(1).
	prev, next *request
	queued     bool
}

// wake sends r a signal without blocking. Callers hold Generic.mu.
func (r *request) wake() {
	select {
	case r.signal <- struct{}{}:
	default:
	}
}

// requestPool recycles queued requests, so a request that waits allocates
// nothing in the steady state (its signal channel is reused with it).
var requestPool = sync.Pool{
	New: func() any { return &request{signal: make(chan struct{}, 1)} },
}

func getRequest(bytes int64, pri ioctx.Priority) *request {
	r := requestPool.Get().(*request)
	r.remaining, r.bytes, r.pri = bytes, bytes, pri
	return r
}

// putRequest recycles r. It must be out of its queue, which also means no
// other goroutine will signal it again: signals are sent under Generic.mu
// only to queued requests.
func putRequest(r *request) {
	select {
	case <-r.signal: // drop a token left by the grant or a duty hand-over
	default:
	}
	*r = request{signal: r.signal}
	requestPool.Put(r)
}

// queue is a FIFO of requests at one priority, an intrusive doubly linked
// list. It is guarded by Generic.mu.
type queue struct {
	head, tail *request
	n          int
}

func (q *queue) pushBack(r *request) {
	r.prev, r.next = q.tail, nil
	if q.tail == nil {
		q.head = r
	} else {
		q.tail.next = r
	}
	q.tail = r
	r.queued = true
	q.n++
}

func (q *queue) front() *request { return q.head }

// remove takes r out of q; r must be in q.
func (q *queue) remove(r *request) {
	if r.prev == nil {
		q.head = r.next
	} else {
		r.prev.next = r.next
	}
	if r.next == nil {
		q.tail = r.prev
	} else {
		r.next.prev = r.prev
	}
	r.prev, r.next, r.queued = nil, nil, false
	q.n--
}
