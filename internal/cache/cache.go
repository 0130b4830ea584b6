package cache

import (
	"context"
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"
)

// Key names one block: the DB (ID, from NewID), its table file and the block's
// offset in that file. It is a plain comparable value.
type Key struct {
	ID, FileNum, Offset uint64
}

// String formats the key as "id/file@offset".
func (k Key) String() string { return fmt.Sprintf("%d/%06d@%d", k.ID, k.FileNum, k.Offset) }

// Cache is a sharded, size-bounded block cache with reference-counted
// handles. It is safe for concurrent use. A nil *Cache is a valid cache that
// holds nothing (see the package documentation).
type Cache struct {
	capacity int64
	// shift selects a shard from the top bits of a key's hash.
	shift  uint
	shards []shard
	nextID atomic.Uint64

	// spares holds entry structs without a buffer; bufs[cl] holds entries
	// carrying a freed buffer of class cl or larger. sync.Pool keeps them
	// per P and lets the garbage collector trim them.
	spares sync.Pool
	bufs   [numClasses]sync.Pool

	// live counts entries made by newEntry and not yet freed. Maintained in
	// invariants builds only, for leak checks in tests.
	live atomic.Int64
}

// Shard counts: 4 per GOMAXPROCS, a power of two in [minShards, maxShards],
// halved while a shard would hold less than minShardCapacity (so that small
// caches can still hold large blocks).
const (
	minShards        = 4
	maxShards        = 256
	minShardCapacity = 256 << 10
)

func defaultShards(capacity int64, procs int) int {
	n := 1 << bits.Len(uint(max(4*procs, 1)-1))
	n = min(max(n, minShards), maxShards)
	for n > minShards && capacity/int64(n) < minShardCapacity {
		n /= 2
	}
	return n
}

// New returns a cache holding up to capacity bytes, counting each entry as
// len(value) + EntryOverhead. Each of its shards holds capacity/shards bytes,
// so a value charged more than that is never cached. A capacity of 0 (or
// less) makes a cache that caches nothing; callers that want no cache use a
// nil *Cache instead.
func New(capacity int64) *Cache {
	return newWithShards(capacity, defaultShards(capacity, runtime.GOMAXPROCS(0)))
}

// newWithShards is New with an explicit shard count, a power of two.
func newWithShards(capacity int64, n int) *Cache {
	capacity = max(capacity, 0)
	c := &Cache{
		capacity: capacity,
		shift:    uint(64 - bits.TrailingZeros(uint(n))),
		shards:   make([]shard, n),
	}
	for i := range c.shards {
		c.shards[i].init(capacity / int64(n))
	}
	return c
}

// shardFor picks k's shard: the three words are mixed by multiplying with
// odd constants, and the top bits of the product select the shard, since
// offsets are multiples of block sizes and file numbers are small.
func (c *Cache) shardFor(k Key) *shard {
	h := k.ID*0x9e3779b97f4a7c15 ^ k.FileNum*0xc2b2ae3d27d4eb4f ^ k.Offset*0x165667b19e3779f9
	h *= 0xff51afd7ed558ccd
	return &c.shards[h>>c.shift]
}

// NewID returns an ID no other call on this cache returned, for a DB sharing
// the cache to put in its keys. IDs start at 1; a nil *Cache returns 0.
func (c *Cache) NewID() uint64 {
	if c == nil {
		return 0
	}
	return c.nextID.Add(1)
}

// Capacity returns the capacity New was given (0 for a nil *Cache).
func (c *Cache) Capacity() int64 {
	if c == nil {
		return 0
	}
	return c.capacity
}

// Size returns the bytes charged for the entries in the cache now. Entries
// that have been evicted but are still referenced by handles are no longer
// charged. Under concurrent changes the sum is not a snapshot.
func (c *Cache) Size() int64 {
	if c == nil {
		return 0
	}
	var n int64
	for i := range c.shards {
		n += c.shards[i].size.Load()
	}
	return n
}

// Len returns the number of entries in the cache. Under concurrent changes
// the sum is not a snapshot.
func (c *Cache) Len() int {
	if c == nil {
		return 0
	}
	var n int64
	for i := range c.shards {
		n += c.shards[i].count.Load()
	}
	return int(n)
}

// Get returns a referenced handle to k's value, or ok=false on a miss. The
// caller must Release the handle. A hit takes its shard's lock shared, never
// exclusively, and does not allocate.
//
// On a nil *Cache, Get always misses.
func (c *Cache) Get(k Key) (h Handle, ok bool) {
	if c == nil {
		return Handle{}, false
	}
	return c.shardFor(k).get(k)
}

// Set inserts value under k, replacing any entry of k, and returns a
// referenced handle to it, which the caller must Release. The cache takes
// ownership of value's backing array, up to cap(value): the caller must not
// use value, or any slice sharing its array, afterwards except through the
// handle. A value charged more than a shard's capacity is not cached (and an
// older entry of k is removed); it is still returned in a detached handle,
// and its buffer is recycled when that handle is released.
//
// On a nil *Cache, Set returns a detached handle.
func (c *Cache) Set(k Key, value []byte) Handle {
	if c == nil {
		return detached(k, value)
	}
	s := c.shardFor(k)
	e := c.newEntry(k, value, 1)
	h := Handle{e: e, gen: e.gen.Load()}
	s.mu.Lock()
	evicted := s.publishLocked(e)
	s.mu.Unlock()
	releaseChain(evicted)
	return h
}

// publishLocked indexes e if it fits the shard, adding the index's reference,
// or otherwise leaves it detached and removes the stale entry of its key.
func (s *shard) publishLocked(e *entry) (evicted *entry) {
	if e.charge <= s.capacity {
		e.refs.Add(1)
		return s.insertLocked(e)
	}
	if old := s.entries[e.key]; old != nil {
		evicted = s.removeLocked(old, nil)
	}
	return evicted
}

// detached wraps a value in a handle of a nil *Cache.
func detached(k Key, value []byte) Handle {
	e := &entry{key: k, buf: value, charge: int64(len(value)) + EntryOverhead}
	e.refs.Store(1)
	return Handle{e: e}
}

// GetOrLoad returns a referenced handle to k's value, which the caller must
// Release. On a hit, hit is true. On a miss, load is called to produce the
// value, which is inserted as by Set: the cache owns load's value afterwards
// (it may come from Alloc). Concurrent callers missing the same key share one
// call of load (single flight): the first calls it, the others wait and get
// their own handles to the same value. If load fails, its error is returned
// to the loader and every waiter, and nothing is cached; the next call loads
// again.
//
// A waiter whose ctx is done stops waiting and returns an error for which
// errors.Is(err, ctx.Err()) holds, unless the load finished first; the load
// goes on for the others. ctx is not consulted otherwise: a hit is returned
// even under a done ctx, and load, which runs on the loader's goroutine,
// should watch its own context. When a load fails with a context error
// (context.Canceled or DeadlineExceeded, presumably the loader's own) a
// waiter whose ctx is still live retries instead of taking that error. If
// load panics, waiters get an error and the panic continues in the loader.
//
// load must not call GetOrLoad for the same key: it would wait for itself.
//
// On a nil *Cache, GetOrLoad calls load and returns its value in a detached
// handle.
func (c *Cache) GetOrLoad(
	ctx context.Context, k Key, load func() ([]byte, error),
) (h Handle, hit bool, err error) {
	if c == nil {
		v, err := load()
		if err != nil {
			return Handle{}, false, err
		}
		return detached(k, v), false, nil
	}
	s := c.shardFor(k)
	if h, ok := s.get(k); ok {
		return h, true, nil
	}
	waited := false
	for {
		s.mu.Lock()
		if e := s.entries[k]; e != nil {
			h := refLocked(e)
			s.mu.Unlock()
			return h, !waited, nil
		}
		f := s.flights[k]
		if f == nil {
			f = &flight{}
			s.flights[k] = f
			s.mu.Unlock()
			h, err := c.runLoad(s, k, f, load)
			return h, false, err
		}
		f.waiters++
		if f.done == nil {
			f.done = make(chan struct{})
		}
		done := f.done
		s.mu.Unlock()

		waited = true
		select {
		case <-done:
		case <-ctx.Done():
			s.mu.Lock()
			completed := f.completed
			if !completed {
				f.waiters-- // the loader will not reserve a reference for us
			}
			s.mu.Unlock()
			if !completed {
				return Handle{}, false, errors.Wrapf(ctx.Err(), "cache: waiting for block %s", k)
			}
			// The load finished first and reserved a reference for us:
			// take the result as if done had won the select.
		}
		switch {
		case f.err == nil:
			return Handle{e: f.e, gen: f.gen}, false, nil
		case ctx.Err() != nil && isContextError(f.err):
			return Handle{}, false, errors.Wrapf(ctx.Err(), "cache: waiting for block %s", k)
		case isContextError(f.err):
			continue // the loader's context ended, not ours: try again
		}
		return Handle{}, false, f.err
	}
}

func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// runLoad calls load for flight f and publishes its outcome. If load panics,
// the flight is finished with an error first, so waiters do not hang.
func (c *Cache) runLoad(s *shard, k Key, f *flight, load func() ([]byte, error)) (Handle, error) {
	finished := false
	defer func() {
		if !finished {
			c.finishLoad(s, k, f, nil, errors.Newf("cache: load of block %s panicked", k))
		}
	}()
	v, err := load()
	finished = true
	return c.finishLoad(s, k, f, v, err)
}

// finishLoad ends flight f: it caches v (unless err is set), reserves one
// reference for each remaining waiter, and wakes them.
func (c *Cache) finishLoad(s *shard, k Key, f *flight, v []byte, err error) (Handle, error) {
	var e *entry
	var h Handle
	if err == nil {
		e = c.newEntry(k, v, 1)
		h = Handle{e: e, gen: e.gen.Load()}
	}
	var evicted *entry
	s.mu.Lock()
	delete(s.flights, k)
	f.completed = true
	if err != nil {
		f.err = err
	} else {
		e.refs.Add(f.waiters)
		f.e, f.gen = e, h.gen
		evicted = s.publishLocked(e)
	}
	done := f.done
	s.mu.Unlock()
	if done != nil {
		close(done)
	}
	releaseChain(evicted)
	return h, err
}

// EvictFile removes every entry of the file (id, fileNum), for a table that
// has been deleted. Handles to those entries stay valid until released. A
// load of one of the file's blocks still in flight inserts its value when it
// finishes; file numbers are not reused, so such an entry only ages out.
func (c *Cache) EvictFile(id, fileNum uint64) {
	if c == nil {
		return
	}
	fk := fileKey{id, fileNum}
	for i := range c.shards {
		s := &c.shards[i]
		// Most shards hold nothing of the file; look before locking
		// exclusively, so that hits on them are not held up.
		s.mu.RLock()
		_, ok := s.files[fk]
		s.mu.RUnlock()
		if !ok {
			continue
		}
		var evicted *entry
		s.mu.Lock()
		for head := s.files[fk]; head != nil; head = s.files[fk] {
			evicted = s.removeLocked(head, evicted)
		}
		s.mu.Unlock()
		releaseChain(evicted)
	}
}
