// Package batch is the write-batch encoding: a sequence of Set, Delete and
// DeleteRange records that is written to the WAL as one unit and applied to the memtable
// as one unit. It is the LevelDB/RocksDB WriteBatch "rep".
//
// # Format
//
// The encoding is part of the WAL format; do not change it. All integers are
// little-endian.
//
//	+------------------+-------------+----------+----------+-----+----------+
//	| seqnum (8 bytes) | count (4 B) | record 1 | record 2 | ... | record n |
//	+------------------+-------------+----------+----------+-----+----------+
//
// The 12-byte header holds the sequence number of the batch's first record
// (record i gets seqnum+i-1 when the batch is applied) and the number of
// records, count. Each record is
//
//	Set:                  kind=0x01 | varint32 key length | key | varint32 value length | value
//	Delete:               kind=0x00 | varint32 key length | key
//	Merge:                kind=0x02 | varint32 key length | key | varint32 operand length | operand
//	DeleteRange:          kind=0x0F | varint32 start length | start | varint32 end length | end
//	DeleteRange, no end:  kind=0x1F | varint32 start length | start
//
// where kind is the base.Kind byte (base.KindSet, base.KindDelete,
// base.KindMerge, base.KindRangeDelete), or 0x1F, which exists only here, and
// varint32 is an unsigned LEB128 varint of at most 5 bytes whose value fits
// in 32 bits. An encoding is valid when it has exactly count records, no
// bytes after the last one, and seqnum+count-1 <= base.MaxSeqNum; anything
// else is reported as an error marked base.ErrCorruption that names the
// record and its offset.
//
// A DeleteRange record (RocksDB's kTypeRangeDeletion, same byte) is a range
// tombstone: when applied at sequence number s it deletes every key k with
// start <= k < end written at a sequence number below s, so it covers the
// batch's earlier records and none of its later ones. The decoder does not
// check start < end; a non-empty end at or below start deletes nothing. The
// kind came with range deletions; WALs written before it hold only Set and
// Delete records and decode as before.
//
// A DeleteRange record without an end (kind 0x1F) is unbounded: it deletes
// every k >= start, as DeleteRange(start, nil) asks (see package rangedel).
// Readers return it as a DeleteRange with an empty end, which no bounded
// record can have. It has a kind of its own, rather than an empty end under
// 0x0F, so that a release that predates it refuses the record as an unknown
// kind — Open fails naming the WAL and offset — instead of reading an empty
// range and bringing deleted keys back. (Such a release opens the database
// once the records are flushed: a table never holds an unbounded tombstone,
// the flush clamps it to a bounded one.) A 0x0F record with an empty end,
// which no release writes, reads as unbounded too.
//
// # Use
//
//	b := batch.New()
//	b.Set([]byte("k1"), []byte("v1"))
//	b.Delete([]byte("k0"))
//	wal.Write(b.Repr())                 // after b.SetSeqNum(seq)
//
//	var r batch.Batch                   // on recovery
//	if err := r.SetRepr(record); err != nil { ... } // corruption
//	rd := r.Reader()
//	for {
//		kind, key, value, ok, err := rd.Next()
//		...
//	}
//
// # Retained encodings
//
// [Batch.Retain] hands a batch's encoding to a caller that keeps it, as the
// engine does with a large batch (it becomes a memtable; see
// memtable.NewFromBatch) instead of copying it. The batch becomes
// copy-on-write: its next change moves it to a buffer of its own first, and
// Reset lets the retained buffer go, so the retained bytes never change.
// [Reader.Offset] and [DecodeAt] let such a keeper index records by offset
// and decode them in place.
//
// # Indexed batches
//
// [Index] gives a transaction read-your-writes over its own batch: a point
// lookup of the latest write to a key and an ordered [IndexIter] over the
// latest write to every key, which the transaction layer merges over its
// snapshot iterator. See [Index] for its costs and the sequence number
// convention ([IndexSeqNum]).
package batch
