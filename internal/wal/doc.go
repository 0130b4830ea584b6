// Package wal reads and writes shale's write-ahead log: a sequence of opaque
// records, framed exactly as in LevelDB's and RocksDB's log format (non-
// recyclable variant), so a log written here is a valid LevelDB log and vice
// versa. The engine stores write batches in it; the MANIFEST uses the same
// framing. What a record contains is not this package's business: package
// batch documents the engine's records, including the one an older release
// refuses as an unknown kind (an unbounded range deletion).
//
// # Format
//
// The file is a sequence of 32 KiB blocks ([BlockSize]); only the last block
// may be short. A block holds chunks, each a 7-byte header and a payload:
//
//	+------------------+----------------+----------+------------------------+
//	| checksum (4, LE) | length (2, LE) | type (1) | payload (length bytes) |
//	+------------------+----------------+----------+------------------------+
//
// The fields:
//
//   - checksum: the masked CRC-32C (see internal/crc) of the type byte
//     followed by the payload. The length is not covered; a bad length shows
//     up as a checksum mismatch over the wrong bytes, or as a chunk that does
//     not fit its block.
//   - length: the payload length. A chunk never crosses a block boundary, so
//     a chunk starting at block offset o has length <= BlockSize - o - 7.
//   - type: 1 full, 2 first, 3 middle, 4 last. 0 is reserved: it is what a
//     preallocated or unwritten (zero-filled) region reads as, and no writer
//     emits it.
//
// A record is either one full chunk, or a first chunk, any number of middle
// chunks and a last chunk, in consecutive positions (only block padding may
// sit between them). When fewer than 7 bytes remain in a block, the writer
// fills them with zeros and continues at the next block; readers skip those
// bytes without looking at them, as LevelDB's and RocksDB's do. When exactly 7
// bytes remain, the writer still starts a chunk there: a zero-length full
// chunk for an empty record, otherwise a zero-length first chunk. These
// choices are LevelDB's and are part of the file format; do not change them.
//
// Offsets reported by this package are byte offsets from the start of the
// file. A record's offset is that of its first chunk's header; a log's valid
// prefix ends just after the last chunk of the last good record.
//
// # Recovery: torn tails versus corruption
//
// A crash while appending leaves a torn tail: a partly written header or
// payload at EOF, a zero-filled region (the file's size was made durable but
// its data was not), or a record whose later chunks were never written.
// Corruption elsewhere means data the engine acknowledged is damaged. The
// [Reader] tells the two apart with one rule.
//
// The reader finds damage at the first place where the file stops being a
// sequence of good records:
//
//   - an incomplete header: fewer than 7 bytes before EOF, where the block
//     still has room for a header;
//   - a header with type 0 (a zeroed region) or a type above 4;
//   - a length that does not fit the chunk's block;
//   - a length that runs past EOF (an incomplete payload);
//   - a checksum mismatch;
//   - a middle or last chunk with no record in progress (an orphan);
//   - a record in progress that is interrupted by a full or first chunk, or
//     by EOF.
//
// A chunk is intact when its header has type 1 to 4, its payload fits in its
// block and before EOF, and its checksum matches. The damage is a torn tail
// if and only if no intact chunk starts at any byte offset after it: for a
// damaged chunk, after its first byte (its own length cannot be trusted); for
// an orphan, after its end (it is itself intact); at EOF nothing follows by
// definition; and a record interrupted by a full or first chunk is never a
// torn tail, since that chunk is intact. Otherwise it is mid-log corruption:
// something good was written after the damage, so the damage is not the
// last, unfinished write.
//
// The search for an intact chunk looks at every byte offset, because a
// zeroed page or a damaged length loses the chunk grid. Its one blind spot is
// deliberate: an intact chunk embedded in the payload of a damaged chunk (a
// record whose value is itself a log) makes a torn tail look like mid-log
// corruption. That errs toward reporting an error, never toward dropping
// acknowledged data silently. Padding bytes are never searched, as they can
// hold no chunk.
//
// # Recovery modes
//
// [RecoveryMode] picks what happens at damage (the names are RocksDB's
// WALRecoveryMode values):
//
//	mode                          torn tail                mid-log corruption
//	TolerateCorruptedTailRecords  io.EOF, Stopped reports  error
//	AbsoluteConsistency           error                    error
//	PointInTime                   io.EOF, Stopped reports  io.EOF, Stopped reports
//	SkipAnyCorrupted              skipped, Dropped counts  skipped, Dropped counts
//
// In every mode the records before the first damage are returned, and only
// TolerateCorruptedTailRecords searches past the damage (reading to EOF at
// worst) to classify it. PointInTime does not classify; its stop reason says
// what the damage was. Errors are marked base.ErrCorruption and name the byte
// offset, what was wrong (both checksums, the bad length, the unexpected
// chunk type) and the file when the io.Reader has a Name method (*os.File
// does); otherwise callers should wrap them with the file name.
//
// The reader's "torn tail" is any damage with nothing intact after it. The
// engine's default mode asks more, as RocksDB's does: after the reader
// stopped, [Reader.TailIncomplete] says whether the damage is what a crash
// during an append can leave (a chunk cut short by EOF, a record missing its
// later chunks, zeros to EOF); a complete last record whose checksum fails
// is damage, and Open refuses it.
//
// SkipAnyCorrupted resynchronizes conservatively, like LevelDB: after a
// checksum mismatch it trusts the damaged chunk's length only if an intact
// chunk (or a block boundary, padding or EOF) is found exactly where that
// length says the chunk ends; after any other header damage it drops the rest
// of the block, because a chunk found by trusting a bad length could be a
// fragment of a payload that merely looks like a chunk. A record with any
// damaged chunk is dropped whole. Records after the damage may therefore be
// lost. Nothing but a whole written record is returned, with one exception
// that needs a crafted log: a damaged length that points exactly at an intact
// chunk embedded in a payload.
//
// # Concurrency and ownership
//
// Neither [Writer] nor [Reader] is safe for concurrent use. WriteRecord reads
// its argument only during the call. The slice Next returns is owned by the
// Reader and is valid until the next call to Next.
package wal
