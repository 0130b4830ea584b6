package driver

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The tests of DeleteRange's nil ends: a nil end is "after every key" and
// reaches the driver as nil; a nil start is "before every key" and reaches
// it as an empty, non-nil slice; with a non-nil end, start >= end is a
// no-op that reaches no driver.

// rangeDeleterOf is what DB, Conn and Tx have for range deletions.
type rangeDeleterOf interface {
	DeleteRange(ctx context.Context, start, end []byte) error
}

func TestDeleteRangeNilEnds(t *testing.T) {
	ctx := context.Background()
	b := func(s string) []byte { return []byte(s) }
	for _, h := range []struct {
		name   string
		method string // as the driver records it
		open   func(t *testing.T, db *DB) (rangeDeleterOf, func())
	}{
		{"DB", "DeleteRange", func(_ *testing.T, db *DB) (rangeDeleterOf, func()) { return db, func() {} }},
		{"Conn", "DeleteRange", func(t *testing.T, db *DB) (rangeDeleterOf, func()) {
			c, err := db.Conn(ctx)
			require.NoError(t, err)
			return c, func() { require.NoError(t, c.Close()) }
		}},
		{"Tx", "Tx.DeleteRange", func(t *testing.T, db *DB) (rangeDeleterOf, func()) {
			tx, err := db.BeginTx(ctx, nil)
			require.NoError(t, err)
			return tx, func() { require.NoError(t, tx.Commit()) }
		}},
	} {
		for _, tc := range []struct {
			name       string
			start, end []byte
			// want is what the driver receives (nil: no call), left the
			// keys left of a, b, c, d.
			want *rangeCall
			left []string
		}{
			{"open end", b("b"), nil, &rangeCall{start: b("b")}, []string{"a"}},
			{"open start", nil, b("c"), &rangeCall{start: []byte{}, end: b("c")}, []string{"c", "d"}},
			{"both open", nil, nil, &rangeCall{start: []byte{}}, nil},
			{"empty start", []byte{}, b("b"), &rangeCall{start: []byte{}, end: b("b")}, []string{"b", "c", "d"}},
			{"empty start, open end", []byte{}, nil, &rangeCall{start: []byte{}}, nil},
			{"start after every key, open end", b("z"), nil, &rangeCall{start: b("z")}, []string{"a", "b", "c", "d"}},
			{"bounded", b("b"), b("d"), &rangeCall{start: b("b"), end: b("d")}, []string{"a", "d"}},
			// Whether a range is inverted is the driver's order to say: it
			// receives the range, and a bytewise driver deletes nothing.
			{"inverted", b("c"), b("b"), &rangeCall{start: b("c"), end: b("b")}, []string{"a", "b", "c", "d"}},
			{"empty", b("c"), b("c"), nil, []string{"a", "b", "c", "d"}},
			{"empty non-nil end", b("c"), []byte{}, nil, []string{"a", "b", "c", "d"}},
			{"nil start, empty non-nil end", nil, []byte{}, nil, []string{"a", "b", "c", "d"}},
		} {
			t.Run(h.name+"/"+tc.name, func(t *testing.T) {
				conn := newFullConn()
				conn.txRangeDel = true
				for _, k := range []string{"a", "b", "c", "d"} {
					conn.data[k] = []byte(k)
				}
				db := openFake(t, conn)
				r, done := h.open(t, db)
				require.NoError(t, r.DeleteRange(ctx, tc.start, tc.end))
				done()
				calls := conn.rangeCalls()
				if tc.want == nil {
					require.Empty(t, calls, "an empty range reaches no driver")
				} else {
					require.Len(t, calls, 1)
					got := calls[0]
					require.Equal(t, h.method, got.method)
					require.Equal(t, tc.want.start, got.start)
					require.NotNil(t, got.start, "the driver never receives a nil start")
					require.Equal(t, tc.want.end == nil, got.end == nil, "a nil end stays nil, a non-nil one non-nil")
					require.Equal(t, tc.want.end, got.end)
				}
				var left []string
				for _, k := range []string{"a", "b", "c", "d"} {
					if _, ok := conn.data[k]; ok {
						left = append(left, k)
					}
				}
				require.Equal(t, tc.left, left)
			})
		}
	}
}

// TestBatchDeleteRangeNilEnds: a batch records a range with a nil end as
// OpDeleteRange with a nil Value (an empty end would be an empty range,
// not recorded), a nil start as an empty non-nil Key; Replay passes them on
// as they are, and a driver applies them in order.
func TestBatchDeleteRangeNilEnds(t *testing.T) {
	var b Batch
	b.Put([]byte("a"), []byte("1"))
	b.DeleteRange([]byte("b"), nil)
	b.DeleteRange(nil, []byte("a"))
	b.DeleteRange(nil, nil)
	b.DeleteRange([]byte("b"), []byte{}) // empty end, below every key: not recorded
	b.DeleteRange(nil, []byte{})         // empty: not recorded
	b.Put([]byte("c"), []byte("after"))
	require.Equal(t, 5, b.Len())

	var ops []Op
	r := b.Reader()
	for op, ok := r.Next(); ok; op, ok = r.Next() {
		ops = append(ops, op)
	}
	require.Equal(t, []Op{
		{Kind: OpPut, Key: []byte("a"), Value: []byte("1")},
		{Kind: OpDeleteRange, Key: []byte("b")},
		{Kind: OpDeleteRange, Key: []byte{}, Value: []byte("a")},
		{Kind: OpDeleteRange, Key: []byte{}},
		{Kind: OpPut, Key: []byte("c"), Value: []byte("after")},
	}, ops)
	for i, op := range ops {
		require.NotNil(t, op.Key, "op %d: a batch never reads back a nil key", i)
	}
	require.Nil(t, ops[1].Value, "an open range reads back with a nil end")
	require.Nil(t, ops[3].Value, "an open range reads back with a nil end")
	require.NotNil(t, ops[2].Value)

	var rec nilRecorder
	b.Replay(&rec)
	require.Equal(t, []string{"Put", "DeleteRange b <nil>", "DeleteRange  a", "DeleteRange  <nil>", "Put"}, rec.ops)

	// A batch replayed into another keeps the open ends, and writes the
	// same.
	var c Batch
	b.Replay(&c)
	require.Equal(t, b.Len(), c.Len())
	require.Equal(t, b.Size(), c.Size())
	cr := c.Reader()
	for i := 0; ; i++ {
		op, ok := cr.Next()
		if !ok {
			require.Equal(t, len(ops), i)
			break
		}
		require.Equal(t, ops[i], op)
	}

	ctx := context.Background()
	for _, batch := range []*Batch{&b, &c} {
		conn := newFullConn()
		for _, k := range []string{"", "a", "b", "bb", "c", "z"} {
			conn.data[k] = []byte("old")
		}
		db := openFake(t, conn)
		require.NoError(t, db.Write(ctx, batch))
		require.Equal(t, map[string][]byte{"c": []byte("after")}, conn.data,
			"every key deleted by the open ranges, then c put after them")
	}

	// Only the open range.
	var open Batch
	open.DeleteRange([]byte("b"), nil)
	conn := newFullConn()
	for _, k := range []string{"a", "b", "bb", "c"} {
		conn.data[k] = []byte(k)
	}
	db := openFake(t, conn)
	require.NoError(t, db.Write(ctx, &open))
	require.Equal(t, map[string][]byte{"a": []byte("a")}, conn.data)

	// A driver without range deletions refuses a batch holding an open
	// one, writing nothing.
	plain := newFakeConn()
	pdb := openFake(t, plain)
	var mixed Batch
	mixed.Put([]byte("k"), []byte("v"))
	mixed.DeleteRange(nil, nil)
	require.ErrorIs(t, pdb.Write(ctx, &mixed), ErrNotSupported)
	require.Empty(t, plain.data)
	require.ErrorIs(t, pdb.DeleteRange(ctx, nil, nil), ErrNotSupported)
}

// nilRecorder records Replay's calls, showing a nil end as <nil>.
type nilRecorder struct{ ops []string }

func (r *nilRecorder) Put(_, _ []byte)   { r.ops = append(r.ops, "Put") }
func (r *nilRecorder) Delete(_ []byte)   { r.ops = append(r.ops, "Delete") }
func (r *nilRecorder) Merge(_, _ []byte) { r.ops = append(r.ops, "Merge") }
func (r *nilRecorder) DeleteRange(s, e []byte) {
	end := string(e)
	if e == nil {
		end = "<nil>"
	}
	r.ops = append(r.ops, "DeleteRange "+string(s)+" "+end)
}

// TestTxDeleteRangeOpenEnd: a transaction's open range hides every key from
// start on from its reads, and its Commit applies it.
func TestTxDeleteRangeOpenEnd(t *testing.T) {
	ctx := context.Background()
	conn := newFullConn()
	conn.txRangeDel = true
	for _, k := range []string{"a", "b", "c"} {
		conn.data[k] = []byte(k)
	}
	db := openFake(t, conn)
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, tx.DeleteRange(ctx, []byte("b"), nil))
	ok, err := tx.Has(ctx, []byte("c"))
	require.NoError(t, err)
	require.False(t, ok, "c is in [b, ∞)")
	ok, err = db.Has(ctx, []byte("c"))
	require.NoError(t, err)
	require.True(t, ok, "invisible to others before Commit")
	require.NoError(t, tx.Commit())
	require.Equal(t, map[string][]byte{"a": []byte("a")}, conn.data)

	ro, err := db.BeginTx(ctx, &TxOptions{ReadOnly: true})
	require.NoError(t, err)
	require.ErrorIs(t, ro.DeleteRange(ctx, nil, nil), ErrInvalidArgument, "a read-only Tx refuses an open range too")
	require.NoError(t, ro.Rollback())
	require.Len(t, conn.rangeCalls(), 1)
}

// TestConnectRetrySharedAfterFailure: after a failed connect, the calls
// that come concurrently share one new attempt, as the first calls shared
// the first one.
func TestConnectRetrySharedAfterFailure(t *testing.T) {
	conn := newFullConn()
	conn.data["k"] = []byte("v")
	c := &fakeConnector{conn: conn, err: errors.New("the database is in use")}
	c.failures.Store(1)
	db := OpenDB(c)
	ctx := context.Background()
	require.ErrorContains(t, db.Ping(ctx), "in use")
	require.EqualValues(t, 1, c.connects.Load())

	// The Ping above returned after its connect finished, which read the
	// gate: setting it now races with nothing.
	c.gate = make(chan struct{})
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			if i%2 == 0 {
				errs <- db.Ping(ctx)
				return
			}
			v, err := db.Get(ctx, []byte("k"))
			if err == nil && string(v) != "v" {
				err = errors.New("wrong value " + string(v))
			}
			errs <- err
		})
	}
	time.Sleep(20 * time.Millisecond)
	require.Empty(t, errs, "calls returned before the retry finished")
	require.EqualValues(t, 2, c.connects.Load(), "one retry for all the waiting calls")
	close(c.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.EqualValues(t, 2, c.connects.Load(), "one retry, kept once it succeeded")
	require.NoError(t, db.Close())
	require.True(t, conn.closed)
}

// TestConnectRetryFailureShared: a retry that fails again fails every call
// that waited for it, with the same error; the one after that tries again.
func TestConnectRetryFailureShared(t *testing.T) {
	c := &fakeConnector{err: errors.New("the database is in use")}
	db := OpenDB(c)
	ctx := context.Background()
	require.Error(t, db.Ping(ctx))
	c.gate = make(chan struct{})
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() { errs <- db.Ping(ctx) })
	}
	time.Sleep(20 * time.Millisecond)
	require.EqualValues(t, 2, c.connects.Load(), "one retry for all the waiting calls")
	close(c.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.EqualError(t, err, "driver: open failed: the database is in use")
	}
	// Calls that arrived after the retry failed may have started another
	// one; none started one while the retry was in progress.
	require.LessOrEqual(t, c.connects.Load(), int32(2+n))
	before := c.connects.Load()
	require.Error(t, db.Ping(ctx))
	require.Equal(t, before+1, c.connects.Load(), "the next call tries again")
	require.NoError(t, db.Close())
}
