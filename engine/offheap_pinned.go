package engine

import (
	"sync"
	"sync/atomic"

	"github.com/shaledb/shale/internal/base"
)

// pinnedBuf is the Go heap copy of a pinned value that lives off the Go heap
// (see pinnedValue). Recycled through its database's pinnedBufs, so that GetPinned
// of a cached block allocates nothing once warm, as it did before the
// cache's blocks left the Go heap. A buffer reused after Release shows a
// caller who kept Data too long another value of the same database, as a
// recycled cache block or decoded block does; never unmapped memory, and
// never another database's value (the pool is the DB's, not the process's).
type pinnedBuf struct {
	b    []byte
	pool *sync.Pool
	// gen changes at every release. A pinnedValue records it, so that a
	// second Release (of a copy of the pinnedValue), which would pool the
	// buffer twice and hand it to two readers at once, is caught even
	// after the buffer went to another reader.
	gen atomic.Uint32
}

// maxPinnedBuf bounds the buffers kept in a pinnedBufs pool, so that one
// huge value does not stay reachable forever.
const maxPinnedBuf = 64 << 10

// newPinnedBuf returns a buffer from pool (a DB's pinnedBufs) holding a copy
// of v (non-nil even when v is empty, as the copy GetPinned made before)
// and its generation.
func newPinnedBuf(pool *sync.Pool, v []byte) (*pinnedBuf, uint32) {
	pb, _ := pool.Get().(*pinnedBuf)
	if pb == nil {
		pb = &pinnedBuf{pool: pool}
	}
	if pb.b == nil {
		pb.b = make([]byte, 0, max(len(v), 64))
	}
	pb.b = append(pb.b[:0], v...)
	return pb, pb.gen.Load()
}

// release takes the buffer back from the holder of generation gen.
func (pb *pinnedBuf) release(gen uint32) {
	if !pb.gen.CompareAndSwap(gen, gen+1) {
		panic(base.AssertionFailedf("engine: pinned value released twice"))
	}
	if cap(pb.b) > maxPinnedBuf {
		pb.b = nil
	}
	pb.pool.Put(pb)
}
