package driver

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/shaledb/shale/ioctx"
	"github.com/stretchr/testify/require"
)

func TestDBReadWrite(t *testing.T) {
	conn := newFullConn()
	db := openFake(t, conn)
	ctx := context.Background()

	_, err := db.Get(ctx, []byte("k"))
	require.ErrorIs(t, err, ErrNotFound)
	require.NoError(t, db.Put(ctx, []byte("k"), []byte("v1")))
	v, err := db.Get(ctx, []byte("k"))
	require.NoError(t, err)
	require.Equal(t, "v1", string(v))
	v[0] = 'X' // the returned slice is the caller's
	v, err = db.Get(ctx, []byte("k"))
	require.NoError(t, err)
	require.Equal(t, "v1", string(v))
	require.NoError(t, db.Delete(ctx, []byte("k")))
	_, err = db.Get(ctx, []byte("k"))
	require.ErrorIs(t, err, ErrNotFound)
	require.NoError(t, db.Delete(ctx, []byte("never")), "deleting an absent key is fine")
}

func TestBatch(t *testing.T) {
	var b Batch
	require.Zero(t, b.Len())
	key, val := []byte("key0"), []byte("val0")
	b.Put(key, val)
	key[3], val[3] = '9', '9' // the batch copied them
	b.Put([]byte("empty"), nil)
	b.Delete([]byte("key0"))
	b.Put([]byte{}, []byte{})
	require.Equal(t, 4, b.Len())
	ops := batchOps(&b)
	require.Equal(t, []Op{
		{Kind: OpPut, Key: []byte("key0"), Value: []byte("val0")},
		{Kind: OpPut, Key: []byte("empty"), Value: []byte{}},
		{Kind: OpDelete, Key: []byte("key0")},
		{Kind: OpPut, Key: []byte{}, Value: []byte{}},
	}, ops)
	require.NotNil(t, ops[1].Value, "an empty put value is non-nil")
	require.Nil(t, ops[2].Value, "a deletion has no value")
	require.NotNil(t, ops[3].Key)
	require.Equal(t, len(ops[0].Key), cap(ops[0].Key), "slices are capped so a driver's append cannot clobber the next")

	// Many writes spanning several chunks stay intact.
	b.Reset()
	require.Zero(t, b.Len())
	for i := range 5000 {
		b.Put(fmt.Appendf(nil, "key%05d", i), bytes.Repeat([]byte{byte(i)}, i%300))
	}
	b.Put([]byte("big"), make([]byte, 3<<20))
	require.Equal(t, 5001, b.Len())
	ops = batchOps(&b)
	for i, op := range ops[:5000] {
		require.Equal(t, fmt.Sprintf("key%05d", i), string(op.Key))
		require.Equal(t, bytes.Repeat([]byte{byte(i)}, i%300), op.Value, i)
	}
	require.Len(t, ops[5000].Value, 3<<20)

	// Write applies in order and leaves the batch reusable.
	conn := newFullConn()
	db := openFake(t, conn)
	ctx := context.Background()
	b.Reset()
	b.Put([]byte("a"), []byte("1"))
	b.Put([]byte("b"), []byte("2"))
	b.Delete([]byte("a"))
	b.Put([]byte("c"), []byte("3"))
	require.NoError(t, db.Write(ctx, &b))
	require.Equal(t, map[string][]byte{"b": []byte("2"), "c": []byte("3")}, conn.data)
	require.Equal(t, 4, b.Len(), "Write does not modify the batch")
	require.NoError(t, db.Write(ctx, &b), "a batch can be written again")

	seq := conn.seq
	var empty Batch
	require.NoError(t, db.Write(ctx, &empty))
	require.Equal(t, seq, conn.seq, "an empty batch writes nothing")
	err := db.Write(ctx, nil)
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.EqualError(t, err, "driver: Write of a nil *Batch")
}

// batchOps reads b's writes with its Reader.
func batchOps(b *Batch) []Op {
	var ops []Op
	r := b.Reader()
	for op, ok := r.Next(); ok; op, ok = r.Next() {
		ops = append(ops, op)
	}
	return ops
}

func TestConn(t *testing.T) {
	conn := newFullConn()
	conn.data["a"] = []byte("1")
	db := openFake(t, conn)
	ctx := context.Background()

	defaults := ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityMid}
	c, err := db.Conn(ioctx.WithReadOptions(ctx, defaults))
	require.NoError(t, err)
	require.Equal(t, defaults, c.ReadOptions())
	c2, err := db.Conn(ctx)
	require.NoError(t, err)
	require.Equal(t, ioctx.ReadOptions{}, c2.ReadOptions(), "no options in ctx: zero defaults")
	c2.SetReadOptions(ioctx.ReadOptions{DontFillCache: true})
	require.Equal(t, ioctx.ReadOptions{DontFillCache: true}, c2.ReadOptions())
	require.Equal(t, defaults, c.ReadOptions(), "sessions are independent")

	require.NoError(t, c.Put(ctx, []byte("b"), []byte("2")))
	var b Batch
	b.Delete([]byte("a"))
	require.NoError(t, c.Write(ctx, &b))
	require.NoError(t, c.Delete(ctx, []byte("zz")))
	vals, err := c.MultiGet(ctx, [][]byte{[]byte("a"), []byte("b")})
	require.NoError(t, err)
	require.Equal(t, [][]byte{nil, []byte("2")}, vals)

	it, err := c.NewIterator(ctx, nil)
	require.NoError(t, err)
	tx, err := c.BeginTx(ctx, nil)
	require.NoError(t, err)

	require.NoError(t, c.Close())
	err = c.Close()
	require.ErrorIs(t, err, ErrClosed)
	require.EqualError(t, err, "driver: connection is closed")
	calls := map[string]func() error{
		"Get":                 func() error { _, err := c.Get(ctx, []byte("a")); return err },
		"MultiGet":            func() error { _, err := c.MultiGet(ctx, nil); return err },
		"NewIterator":         func() error { _, err := c.NewIterator(ctx, nil); return err },
		"VerifyChecksum":      func() error { return c.VerifyChecksum(ctx) },
		"VerifyFileChecksums": func() error { return c.VerifyFileChecksums(ctx) },
		"BeginTx":             func() error { _, err := c.BeginTx(ctx, nil); return err },
		"Put":                 func() error { return c.Put(ctx, []byte("a"), nil) },
		"Delete":              func() error { return c.Delete(ctx, []byte("a")) },
		"Write":               func() error { return c.Write(ctx, &b) },
	}
	for name, f := range calls {
		require.ErrorIs(t, f(), ErrClosed, name)
	}

	// The DB, and what the session started, live on.
	_, err = db.Get(ctx, []byte("b"))
	require.NoError(t, err)
	_, err = c2.Get(ctx, []byte("b"))
	require.NoError(t, err)
	require.True(t, it.First())
	require.Equal(t, "b", string(it.Key()))
	require.NoError(t, it.Close())
	require.NoError(t, tx.Commit())
}

func TestTx(t *testing.T) {
	conn := newFullConn()
	conn.data["a"], conn.data["b"] = []byte("1"), []byte("2")
	db := openFake(t, conn)
	ctx := context.Background()

	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, tx.Put(ctx, []byte("c"), []byte("3")))
	require.NoError(t, tx.Delete(ctx, []byte("a")))
	require.NoError(t, db.Put(ctx, []byte("b"), []byte("22"))) // after the snapshot

	v, err := tx.Get(ctx, []byte("c"))
	require.NoError(t, err)
	require.Equal(t, "3", string(v), "read-your-writes")
	_, err = tx.Get(ctx, []byte("a"))
	require.ErrorIs(t, err, ErrNotFound)
	v, err = tx.Get(ctx, []byte("b"))
	require.NoError(t, err)
	require.Equal(t, "2", string(v), "snapshot reads")

	it, err := tx.NewIterator(ctx, nil)
	require.NoError(t, err)
	var keys []string
	for ok := it.First(); ok; ok = it.Next() {
		keys = append(keys, string(it.Key()))
	}
	require.Equal(t, []string{"b", "c"}, keys)
	closedIt, err := tx.NewIterator(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, closedIt.Close())

	require.NoError(t, tx.Commit())
	require.False(t, it.First(), "Commit closed the transaction's iterator")
	require.ErrorIs(t, it.Error(), ErrClosed)
	require.Equal(t, []byte("3"), conn.data["c"])
	_, ok := conn.data["a"]
	require.False(t, ok)

	// After Commit every call returns ErrTxDone, which is not ErrClosed.
	calls := map[string]func() error{
		"Get":         func() error { _, err := tx.Get(ctx, []byte("a")); return err },
		"MultiGet":    func() error { _, err := tx.MultiGet(ctx, nil); return err },
		"NewIterator": func() error { _, err := tx.NewIterator(ctx, nil); return err },
		"Put":         func() error { return tx.Put(ctx, []byte("a"), nil) },
		"Delete":      func() error { return tx.Delete(ctx, []byte("a")) },
		"Commit":      tx.Commit,
		"Rollback":    tx.Rollback,
	}
	for name, f := range calls {
		err := f()
		require.ErrorIs(t, err, ErrTxDone, name)
		require.NotErrorIs(t, err, ErrClosed, name)
	}

	t.Run("conflict", func(t *testing.T) {
		tx1, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		tx2, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		require.NoError(t, tx1.Put(ctx, []byte("x"), []byte("1")))
		require.NoError(t, tx2.Put(ctx, []byte("x"), []byte("2")))
		require.NoError(t, tx1.Commit())
		err = tx2.Commit()
		require.ErrorIs(t, err, ErrConflict)
		require.ErrorIs(t, tx2.Rollback(), ErrTxDone, "the transaction is over after a failed Commit")
		require.Equal(t, []byte("1"), conn.data["x"])
	})
	t.Run("rollback", func(t *testing.T) {
		tx, err := db.BeginTx(ctx, &TxOptions{})
		require.NoError(t, err)
		require.NoError(t, tx.Put(ctx, []byte("r"), []byte("1")))
		require.NoError(t, tx.Rollback())
		_, err = db.Get(ctx, []byte("r"))
		require.ErrorIs(t, err, ErrNotFound)
	})
	t.Run("read-only", func(t *testing.T) {
		tx, err := db.BeginTx(ctx, &TxOptions{ReadOnly: true})
		require.NoError(t, err)
		err = tx.Put(ctx, []byte("a"), nil)
		require.ErrorIs(t, err, ErrInvalidArgument)
		require.EqualError(t, err, "driver: Put in a read-only transaction")
		err = tx.Delete(ctx, []byte("a"))
		require.ErrorIs(t, err, ErrInvalidArgument)
		require.EqualError(t, err, "driver: Delete in a read-only transaction")
		v, err := tx.Get(ctx, []byte("b"))
		require.NoError(t, err)
		require.Equal(t, "22", string(v))
		require.NoError(t, tx.Commit())
	})
}

func TestIterator(t *testing.T) {
	conn := newFullConn()
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		conn.data[k] = []byte(strings.ToUpper(k))
	}
	db := openFake(t, conn)
	ctx := context.Background()

	collect := func(it *Iterator, first func() bool, next func() bool) []string {
		var out []string
		for ok := first(); ok; ok = next() {
			require.True(t, it.Valid())
			out = append(out, string(it.Key())+"="+string(it.Value()))
		}
		require.False(t, it.Valid())
		require.Nil(t, it.Key())
		require.Nil(t, it.Value())
		require.NoError(t, it.Error())
		return out
	}

	it, err := db.NewIterator(ctx, nil)
	require.NoError(t, err)
	// Unpositioned: Next and Prev return false without an error and
	// without reaching the driver (the fake flags that).
	require.False(t, it.Valid())
	require.False(t, it.Next())
	require.False(t, it.Prev())
	require.NoError(t, it.Error())

	require.Equal(t, []string{"a=A", "b=B", "c=C", "d=D", "e=E"}, collect(it, it.First, it.Next))
	require.False(t, it.Next(), "exhausted: Next stays false")
	require.False(t, it.Prev(), "exhausted: Prev needs a repositioning")
	require.Equal(t, []string{"e=E", "d=D", "c=C", "b=B", "a=A"}, collect(it, it.Last, it.Prev))
	require.Equal(t, []string{"c=C", "d=D", "e=E"}, collect(it, func() bool { return it.SeekGE([]byte("bb")) }, it.Next))
	require.Equal(t, []string{"b=B", "a=A"}, collect(it, func() bool { return it.SeekLT([]byte("c")) }, it.Prev))
	require.False(t, it.SeekGE([]byte("z")))
	require.False(t, it.SeekLT([]byte("a")))
	require.True(t, it.SeekGE([]byte("c")))
	require.True(t, it.Next())
	require.True(t, it.Prev())
	require.Equal(t, "c", string(it.Key()))

	require.NoError(t, it.Close())
	require.NoError(t, it.Error(), "Error after Close reports what Close returned")
	err = it.Close()
	require.ErrorIs(t, err, ErrClosed)
	require.EqualError(t, err, "driver: iterator is closed")
	require.False(t, it.First())
	require.ErrorIs(t, it.Error(), ErrClosed, "a move after Close reports ErrClosed")

	t.Run("bounds are copied", func(t *testing.T) {
		lower, upper := []byte("b"), []byte("d")
		it, err := db.NewIterator(ctx, &IterOptions{LowerBound: lower, UpperBound: upper})
		require.NoError(t, err)
		lower[0], upper[0] = 'a', 'z' // the caller reuses its slices
		require.Equal(t, []string{"b=B", "c=C"}, collect(it, it.First, it.Next))
		require.Equal(t, []string{"c=C", "b=B"}, collect(it, it.Last, it.Prev))
		require.NoError(t, it.Close())
	})
	t.Run("key is valid until the next move", func(t *testing.T) {
		it, err := db.NewIterator(ctx, nil)
		require.NoError(t, err)
		require.True(t, it.First())
		k := it.Key()
		kept := append([]byte(nil), k...)
		require.True(t, it.Next())
		require.Equal(t, "a", string(kept), "a copy survives")
		require.Equal(t, "b", string(k), "the fake reuses its buffer, as documented")
		require.NoError(t, it.Close())
	})
	t.Run("the façade stops on ctx even if the driver does not", func(t *testing.T) {
		conn.iterIgnoresCtx = true
		defer func() { conn.iterIgnoresCtx = false }()
		ictx, cancel := context.WithCancel(ctx)
		it, err := db.NewIterator(ictx, nil)
		require.NoError(t, err)
		require.True(t, it.First())
		cancel()
		require.False(t, it.Next())
		require.ErrorIs(t, it.Error(), context.Canceled)
		require.False(t, it.SeekGE([]byte("a")))
		require.ErrorIs(t, it.Close(), context.Canceled)
	})
	t.Run("driver error", func(t *testing.T) {
		ictx, cancel := context.WithCancel(ctx)
		it, err := db.NewIterator(ictx, nil)
		require.NoError(t, err)
		require.True(t, it.First())
		cancel()
		require.False(t, it.Next())
		require.ErrorIs(t, it.Error(), context.Canceled)
		require.ErrorIs(t, it.Close(), context.Canceled)
	})
}

func TestCopyIterOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   *IterOptions
	}{
		{"nil", nil},
		{"zero", &IterOptions{}},
		{"lower", &IterOptions{LowerBound: []byte("a")}},
		{"upper", &IterOptions{UpperBound: []byte("z")}},
		{"both", &IterOptions{LowerBound: []byte("a"), UpperBound: []byte("z")}},
		{"empty bounds stay non-nil", &IterOptions{LowerBound: []byte{}, UpperBound: []byte{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := copyIterOptions(tc.in)
			want := IterOptions{}
			if tc.in != nil {
				want = *tc.in
			}
			require.Equal(t, want, got)
			require.Equal(t, want.LowerBound == nil, got.LowerBound == nil)
			require.Equal(t, want.UpperBound == nil, got.UpperBound == nil)
			if got.LowerBound != nil && got.UpperBound != nil {
				got.LowerBound = append(got.LowerBound, 'x')
				require.Equal(t, want.UpperBound, got.UpperBound, "capped: appending to one bound cannot change the other")
			}
		})
	}
}
