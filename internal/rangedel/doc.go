// Package rangedel holds range tombstones: a Tombstone deletes every user key
// k with Start <= k < End whose sequence number is below the tombstone's.
// An empty End is unbounded: the tombstone deletes every k >= Start.
//
// # Contract
//
// Tombstones may overlap one another. A [Set] is their fragmented form: the
// key space they cover cut at every start and end into non-overlapping
// [Fragment]s, sorted by Start, each carrying the sequence numbers of every
// tombstone that covers all of it, highest first. Empty and inverted
// tombstones (Start >= End, End not empty) delete nothing and are dropped. Adjacent
// fragments with the same sequence numbers are merged, so a Set is the
// smallest such cover. A Set is immutable once built and safe for concurrent
// readers; a nil *Set has no tombstones, and every method accepts it, so "no
// tombstones here" costs a nil check.
//
// A reader at sequence number s sees the tombstones numbered s or below. A
// point entry (k, p) is deleted for that reader when some visible tombstone
// covering k has a sequence number above p: [Set.Covering] returns the
// highest such number (0 when none; real writes are numbered from 1) and the
// covering fragment, whose End an iterator seeks to (or whose Start it seeks
// before, going backward) to skip the deleted range without stepping through
// it.
//
// A Set's fragments refer to the tombstones' key bytes; the caller keeps them
// alive and unchanged for as long as the Set is used.
//
// # Unbounded tombstones
//
// DeleteRange(start, nil) deletes every key >= start, as an iterator's nil
// upper bound reaches past every key. shale has no maximum key length, so
// no finite key is "after every key": the end must be represented. A
// bounded tombstone always has Start < End, so its End is never empty, and
// an empty End is free to mean +infinity. [Before] and the Set's methods
// compare ends that way: only the last fragment of a Set can be unbounded,
// and only unbounded tombstones cover it. An iterator that would seek to a
// covering fragment's End to skip it is exhausted instead.
//
// Unbounded tombstones exist only in memory and in the write-ahead log,
// never in a table. A flush clamps them ([Set.ClampEnd]) to end just after
// the largest user key of the tree at flush time: of the memtable being
// flushed and of every table (the older memtables are already flushed,
// oldest first). That is exact. A tombstone at sequence number s deletes
// only entries numbered below s; every such entry was written before the
// tombstone, so at the flush it is in the flushed memtable or in an older
// table, and its key is at most that largest key L. Entries written later
// are numbered above s, which no tombstone numbered s deletes, wherever
// they are; and no entry ever gets a lower number (shale neither ingests
// tables nor zeroes sequence numbers in compactions: either would break
// this argument, and would have to clamp differently). So, from the flush
// on, [Start, L+"\x00") deletes for every reader at every sequence number
// exactly the entries [Start, +infinity) deletes: no key after L holds an
// entry numbered below s. (The same goes for a clamp that leaves a
// tombstone reaching a little past L+"\x00", as [Set.ClampEnd] may.)
//
// Clamping keeps infinity out of everything downstream of the memtable: the
// table's range-deletion block and its format, the smallest and largest keys
// the MANIFEST records for the table (an unbounded tombstone would make the
// table's largest key unbounded, and with it level overlap checks, the
// compaction picker, trivial moves, the consistency check and the
// compaction's truncation of tombstones to its outputs' bounds), and the
// compaction's merging, splitting and dropping of tombstones. What must know
// about it: this package, the batch encoding (an empty end in a DeleteRange
// record), a memtable's Set (through this package), the read path's seeks
// past covering fragments and its conflict check for an unbounded range, a
// transaction's index of its own range deletions and its iterator's seek
// past them, and the flush that clamps. Clamping at write time instead would keep it out of the WAL too,
// but would need the largest key of every write numbered below s on the
// commit path, where concurrent writers are still applying theirs; at flush
// the memtable is immutable and every write before it has been applied.
//
// # Encoding
//
// A fragment is stored (in a table's range-deletion block, see package
// sstable) as a block entry whose key is Start and whose value is
//
//	varint End length | End | varint n | n × varint sequence number
//
// with n >= 1 sequence numbers, strictly decreasing, each at most
// base.MaxSeqNum. [AppendValue] writes it and [DecodeFragment] checks and
// reads it; anything else is an error marked base.ErrCorruption.
package rangedel
