package driver

import "github.com/shaledb/shale/ioctx"

// IterOptions limits an iterator to the keys k with LowerBound <= k <
// UpperBound; a nil bound leaves that side open. A nil *IterOptions means no
// bounds.
//
// NewIterator copies both bounds, so the caller may reuse its slices as soon
// as NewIterator returns; the driver receives the copies, which stay valid
// until the iterator is closed.
type IterOptions struct {
	LowerBound []byte
	UpperBound []byte
}

// TxOptions are the options of a transaction. The zero value (and a nil
// *TxOptions) is a read-write transaction.
type TxOptions struct {
	// ReadOnly makes Put and Delete fail with an error matching
	// ErrInvalidArgument (the façade checks it; the driver receives it too
	// and may use it to skip conflict tracking).
	ReadOnly bool

	// WriteOptions are the options of the commit's write. DB.BeginTx
	// merges the ones of its ctx (and, for a Conn's transaction, the
	// session's defaults) into them with [ioctx.MergeWrite], so the driver
	// receives them resolved; Commit, which takes no context, uses them.
	WriteOptions ioctx.WriteOptions
}

// copyIterOptions returns o with its bounds copied into one allocation,
// keeping nil bounds nil (nil means open) and empty bounds non-nil.
func copyIterOptions(o *IterOptions) IterOptions {
	if o == nil || (o.LowerBound == nil && o.UpperBound == nil) {
		return IterOptions{}
	}
	buf := make([]byte, len(o.LowerBound)+len(o.UpperBound))
	var c IterOptions
	n := 0
	if o.LowerBound != nil {
		n = copy(buf, o.LowerBound)
		c.LowerBound = buf[:n:n]
	}
	if o.UpperBound != nil {
		m := copy(buf[n:], o.UpperBound)
		c.UpperBound = buf[n : n+m : n+m]
	}
	return c
}
