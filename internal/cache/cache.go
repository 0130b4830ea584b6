package cache

import (
	"context"
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
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

	// region is the off-heap memory Alloc takes buffers from first (see
	// region.go); nil when the cache lives on the Go heap.
	region *region
}

// Shard counts: 16 per GOMAXPROCS (see the package documentation), a power
// of two in [minShards, maxShards], halved while a shard would hold less
// than minShardCapacity (so that small caches can still hold large blocks).
const (
	minShards        = 4
	maxShards        = 256
	minShardCapacity = 1 << 20
)

func defaultShards(capacity int64, procs int) int {
	n := 1 << bits.Len(uint(max(16*procs, 1)-1))
	n = min(max(n, minShards), maxShards)
	for n > minShards && capacity/int64(n) < minShardCapacity {
		n /= 2
	}
	return n
}

// New returns a cache holding up to capacity bytes, counting each entry as
// the memory its value's buffer keeps (for a buffer from Alloc, the size
// class of its length) + EntryOverhead. Each of its shards holds capacity/shards bytes,
// so a value charged more than that is never cached. A capacity of 0 (or
// less) makes a cache that caches nothing; callers that want no cache use a
// nil *Cache instead.
//
// New uses DefaultHighPriorityPoolRatio; NewWithOptions sets it.
func New(capacity int64) *Cache {
	return NewWithOptions(capacity, Options{HighPriorityPoolRatio: DefaultHighPriorityPoolRatio})
}

// Options are a cache's settings beyond its capacity.
type Options struct {
	// HighPriorityPoolRatio is the share of the capacity (and of each
	// shard's) that entries of PriorityHigh keep from the others, RocksDB's
	// high_pri_pool_ratio: within it they are evicted only when no entry
	// of another priority is left; beyond it they compete with the main
	// ring's. 0 (the zero Options) makes PriorityHigh entries normal ones
	// as they are inserted; values outside [0, 1] are clamped, and NaN is
	// 0.
	HighPriorityPoolRatio float64
	// GoHeap keeps the cache's buffers on the Go heap. By default (false)
	// Alloc takes them from a region mapped outside the Go heap for each
	// Cache, where the platform allows (64-bit unix): the garbage
	// collector neither scans them nor counts them towards its goal, which
	// would let the heap grow by as much again. The price is that a value
	// may not outlive its handle in any form, not even as a slice the
	// garbage collector would keep alive: whatever leaves the caller's
	// control must be copied (see OffHeap).
	GoHeap bool
}

// DefaultHighPriorityPoolRatio is New's HighPriorityPoolRatio: RocksDB's
// default high_pri_pool_ratio.
const DefaultHighPriorityPoolRatio = 0.5

// NewWithOptions is New with the settings o.
func NewWithOptions(capacity int64, o Options) *Cache {
	return newCache(capacity, defaultShards(capacity, runtime.GOMAXPROCS(0)), ^uint64(0), o)
}

// newWithShards is New with an explicit shard count, a power of two.
func newWithShards(capacity int64, n int) *Cache {
	return newWithMask(capacity, n, ^uint64(0))
}

// newWithMask is newWithShards with the mask the shards apply to hashes: a
// test passes a small one to make keys collide in the indexes.
func newWithMask(capacity int64, n int, mask uint64) *Cache {
	return newCache(capacity, n, mask, Options{HighPriorityPoolRatio: DefaultHighPriorityPoolRatio})
}

// newCache makes a cache of n shards (a power of two) whose shards apply
// mask to hashes.
func newCache(capacity int64, n int, mask uint64, o Options) *Cache {
	capacity = max(capacity, 0)
	c := &Cache{
		capacity: capacity,
		shift:    uint(64 - bits.TrailingZeros(uint(n))),
		shards:   make([]shard, n),
	}
	ratio := o.HighPriorityPoolRatio
	if !(ratio > 0) { // NaN too: min and max would keep it, and a NaN share faults the first high insert
		ratio = 0
	}
	ratio = min(ratio, 1)
	shardCap := capacity / int64(n)
	for i := range c.shards {
		c.shards[i].init(shardCap, int64(float64(shardCap)*ratio), mask)
	}
	if !o.GoHeap {
		if r := newRegion(capacity); r != nil {
			c.region = r
			// Every handle and entry reaches c (entry.cache), so once c is
			// unreachable nothing in the process can point into the region.
			runtime.AddCleanup(c, (*region).release, r)
		}
	}
	return c
}

// OffHeap reports whether b points into the cache's off-heap region: memory
// that must be copied before it leaves the caller's control (handed to a
// user, say), because the region is unmapped when the cache becomes
// unreachable and a slice into it does not keep the cache alive. O(1); false
// for a nil *Cache and for empty-capacity slices.
func (c *Cache) OffHeap(b []byte) bool { return c != nil && c.region.contains(b) }

// OffHeapInUse returns the number of off-heap buffers handed out by Alloc
// and not yet back (recycled by a freed entry, or given to Free): those of
// the cached entries, of entries evicted while handles still reference them,
// and of buffers callers hold between Alloc and Set. With no handle and no
// Alloc outstanding, a number above the cache's off-heap entries is a leak.
// It locks every size class in turn; for tests and diagnostics.
func (c *Cache) OffHeapInUse() int64 {
	if c == nil || c.region == nil {
		return 0
	}
	return c.region.objectsInUse()
}

// HasOffHeap reports whether the cache's buffers may come from outside the
// Go heap: whether OffHeap can ever report true.
func (c *Cache) HasOffHeap() bool { return c != nil && c.region != nil }

// shardOf returns the shard of the key whose hash is h.
func (c *Cache) shardOf(h uint64) *shard { return &c.shards[h>>c.shift] }

// shardFor returns k's shard.
func (c *Cache) shardFor(k Key) *shard { return c.shardOf(hashKey(k)) }

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

// MaxValueSize returns the largest length of a value the cache can hold (it
// is charged the size class of its length, see Alloc): a value
// charged more than a shard's capacity is evicted as soon as it is inserted
// (0 for a nil *Cache).
func (c *Cache) MaxValueSize() int {
	if c == nil || len(c.shards) == 0 {
		return 0
	}
	return maxAllocFitting(int(c.capacity/int64(len(c.shards))) - EntryOverhead)
}

// maxAllocFitting returns the largest n whose size class (allocSize) is at
// most room.
func maxAllocFitting(room int) int {
	switch {
	case room > 1<<maxClassShift:
		return room // beyond the classes Alloc makes exactly n bytes
	case room < 1<<minClassShift:
		return 0
	}
	return classSize(floorClass(room))
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
		s := &c.shards[i]
		s.mu.RLock()
		n += s.size
		s.mu.RUnlock()
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
		s := &c.shards[i]
		s.mu.RLock()
		n += s.count
		s.mu.RUnlock()
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
	hash := hashKey(k)
	return c.shardOf(hash).get(hash, k)
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
	e := c.newEntry(k, stateDetached)
	e.buf = value
	h := Handle{e: e, gen: e.gen.Load()}
	s.mu.Lock()
	evicted := s.publishLocked(e, 1)
	s.mu.Unlock()
	releaseChain(evicted)
	return h
}

// detached wraps a value in a handle of a nil *Cache.
func detached(k Key, value []byte) Handle {
	e := &entry{key: k, buf: value}
	e.refs.Store(1)
	return Handle{e: e}
}

// Priority says where an entry that a GetOrLoadWithPriority miss inserts
// starts out (RocksDB's Cache::Priority): see the package documentation. It
// is a plain value passed with the call.
type Priority uint8

const (
	// PriorityNormal entries join the main CLOCK ring, as every entry did
	// before priorities: point reads (Get, MultiGet) and anything else
	// neither a scan nor an index or filter block. Set and GetOrLoad
	// always insert with it.
	PriorityNormal Priority = iota
	// PriorityScan entries are probationary: they join the probation ring
	// and move to the main ring only if a hit sets their bit before they
	// are evicted. For blocks read by a sequential scan.
	PriorityScan
	// PriorityHigh entries join the high-priority ring, which keeps
	// Options.HighPriorityPoolRatio of the cache from the other rings:
	// for index and filter blocks (RocksDB's
	// cache_index_and_filter_blocks_with_high_priority), which every read
	// of their table or partition needs.
	PriorityHigh
)

// String returns "normal", "scan" or "high".
func (p Priority) String() string {
	switch p {
	case PriorityNormal:
		return "normal"
	case PriorityScan:
		return "scan"
	case PriorityHigh:
		return "high"
	}
	return fmt.Sprintf("Priority(%d)", uint8(p))
}

// GetOrLoad is GetOrLoadWithPriority with PriorityNormal.
func (c *Cache) GetOrLoad(
	ctx context.Context, k Key, load func() ([]byte, error),
) (h Handle, hit bool, err error) {
	return c.GetOrLoadWithPriority(ctx, k, PriorityNormal, load)
}

// GetOrLoadWithPriority returns a referenced handle to k's value, which the
// caller must Release. On a hit, hit is true. On a miss, load is called to
// produce the value, which is inserted as by Set but with priority pri: the
// cache owns load's value afterwards (it may come from Alloc). A caller of
// PriorityNormal that waits for a PriorityScan load of the same key makes
// the entry a normal one: a point read wants the block kept; one of
// PriorityHigh that waits for any load makes it a high-priority one. Concurrent callers missing the same key share one
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
// On a nil *Cache, GetOrLoadWithPriority calls load and returns its value in
// a detached handle.
func (c *Cache) GetOrLoadWithPriority(
	ctx context.Context, k Key, pri Priority, load func() ([]byte, error),
) (h Handle, hit bool, err error) {
	return c.GetOrLoadUntil(ctx, time.Time{}, k, pri, load)
}

// GetOrLoadUntil is GetOrLoadWithPriority for a read whose deadline its ctx
// does not carry (ioctx.IOOptions.Deadline, carried by value so that a Get
// with a deadline allocates no context): a waiter for another caller's load
// of k also stops at deadline, with an error marked ErrTimedOut (and
// context.DeadlineExceeded). The timer that watches the deadline is made
// only when the caller has to wait, so hits and loads pay nothing for it. A
// zero deadline is none.
func (c *Cache) GetOrLoadUntil(
	ctx context.Context, deadline time.Time, k Key, pri Priority, load func() ([]byte, error),
) (h Handle, hit bool, err error) {
	if c == nil {
		v, err := load()
		if err != nil {
			return Handle{}, false, err
		}
		return detached(k, v), false, nil
	}
	hash := hashKey(k)
	s := c.shardOf(hash)
	if h, ok := s.get(hash, k); ok {
		return h, true, nil
	}
	hash &= s.mask
	waited := false
	for {
		s.mu.Lock()
		e, head := s.entries.lookup(hash, k)
		if e == nil {
			// Take the key's slot with a placeholder before loading: later
			// callers find it and wait, and the load's value then fills
			// it in place.
			e = c.newEntry(k, stateLoading)
			e.scan = pri == PriorityScan
			e.high = pri == PriorityHigh
			// Count the loader's handle and the index's reference now,
			// while the struct's line is at hand and just before the
			// Unlock fences anyway, so that the usual finish (no waiters)
			// needs no atomic on the entry.
			e.refs.Store(1 + indexRef)
			s.entries.add(hash, e, head)
			s.mu.Unlock()
			h, err := c.runLoad(s, e, load)
			return h, false, err
		}
		if e.state == stateIndexed {
			h := refLocked(e)
			s.mu.Unlock()
			return h, !waited, nil
		}
		if pri != PriorityScan {
			e.scan = false
		}
		if pri == PriorityHigh {
			e.high = true
		}
		f := e.flight
		if f == nil {
			f = &flight{done: make(chan struct{})}
			e.flight = f
		}
		f.waiters++
		s.mu.Unlock()

		waited = true
		if stop := waitFlight(ctx, deadline, f); stop != nil {
			s.mu.Lock()
			completed := f.completed
			if !completed {
				f.waiters-- // the loader will not reserve a reference for us
			}
			s.mu.Unlock()
			if !completed {
				return Handle{}, false, errors.Wrapf(stop, "cache: waiting for block %s", k)
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

// errWaitDeadline is GetOrLoadUntil's error for a waiter whose deadline
// passed before the load it waited for finished.
var errWaitDeadline = base.Timeout("Deadline exceeded")

// waitFlight waits for f's load to finish and returns nil, or returns why
// the waiter stops first: its ctx's error, or errWaitDeadline once deadline
// (when not zero) passes.
func waitFlight(ctx context.Context, deadline time.Time, f *flight) error {
	if deadline.IsZero() {
		select {
		case <-f.done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	d := time.Until(deadline)
	if d <= 0 {
		select {
		case <-f.done:
			return nil
		default:
			return errWaitDeadline
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-f.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return errWaitDeadline
	}
}

func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// runLoad calls load for the placeholder e and publishes its outcome. If
// load panics, the load is finished with an error first, so waiters do not
// hang.
func (c *Cache) runLoad(s *shard, e *entry, load func() ([]byte, error)) (Handle, error) {
	finished := false
	defer func() {
		if !finished {
			c.finishLoad(s, e, nil, errors.Newf("cache: load of block %s panicked", e.key))
		}
	}()
	v, err := load()
	finished = true
	return c.finishLoad(s, e, v, err)
}

// finishLoad ends the load of placeholder e, whose refs count the loader's
// handle and indexRef: unless err is set, e takes v and becomes the key's
// entry (or a detached one, if v does not fit), one reference is reserved for
// each remaining waiter, and the waiters are woken. On an error the
// placeholder leaves the index and is recycled.
func (c *Cache) finishLoad(s *shard, e *entry, v []byte, err error) (Handle, error) {
	var h Handle
	var evicted *entry
	s.mu.Lock()
	refs := int32(1)
	f := e.flight
	if f != nil {
		e.flight = nil
		f.completed = true
		refs += f.waiters
	}
	inIndex := e.state == stateLoading // a Set did not take the slot
	switch {
	case err != nil:
		if f != nil {
			f.err = err
		}
		if inIndex {
			s.entries.remove(hashKey(e.key)&s.mask, e)
		}
		e.state = stateDetached
	default:
		e.buf = v
		h = Handle{e: e, gen: e.gen.Load()}
		if f != nil {
			f.e, f.gen = e, h.gen
		}
		switch {
		case !inIndex:
			evicted = s.publishLocked(e, refs)
		case chargeOf(v) <= s.capacity:
			// The common case: e already holds the slot and its
			// references, so only the ring and the file's list take it
			// in.
			if refs > 1 {
				e.refs.Add(refs - 1)
			}
			evicted = s.linkLocked(e, nil)
		default:
			e.refs.Store(refs)
			s.entries.remove(hashKey(e.key)&s.mask, e)
			e.state = stateDetached
		}
	}
	s.mu.Unlock()
	if f != nil {
		close(f.done)
	}
	if err != nil {
		// No handle ever referred to the placeholder: recycle it as is.
		e.refs.Store(0)
		c.recycle(e)
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
	fk := Key{ID: id, FileNum: fileNum}
	fh := hashKey(fk)
	for i := range c.shards {
		s := &c.shards[i]
		// Most shards hold nothing of the file; look before locking
		// exclusively, so that hits on them are not held up.
		s.mu.RLock()
		ok := s.files.find(fh&s.mask, fk) != nil
		s.mu.RUnlock()
		if !ok {
			continue
		}
		var evicted *entry
		s.mu.Lock()
		if sent := s.files.find(fh&s.mask, fk); sent != nil {
			for e := sent.fileNext; e != sent; {
				next := e.fileNext // removeLocked clears it
				evicted = s.removeLocked(e, evicted)
				e = next
			}
		}
		s.mu.Unlock()
		releaseChain(evicted)
	}
}
