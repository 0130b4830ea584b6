package merging

import "github.com/shaledb/shale/internal/base"

// SetCompare makes m order user keys by cmp (bytewise when nil), the order
// of its children. Init keeps it.
func (m *Iter) SetCompare(cmp base.Compare) { m.cmp = cmp }
