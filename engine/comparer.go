package engine

import (
	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/internal/base"
)

// Comparer is a database's order of keys (RocksDB's Comparator, Pebble's
// Comparer), set with Options.Comparer; nil is [DefaultComparer], bytewise.
// Iteration, seeks, iterator bounds, range deletions [start, end),
// Compact's and ApproximateSize's ranges and the layout of every file follow
// it.
//
// Compare must be a total order in which keys with equal bytes compare
// equal (the engine tests keys for identity with bytes.Equal, as Pebble
// does) and the empty key sorts before every other key (the engine uses it
// as "before every key": a nil start of DeleteRange). It must be safe for
// concurrent use and must not retain or modify its arguments.
//
// Name identifies the order and is persisted: a database records it (in
// its MANIFEST, and each table in its properties, shale.comparator) when it
// is created, and opens only with a comparer of that name; a mismatch fails
// with an error matching driver.ErrInvalidArgument that names both, before
// anything on disk changes. A database with no recorded name, as every one
// written before comparers existed, is bytewise. Change Compare's order
// only together with its Name.
//
// Separator and Successor are optional: they shorten the separators of the
// tables' indexes (LevelDB's FindShortestSeparator and FindShortSuccessor,
// in the comparer's order). Nil keeps whole keys, which is always correct;
// a result that is not strictly between the keys, or not shorter, is
// ignored.
//
// With a comparer other than the default, driver.IterOptions.Prefix is not
// supported (an iterator asking for one fails with an error matching
// driver.ErrNotSupported): the keys sharing a prefix need not be
// contiguous in the order, and the façade narrows the bounds to the prefix
// bytewise. Iterate with bounds instead.
type Comparer = base.Comparer

// DefaultComparer orders keys bytewise ("leveldb.BytewiseComparator",
// RocksDB's and Pebble's name for it). The engine keeps inlined bytewise
// comparisons for it.
var DefaultComparer = base.DefaultComparer

// ReverseBytewiseComparer orders keys by descending bytes, except that the
// empty key sorts first ("rocksdb.ReverseBytewiseComparator", RocksDB's
// name; RocksDB sorts the empty key last).
var ReverseBytewiseComparer = base.ReverseBytewiseComparer

// maxComparerNameLen bounds Comparer.Name, as the MANIFEST does.
const maxComparerNameLen = 256

// ParseComparer returns the built-in comparer named name, the DSN's
// comparator values: "leveldb.BytewiseComparator" or
// "rocksdb.ReverseBytewiseComparator". Other comparers, which a DSN cannot
// carry, are set with Options.Comparer.
func ParseComparer(name string) (*Comparer, error) {
	if c := base.BuiltinComparer(name); c != nil && name != "" {
		return c, nil
	}
	return nil, errors.Newf("%q is not a built-in comparator (%s or %s); set others with Options.Comparer",
		name, base.BytewiseName, base.ReverseBytewiseName)
}

// comparerName returns the name of c, the default's when nil.
func comparerName(c *Comparer) string {
	if c == nil {
		return base.BytewiseName
	}
	return c.Name
}

// validateComparer reports a comparer without an order or a name.
func validateComparer(c *Comparer) error {
	switch {
	case c == nil:
		return nil
	case c.Compare == nil:
		return errors.Newf("Comparer %q has no Compare function", c.Name)
	case c.Name == "":
		return errors.New("Comparer has no Name: a database records its comparer's name")
	case len(c.Name) > maxComparerNameLen:
		return errors.Newf("Comparer name of %d bytes is longer than %d", len(c.Name), maxComparerNameLen)
	}
	return nil
}

// ucmp is the database's user-key order as the layers below take it: nil
// for bytewise, so that they keep their inlined comparisons.
func (d *database) ucmp() base.Compare { return d.opts.Comparer.UserCompare() }

// checkPrefixOrder refuses IterOptions.Prefix under a non-bytewise
// comparer (see Comparer).
func (d *database) checkPrefixOrder(opts *iterOptions) error {
	if opts == nil || opts.Prefix == nil || d.opts.Comparer.IsBytewise() {
		return nil
	}
	return base.Mark(errors.Newf("engine: IterOptions.Prefix needs the bytewise key order, and the database's comparer is %q; "+
		"iterate with bounds instead", d.opts.Comparer.Name), driver.ErrNotSupported)
}

// errUnboundedRangeOrder refuses DeleteRange(start, nil) under a
// non-bytewise comparer: a flush bounds such a tombstone by a key above
// every key of the database (the largest one followed by a zero byte, in
// bytewise order), which a comparer need not have.
var errUnboundedRangeOrder = base.Mark(errors.New("engine: DeleteRange with a nil end (every key from start on) "+
	"needs the bytewise key order; with another comparer, give an end"), driver.ErrNotSupported)

// checkRangeEnd refuses an unbounded range deletion under a non-bytewise
// comparer (see errUnboundedRangeOrder).
func (d *database) checkRangeEnd(end []byte) error {
	if end == nil && !d.opts.Comparer.IsBytewise() {
		return errUnboundedRangeOrder
	}
	return nil
}
