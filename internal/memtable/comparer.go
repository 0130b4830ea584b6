package memtable

import "github.com/shaledb/shale/internal/base"

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
