package compact

import "github.com/shaledb/shale/internal/base"

// SetCompare tells the Iter its input's user-key order (bytewise when nil),
// against which it checks the input's order.
func (i *Iter) SetCompare(cmp base.Compare) { i.cmp = cmp }

// Compare returns the user-key order of the version the compaction was
// picked from (nil for bytewise).
func (c *Compaction) Compare() base.Compare {
	if c.version == nil {
		return nil
	}
	return c.version.Cmp
}
