package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/shaledb/shale/ioctx"
	"github.com/stretchr/testify/require"
)

// The tests of Has, ValueSize and GetPinned (lookup.go): on DB, Conn, Tx
// and Snapshot, with a driver that implements ValueSizer and PinnedGetter
// (used; Get is not called), one whose implementation returns ErrSkip and
// one without them (both fall back to Get).

// sizer is what DB, Conn, Tx and Snapshot have for reading without a copy;
// pinned is GetPinned, which Tx does not have.
type sizer interface {
	Has(ctx context.Context, key []byte) (bool, error)
	ValueSize(ctx context.Context, key []byte) (int, error)
}

type pinned interface {
	GetPinned(ctx context.Context, key []byte) ([]byte, io.Closer, error)
}

// lookupHolder opens what the reads run on, and says the prefix the fake
// records their driver calls with.
type lookupHolder struct {
	name   string
	prefix string
	open   func(t *testing.T, db *DB) sizer
}

func lookupHolders() []lookupHolder {
	return []lookupHolder{
		{"DB", "", func(_ *testing.T, db *DB) sizer { return db }},
		{"Conn", "", func(t *testing.T, db *DB) sizer {
			c, err := db.Conn(context.Background())
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			return c
		}},
		{"Tx", "Tx.", func(t *testing.T, db *DB) sizer {
			tx, err := db.BeginTx(context.Background(), nil)
			require.NoError(t, err)
			t.Cleanup(func() { _ = tx.Rollback() })
			return tx
		}},
		{"Snapshot", "Snapshot.", func(t *testing.T, db *DB) sizer {
			s, err := db.NewSnapshot(context.Background())
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			return s
		}},
	}
}

// lookupConn returns a driver connection of the given kind ("native",
// "ErrSkip" or "fallback") and its fakeConn.
func lookupConn(kind string) (DriverConn, *fullConn) {
	switch kind {
	case "native", "ErrSkip":
		c := newZeroCopyConn()
		c.txZeroCopy, c.snapZeroCopy = true, true
		c.zcSkip.Store(kind == "ErrSkip")
		return c, c.fullConn
	}
	c := newFullConn()
	return c, c
}

func TestHasValueSizeGetPinned(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []string{"native", "ErrSkip", "fallback"} {
		for _, h := range lookupHolders() {
			t.Run(kind+"/"+h.name, func(t *testing.T) {
				dc, full := lookupConn(kind)
				full.data["a"] = []byte("value")
				full.data["empty"] = []byte{}
				db := openFake(t, dc)
				r := h.open(t, db)
				full.mu.Lock()
				full.calls = nil
				full.mu.Unlock()

				ok, err := r.Has(ctx, []byte("a"))
				require.NoError(t, err)
				require.True(t, ok)
				ok, err = r.Has(ctx, []byte("empty"))
				require.NoError(t, err)
				require.True(t, ok, "an empty value is a value")
				ok, err = r.Has(ctx, []byte("missing"))
				require.NoError(t, err, "an absent key is false, not an error")
				require.False(t, ok)

				n, err := r.ValueSize(ctx, []byte("a"))
				require.NoError(t, err)
				require.Equal(t, 5, n)
				n, err = r.ValueSize(ctx, []byte("empty"))
				require.NoError(t, err)
				require.Zero(t, n)
				_, err = r.ValueSize(ctx, []byte("missing"))
				require.ErrorIs(t, err, ErrNotFound)

				want := []string{"ValueSize", "ValueSize", "ValueSize", "ValueSize", "ValueSize", "ValueSize"}
				if p, ok := r.(pinned); ok {
					v, closer, err := p.GetPinned(ctx, []byte("a"))
					require.NoError(t, err)
					require.Equal(t, "value", string(v))
					require.NotNil(t, closer)
					if kind == "native" {
						require.EqualValues(t, 1, full.pins.Load(), "the driver's pin is held until Close")
					}
					require.NoError(t, closer.Close(), "the first Close")
					require.Zero(t, full.pins.Load())
					if kind == "native" {
						require.ErrorIs(t, closer.Close(), ErrClosed, "the driver's second Close")
					} else {
						require.NoError(t, closer.Close(), "the fallback's closer does nothing, twice")
					}
					v, closer, err = p.GetPinned(ctx, []byte("empty"))
					require.NoError(t, err)
					require.Empty(t, v)
					require.NoError(t, closer.Close())
					v, closer, err = p.GetPinned(ctx, []byte("missing"))
					require.ErrorIs(t, err, ErrNotFound)
					require.Nil(t, v)
					require.Nil(t, closer, "no closer with an error")
					want = append(want, "GetPinned", "GetPinned", "GetPinned")
				}
				if kind != "native" {
					for i := range want {
						want[i] = "Get" // the fallback
					}
				}
				var got []string
				for _, c := range full.recorded() {
					got = append(got, c.method)
					require.Equal(t, ioctx.ActivityGet, c.req.IO.Activity, c.method)
				}
				for i := range want {
					want[i] = h.prefix + want[i]
				}
				require.Equal(t, want, got)
			})
		}
	}
}

// TestLookupDriverErrors: an error from ValueSizer or PinnedGetter other
// than ErrSkip is returned as is, without a fallback; a nil Closer is
// replaced by one that does nothing.
func TestLookupDriverErrors(t *testing.T) {
	ctx := context.Background()
	conn := newZeroCopyConn()
	conn.data["a"] = []byte("value")
	boom := errors.New("boom")
	failing := &failingZeroCopy{conn, boom}
	fdb := openFake(t, failing)
	_, err := fdb.Has(ctx, []byte("a"))
	require.ErrorIs(t, err, boom)
	_, err = fdb.ValueSize(ctx, []byte("a"))
	require.ErrorIs(t, err, boom)
	v, c, err := fdb.GetPinned(ctx, []byte("a"))
	require.ErrorIs(t, err, boom)
	require.Nil(t, v)
	require.Nil(t, c)
	require.Empty(t, conn.recorded(), "no fallback to Get after a real error")

	nilCloser := newZeroCopyConn()
	nilCloser.nilCloser = true
	nilCloser.data["a"] = []byte("value")
	ndb := openFake(t, nilCloser)
	v, c, err = ndb.GetPinned(ctx, []byte("a"))
	require.NoError(t, err)
	require.Equal(t, "value", string(v))
	require.NotNil(t, c, "a nil Closer from the driver becomes a no-op one")
	require.NoError(t, c.Close())
}

// failingZeroCopy's ValueSize and GetPinned fail with err.
type failingZeroCopy struct {
	*zeroCopyConn
	err error
}

func (c *failingZeroCopy) ValueSize(context.Context, ioctx.ReadRequest, []byte) (int, error) {
	return 0, c.err
}

func (c *failingZeroCopy) GetPinned(context.Context, ioctx.ReadRequest, []byte) ([]byte, io.Closer, error) {
	return nil, nil, c.err
}

// TestLookupReadPath checks steps 1–3 of the read path for Has, ValueSize
// and GetPinned on every holder: the driver (the native interface or the
// fallback's Get) receives the ctx's options merged over a Conn's defaults,
// tagged ActivityGet; a wrong activity returns RocksDB's error for Get and
// reaches no driver.
func TestLookupReadPath(t *testing.T) {
	fromCtx := ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityUser, DontFillCache: true, ReadaheadSize: 1 << 20}
	sessionDefaults := ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityLow, IOTimeout: 5 * time.Millisecond, AsyncIO: true}
	session := func(t *testing.T, db *DB) *Conn {
		c, err := db.Conn(ioctx.WithReadOptions(context.Background(), sessionDefaults))
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	holders := append(lookupHolders(),
		lookupHolder{"ConnDefaults", "", func(t *testing.T, db *DB) sizer { return session(t, db) }},
		lookupHolder{"ConnTx", "Tx.", func(t *testing.T, db *DB) sizer {
			tx, err := session(t, db).BeginTx(context.Background(), nil)
			require.NoError(t, err)
			t.Cleanup(func() { _ = tx.Rollback() })
			return tx
		}},
		lookupHolder{"ConnSnapshot", "Snapshot.", func(t *testing.T, db *DB) sizer {
			s, err := session(t, db).NewSnapshot(context.Background())
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			return s
		}})
	reads := map[string]func(ctx context.Context, r sizer) error{
		"Has": func(ctx context.Context, r sizer) error { _, err := r.Has(ctx, []byte("a")); return err },
		"ValueSize": func(ctx context.Context, r sizer) error {
			_, err := r.ValueSize(ctx, []byte("a"))
			return err
		},
		"GetPinned": func(ctx context.Context, r sizer) error {
			_, c, err := r.(pinned).GetPinned(ctx, []byte("a"))
			if err == nil {
				err = c.Close()
			}
			return err
		},
	}
	for _, kind := range []string{"native", "fallback"} {
		for _, h := range holders {
			for name, read := range reads {
				t.Run(kind+"/"+h.name+"/"+name, func(t *testing.T) {
					dc, full := lookupConn(kind)
					full.data["a"] = []byte("1")
					db := openFake(t, dc)
					r := h.open(t, db)
					if _, ok := r.(pinned); !ok && name == "GetPinned" {
						t.Skip("Tx has no GetPinned")
					}
					var defaults ioctx.ReadOptions
					if h.name == "ConnDefaults" || h.name == "ConnTx" || h.name == "ConnSnapshot" {
						defaults = sessionDefaults
					}
					want := ioctx.Merge(defaults, fromCtx)
					want.Activity = ioctx.ActivityGet
					full.mu.Lock()
					full.calls = nil
					full.mu.Unlock()

					require.NoError(t, read(ioctx.WithReadOptions(context.Background(), fromCtx), r))
					own := fromCtx
					own.Activity = ioctx.ActivityGet
					require.NoError(t, read(ioctx.WithReadOptions(context.Background(), own), r))
					calls := full.recorded()
					require.Len(t, calls, 2)
					method := h.prefix + "Get"
					if kind == "native" {
						method = h.prefix + map[string]string{"Has": "ValueSize", "ValueSize": "ValueSize", "GetPinned": "GetPinned"}[name]
					}
					for i, c := range calls {
						require.Equal(t, method, c.method)
						requireRequest(t, want, c.req, "call %d", i)
					}
					for a := ioctx.ActivityFlush; a < ioctx.NumActivities; a++ {
						if a == ioctx.ActivityGet {
							continue
						}
						bad := fromCtx
						bad.Activity = a
						err := read(ioctx.WithReadOptions(context.Background(), bad), r)
						require.ErrorIs(t, err, ErrInvalidArgument, a.String())
						require.EqualError(t, err, "Can only call Get with `ReadOptions::io_activity` is "+
							"`Env::IOActivity::kUnknown` or `"+ioctx.ActivityGet.EnvName()+"`, not `"+a.EnvName()+"`")
					}
					require.Len(t, full.recorded(), 2, "a wrong activity reached the driver")
				})
			}
		}
	}
}

// TestLookupAfterClose: Has, ValueSize and GetPinned after DB.Close (and
// after a Tx's end or a Snapshot's Close) fail as every read does, without
// reaching the driver; a pinned value outlives DB.Close until its Close.
func TestLookupAfterClose(t *testing.T) {
	ctx := context.Background()
	conn := newZeroCopyConn()
	conn.snapZeroCopy = true
	conn.data["a"] = []byte("value")
	db := OpenDB(&fakeConnector{conn: conn})
	v, closer, err := db.GetPinned(ctx, []byte("a"))
	require.NoError(t, err)
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, tx.Rollback())
	snap, err := db.NewSnapshot(ctx)
	require.NoError(t, err)
	require.NoError(t, snap.Close())
	_, err = tx.Has(ctx, []byte("a"))
	require.ErrorIs(t, err, ErrTxDone)
	_, err = tx.ValueSize(ctx, []byte("a"))
	require.ErrorIs(t, err, ErrTxDone)
	_, err = snap.Has(ctx, []byte("a"))
	require.ErrorIs(t, err, ErrClosed)
	_, _, err = snap.GetPinned(ctx, []byte("a"))
	require.ErrorIs(t, err, ErrClosed)

	require.NoError(t, db.Close())
	_, err = db.Has(ctx, []byte("a"))
	require.ErrorIs(t, err, ErrClosed)
	_, err = db.ValueSize(ctx, []byte("a"))
	require.ErrorIs(t, err, ErrClosed)
	_, _, err = db.GetPinned(ctx, []byte("a"))
	require.ErrorIs(t, err, ErrClosed)
	require.Equal(t, "value", string(v), "a pinned value outlives DB.Close")
	require.EqualValues(t, 1, conn.pins.Load())
	require.NoError(t, closer.Close())
	require.Zero(t, conn.pins.Load())
	require.Len(t, conn.recorded(), 1, "only the first GetPinned reached the driver")
	require.Empty(t, conn.violationList())
}

// TestLookupAllocations pins the façade's cost of Has, ValueSize and
// GetPinned: nothing, through a DB or a Conn, with a driver that answers
// without allocating, whether through ValueSizer and PinnedGetter or the
// fallback's Get.
func TestLookupAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	value := make([]byte, 256<<10)
	closer := &pinCloser{c: newFakeConn()}
	withDeadline, cancel := context.WithTimeout(ioctx.WithReadOptions(context.Background(),
		ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityUser}), time.Hour)
	defer cancel()
	key := []byte("key")
	for _, dc := range []struct {
		name string
		conn DriverConn
	}{
		{"native", &fixedZeroCopyConn{fixedConn{value}, closer}},
		{"fallback", &fixedConn{value}},
	} {
		db := openFake(t, dc.conn)
		conn, err := db.Conn(ioctx.WithReadOptions(context.Background(), ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityLow}))
		require.NoError(t, err)
		for _, h := range []struct {
			name string
			r    interface {
				sizer
				pinned
			}
		}{{"DB", db}, {"Conn", conn}} {
			for _, ctx := range []struct {
				name string
				ctx  context.Context
			}{{"background", context.Background()}, {"deadline", withDeadline}} {
				name := dc.name + "/" + h.name + "/" + ctx.name
				allocs := testing.AllocsPerRun(1000, func() {
					if ok, err := h.r.Has(ctx.ctx, key); !ok || err != nil {
						t.Fatal(ok, err)
					}
				})
				require.Zero(t, allocs, name+": Has")
				allocs = testing.AllocsPerRun(1000, func() {
					if n, err := h.r.ValueSize(ctx.ctx, key); n != len(value) || err != nil {
						t.Fatal(n, err)
					}
				})
				require.Zero(t, allocs, name+": ValueSize")
				allocs = testing.AllocsPerRun(1000, func() {
					v, c, err := h.r.GetPinned(ctx.ctx, key)
					if len(v) != len(value) || err != nil || c == nil {
						t.Fatal(len(v), err)
					}
				})
				require.Zero(t, allocs, name+": GetPinned")
			}
		}
	}
}

// TestCheckResume: without Checker or Resumer, Check and Resume return
// ErrNotSupported naming the interface; with them, the calls are forwarded
// with their context and their errors returned as they are.
func TestCheckResume(t *testing.T) {
	ctx := context.Background()
	db := openFake(t, newFullConn())
	err := db.Check(ctx)
	require.ErrorIs(t, err, ErrNotSupported)
	require.EqualError(t, err, "driver: Check is not supported by this driver (its connection does not implement driver.Checker)")
	err = db.Resume(ctx)
	require.ErrorIs(t, err, ErrNotSupported)
	require.EqualError(t, err, "driver: Resume is not supported by this driver (its connection does not implement driver.Resumer)")

	conn := &checkConn{fullConn: newFullConn()}
	cdb := openFake(t, conn)
	require.NoError(t, cdb.Check(ctx))
	require.NoError(t, cdb.Resume(ctx))
	damaged := fmt.Errorf("table 000007.sst: bad key order: %w", ErrCorruption)
	conn.err = damaged
	require.Same(t, damaged, cdb.Check(ctx))
	require.Same(t, damaged, cdb.Resume(ctx))
	require.Equal(t, []string{"Check", "Resume", "Check", "Resume"}, conn.methods())

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, cdb.Check(cancelled), context.Canceled)
	require.ErrorIs(t, cdb.Resume(cancelled), context.Canceled)
	require.Len(t, conn.methods(), 4, "a done ctx reaches no driver")
	require.NoError(t, cdb.Close())
	require.ErrorIs(t, cdb.Check(ctx), ErrClosed)
	require.ErrorIs(t, cdb.Resume(ctx), ErrClosed)
}

// checkConn adds Checker and Resumer, which return err.
type checkConn struct {
	*fullConn
	err error
}

var (
	_ Checker = (*checkConn)(nil)
	_ Resumer = (*checkConn)(nil)
)

func (c *checkConn) Check(ctx context.Context) error {
	c.record("Check", ioctx.ReadRequest{}, nil)
	return c.err
}

func (c *checkConn) Resume(ctx context.Context) error {
	c.record("Resume", ioctx.ReadRequest{}, nil)
	return c.err
}

func (c *checkConn) methods() []string {
	var m []string
	for _, c := range c.recorded() {
		m = append(m, c.method)
	}
	return m
}
