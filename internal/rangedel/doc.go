// Package rangedel holds range tombstones: a Tombstone deletes every user key
// k with Start <= k < End whose sequence number is below the tombstone's.
//
// # Contract
//
// Tombstones may overlap one another. A [Set] is their fragmented form: the
// key space they cover cut at every start and end into non-overlapping
// [Fragment]s, sorted by Start, each carrying the sequence numbers of every
// tombstone that covers all of it, highest first. Empty and inverted
// tombstones (Start >= End) delete nothing and are dropped. Adjacent
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
