package driver

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/shaledb/shale/ioctx"
	"github.com/stretchr/testify/require"
)

// TestWriteOptionsResolved: every write reaches the driver with the
// context's WriteOptions, merged on a Conn over the session's defaults.
func TestWriteOptionsResolved(t *testing.T) {
	conn := newFullConn()
	db := openFake(t, conn)
	bg := context.Background()
	sync := ioctx.WithWriteOptions(bg, ioctx.WriteOptions{Sync: true})
	low := ioctx.WithWriteOptions(bg, ioctx.WriteOptions{RateLimiterPriority: ioctx.PriorityLow})
	var b Batch
	b.Put([]byte("k"), []byte("v"))

	session, err := db.Conn(ioctx.WithWriteOptions(bg, ioctx.WriteOptions{DisableWAL: true, RateLimiterPriority: ioctx.PriorityHigh}))
	require.NoError(t, err)
	require.Equal(t, ioctx.WriteOptions{DisableWAL: true, RateLimiterPriority: ioctx.PriorityHigh}, session.WriteOptions(),
		"a Conn's defaults are its ctx's")

	for _, tc := range []struct {
		name  string
		write func() error
		want  ioctx.WriteOptions
	}{
		{"DB.Put/none", func() error { return db.Put(bg, []byte("k"), nil) }, ioctx.WriteOptions{}},
		{"DB.Put/sync", func() error { return db.Put(sync, []byte("k"), nil) }, ioctx.WriteOptions{Sync: true}},
		{"DB.Delete/low", func() error { return db.Delete(low, []byte("k")) }, ioctx.WriteOptions{RateLimiterPriority: ioctx.PriorityLow}},
		{"DB.Write/sync", func() error { return db.Write(sync, &b) }, ioctx.WriteOptions{Sync: true}},
		{"DB.DeleteRange/sync", func() error { return db.DeleteRange(sync, []byte("a"), []byte("b")) }, ioctx.WriteOptions{Sync: true}},
		{"Conn.Put/defaults", func() error { return session.Put(bg, []byte("k"), nil) },
			ioctx.WriteOptions{DisableWAL: true, RateLimiterPriority: ioctx.PriorityHigh}},
		{"Conn.Put/sync added", func() error { return session.Put(sync, []byte("k"), nil) },
			ioctx.WriteOptions{Sync: true, DisableWAL: true, RateLimiterPriority: ioctx.PriorityHigh}},
		{"Conn.Delete/priority overridden", func() error { return session.Delete(low, []byte("k")) },
			ioctx.WriteOptions{DisableWAL: true, RateLimiterPriority: ioctx.PriorityLow}},
		{"Conn.Write/defaults", func() error { return session.Write(bg, &b) },
			ioctx.WriteOptions{DisableWAL: true, RateLimiterPriority: ioctx.PriorityHigh}},
		{"Conn.DeleteRange/low", func() error { return session.DeleteRange(low, []byte("a"), []byte("b")) },
			ioctx.WriteOptions{DisableWAL: true, RateLimiterPriority: ioctx.PriorityLow}},
	} {
		conn.mu.Lock()
		conn.writeOpts = nil
		conn.mu.Unlock()
		require.NoError(t, tc.write(), tc.name)
		conn.mu.Lock()
		got := conn.writeOpts
		conn.mu.Unlock()
		require.Equal(t, []ioctx.WriteOptions{tc.want}, got, tc.name)
	}

	session.SetWriteOptions(ioctx.WriteOptions{Sync: true})
	require.Equal(t, ioctx.WriteOptions{Sync: true}, session.WriteOptions())
	conn.writeOpts = nil
	require.NoError(t, session.Put(bg, []byte("k"), nil))
	require.Equal(t, []ioctx.WriteOptions{{Sync: true}}, conn.writeOpts, "SetWriteOptions replaces the defaults")
}

// TestTxWriteOptions: a transaction's commit options are resolved at
// BeginTx and given to the driver in TxOptions.
func TestTxWriteOptions(t *testing.T) {
	conn := newFullConn()
	db := openFake(t, conn)
	bg := context.Background()
	session, err := db.Conn(ioctx.WithWriteOptions(bg, ioctx.WriteOptions{RateLimiterPriority: ioctx.PriorityMid}))
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		begin func() (*Tx, error)
		want  ioctx.WriteOptions
	}{
		{"DB/none", func() (*Tx, error) { return db.BeginTx(bg, nil) }, ioctx.WriteOptions{}},
		{"DB/ctx", func() (*Tx, error) {
			return db.BeginTx(ioctx.WithWriteOptions(bg, ioctx.WriteOptions{Sync: true}), nil)
		}, ioctx.WriteOptions{Sync: true}},
		{"DB/opts", func() (*Tx, error) {
			return db.BeginTx(bg, &TxOptions{WriteOptions: ioctx.WriteOptions{DisableWAL: true}})
		}, ioctx.WriteOptions{DisableWAL: true}},
		{"Conn/defaults and ctx", func() (*Tx, error) {
			return session.BeginTx(ioctx.WithWriteOptions(bg, ioctx.WriteOptions{Sync: true}), nil)
		}, ioctx.WriteOptions{Sync: true, RateLimiterPriority: ioctx.PriorityMid}},
	} {
		tx, err := tc.begin()
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, tx.tx.(*fakeTx).opts.WriteOptions, tc.name)
		require.NoError(t, tx.Rollback())
	}
}

func TestBatchReadBack(t *testing.T) {
	var b Batch
	require.Zero(t, b.Size())
	b.Put([]byte("a"), []byte("1"))
	b.Delete([]byte("b"))
	b.DeleteRange([]byte("c"), []byte("f"))
	b.DeleteRange([]byte("z"), []byte("z")) // empty: not recorded
	// Inverted bytewise, but the driver's order decides: recorded.
	b.DeleteRange([]byte("z"), []byte("y"))
	b.Put([]byte("g"), nil)
	require.Equal(t, 5, b.Len())
	want := []Op{
		{Kind: OpPut, Key: []byte("a"), Value: []byte("1")},
		{Kind: OpDelete, Key: []byte("b")},
		{Kind: OpDeleteRange, Key: []byte("c"), Value: []byte("f")},
		{Kind: OpDeleteRange, Key: []byte("z"), Value: []byte("y")},
		{Kind: OpPut, Key: []byte("g"), Value: []byte{}},
	}
	require.Equal(t, want, batchOps(&b))
	// A kind byte, then each slice's 1-byte length and bytes: 5 + 3 + 5 + 5 + 4.
	require.Equal(t, 22, b.Size())

	// Replay into another batch copies it exactly; into a recorder, in order.
	var c Batch
	c.Put([]byte("first"), []byte("x"))
	b.Replay(&c)
	require.Equal(t, append([]Op{{Kind: OpPut, Key: []byte("first"), Value: []byte("x")}}, want...), batchOps(&c))
	require.True(t, c.hasRangeDeletes())
	var rec opRecorder
	b.Replay(&rec)
	require.Equal(t, []string{"Put a 1", "Delete b", "DeleteRange c f", "DeleteRange z y", "Put g "}, rec.ops)

	// Replaying into itself doubles the batch, even when it grows.
	d := Batch{}
	d.Put([]byte("x"), []byte("1"))
	d.DeleteRange([]byte("a"), []byte("b"))
	for range 10 {
		d.Replay(&d)
	}
	require.Equal(t, 2<<10, d.Len())
	for i, op := range batchOps(&d) {
		if i%2 == 0 {
			require.Equal(t, Op{Kind: OpPut, Key: []byte("x"), Value: []byte("1")}, op, i)
		} else {
			require.Equal(t, Op{Kind: OpDeleteRange, Key: []byte("a"), Value: []byte("b")}, op, i)
		}
	}

	b.Reset()
	require.Zero(t, b.Len())
	require.Zero(t, b.Size())
	require.False(t, b.hasRangeDeletes())
	r := b.Reader()
	_, ok := r.Next()
	require.False(t, ok)
	require.Equal(t, "DeleteRange", OpDeleteRange.String())
	require.Equal(t, "OpKind(9)", OpKind(9).String())
}

// opRecorder is a BatchWriter that records what it receives.
type opRecorder struct{ ops []string }

func (r *opRecorder) Put(k, v []byte)   { r.ops = append(r.ops, fmt.Sprintf("Put %s %s", k, v)) }
func (r *opRecorder) Delete(k []byte)   { r.ops = append(r.ops, fmt.Sprintf("Delete %s", k)) }
func (r *opRecorder) Merge(k, v []byte) { r.ops = append(r.ops, fmt.Sprintf("Merge %s %s", k, v)) }
func (r *opRecorder) DeleteRange(s, e []byte) {
	r.ops = append(r.ops, fmt.Sprintf("DeleteRange %s %s", s, e))
}

// TestBatchLarge: a batch of a million small writes reads back intact, and
// its encoding stays compact.
func TestBatchLarge(t *testing.T) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	var b Batch
	key := make([]byte, 0, 16)
	for i := range n {
		key = fmt.Appendf(key[:0], "key%08d", i)
		if i%3 == 2 {
			b.Delete(key)
		} else {
			b.Put(key, key[3:])
		}
	}
	require.Equal(t, n, b.Len())
	require.Less(t, b.Size(), n*(1+1+11+1+8), "a few bytes of framing per write")
	r := b.Reader()
	i := 0
	for op, ok := r.Next(); ok; op, ok = r.Next() {
		key = fmt.Appendf(key[:0], "key%08d", i)
		if !bytes.Equal(op.Key, key) || (i%3 == 2) != (op.Kind == OpDelete) || (op.Kind == OpPut && !bytes.Equal(op.Value, key[3:])) {
			t.Fatalf("op %d = %v %q %q", i, op.Kind, op.Key, op.Value)
		}
		i++
	}
	require.Equal(t, n, i)
}

// TestBatchReaderStable: a reader reads the writes there were when it was
// made, and the slices it returned stay intact while the batch grows (its
// chunks are never moved).
func TestBatchReaderStable(t *testing.T) {
	var b Batch
	for i := range 100 {
		b.Put(fmt.Appendf(nil, "k%03d", i), bytes.Repeat([]byte{'v'}, i))
	}
	r := b.Reader()
	first, ok := r.Next()
	require.True(t, ok)
	for i := range 20000 {
		b.Put(fmt.Appendf(nil, "more%05d", i), make([]byte, 100))
	}
	require.Equal(t, "k000", string(first.Key))
	n := 1
	for op, ok := r.Next(); ok; op, ok = r.Next() {
		require.Equal(t, fmt.Sprintf("k%03d", n), string(op.Key))
		require.Len(t, op.Value, n)
		n++
	}
	require.Equal(t, 100, n, "the reader stops at the writes it started with")
	require.Equal(t, 20100, b.Len())
	require.Greater(t, b.Size(), 20000*100)
}

func TestBatchReaderAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	var b Batch
	for i := range 100 {
		b.Put(fmt.Appendf(nil, "k%d", i), []byte("v"))
		b.Delete(fmt.Appendf(nil, "d%d", i))
	}
	b.DeleteRange([]byte("a"), []byte("b"))
	var n int
	allocs := testing.AllocsPerRun(100, func() {
		n = 0
		r := b.Reader()
		for op, ok := r.Next(); ok; op, ok = r.Next() {
			n += len(op.Key)
		}
	})
	require.Zero(t, allocs)
	require.NotZero(t, n)
}

// TestWriteAllocations: a Put, Delete or Write through the façade, with
// write options in ctx or a session's defaults, allocates nothing of its
// own.
func TestWriteAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	db := openFake(t, &fixedConn{})
	bg := context.Background()
	conn, err := db.Conn(ioctx.WithWriteOptions(bg, ioctx.WriteOptions{Sync: true}))
	require.NoError(t, err)
	ctx := ioctx.WithWriteOptions(bg, ioctx.WriteOptions{RateLimiterPriority: ioctx.PriorityLow})
	key, value := []byte("key"), []byte("value")
	var b Batch
	b.Put(key, value)
	for _, tc := range []struct {
		name string
		f    func() error
	}{
		{"DB.Put", func() error { return db.Put(ctx, key, value) }},
		{"DB.Delete", func() error { return db.Delete(ctx, key) }},
		{"DB.Write", func() error { return db.Write(ctx, &b) }},
		{"Conn.Put", func() error { return conn.Put(ctx, key, value) }},
		{"Conn.Write", func() error { return conn.Write(bg, &b) }},
	} {
		allocs := testing.AllocsPerRun(1000, func() {
			if err := tc.f(); err != nil {
				t.Fatal(err)
			}
		})
		require.Zero(t, allocs, tc.name)
	}
}

// TestRangeDeletion: DeleteRange and batches holding range deletions reach
// a RangeDeleter; a driver without one gets ErrNotSupported before anything
// is written.
func TestRangeDeletion(t *testing.T) {
	ctx := context.Background()
	full := newFullConn()
	db := openFake(t, full)
	for _, k := range []string{"a", "b", "c", "d"} {
		require.NoError(t, db.Put(ctx, []byte(k), []byte(k)))
	}
	require.NoError(t, db.DeleteRange(ctx, []byte("b"), []byte("d")))
	require.Equal(t, map[string][]byte{"a": []byte("a"), "d": []byte("d")}, full.data)
	seq := full.seq
	require.NoError(t, db.DeleteRange(ctx, []byte("d"), []byte("d")), "an empty range is a no-op")
	require.Equal(t, seq, full.seq, "an empty range reaches no driver")
	// An inverted one does, since the driver's order says whether it is,
	// and deletes nothing.
	require.NoError(t, db.DeleteRange(ctx, []byte("d"), []byte("a")), "an inverted range is a no-op")
	require.Equal(t, map[string][]byte{"a": []byte("a"), "d": []byte("d")}, full.data)
	var b Batch
	b.Put([]byte("e"), []byte("e"))
	b.DeleteRange([]byte("a"), []byte("b"))
	require.NoError(t, db.Write(ctx, &b))
	require.Equal(t, map[string][]byte{"d": []byte("d"), "e": []byte("e")}, full.data)

	plain := newFakeConn()
	pdb := openFake(t, plain)
	err := pdb.Write(ctx, &b)
	require.ErrorIs(t, err, ErrNotSupported)
	require.Contains(t, err.Error(), "RangeDeleter")
	require.Empty(t, plain.data, "nothing of the batch was written")
	require.ErrorIs(t, pdb.DeleteRange(ctx, []byte("a"), []byte("b")), ErrNotSupported)
	require.ErrorIs(t, pdb.DeleteRange(ctx, []byte("b"), []byte("a")), ErrNotSupported,
		"support is checked before the range")
	require.Zero(t, plain.seq)
}

func TestTxDeleteRange(t *testing.T) {
	ctx := context.Background()
	db := openFake(t, newFullConn())
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	require.ErrorIs(t, tx.DeleteRange(ctx, []byte("a"), []byte("b")), ErrNotSupported, "fakeTx has no TxRangeDeleter")
	require.NoError(t, tx.Rollback())
	ro, err := db.BeginTx(ctx, &TxOptions{ReadOnly: true})
	require.NoError(t, err)
	require.ErrorIs(t, ro.DeleteRange(ctx, []byte("a"), []byte("b")), ErrInvalidArgument)
	require.NoError(t, ro.Rollback())
	require.ErrorIs(t, ro.DeleteRange(ctx, []byte("a"), []byte("b")), ErrTxDone)
}

func TestSyncWALAndCheckpoint(t *testing.T) {
	ctx := context.Background()
	full := newFullConn()
	db := openFake(t, full)
	c, err := db.Conn(ctx)
	require.NoError(t, err)
	require.NoError(t, db.SyncWAL(ctx))
	require.NoError(t, c.SyncWAL(ctx))
	require.NoError(t, db.Checkpoint(ctx, "/backup/1"))
	require.NoError(t, c.Checkpoint(ctx, "/backup/2"))
	err = db.Checkpoint(ctx, "")
	require.ErrorIs(t, err, ErrInvalidArgument)
	var got []string
	for _, cl := range full.recorded() {
		got = append(got, cl.method+" "+cl.key)
	}
	require.Equal(t, []string{"SyncWAL ", "SyncWAL ", "Checkpoint /backup/1", "Checkpoint /backup/2"}, got)

	pdb := openFake(t, newFakeConn())
	require.ErrorIs(t, pdb.SyncWAL(ctx), ErrNotSupported)
	require.ErrorIs(t, pdb.Checkpoint(ctx, "/x"), ErrNotSupported)
	_, err = pdb.NewSnapshot(ctx)
	require.ErrorIs(t, err, ErrNotSupported)
	require.Contains(t, err.Error(), "Snapshotter")

	require.NoError(t, c.Close())
	require.ErrorIs(t, c.SyncWAL(ctx), ErrClosed)
	require.ErrorIs(t, c.DeleteRange(ctx, []byte("a"), []byte("b")), ErrClosed)
	require.ErrorIs(t, c.Checkpoint(ctx, "/x"), ErrClosed)
	_, err = c.NewSnapshot(ctx)
	require.ErrorIs(t, err, ErrClosed)
	require.NoError(t, db.Close())
	require.ErrorIs(t, db.SyncWAL(ctx), ErrClosed)
	require.ErrorIs(t, db.Checkpoint(ctx, "/x"), ErrClosed)
	require.ErrorIs(t, db.DeleteRange(ctx, []byte("a"), []byte("b")), ErrClosed)
}
