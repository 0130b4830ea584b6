package driver

import (
	"bytes"

	"github.com/shaledb/shale/ioctx"
)

// IterOptions limits an iterator to the keys k with LowerBound <= k <
// UpperBound, and, when Prefix is not nil, to the keys that start with
// Prefix; a nil bound leaves that side open. A nil *IterOptions means no
// bounds.
//
// NewIterator copies both bounds and the prefix, so the caller may reuse its
// slices as soon as NewIterator returns; the driver receives the copies,
// which stay valid until the iterator is closed.
type IterOptions struct {
	LowerBound []byte
	UpperBound []byte

	// Prefix, when not nil, limits the iterator to exactly the keys that
	// start with it (go-ethereum's NewIterator(prefix, start), RocksDB's
	// prefix iteration with ReadOptions' bounds set to the prefix): the
	// range is the intersection of [LowerBound, UpperBound) and the
	// prefix's range [Prefix, successor(Prefix)), where a prefix whose
	// every byte is 0xff has no successor and leaves the upper side to
	// UpperBound. A nil Prefix means none; an empty, non-nil one matches
	// every key. Seeks outside the prefix land inside it or nowhere, as
	// they do for bounds.
	//
	// The façade applies it for every driver, by narrowing the bounds the
	// driver receives to that intersection (so a driver that ignores
	// Prefix still iterates exactly these keys); the driver receives
	// Prefix too, so that an engine can consult prefix filters (shale's
	// engine does with a prefix_extractor, see its docs) to skip the
	// tables holding no key with the prefix.
	Prefix []byte
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

// copyIterOptions returns o with its bounds and prefix copied into one
// allocation, keeping nil bounds nil (nil means open) and empty bounds
// non-nil. With a Prefix, the bounds returned are the intersection of o's
// bounds and the prefix's range (see IterOptions.Prefix); when that
// intersection is empty, the upper bound equals the lower one.
func copyIterOptions(o *IterOptions) IterOptions {
	if o == nil || (o.LowerBound == nil && o.UpperBound == nil && o.Prefix == nil) {
		return IterOptions{}
	}
	if o.Prefix == nil {
		buf := make([]byte, len(o.LowerBound)+len(o.UpperBound))
		var c IterOptions
		c.LowerBound, buf = copyInto(buf, o.LowerBound)
		c.UpperBound, _ = copyInto(buf, o.UpperBound)
		return c
	}
	// The prefix, its successor (at most as long), and the caller's bounds
	// where they win.
	buf := make([]byte, 2*len(o.Prefix)+len(o.LowerBound)+len(o.UpperBound))
	var c IterOptions
	c.Prefix, buf = copyInto(buf, o.Prefix)
	succ := prefixSuccessor(buf[:0:len(o.Prefix)], o.Prefix)
	buf = buf[len(succ):]
	c.LowerBound = c.Prefix
	if o.LowerBound != nil && bytes.Compare(o.LowerBound, o.Prefix) > 0 {
		c.LowerBound, buf = copyInto(buf, o.LowerBound)
	}
	c.UpperBound = succ
	if o.UpperBound != nil && (succ == nil || bytes.Compare(o.UpperBound, succ) < 0) {
		c.UpperBound, _ = copyInto(buf, o.UpperBound)
	}
	if c.UpperBound != nil && bytes.Compare(c.LowerBound, c.UpperBound) > 0 {
		c.UpperBound = c.LowerBound // empty: no key is both in the prefix and in the bounds
	}
	return c
}

// copyInto copies b (keeping nil nil) to the front of buf and returns the
// copy and the rest of buf.
func copyInto(buf, b []byte) (c, rest []byte) {
	if b == nil {
		return nil, buf
	}
	n := copy(buf, b)
	return buf[:n:n], buf[n:]
}

// prefixSuccessor appends to dst the smallest key greater than every key
// starting with prefix — prefix with its trailing 0xff bytes dropped and its
// last byte then incremented — and returns it; nil when there is none (prefix
// is empty or all 0xff), meaning "no upper bound".
func prefixSuccessor(dst, prefix []byte) []byte {
	n := len(prefix)
	for n > 0 && prefix[n-1] == 0xff {
		n--
	}
	if n == 0 {
		return nil
	}
	dst = append(dst, prefix[:n]...)
	dst[n-1]++
	return dst[:n:n]
}
