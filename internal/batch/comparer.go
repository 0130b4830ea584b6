package batch

import "github.com/shaledb/shale/internal/base"

// SetCompare makes the index order user keys by cmp (bytewise when nil).
// It must be called before the index is used.
func (x *Index) SetCompare(cmp base.Compare) { x.cmp = cmp }
