// Package cache is shale's block cache: a sharded, size-bounded map from
// (DB, table file, block offset) to block contents, handing out
// reference-counted handles, filling misses through single-flight loads and
// recycling the buffers of evicted blocks.
//
// # Keys, sharding and eviction
//
// A [Key] is (ID, FileNum, Offset). ID tells apart DBs that share one cache;
// each DB takes one from [Cache.NewID]. A multiplicative hash spreads keys
// over a power-of-two number of shards: 16 per GOMAXPROCS, between 4 and 256,
// but halved (down to 4) while a shard would get less than 1 MiB, so that a
// large block (the index of a big table, charged to the cache) still fits a
// shard's share of a small cache; the same hash keys the shard's index. Each
// shard has its own lock, index and eviction state; no lock is global.
//
// Many more shards than processors keep readers from queueing behind a miss:
// a goroutine preempted while it holds a shard's lock to insert a block
// stalls every read of that shard until it runs again. On the 2-core test
// machine, with 4 shards per processor, eight goroutines read 1.35-1.48x as
// fast as one, against 1.75-1.79x with 16 (BenchmarkDBGet threads=8 against
// threads=1, 32 MiB, interleaved three times; random memory reads scale
// 1.70-1.75x on that machine).
//
// Each shard holds capacity/shards bytes and evicts with CLOCK (second
// chance): a hit sets the entry's reference bit with an atomic store; when a
// shard is over its share, a hand sweeps its entries in insertion order,
// clearing set bits and removing the first entry whose bit is clear. New
// entries join just behind the hand with a clear bit, so a block read once is
// the first to go and a block hit between two sweeps stays. Because a hit
// only sets a bit, where LRU would move the entry within a list, it takes its
// shard's lock shared, never exclusively: readers of one shard do not wait
// for each other, only for inserts and evictions.
//
// # Scans: the probation ring
//
// Plain CLOCK has no defence against a scan over more data than the cache:
// each block it reads joins behind the hand, the hand clears every bit in
// one turn and then evicts in insertion order, so the scan flushes every
// block that point reads keep, then its own blocks before it comes back to
// them; a cyclic scan misses on every block. Serious engines separate blocks
// read once from blocks read again: RocksDB's LRU cache inserts data blocks
// into a low-priority pool and moves them to the high-priority one when they
// are hit (Cache::Priority, high_pri_pool_ratio), InnoDB inserts at the
// midpoint of its LRU list, PostgreSQL gives a sequential scan a small ring
// of buffers of its own, Pebble runs CLOCK-Pro.
//
// This cache does the CLOCK equivalent with a probation ring per shard. A
// load of [PriorityScan] (an iterator's block read as part of a
// sequential run) links its entry on the probation ring, oldest first,
// instead of the main ring; a [PriorityNormal] entry (point reads, Set)
// joins the main ring just behind its hand as before ([PriorityHigh]: see
// below). Eviction takes the oldest probation entry while the
// probation ring holds more than its share of the shard, capacity/8 (or
// while the main ring is empty); otherwise the main ring's CLOCK hand runs
// exactly as above. A probation entry whose bit a hit has set when its turn
// comes is not evicted but promoted: it moves to the main ring behind the
// hand with its bit cleared, as if a point read had just inserted it. So:
//
//   - a scan over any amount of data takes from the main ring at most the
//     probation share (less, by the free room it finds) and then recycles
//     that share: the blocks point reads brought in and hits kept stay,
//     and a cyclic scan over data larger than the cache hits on the part
//     of it they hold;
//   - a scanned range smaller than the room the scan finds (free space, its
//     own earlier blocks, and the probation share) is all cached when it is
//     scanned again: unlike inserting scan blocks at the hand (examined
//     first), which would evict each block by the next and leave a range
//     scanned twice uncached however small, the classic pathology of
//     LRU-tail insertion;
//   - a scanned block hit again (by another scan or a point read) is kept
//     like any other; a point read that waits for a scan's load of its
//     block (single flight) makes the entry a normal one;
//   - point reads alone see today's CLOCK: with no scan entries, the main
//     ring is the whole cache. Their misses evict probation entries first
//     while the probation ring exceeds its share, so scanned blocks that
//     filled an idle cache give way to them down to the share.
//
// The price is the share: a range scanned repeatedly that is larger than
// the share, in a cache full of blocks point reads keep, is not cached;
// CLOCK-Pro would adapt the share to that, at the cost of tracking evicted
// keys. A hit is unchanged (the same bit, set under the shared lock): which
// ring an entry is on matters only under the write lock, to inserts and
// evictions.
//
// # Index and filter blocks: the high-priority ring
//
// Index and filter blocks (the sstable reader's metadata, when it keeps it
// in the cache) are read by every lookup of their table or partition, data
// blocks by few; but when the metadata alone exceeds the cache, plain CLOCK
// evicts them at the rate random reads insert data blocks read once. Loads
// of [PriorityHigh] therefore join a third ring per shard, the high-priority
// ring, which keeps [Options.HighPriorityPoolRatio] of the shard (RocksDB's
// high_pri_pool_ratio with cache_index_and_filter_blocks_with_high_priority;
// [New] uses RocksDB's default, 0.5):
//
//   - the ring never holds more than its share: when an insert takes it
//     over, its own CLOCK hand runs and the entry it stops at is demoted
//     to the main ring, just behind the main hand, as the newest data
//     block (RocksDB moves its high pool's overflow to the low pool);
//   - eviction takes from the probation ring over its share, then the main
//     ring, and from the high-priority ring only when both are empty: an
//     index or filter block within the share is evicted after every data
//     block;
//   - a demoted entry hit again goes back to the high-priority ring when the
//     main hand reaches it (demoting that ring's CLOCK victim in turn).
//
// A hit is still one bit set under the shared lock.
//
// An entry is charged min(cap(value), the size class of len(value)) (the
// class is the capacity of the buffer [Cache.Alloc] returns for that
// length) + [EntryOverhead] bytes: the
// memory it actually keeps, so that the capacity bounds the memory the
// cache's entries hold and not just their lengths. [Cache.Size] sums
// the charges of the entries in the index and stays within
// [Cache.Capacity] (each shard within its share) whenever no insert is in
// progress. A value charged more than a shard's share is never cached: Set and
// GetOrLoad return it in a detached handle.
//
// # Handles and reference counts
//
// Every entry carries a reference count: one reference for the index while
// the entry is in it, plus one for every outstanding [Handle]. Get, Set and
// GetOrLoad each return a handle holding one reference, and the caller must
// call [Handle.Release] exactly once. Eviction, replacement by a later Set of
// the same key and [Cache.EvictFile] remove the entry from the index and drop
// the index's reference, so a later Get misses at once; but the value a
// handle returns stays valid and unchanged until that handle is released. When
// the count reaches zero the entry is freed and its buffer may be reused by
// [Cache.Alloc] (see below).
//
// A Handle is a small value; copies share its one reference, so only one
// copy may be released. Values are read-only: the cache never writes to a
// buffer while any handle references it, and callers must not write to it
// either.
//
// # Batches
//
// [Cache.GetMany] is Get for several keys (a MultiGet's data blocks): the
// same hits, misses, references and CLOCK bits as Gets of the keys in turn,
// but faster. One Get is a chain of dependent cache misses (the shard's
// lock, the index's buckets, the entry) bracketed by atomic operations,
// which keep the CPU from starting the next key's chain early. GetMany
// takes the read lock of each shard the keys fall in once, in shard order
// (so that batches waiting behind each other's pending writers cannot
// deadlock), runs every index lookup, then reads every entry found, then
// takes the references: each phase's loads are independent, so their misses
// overlap. It holds up to 16 shards' read locks at once, about a
// microsecond for 16 keys on the 2-core test machine (the share of
// GetMany in sstable's BenchmarkMultiGetLarge/cache=full).
//
// # Single flight
//
// [Cache.GetOrLoad] calls its load function once for all concurrent callers
// that miss the same key; the others wait and each gets its own handle. A
// waiter whose context ends stops waiting with an error for which
// errors.Is(err, ctx.Err()) holds, while the load continues for the rest. A
// load error is returned to every caller and nothing is cached.
//
// The first caller to miss reserves the key's index slot with a placeholder
// entry before it calls load: hits do not see it, later callers of the key
// find it and wait, and when the load returns the same entry takes the value
// in place. So a miss costs one index insertion and one removal (of the block
// it evicts), and a load nobody waits for allocates nothing. A Set of the key
// during the load takes the slot; the load's value then replaces the Set's
// when it arrives, as any later insert would.
//
// # Bypassing the cache and the nil cache
//
// A read that must not fill the cache (ioctx.ReadOptions.DontFillCache, RocksDB's
// fill_cache=false) calls Get and, on a miss, reads the block into a buffer of
// its own without calling Set or GetOrLoad. A nil *Cache is a cache that holds
// nothing, so a table reader can treat "block cache disabled" uniformly: Get
// misses, Set returns a detached handle, GetOrLoad calls load every time (no
// single flight) and returns a detached handle, Alloc is make, EvictFile does
// nothing, and NewID, Capacity, Size and Len return 0.
//
// # Buffer recycling
//
// [Cache.Alloc] returns buffers for the caller to fill (with a block read from
// disk, say) and pass to Set or return from a load. When an entry is freed its
// buffer goes to a per-size-class pool (classes 1/8 of a power of two apart,
// from 64 B to 16 MiB; a sync.Pool each, so idle buffers are returned to the
// garbage collector over time) and a later Alloc reuses it. Buffers passed to
// Set that did not come from Alloc are pooled the same way, so Set takes
// ownership of the whole backing array, up to the slice's capacity.
//
// # Off-heap buffers
//
// By default (unless [Options.GoHeap]) Alloc takes buffers from a region
// mapped outside the Go heap for each Cache, on 64-bit unix: capacity plus
// a quarter, reserved but resident only where touched, carved into 1 MiB
// slabs that each serve one size class, with a free list per class. Live
// Go heap costs about twice its size (the garbage collector lets the heap
// grow GOGC percent past what it found live); off-heap blocks cost their
// size. A buffer larger than a slab, or wanted when its class has no free
// object and no slab is left, comes from the Go heap and is pooled as
// above. The region is unmapped by a cleanup once the Cache is unreachable;
// every handle and entry reaches the Cache, so until then nothing that can
// still read a value points into unmapped memory.
//
// What the garbage collector cannot do for off-heap memory, callers do:
// a value must not be used after its handle is released in any form (a
// slice of it does not keep it alive), so bytes that leave the caller's
// control are copied first ([Cache.OffHeap] says which, in O(1)); and a
// buffer from Alloc that is not handed to the cache goes back with
// [Cache.Free] (a dropped one is lost to the cache until the Cache dies).
// Invariants builds poison freed region buffers like pooled ones, and
// panic on a double Free.
//
// # Invariants builds
//
// With the invariants (or race) build tag, a freed buffer is filled with 0xDB
// before it is pooled, and Alloc checks that it still is, so a read through a
// released handle sees poison and a write through one panics at the next
// Alloc. [Handle.Value] on a released handle panics. A double Release panics
// in every build when it is detectable (see [Handle.Release]): continuing
// would let the cache reuse a buffer that is still being read.
//
// # Concurrency
//
// [Cache] is safe for concurrent use. A [Handle] may move between goroutines,
// but its Release must not race with its Value.
package cache
