// Package base is the vocabulary every layer of shale shares: internal keys
// and sequence numbers, the internal iterator interface, and the error
// classes.
//
// # Internal keys
//
// An internal key is a user key followed by an 8-byte little-endian trailer
// holding (seqnum << 8) | kind:
//
//	+---------- user key ----------+----------- trailer (8 bytes) -----------+
//	| arbitrary bytes               | kind (low byte) | seqnum (high 7 bytes) |
//
// Internal keys sort by user key ascending (bytewise), then by trailer
// descending, so the newest version of a user key comes first. This is
// LevelDB's and RocksDB's encoding, and it is part of the file format.
//
// # Errors
//
// Errors are classified by marking (cockroachdb/errors.Mark), not by type:
// [ErrCorruption], [ErrNotFound], [ErrInvalidArgument], [ErrClosed] and
// [ErrConflict] are the classes; test with errors.Is. Bugs are not errors:
// [AssertionFailedf] panics in invariants builds and returns an error
// otherwise.
package base
