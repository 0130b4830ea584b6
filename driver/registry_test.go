package driver

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// withRegistry runs the test against an empty registry and restores the
// original afterwards (example_test.go registers a driver at init).
func withRegistry(t *testing.T) {
	driversMu.Lock()
	saved := maps.Clone(drivers)
	drivers = make(map[string]Driver)
	driversMu.Unlock()
	t.Cleanup(func() {
		driversMu.Lock()
		drivers = saved
		driversMu.Unlock()
	})
}

func TestRegister(t *testing.T) {
	withRegistry(t)
	require.Empty(t, Drivers())
	Register("zeta", fakeDriver{})
	Register("alpha", fakeContextDriver{})
	Register("mid", fakeDriver{})
	require.Equal(t, []string{"alpha", "mid", "zeta"}, Drivers(), "Drivers is sorted")

	require.PanicsWithValue(t, `driver: Register called twice for driver "mid"`, func() { Register("mid", fakeDriver{}) })
	require.PanicsWithValue(t, `driver: Register driver is nil for name "nil-driver"`, func() { Register("nil-driver", nil) })
	require.Equal(t, []string{"alpha", "mid", "zeta"}, Drivers(), "failed registrations change nothing")
}

func TestOpen(t *testing.T) {
	withRegistry(t)
	Register("plain", fakeDriver{})
	Register("ctx", fakeContextDriver{})
	ctx := context.Background()

	t.Run("unknown driver", func(t *testing.T) {
		db, err := Open("nope", "/x")
		require.Nil(t, db)
		require.ErrorIs(t, err, ErrInvalidArgument)
		require.EqualError(t, err, `driver: unknown driver "nope" (forgotten import?)`)
	})
	t.Run("DriverContext error is returned by Open", func(t *testing.T) {
		db, err := Open("ctx", "")
		require.Nil(t, db)
		require.ErrorIs(t, err, ErrInvalidArgument)
		require.ErrorContains(t, err, "empty path")
		_, err = Open("ctx", "fail-now")
		require.EqualError(t, err, "fake: cannot open fail-now")
	})
	t.Run("DriverContext success", func(t *testing.T) {
		db, err := Open("ctx", "/data?a=1")
		require.NoError(t, err)
		require.NoError(t, db.Put(ctx, []byte("k"), []byte("v")))
		require.Equal(t, fakeDriver{}, db.Driver())
		require.NoError(t, db.Close())
	})
	t.Run("plain driver opens at first use", func(t *testing.T) {
		db, err := Open("plain", "fail-later")
		require.NoError(t, err, "Open does not open the database")
		require.Equal(t, fakeDriver{}, db.Driver())
		err = db.Ping(ctx)
		require.EqualError(t, err, "driver: open failed: fake: cannot open fail-later")
		_, err2 := db.Get(ctx, []byte("k"))
		require.Equal(t, err.Error(), err2.Error(), "the next call tries again, and fails again")
		require.NoError(t, db.Close())

		db, err = Open("plain", "/ok")
		require.NoError(t, err)
		require.NoError(t, db.Ping(ctx))
		_, err = db.Get(ctx, []byte("k"))
		require.ErrorIs(t, err, ErrNotFound)
		require.NoError(t, db.Close())
	})
	require.Panics(t, func() { OpenDB(nil) })
}

func TestConnectOnceUnderConcurrency(t *testing.T) {
	conn := newFullConn()
	conn.data["k"] = []byte("v")
	c := &fakeConnector{conn: conn, gate: make(chan struct{})}
	db := OpenDB(c)
	require.Zero(t, c.connects.Load(), "OpenDB returns without connecting")

	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			v, err := db.Get(context.Background(), []byte("k"))
			if err == nil && string(v) != "v" {
				err = errors.New("wrong value " + string(v))
			}
			errs <- err
		})
	}
	// Every caller waits: none can have returned while the connect is held.
	time.Sleep(20 * time.Millisecond)
	require.Empty(t, errs, "calls returned before the connect finished")
	close(c.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.EqualValues(t, 1, c.connects.Load(), "exactly one connect")
	require.NoError(t, db.Close())
	require.EqualValues(t, 1, c.closes.Load(), "Close closes an io.Closer Connector")
	require.True(t, conn.closed)
}

// TestConnectFailureRetriedByEveryCall checks database/sql's semantics: a
// failed connect is returned by the call that waited for it, and the next
// call tries again.
func TestConnectFailureRetriedByEveryCall(t *testing.T) {
	cause := errors.New("disk on fire")
	c := &fakeConnector{err: cause}
	db := OpenDB(c)
	ctx := context.Background()
	var b Batch
	b.Put([]byte("k"), []byte("v"))
	calls := map[string]func() error{
		"Ping":                func() error { return db.Ping(ctx) },
		"Get":                 func() error { _, err := db.Get(ctx, []byte("k")); return err },
		"MultiGet":            func() error { _, err := db.MultiGet(ctx, [][]byte{[]byte("k")}); return err },
		"NewIterator":         func() error { _, err := db.NewIterator(ctx, nil); return err },
		"Put":                 func() error { return db.Put(ctx, []byte("k"), nil) },
		"Delete":              func() error { return db.Delete(ctx, []byte("k")) },
		"Write":               func() error { return db.Write(ctx, &b) },
		"Flush":               func() error { return db.Flush(ctx) },
		"Compact":             func() error { return db.Compact(ctx, nil, nil) },
		"VerifyChecksum":      func() error { return db.VerifyChecksum(ctx) },
		"VerifyFileChecksums": func() error { return db.VerifyFileChecksums(ctx) },
		"Conn":                func() error { _, err := db.Conn(ctx); return err },
		"BeginTx":             func() error { _, err := db.BeginTx(ctx, nil); return err },
	}
	for name, f := range calls {
		err := f()
		require.ErrorIs(t, err, cause, name)
		require.EqualError(t, err, "driver: open failed: disk on fire", name)
	}
	require.Nil(t, db.Statistics())
	require.EqualValues(t, len(calls)+1, c.connects.Load(), "every call after a failed connect tries again")
	require.NoError(t, db.Close())
	require.EqualValues(t, 1, c.closes.Load())
}

// TestConnectSucceedsOnceTheCauseIsGone is the case: a database held
// by another handle fails Ping with "is in use"; once the holder is closed,
// the next Ping opens it.
func TestConnectSucceedsOnceTheCauseIsGone(t *testing.T) {
	conn := newFullConn()
	conn.data["k"] = []byte("v")
	c := &fakeConnector{conn: conn, err: errors.New("the database is in use")}
	c.failures.Store(2)
	db := OpenDB(c)
	ctx := context.Background()
	require.ErrorContains(t, db.Ping(ctx), "in use")
	_, err := db.Get(ctx, []byte("k"))
	require.ErrorContains(t, err, "in use")
	require.NoError(t, db.Ping(ctx), "the cause is gone: the third connect succeeds")
	v, err := db.Get(ctx, []byte("k"))
	require.NoError(t, err)
	require.Equal(t, "v", string(v))
	require.EqualValues(t, 3, c.connects.Load(), "a successful connect is kept")
	require.NoError(t, db.Close())
}

func TestConnectWaiterGivesUpWithoutPoisoning(t *testing.T) {
	conn := newFullConn()
	conn.data["k"] = []byte("v")
	c := &fakeConnector{conn: conn, gate: make(chan struct{})}
	db := OpenDB(c)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := db.Get(ctx, []byte("k"))
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	cancel()
	err := <-done
	require.ErrorIs(t, err, context.Canceled, "the first caller gives up when its ctx is done")

	close(c.gate)
	v, err := db.Get(context.Background(), []byte("k"))
	require.NoError(t, err, "the connect was not cancelled with the caller")
	require.Equal(t, "v", string(v))
	require.Equal(t, "<nil>", c.ctxErr.Load(), "Connect's ctx never carries the caller's cancellation")
	require.EqualValues(t, 1, c.connects.Load())
	require.NoError(t, db.Close())
}

func TestCloseWaitsForConnectInProgress(t *testing.T) {
	conn := newFullConn()
	c := &fakeConnector{conn: conn, gate: make(chan struct{})}
	db := OpenDB(c)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = db.Ping(ctx) }()
	for c.connects.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel() // the caller leaves; the connect goes on

	closed := make(chan error)
	go func() { closed <- db.Close() }()
	select {
	case <-closed:
		t.Fatal("Close returned while a connect was in progress")
	case <-time.After(20 * time.Millisecond):
	}
	close(c.gate)
	require.NoError(t, <-closed)
	require.True(t, conn.closed, "the connection made after Close began is closed")
}

func TestCloseUnconnected(t *testing.T) {
	c := &fakeConnector{conn: newFullConn(), closeErr: errors.New("connector close failed")}
	db := OpenDB(c)
	err := db.Close()
	require.EqualError(t, err, "connector close failed")
	require.Zero(t, c.connects.Load(), "Close does not connect")
	err = db.Close()
	require.ErrorIs(t, err, ErrClosed)
	require.EqualError(t, err, "driver: database is closed")
	require.EqualValues(t, 1, c.closes.Load())
}
