package driver

import (
	"context"

	"github.com/shaledb/shale/internal/errclass"
	"github.com/shaledb/shale/ioctx"
)

// Merger is an optional interface of a [DriverConn]: Merge writes a merge
// operand for key (RocksDB's Merge): the key's value becomes what the
// driver's merge operator makes of its earlier value, if any, and its
// operands, oldest first. The driver copies what it keeps. A driver with
// Merger also receives [OpMerge] writes in [DriverConn.Write]. Without it,
// DB.Merge, and DB.Write of a batch holding a merge, return an error
// matching ErrNotSupported and write nothing.
//
// A driver that implements Merger but was not given a merge operator
// returns an error matching ErrInvalidArgument from both.
//
// A [Tx] has no Merge: a transaction's reads answer its own writes from
// the latest write of each key it buffered, and a merge would need the
// key's committed value at the transaction's snapshot and every operand
// since, merged on each read and checked again at commit. Read, modify and
// Put inside the transaction, or merge outside it; its reads do see the
// merged values of operands written by others.
type Merger interface {
	Merge(ctx context.Context, wo ioctx.WriteOptions, key, operand []byte) error
}

// Merge writes a merge operand for key, as RocksDB's DB::Merge: the key's
// value becomes the driver's merge operator applied to its earlier value
// (if any) and every operand written since, oldest first. Reads (Get,
// MultiGet, iterators, snapshots, transactions) see the merged value. The
// slices are not retained. Write options as for Put. An error matching
// ErrNotSupported when the driver cannot merge (see [Merger]); one matching
// ErrInvalidArgument when it has no merge operator configured (for the
// engine, the DSN key merge_operator) or the operator refuses the operand.
func (db *DB) Merge(ctx context.Context, key, operand []byte) error {
	return db.merge(ctx, nil, key, operand)
}

// Merge is [DB.Merge] with the session's default write options.
func (c *Conn) Merge(ctx context.Context, key, operand []byte) error {
	return c.db.merge(ctx, c, key, operand)
}

func (db *DB) merge(ctx context.Context, sess *Conn, key, operand []byte) error {
	cs, err := db.start(ctx, sess)
	if err != nil {
		return err
	}
	defer db.exit()
	if cs.merger == nil {
		return errNoMerge
	}
	return cs.merger.Merge(ctx, writeOptions(ctx, sess), key, operand)
}

var (
	errNoMerge error = notSupported("Merge", "Merger")

	errNoMergeBatch error = errclass.New("driver: Write of a batch holding a merge is not supported by this driver "+
		"(its connection does not implement driver.Merger); nothing was written", ErrNotSupported, nil)
)
