// Package manifest keeps track of which table files make up the database:
// the MANIFEST (a log of version edits), the CURRENT file that names it, the
// immutable, reference-counted versions that readers hold, and the file
// naming scheme of a database directory.
//
// # Files
//
// A database directory holds (names are part of the on-disk format):
//
//	NNNNNN.sst        a table                          TableFileName
//	NNNNNN.log        a write-ahead log                LogFileName
//	MANIFEST-NNNNNN   a MANIFEST                       ManifestFileName
//	CURRENT           the name of the live MANIFEST    CurrentFileName
//	LOCK              the lock against a second open   LockFileName
//	NNNNNN.dbtmp      a CURRENT being written          TempFileName
//
// NNNNNN is a FileNum, zero padded to at least six digits. One counter
// numbers all of them (VersionSet.NewFileNum).
//
// # The MANIFEST and CURRENT
//
// A MANIFEST is a sequence of records in the WAL's framing (package wal:
// 32 KiB blocks, checksummed chunks), each one encoded VersionEdit. Its first
// record is a snapshot: an edit with the log number, the next file number,
// the last sequence number, and every live file as an addition. Replaying
// the records in order rebuilds the current version.
//
// CURRENT holds the base name of the live MANIFEST and a newline
// ("MANIFEST-000007\n"). It is replaced atomically: written to
// NNNNNN.dbtmp (NNNNNN being the new MANIFEST's number), synced, renamed
// over CURRENT, and the directory synced. A new MANIFEST is complete, synced
// and its directory entry durable before CURRENT names it, so CURRENT always
// names a complete MANIFEST, across any crash.
//
// A new MANIFEST is started by Create (MANIFEST-000001), by Start after
// every Load (so appends never follow a torn tail), and by LogAndApply when
// the MANIFEST outgrows its limit (VersionSet.SetMaxManifestFileSize).
//
// # VersionEdit encoding
//
// An edit is a sequence of fields, each a tag followed by its value. Tags
// and integers are unsigned LEB128 varints (encoding/binary's Uvarint);
// "bytes" is a varint length followed by that many bytes; "key" is bytes
// holding an internal key (user key, then the 8-byte little-endian trailer,
// see package base). Tags and layouts are part of the file format; do not
// change them:
//
//	tag  field             value
//	2    log number        varint FileNum
//	3    next file number  varint FileNum
//	4    last seqnum       varint SeqNum (at most base.MaxSeqNum)
//	6    deleted file      varint level, varint FileNum
//	100  new file          varint level, varint FileNum, varint size,
//	                       key smallest, key largest,
//	                       varint smallest seqnum, varint largest seqnum,
//	                       bytes file checksum (at most 64),
//	                       bytes checksum function name (at most 64)
//	101  new file with     the layout of 100, for a table that has range
//	     range tombstones  tombstones (FileMetadata.HasRangeDels)
//	102  new ingested      the layout of 100, then varint flags (bit 0: the
//	     file              table has range tombstones; other bits 0) and
//	                       varint global seqnum (not 0, and equal to the
//	                       file's smallest and largest seqnums): every entry
//	                       of the table takes that sequence number
//	                       (FileMetadata.GlobalSeqNum)
//
// A table's smallest and largest keys may be range tombstone keys (kind
// base.KindRangeDelete), the largest the exclusive-end sentinel, whose
// sequence number is not checked against the file's range; a level's next
// file may start at a sentinel's user key. MANIFESTs written before range
// deletions hold neither tag 101 nor such keys and decode as before.
//
// Tags 2, 3, 4 and 6 are LevelDB's. Tag 100 is shale's: LevelDB's new-file
// record (7) has neither sequence numbers nor a checksum. Each of tags 2-4
// appears at most once, and a file is deleted at most once per edit. The
// encoder writes tags 2-4 first, then deletions ordered by (level, number),
// then additions in the edit's order, so equal edits encode equally. Levels
// are below NumLevels; file numbers of new files are not 0; a new file's
// keys and sequence numbers are consistent (smallest <= largest, both keys'
// sequence numbers within the range). The checksum function is "" (unknown,
// with an empty checksum) or a name such as "FileChecksumCrc32c", whose
// checksum is the 4-byte big-endian raw CRC-32C of the whole file (RocksDB's
// format). Anything else (an unknown tag, a truncated field, trailing bytes
// that are not a field) is corruption.
//
// For example, an edit with log number 3, next file number 5, last seqnum
// 9, a deletion of file 4 from L1, and file 4 added to L2 with keys a#8,SET
// and b#9,SET, size 100 and no checksum, encodes as
//
//	02 03  03 05  04 09  06 01 04
//	64 02 04 64  09 61 01 08 00 00 00 00 00 00  09 62 01 09 00 00 00 00 00 00
//	   08 09  00  00
//
// # Recovery
//
// Load replays the MANIFEST that CURRENT names and writes nothing; Start
// then writes the loaded state, with an edit of the engine's (the tables its
// WAL replay wrote, the new WAL), as the snapshot of a new MANIFEST and
// points CURRENT at it, so appends never follow a torn tail. Recover is Load
// then Start with an empty edit. So an engine can check everything before it
// changes a file, and a failed open leaves the directory as it found it.
//
// The replay drops a torn last record (a crash during an append, which
// never returned success): an incomplete final record in wal's sense
// (Reader.TailIncomplete: a header or payload cut short by EOF, or zeros to
// EOF), and TornTail reports it. Any other damage, even in the last record (a
// complete record whose checksum fails), is an error marked
// base.ErrCorruption naming the MANIFEST and the offset, as RocksDB's
// kTolerateCorruptedTailRecords has it. So after a crash the state is that of
// the last LogAndApply that returned, or of one that was in progress. A
// version that fails Version.CheckConsistency is corruption too.
//
// # Versions and liveness
//
// A Version never changes. Current returns the current one with a
// reference; a reader keeps it while it reads and Unrefs it after. A
// version whose last reference is dropped leaves the VersionSet's live list,
// and LiveFileNums reports the tables of the versions on it. The engine
// deletes a table only when it is in no live version and not being written.
//
// # Obsolete files
//
// Nothing in this package deletes files, except a half-written MANIFEST or
// temporary file of its own that no CURRENT can name. The engine deletes:
// tables not in LiveFileNums (and not being written); WALs numbered below
// ReplayLogNumber, which trails LogNumber by one edit so that the writes a
// flush moved into a table are still in a WAL should a torn tail take the
// flush's record away; MANIFESTs and temporary (.dbtmp) files numbered below
// ManifestFileNum. Files with higher numbers may belong to a MANIFEST
// switch in progress.
package manifest
