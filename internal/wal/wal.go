package wal

import (
	"fmt"

	"github.com/shaledb/shale/internal/crc"
)

// BlockSize is the size of a log block. Part of the file format; do not
// change.
const BlockSize = 32 << 10

// headerSize is the size of a chunk header: checksum (4), length (2), type
// (1). Part of the file format; do not change.
const headerSize = 7

// Chunk types. Part of the file format; do not change.
const (
	zeroType   = 0 // reserved: what preallocated or unwritten space reads as
	fullType   = 1
	firstType  = 2
	middleType = 3
	lastType   = 4
)

// typeName names a chunk type for error messages.
func typeName(t byte) string {
	switch t {
	case zeroType:
		return "zero"
	case fullType:
		return "full"
	case firstType:
		return "first"
	case middleType:
		return "middle"
	case lastType:
		return "last"
	default:
		return fmt.Sprintf("unknown(%d)", t)
	}
}

// typeCRC holds the running CRC of each valid type byte, the first byte every
// chunk checksum covers, so neither side builds a one-byte slice per chunk.
var typeCRC = func() (t [lastType + 1]crc.CRC) {
	for i := range t {
		t[i] = crc.New([]byte{byte(i)})
	}
	return t
}()

// RecoveryMode says how a Reader treats damage; see the package doc for the
// rule that separates a torn tail from mid-log corruption. The zero value is
// TolerateCorruptedTailRecords, RocksDB's default. It is a plain value, safe
// to share.
type RecoveryMode uint8

const (
	// TolerateCorruptedTailRecords (RocksDB kTolerateCorruptedTailRecords):
	// a truncated or corrupt record at the very end of the log (a torn write)
	// ends the log cleanly; corruption followed by more valid data is an
	// error.
	TolerateCorruptedTailRecords RecoveryMode = iota
	// AbsoluteConsistency (RocksDB kAbsoluteConsistency): any damage,
	// including a torn tail, is an error.
	AbsoluteConsistency
	// PointInTime (RocksDB kPointInTimeRecovery): stop at the first damage
	// of any kind, without an error.
	PointInTime
	// SkipAnyCorrupted (RocksDB kSkipAnyCorruptedRecords): skip damaged
	// records and continue (salvage mode).
	SkipAnyCorrupted
)

// String returns the mode's Go name.
func (m RecoveryMode) String() string {
	switch m {
	case TolerateCorruptedTailRecords:
		return "TolerateCorruptedTailRecords"
	case AbsoluteConsistency:
		return "AbsoluteConsistency"
	case PointInTime:
		return "PointInTime"
	case SkipAnyCorrupted:
		return "SkipAnyCorrupted"
	default:
		return fmt.Sprintf("RecoveryMode(%d)", uint8(m))
	}
}
