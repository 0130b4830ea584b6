package base

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
)

// SeqNum is a sequence number. Every write is assigned the next one; a reader
// at sequence number s sees exactly the writes numbered s or below. Only the
// low 56 bits are used, so a SeqNum and a Kind fit one uint64 trailer.
type SeqNum uint64

// MaxSeqNum is the largest sequence number a trailer can hold.
const MaxSeqNum SeqNum = 1<<56 - 1

// String formats the sequence number in decimal.
func (s SeqNum) String() string { return strconv.FormatUint(uint64(s), 10) }

// Kind is the kind of an internal key: a value, a merge operand or a
// tombstone.
//
// These constants are part of the file format, and should not be changed.
type Kind uint8

const (
	// KindDelete is a tombstone: the user key has no value at this sequence
	// number.
	KindDelete Kind = 0
	// KindSet carries a value.
	KindSet Kind = 1
	// KindMerge carries a merge operand (RocksDB's kTypeMerge, also 2):
	// the value of the user key is the merge operator's combination of the
	// operands above the newest Set or tombstone below them (or none).
	// Every entry of a user key has its own sequence number, so a
	// Merge never shares a trailer's sequence number with a Set or a
	// Delete of its key: its kind only has to sort within KindMax.
	KindMerge Kind = 2

	// KindMax is the largest point kind: the kinds that live in the
	// point-key order (memtable skiplist, table data blocks). A search key
	// (userKey, seq, KindMax) sorts before every entry of userKey at seq, so
	// seeking to it finds the newest entry visible at seq.
	KindMax = KindMerge

	// KindRangeDelete is a range tombstone: every key in [start, end) with a
	// lower sequence number is deleted (RocksDB's kTypeRangeDeletion). It is
	// not a point kind: range tombstones live beside the point keys (a batch
	// record, the memtable's tombstone list, a table's range-deletion
	// block), never in the point-key order, so KindMax stays KindSet and
	// InternalKey.Valid stays false for it.
	KindRangeDelete Kind = 0x0F

	// kindInvalid is returned when a trailer's kind byte names no kind.
	kindInvalid Kind = 0xFF
)

// String returns "DEL", "SET", "MERGE", "RANGEDEL" or "INVALID".
func (k Kind) String() string {
	switch k {
	case KindDelete:
		return "DEL"
	case KindSet:
		return "SET"
	case KindMerge:
		return "MERGE"
	case KindRangeDelete:
		return "RANGEDEL"
	}
	return "INVALID"
}

// TrailerLen is the length of an encoded internal key's trailer.
const TrailerLen = 8

// MakeTrailer packs a sequence number and a kind into a trailer.
func MakeTrailer(seq SeqNum, kind Kind) uint64 { return uint64(seq)<<8 | uint64(kind) }

// InternalKey is a user key with its sequence number and kind. UserKey is not
// copied: the key is only valid as long as the bytes it points to are.
type InternalKey struct {
	UserKey []byte
	Trailer uint64
}

// MakeInternalKey returns the internal key for userKey at seq with kind.
func MakeInternalKey(userKey []byte, seq SeqNum, kind Kind) InternalKey {
	return InternalKey{UserKey: userKey, Trailer: MakeTrailer(seq, kind)}
}

// MakeSearchKey returns the key that sorts before every entry of userKey
// visible at seq: (userKey, seq, KindMax).
func MakeSearchKey(userKey []byte, seq SeqNum) InternalKey {
	return MakeInternalKey(userKey, seq, KindMax)
}

// SeqNum returns the key's sequence number.
func (k InternalKey) SeqNum() SeqNum { return SeqNum(k.Trailer >> 8) }

// Kind returns the key's kind.
func (k InternalKey) Kind() Kind {
	if kind := Kind(k.Trailer & 0xff); kind <= KindMax || kind == KindRangeDelete {
		return kind
	}
	return kindInvalid
}

// RangeDeleteSentinelTrailer is the trailer of a range-deletion sentinel key
// (pebble's InternalKeyRangeDeleteSentinel): (end, MaxSeqNum, KindRangeDelete)
// sorts before every entry of end, so as a table's largest key it bounds a
// range tombstone's exclusive end without claiming end itself.
const RangeDeleteSentinelTrailer = uint64(MaxSeqNum)<<8 | uint64(KindRangeDelete)

// MakeRangeDeleteSentinel returns the sentinel key of the exclusive end
// userKey.
func MakeRangeDeleteSentinel(userKey []byte) InternalKey {
	return InternalKey{UserKey: userKey, Trailer: RangeDeleteSentinelTrailer}
}

// IsExclusiveSentinel reports whether k is a range-deletion sentinel: as an
// upper bound, it excludes its own user key.
func (k InternalKey) IsExclusiveSentinel() bool { return k.Trailer == RangeDeleteSentinelTrailer }

// Valid reports whether the key's kind is one shale knows.
func (k InternalKey) Valid() bool { return Kind(k.Trailer&0xff) <= KindMax }

// Size returns the length of the key's encoding.
func (k InternalKey) Size() int { return len(k.UserKey) + TrailerLen }

// Encode writes the key's encoding into buf, which must be at least Size()
// bytes long.
func (k InternalKey) Encode(buf []byte) {
	n := copy(buf, k.UserKey)
	binary.LittleEndian.PutUint64(buf[n:], k.Trailer)
}

// Append appends the key's encoding to dst.
func (k InternalKey) Append(dst []byte) []byte {
	dst = append(dst, k.UserKey...)
	return binary.LittleEndian.AppendUint64(dst, k.Trailer)
}

// Clone returns a copy of the key that owns its user key.
func (k InternalKey) Clone() InternalKey {
	return InternalKey{UserKey: bytes.Clone(k.UserKey), Trailer: k.Trailer}
}

// String formats the key as "user#seq,KIND" with the user key quoted.
func (k InternalKey) String() string {
	return fmt.Sprintf("%q#%d,%s", k.UserKey, k.SeqNum(), k.Kind())
}

// DecodeInternalKey decodes an encoded internal key. The result points into
// enc. ok is false when enc is shorter than a trailer; callers report that as
// corruption.
func DecodeInternalKey(enc []byte) (k InternalKey, ok bool) {
	n := len(enc) - TrailerLen
	if n < 0 {
		return InternalKey{}, false
	}
	return InternalKey{UserKey: enc[:n:n], Trailer: binary.LittleEndian.Uint64(enc[n:])}, true
}

// CompareInternal orders internal keys: user keys ascending, then trailers
// descending (newest first).
func CompareInternal(a, b InternalKey) int {
	if c := bytes.Compare(a.UserKey, b.UserKey); c != 0 {
		return c
	}
	switch {
	case a.Trailer > b.Trailer:
		return -1
	case a.Trailer < b.Trailer:
		return 1
	}
	return 0
}

// CompareEncoded orders two encoded internal keys as CompareInternal orders
// the decoded ones. Keys shorter than a trailer sort by their bytes.
func CompareEncoded(a, b []byte) int {
	ka, oka := DecodeInternalKey(a)
	kb, okb := DecodeInternalKey(b)
	if !oka || !okb {
		return bytes.Compare(a, b)
	}
	return CompareInternal(ka, kb)
}
