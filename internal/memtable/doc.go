// Package memtable is shale's in-memory write buffer: a concurrent skiplist
// of internal keys (user key, sequence number, kind) and their values, all
// stored in one arena that is allocated once, when the memtable is made.
//
// # Contract
//
// Writers (Add, Apply) and readers (Get, iterators) run concurrently without
// locks: insertion links a node level by level with compare-and-swap, as in
// pebble's internal/arenaskl (itself from Badger and RocksDB's
// InlineSkipList), and readers follow links with atomic loads. Nothing is ever
// removed or changed in place, so everything a reader gets points into the
// arena and stays valid while the memtable is alive. A reader sees an entry
// from the moment it is linked at level 0; an iterator may or may not see an
// entry added while it runs, but always sees entries in order.
//
// Entries sort by base.CompareInternal: user key ascending, then trailer
// (seqnum<<8 | kind) descending, so the newest version of a key comes first.
// An internal key can be added once; adding it again is a caller bug (a
// reused sequence number) and fails with ErrRecordExists.
//
// Apply inserts a large batch (1024 records or more) in key order rather
// than batch order: it writes the batch's nodes into one reservation, sorts
// them (on the first 8 bytes of the user key as an integer, then the whole
// internal key) and links each from where the previous one went (a splice
// hint, as RocksDB's InlineSkipList inserts with), instead of searching from
// the head for each. A million random keys cost a sort and one walk along the
// list rather than a million searches, each a chain of cache misses. None of
// the batch's sequence numbers is visible until Apply returns, so readers
// cannot tell the order.
//
// When the arena has no room for an entry, Add returns ErrArenaFull and
// inserts nothing; the arena is not used up by the failed attempt, so a
// smaller entry may still fit. The engine sizes the arena as write_buffer_size
// plus headroom and rotates to a new memtable when ApproximateSize reaches
// write_buffer_size or an Add or Apply reports ErrArenaFull.
//
// # Memtables made from a batch
//
// NewFromBatch makes an immutable memtable out of one large batch without
// inserting it: the batch's encoding is the memtable's data (retained from
// the batch, not copied) and an index of 8 bytes per point record, sorted
// once by internal key, replaces the skiplist. Get and the iterator binary
// search the index and decode records in place; range deletions join the
// tombstone list as Apply adds them. To readers it is the memtable Apply
// would make. MemTable and Iter dispatch on it with one branch, so the
// engine's read path treats both kinds alike. It has no arena: it lives on
// the Go heap, like a batch, and takes no writes.
//
// # Arena layout
//
// The arena is one []byte addressed by uint32 offsets (so it holds at most
// 4 GiB); offset 0 means "none". It starts with 8 reserved bytes, then the
// head node (a node of full height with no key), then the entries in
// allocation order. Each entry is a node, 8-byte aligned, followed at once by
// its user key and its value:
//
//	+------------+-----------+------------+--------+-----------+---------------+-----+-------+
//	| keyOffset  | keySize   | valueSize  | prev   | trailer   | next[0..h-1]  | key | value |
//	| uint32     | uint32    | uint32     | uint32 | uint64    | h × uint64    |     |       |
//	+------------+-----------+------------+--------+-----------+---------------+-----+-------+
//
// next[i] links to the following node at level i: its offset, and the first
// 4 bytes of its user key, so that a search decides most comparisons
// without loading the node it compares with (see link). prev is the offset
// of the preceding node at level 0, so Prev is O(1). The height h is random,
// 1 ≤ h ≤ 20, with P(h > k) = 2^-k (see randomHeight). Only the first h tower slots are
// allocated, so a node is never read past its own tower, and the arena keeps
// a full tower's worth of slack at its end so that a node viewed as a
// full-size struct never reaches past the arena. The layout exists only in
// memory and may change freely.
//
// A Set with an empty value has a non-nil empty value; a Delete has none.
//
// # Range tombstones
//
// Range deletions (base.KindRangeDelete) do not go into the skiplist: the
// point-key order has no place for a key range. A memtable keeps them in a
// mutex-guarded list on the Go heap and hands readers an immutable
// fragmented rangedel.Set of them (RangeDeletions), rebuilt by the first
// reader after a tombstone was added. A memtable without tombstones answers
// RangeDeletions with nil after one atomic load, so point reads and
// iteration cost what they did before range deletions existed.
package memtable
