package driver

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/errclass"
	"github.com/shaledb/shale/ioctx"
	"github.com/stretchr/testify/require"
)

// reader is one façade read, run on a DB, a Conn or a Tx.
type reader struct {
	api      string         // the API name CheckAndTag is given
	activity ioctx.Activity // the API's activity
	// driverMethods are the calls the driver must record, in order, each
	// carrying the tagged options.
	driverMethods func(txPrefix string) []string
	run           func(ctx context.Context, h holder) error
}

// holder is what a read runs on: *DB, *Conn or *Tx have these methods.
type holder interface {
	Get(ctx context.Context, key []byte) ([]byte, error)
	MultiGet(ctx context.Context, keys [][]byte) ([][]byte, error)
	NewIterator(ctx context.Context, opts *IterOptions) (*Iterator, error)
}

type verifier interface {
	VerifyChecksum(ctx context.Context) error
	VerifyFileChecksums(ctx context.Context) error
}

var twoKeys = [][]byte{[]byte("a"), []byte("b")}

func readers() []reader {
	one := func(m string) func(string) []string { return func(p string) []string { return []string{p + m} } }
	return []reader{
		{"Get", ioctx.ActivityGet, one("Get"), func(ctx context.Context, h holder) error {
			_, err := h.Get(ctx, []byte("a"))
			return err
		}},
		{"MultiGet", ioctx.ActivityMultiGet, one("MultiGet"), func(ctx context.Context, h holder) error {
			_, err := h.MultiGet(ctx, twoKeys)
			return err
		}},
		{"NewIterator", ioctx.ActivityDBIterator, one("NewIterator"), func(ctx context.Context, h holder) error {
			it, err := h.NewIterator(ctx, nil)
			if err == nil {
				err = it.Close()
			}
			return err
		}},
		{"VerifyChecksum", ioctx.ActivityVerifyDBChecksum, one("VerifyChecksum"), func(ctx context.Context, h holder) error {
			return h.(verifier).VerifyChecksum(ctx)
		}},
		{"VerifyFileChecksums", ioctx.ActivityVerifyFileChecksums, one("VerifyFileChecksums"), func(ctx context.Context, h holder) error {
			return h.(verifier).VerifyFileChecksums(ctx)
		}},
	}
}

// TestReadPath checks steps 1–3 of every read on every holder: the driver
// receives the ctx's options (merged over a Conn's defaults) with the API's
// activity and every other field passed through; a wrong activity returns
// RocksDB's error without reaching the driver.
func TestReadPath(t *testing.T) {
	deadline := time.Now().Add(time.Hour).Truncate(0)
	fromCtx := ioctx.ReadOptions{
		RateLimiterPriority: ioctx.PriorityUser,
		DontFillCache:       true,
		ReadaheadSize:       1 << 20,
		Deadline:            deadline,
	}
	sessionDefaults := ioctx.ReadOptions{
		RateLimiterPriority: ioctx.PriorityLow,
		IOTimeout:           5 * time.Millisecond,
		AsyncIO:             true,
		ReadaheadSize:       4096,
	}
	type holderCase struct {
		name     string
		open     func(t *testing.T, db *DB) holder
		prefix   string // recorded method prefix
		defaults ioctx.ReadOptions
		verifies bool
	}
	holders := []holderCase{
		{name: "DB", open: func(_ *testing.T, db *DB) holder { return db }, verifies: true},
		{name: "Conn", defaults: sessionDefaults, verifies: true, open: func(t *testing.T, db *DB) holder {
			// The session defaults come from the ctx given to db.Conn.
			c, err := db.Conn(ioctx.WithReadOptions(context.Background(), sessionDefaults))
			require.NoError(t, err)
			return c
		}},
		{name: "ConnSetReadOptions", defaults: sessionDefaults, verifies: true, open: func(t *testing.T, db *DB) holder {
			c, err := db.Conn(context.Background())
			require.NoError(t, err)
			c.SetReadOptions(sessionDefaults)
			return c
		}},
		{name: "Tx", prefix: "Tx.", open: func(t *testing.T, db *DB) holder {
			tx, err := db.BeginTx(context.Background(), nil)
			require.NoError(t, err)
			return tx
		}},
		{name: "ConnTx", prefix: "Tx.", defaults: sessionDefaults, open: func(t *testing.T, db *DB) holder {
			c, err := db.Conn(ioctx.WithReadOptions(context.Background(), sessionDefaults))
			require.NoError(t, err)
			tx, err := c.BeginTx(context.Background(), nil)
			require.NoError(t, err)
			return tx
		}},
	}
	for _, hc := range holders {
		for _, r := range readers() {
			if !hc.verifies && (r.api == "VerifyChecksum" || r.api == "VerifyFileChecksums") {
				continue
			}
			t.Run(hc.name+"/"+r.api, func(t *testing.T) {
				conn := newFullConn()
				conn.txMultiGet = true
				conn.data["a"] = []byte("1")
				db := openFake(t, conn)
				h := hc.open(t, db)
				want := ioctx.Merge(hc.defaults, fromCtx)
				want.Activity = r.activity

				// Unknown activity: tagged with the API's.
				require.NoError(t, r.run(ioctx.WithReadOptions(context.Background(), fromCtx), h))
				// The API's own activity: accepted as is.
				own := fromCtx
				own.Activity = r.activity
				require.NoError(t, r.run(ioctx.WithReadOptions(context.Background(), own), h))
				calls := conn.recorded()
				methods := r.driverMethods(hc.prefix)
				require.Len(t, calls, 2*len(methods))
				for i, c := range calls {
					require.Equal(t, methods[i%len(methods)], c.method)
					requireRequest(t, want, c.req, "call %d", i)
				}

				// Any other activity: RocksDB's error, and the driver is
				// not called.
				for a := ioctx.ActivityFlush; a < ioctx.NumActivities; a++ {
					if a == r.activity {
						continue
					}
					bad := fromCtx
					bad.Activity = a
					err := r.run(ioctx.WithReadOptions(context.Background(), bad), h)
					require.ErrorIs(t, err, ErrInvalidArgument, a.String())
					require.EqualError(t, err, "Can only call "+r.api+" with `ReadOptions::io_activity` is "+
						"`Env::IOActivity::kUnknown` or `"+r.activity.EnvName()+"`, not `"+a.EnvName()+"`")
				}
				require.Len(t, conn.recorded(), len(calls), "a wrong activity reached the driver")
			})
		}
	}
}

// TestSessionDefaultActivity checks that a Conn whose defaults carry an
// activity is limited to that API, and that a call's own activity overrides
// the session's.
func TestSessionDefaultActivity(t *testing.T) {
	conn := newFullConn()
	db := openFake(t, conn)
	ctx := context.Background()
	c, err := db.Conn(ioctx.WithReadOptions(ctx, ioctx.ReadOptions{Activity: ioctx.ActivityGet}))
	require.NoError(t, err)
	require.Equal(t, ioctx.ActivityGet, c.ReadOptions().Activity)
	_, err = c.Get(ctx, []byte("x"))
	require.ErrorIs(t, err, ErrNotFound)
	_, err = c.MultiGet(ctx, twoKeys)
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = c.MultiGet(ioctx.WithReadOptions(ctx, ioctx.ReadOptions{Activity: ioctx.ActivityMultiGet}), twoKeys)
	require.NoError(t, err)
	require.Len(t, conn.recorded(), 2)
}

// requireRequest checks that the driver received ro resolved: every field
// carried over, the deadline turned into the IO timeout and, since the
// tests' contexts carry none, kept for the driver to stop at.
func requireRequest(t *testing.T, ro ioctx.ReadOptions, got ioctx.ReadRequest, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, ro.Activity, got.IO.Activity, msgAndArgs...)
	require.Equal(t, ro.RateLimiterPriority, got.IO.RateLimiterPriority, msgAndArgs...)
	require.Equal(t, !ro.DontVerifyChecksums, got.VerifyChecksums, msgAndArgs...)
	require.Equal(t, !ro.DontFillCache, got.FillCache, msgAndArgs...)
	require.Equal(t, ro.ReadaheadSize, got.ReadaheadSize, msgAndArgs...)
	require.Equal(t, ro.AsyncIO, got.AsyncIO, msgAndArgs...)
	require.Equal(t, ro.Deadline, got.Deadline, msgAndArgs...)
	switch {
	case ro.IOTimeout != 0:
		require.Equal(t, ro.IOTimeout, got.IO.Timeout, msgAndArgs...)
	case !ro.Deadline.IsZero():
		require.Positive(t, got.IO.Timeout, msgAndArgs...)
		require.LessOrEqual(t, got.IO.Timeout, time.Until(ro.Deadline)+time.Second, msgAndArgs...)
	default:
		require.Zero(t, got.IO.Timeout, msgAndArgs...)
	}
}

// TestContextDeadlineBoundsTheRequest checks where deadlines end up: the
// earlier of the context's and the options' becomes the IO timeout, and only
// an options deadline the context does not carry is passed on as one.
func TestContextDeadlineBoundsTheRequest(t *testing.T) {
	conn := newFullConn()
	db := openFake(t, conn)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	ctxDeadline, _ := ctx.Deadline()
	later := ctxDeadline.Add(time.Minute)
	earlier := ctxDeadline.Add(-time.Minute)

	_, _ = db.Get(ctx, []byte("a"))
	_, _ = db.Get(ioctx.WithReadOptions(ctx, ioctx.ReadOptions{Deadline: later}), []byte("a"))
	_, _ = db.Get(ioctx.WithReadOptions(ctx, ioctx.ReadOptions{Deadline: earlier}), []byte("a"))
	_, _ = db.Get(context.Background(), []byte("a"))
	calls := conn.recorded()
	require.Len(t, calls, 4)
	for i, c := range calls[:2] {
		require.True(t, c.req.Deadline.IsZero(), "call %d: the context carries the deadline itself", i)
		require.InDelta(t, time.Hour, c.req.IO.Timeout, float64(time.Minute), "call %d: ctx's deadline bounds the reads", i)
	}
	require.Equal(t, earlier, calls[2].req.Deadline, "the earlier deadline wins")
	require.InDelta(t, time.Hour-time.Minute, calls[2].req.IO.Timeout, float64(time.Minute))
	require.Equal(t, ioctx.ReadRequest{IO: ioctx.IOOptions{Activity: ioctx.ActivityGet}, VerifyChecksums: true,
		FillCache: true}, calls[3].req, "no deadline without one")
}

func TestMultiGet(t *testing.T) {
	keys := [][]byte{[]byte("a"), []byte("missing"), []byte("empty"), []byte("c")}
	want := [][]byte{[]byte("1"), nil, {}, []byte("3")}
	for _, tc := range []struct {
		name    string
		conn    func() (DriverConn, *fakeConn)
		methods []string
	}{
		{"native", func() (DriverConn, *fakeConn) { c := newFullConn(); return c, c.fakeConn }, []string{"MultiGet"}},
		{"no MultiGetter", func() (DriverConn, *fakeConn) { c := newFakeConn(); return c, c }, []string{"Get", "Get", "Get", "Get"}},
		{"ErrSkip", func() (DriverConn, *fakeConn) {
			c := newFullConn()
			c.skipMultiGet.Store(true)
			return c, c.fakeConn
		}, []string{"Get", "Get", "Get", "Get"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dc, fc := tc.conn()
			fc.data["a"], fc.data["empty"], fc.data["c"] = []byte("1"), []byte{}, []byte("3")
			db := openFake(t, dc)
			prio := ioctx.WithReadOptions(context.Background(), ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityHigh})
			vals, err := db.MultiGet(prio, keys)
			require.NoError(t, err)
			require.Equal(t, want, vals)
			require.Nil(t, vals[1], "not found is nil")
			require.NotNil(t, vals[2], "a found empty value is non-nil")
			var methods []string
			for _, c := range fc.recorded() {
				methods = append(methods, c.method)
				require.Equal(t, ioctx.ActivityMultiGet, c.req.IO.Activity, "every read keeps the MultiGet tag")
				require.Equal(t, ioctx.PriorityHigh, c.req.IO.RateLimiterPriority)
			}
			require.Equal(t, tc.methods, methods)
		})
	}

	t.Run("fallback stops at the first error", func(t *testing.T) {
		fc := newFakeConn()
		boom := errors.New("boom")
		fc.getHook = func(_ context.Context, key []byte) error {
			if string(key) == "missing" {
				return boom
			}
			return nil
		}
		db := openFake(t, fc)
		vals, err := db.MultiGet(context.Background(), keys)
		require.ErrorIs(t, err, boom)
		require.Nil(t, vals)
		require.Len(t, fc.recorded(), 1, "no Get after the failure")
	})
	t.Run("a driver returning the wrong count is caught", func(t *testing.T) {
		db := openFake(t, &shortMultiGet{newFakeConn()})
		_, err := db.MultiGet(context.Background(), keys)
		require.EqualError(t, err, "driver: the driver's MultiGet returned 1 values for 4 keys")
	})
}

type shortMultiGet struct{ *fakeConn }

func (c *shortMultiGet) MultiGet(context.Context, ioctx.ReadRequest, [][]byte) ([][]byte, error) {
	return [][]byte{nil}, nil
}

func TestTxMultiGet(t *testing.T) {
	for _, native := range []bool{true, false} {
		conn := newFullConn()
		conn.txMultiGet = native
		conn.data["a"] = []byte("1")
		db := openFake(t, conn)
		ctx := context.Background()
		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		require.NoError(t, tx.Put(ctx, []byte("b"), []byte("2")))
		require.NoError(t, tx.Delete(ctx, []byte("a")))
		vals, err := tx.MultiGet(ctx, [][]byte{[]byte("a"), []byte("b")})
		require.NoError(t, err)
		require.Equal(t, [][]byte{nil, []byte("2")}, vals)
		var methods []string
		for _, c := range conn.recorded() {
			methods = append(methods, c.method)
			require.Equal(t, ioctx.ActivityMultiGet, c.req.IO.Activity)
		}
		if native {
			require.Equal(t, []string{"Tx.MultiGet"}, methods)
		} else {
			require.Equal(t, []string{"Tx.Get", "Tx.Get"}, methods, "the fallback loops the DriverTx's Get")
		}
		require.NoError(t, tx.Rollback())
	}
}

func TestNotSupported(t *testing.T) {
	db := openFake(t, newFakeConn())
	ctx := context.Background()
	for _, tc := range []struct {
		call func() error
		msg  string
	}{
		{func() error { return db.Flush(ctx) }, "driver: Flush is not supported by this driver (its connection does not implement driver.Flusher)"},
		{func() error { return db.Compact(ctx, nil, nil) }, "driver: Compact is not supported by this driver (its connection does not implement driver.Compacter)"},
		{func() error { return db.VerifyChecksum(ctx) }, "driver: VerifyChecksum is not supported by this driver (its connection does not implement driver.Verifier)"},
		{func() error { return db.VerifyFileChecksums(ctx) }, "driver: VerifyFileChecksums is not supported by this driver (its connection does not implement driver.Verifier)"},
		{func() error { _, err := db.BeginTx(ctx, nil); return err }, "driver: BeginTx is not supported by this driver (its connection does not implement driver.TxBeginner)"},
	} {
		err := tc.call()
		require.ErrorIs(t, err, ErrNotSupported)
		require.EqualError(t, err, tc.msg)
	}
	require.Nil(t, db.Statistics(), "no StatsReporter: nil")
	// The activity is checked before the capability.
	err := db.VerifyChecksum(ioctx.WithReadOptions(ctx, ioctx.ReadOptions{Activity: ioctx.ActivityGet}))
	require.ErrorIs(t, err, ErrInvalidArgument)
}

func TestOptionalCapabilities(t *testing.T) {
	conn := newFullConn()
	db := openFake(t, conn)
	ctx := context.Background()
	require.NoError(t, db.Flush(ctx))
	require.NoError(t, db.Compact(ctx, []byte("a"), []byte("z")))
	calls := conn.recorded()
	require.Len(t, calls, 2)
	require.Equal(t, call{method: "Flush"}, calls[0])
	require.Equal(t, call{method: "Compact", key: "az"}, calls[1])
}

func TestStatistics(t *testing.T) {
	conn := newFullConn()
	conn.stats = newTestStats()
	db := OpenDB(&fakeConnector{conn: conn})
	s := db.Statistics()
	require.Same(t, conn.stats, s, "Statistics connects and returns the driver's")
	require.NoError(t, db.Close())
	require.Same(t, conn.stats, db.Statistics(), "still readable after Close")
}

// TestCancelledContext checks that a done ctx makes every call return an
// error matching ctx.Err() without reaching the driver.
func TestCancelledContext(t *testing.T) {
	conn := newFullConn()
	conn.data["a"] = []byte("1")
	db := openFake(t, conn)
	require.NoError(t, db.Ping(context.Background()))
	c, err := db.Conn(context.Background())
	require.NoError(t, err)
	tx, err := db.BeginTx(context.Background(), nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	snap, err := db.NewSnapshot(context.Background())
	require.NoError(t, err)
	defer func() { _ = snap.Close() }()
	conn.mu.Lock()
	conn.calls = nil
	conn.mu.Unlock()

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	var b Batch
	b.Put([]byte("k"), []byte("v"))
	for _, ctx := range []context.Context{cancelled, expired} {
		calls := map[string]func() error{}
		for _, h := range []struct {
			name string
			h    holder
		}{{"DB", db}, {"Conn", c}, {"Tx", tx}} {
			for _, r := range readers() {
				if _, ok := h.h.(verifier); !ok && (r.api == "VerifyChecksum" || r.api == "VerifyFileChecksums") {
					continue
				}
				calls[h.name+"."+r.api] = func() error { return r.run(ctx, h.h) }
			}
		}
		calls["DB.Ping"] = func() error { return db.Ping(ctx) }
		calls["DB.Put"] = func() error { return db.Put(ctx, []byte("k"), nil) }
		calls["DB.Delete"] = func() error { return db.Delete(ctx, []byte("k")) }
		calls["DB.Write"] = func() error { return db.Write(ctx, &b) }
		calls["DB.Flush"] = func() error { return db.Flush(ctx) }
		calls["DB.Compact"] = func() error { return db.Compact(ctx, nil, nil) }
		calls["DB.Conn"] = func() error { _, err := db.Conn(ctx); return err }
		calls["DB.BeginTx"] = func() error { _, err := db.BeginTx(ctx, nil); return err }
		calls["Conn.Put"] = func() error { return c.Put(ctx, []byte("k"), nil) }
		calls["Conn.Delete"] = func() error { return c.Delete(ctx, []byte("k")) }
		calls["Conn.Write"] = func() error { return c.Write(ctx, &b) }
		calls["Conn.BeginTx"] = func() error { _, err := c.BeginTx(ctx, nil); return err }
		calls["DB.DeleteRange"] = func() error { return db.DeleteRange(ctx, []byte("a"), []byte("b")) }
		calls["DB.SyncWAL"] = func() error { return db.SyncWAL(ctx) }
		calls["DB.Checkpoint"] = func() error { return db.Checkpoint(ctx, "/cp") }
		calls["DB.NewSnapshot"] = func() error { _, err := db.NewSnapshot(ctx); return err }
		calls["Conn.DeleteRange"] = func() error { return c.DeleteRange(ctx, []byte("a"), []byte("b")) }
		calls["Snapshot.Get"] = func() error { _, err := snap.Get(ctx, []byte("a")); return err }
		calls["Snapshot.MultiGet"] = func() error { _, err := snap.MultiGet(ctx, [][]byte{[]byte("a")}); return err }
		calls["Snapshot.NewIterator"] = func() error { _, err := snap.NewIterator(ctx, nil); return err }
		calls["Tx.DeleteRange"] = func() error { return tx.DeleteRange(ctx, []byte("a"), []byte("b")) }
		for name, h := range map[string]sizer{"DB": db, "Conn": c, "Tx": tx, "Snapshot": snap} {
			calls[name+".Has"] = func() error { _, err := h.Has(ctx, []byte("a")); return err }
			calls[name+".ValueSize"] = func() error { _, err := h.ValueSize(ctx, []byte("a")); return err }
			if p, ok := h.(pinned); ok {
				calls[name+".GetPinned"] = func() error { _, _, err := p.GetPinned(ctx, []byte("a")); return err }
			}
		}
		calls["DB.Check"] = func() error { return db.Check(ctx) }
		calls["DB.Resume"] = func() error { return db.Resume(ctx) }
		calls["DB.DeleteRange/open"] = func() error { return db.DeleteRange(ctx, nil, nil) }
		calls["Tx.Put"] = func() error { return tx.Put(ctx, []byte("k"), nil) }
		calls["Tx.Delete"] = func() error { return tx.Delete(ctx, []byte("k")) }
		for name, f := range calls {
			err := f()
			require.Error(t, err, name)
			require.ErrorIs(t, err, ctx.Err(), name)
		}
		require.Empty(t, conn.recorded(), "a call with a done ctx reached the driver")
		require.Empty(t, conn.writeOpts, "a write with a done ctx reached the driver")
	}

	// An iterator whose ctx is cancelled after creation stops.
	ctx, cancel3 := context.WithCancel(context.Background())
	it, err := db.NewIterator(ctx, nil)
	require.NoError(t, err)
	require.True(t, it.First())
	cancel3()
	require.False(t, it.Next())
	require.False(t, it.Valid())
	require.ErrorIs(t, it.Error(), context.Canceled)
	require.False(t, it.First(), "no move succeeds after the ctx is done")
	require.ErrorIs(t, it.Close(), context.Canceled, "Close reports the iteration's error")
}

// TestIteratorStopsAtRequestDeadline checks that an iterator stops once a
// ReadOptions deadline its context does not carry has passed, as it does
// when its context is done.
func TestIteratorStopsAtRequestDeadline(t *testing.T) {
	conn := newFullConn()
	conn.iterIgnoresCtx = true // only the façade can stop it
	for _, k := range []string{"a", "b", "c"} {
		conn.data[k] = []byte(k)
	}
	db := openFake(t, conn)
	ctx := ioctx.WithReadOptions(context.Background(), ioctx.ReadOptions{Deadline: time.Now().Add(50 * time.Millisecond)})
	it, err := db.NewIterator(ctx, nil)
	require.NoError(t, err)
	require.True(t, it.First())
	time.Sleep(60 * time.Millisecond)
	require.False(t, it.Next(), "a move after the deadline")
	require.ErrorIs(t, it.Error(), context.DeadlineExceeded)
	require.ErrorIs(t, it.Error(), errclass.ErrTimedOut)
	require.ErrorIs(t, it.Close(), context.DeadlineExceeded)
}
