package memtable

import (
	"encoding/binary"

	"github.com/shaledb/shale/internal/base"
)

// SetCompare makes the memtable order user keys by cmp (bytewise when nil,
// the default, which keeps the inlined integer comparisons). It must be
// called before anything is added; Reset keeps it.
func (m *MemTable) SetCompare(cmp base.Compare) {
	m.cmp = cmp
	m.rangeDels.cmp = cmp
}

// sortKeyPrefix is keyPrefix for applySorted: zero, a tie that defers to
// the whole comparison, unless keys are ordered bytewise.
func (m *MemTable) sortKeyPrefix(key []byte) uint64 {
	if m.cmp != nil {
		return 0
	}
	return keyPrefix(key)
}

// keyPrefix32 is the prefix a link to a node of key carries (see link): the
// first 4 bytes of key as a big-endian integer, zero padded, or zero, a tie
// that defers to the whole comparison, unless keys are ordered bytewise. As
// with keyPrefix, a smaller prefix means a smaller key.
func (m *MemTable) keyPrefix32(key []byte) uint32 {
	if m.cmp != nil {
		return 0
	}
	if len(key) >= 4 {
		return binary.BigEndian.Uint32(key)
	}
	var buf [4]byte
	copy(buf[:], key)
	return binary.BigEndian.Uint32(buf[:])
}
