package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
)

// call is one API call, made with a given context.
type call struct {
	name string
	f    func(ctx context.Context) error
}

// dbCalls returns a call of every method of db that takes a context.
func dbCalls(db *dbh) []call {
	calls := readerCalls("DB", db)
	calls = append(calls, writerCalls("DB", db, db)...)
	return append(calls,
		call{"DB.VerifyChecksum", db.VerifyChecksum},
		call{"DB.VerifyFileChecksums", db.VerifyFileChecksums},
		call{"DB.Flush", db.Flush},
		call{"DB.Compact", func(ctx context.Context) error { return db.Compact(ctx, nil, nil) }},
		call{"DB.Ping", db.Ping},
		call{"DB.Conn", func(ctx context.Context) error {
			c, err := db.Conn(ctx)
			if err == nil {
				_ = c.Close()
			}
			return err
		}},
		call{"DB.BeginTx", func(ctx context.Context) error {
			tx, err := db.BeginTx(ctx, nil)
			if err == nil {
				_ = tx.Rollback()
			}
			return err
		}},
	)
}

// connCalls returns a call of every method of c that takes a context.
func connCalls(c *driver.Conn) []call {
	calls := readerCalls("Conn", c)
	calls = append(calls, writerCalls("Conn", c, c)...)
	return append(calls,
		call{"Conn.VerifyChecksum", c.VerifyChecksum},
		call{"Conn.VerifyFileChecksums", c.VerifyFileChecksums},
		call{"Conn.BeginTx", func(ctx context.Context) error {
			tx, err := c.BeginTx(ctx, nil)
			if err == nil {
				_ = tx.Rollback()
			}
			return err
		}},
	)
}

// txCalls returns a call of every method of tx that takes a context.
func txCalls(tx *driver.Tx) []call {
	return append(readerCalls("Tx", tx), writerCalls("Tx", tx, nil)...)
}

func readerCalls(prefix string, r reader) []call {
	return []call{
		{prefix + ".Get", func(ctx context.Context) error { _, err := r.Get(ctx, key(1)); return err }},
		{prefix + ".MultiGet", func(ctx context.Context) error {
			_, err := r.MultiGet(ctx, [][]byte{key(1), key(2)})
			return err
		}},
		{prefix + ".NewIterator", func(ctx context.Context) error { return scanAll(ctx, r) }},
	}
}

// writerCalls returns Put and Delete of w, and Write of b if it is not nil.
// Each writes keys of its own, "<name>-written", so a check can tell a
// write that happened when it should not have.
func writerCalls(prefix string, w writer, b interface {
	Write(context.Context, *driver.Batch) error
}) []call {
	calls := []call{
		{prefix + ".Put", func(ctx context.Context) error {
			return w.Put(ctx, []byte(prefix+".Put-written"), []byte("v"))
		}},
		{prefix + ".Delete", func(ctx context.Context) error { return w.Delete(ctx, key(1)) }},
	}
	if b != nil {
		calls = append(calls, call{prefix + ".Write", func(ctx context.Context) error {
			var batch driver.Batch
			batch.Put([]byte(prefix+".Write-written"), []byte("v"))
			batch.Delete(key(2))
			return b.Write(ctx, &batch)
		}})
	}
	return calls
}

func testContextCancel(t testing.TB, s *suite) {
	db := s.open(t)
	m := newModel()
	for i := range 300 {
		mustPut(t, db, key(i), []byte("v"))
		m.put(key(i), []byte("v"))
	}
	if err := db.Flush(bg); err != nil && !errors.Is(err, driver.ErrNotSupported) {
		t.Fatalf("Flush: %v", err)
	}
	conn, err := db.Conn(bg)
	if err != nil {
		t.Fatalf("DB.Conn: %v", err)
	}
	defer conn.Close()
	calls := append(dbCalls(db), connCalls(conn)...)
	tx, err := db.BeginTx(bg, nil)
	if err == nil {
		defer tx.Rollback()
		calls = append(calls, txCalls(tx)...)
	} else if !errors.Is(err, driver.ErrNotSupported) {
		t.Fatalf("BeginTx: %v", err)
	}

	cancelled, cancel := context.WithCancel(bg)
	cancel()
	expired, cancel := context.WithDeadline(bg, time.Now().Add(-time.Second))
	defer cancel()
	for _, ctx := range []struct {
		name string
		ctx  context.Context
	}{{"cancelled", cancelled}, {"expired (deadline in the past)", expired}} {
		for _, c := range calls {
			if err := c.f(ctx.ctx); !errors.Is(err, ctx.ctx.Err()) {
				t.Errorf("%s with a %s context = %v; want an error matching ctx.Err() (%v)",
					c.name, ctx.name, err, ctx.ctx.Err())
			}
		}
	}
	checkModel(t, db, m, [][]byte{[]byte("DB.Put-written"), []byte("DB.Write-written"),
		[]byte("Conn.Put-written"), []byte("Conn.Write-written")},
		"after writes with cancelled and expired contexts (which must not write)")

	// A ReadOptions deadline in the past fails reads.
	past := withRO(ioctx.ReadOptions{Deadline: time.Now().Add(-time.Second)})
	readers := []reader{db, conn}
	names := []string{"DB", "Conn"}
	if tx != nil {
		readers, names = append(readers, tx), append(names, "Tx")
	}
	for i, r := range readers {
		for _, api := range readAPIs(names[i], r, key(1)) {
			err := api.call(past)
			switch {
			case errors.Is(err, driver.ErrNotSupported):
			case !errors.Is(err, context.DeadlineExceeded):
				t.Errorf("%s with ReadOptions{Deadline: a second ago} = %v; want an error matching "+
					"context.DeadlineExceeded", api.name, err)
			}
		}
	}

	// A scan whose context is cancelled mid-way stops with its error.
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	it, err := db.NewIterator(ctx, nil)
	if err != nil {
		t.Fatalf("NewIterator: %v", err)
	}
	defer it.Close()
	ok := it.First()
	for range 10 {
		ok = ok && it.Next()
	}
	if !ok {
		t.Fatalf("a scan of 300 keys stopped after fewer than 11 (Error %v)", it.Error())
	}
	cancel()
	if it.Next() {
		t.Errorf("Next after the iterator's context was cancelled moved to %s; want false: the context given to "+
			"NewIterator bounds the iterator's whole life", q(it.Key()))
	}
	if err := it.Error(); !errors.Is(err, context.Canceled) {
		t.Errorf("Error() of a scan whose context was cancelled = %v; want an error matching context.Canceled", err)
	}
}

func testClose(t testing.TB, s *suite) {
	db := s.open(t)
	for i := range 20 {
		mustPut(t, db, key(i), []byte("v"))
	}
	conn, err := db.Conn(bg)
	if err != nil {
		t.Fatalf("DB.Conn: %v", err)
	}
	it, err := db.NewIterator(bg, nil)
	if err != nil {
		t.Fatalf("NewIterator: %v", err)
	}
	if !it.First() {
		t.Fatalf("First on 20 keys = false (Error %v)", it.Error())
	}
	connIt, err := conn.NewIterator(bg, nil)
	if err != nil {
		t.Fatalf("Conn.NewIterator: %v", err)
	}
	calls := append(dbCalls(db), connCalls(conn)...)
	tx, err := db.BeginTx(bg, nil)
	if err == nil {
		mustPut(t, tx, []byte("tx-key"), []byte("v"))
		calls = append(calls, txCalls(tx)...)
		calls = append(calls, call{"Tx.Commit", func(context.Context) error { return tx.Commit() }})
	} else if !errors.Is(err, driver.ErrNotSupported) {
		t.Fatalf("BeginTx: %v", err)
	}

	db.close(t)
	for _, c := range calls {
		if err := c.f(bg); !errors.Is(err, driver.ErrClosed) {
			t.Errorf("%s after DB.Close = %v; want an error matching driver.ErrClosed", c.name, err)
		}
	}
	for name, it := range map[string]*driver.Iterator{"an iterator": it, "a Conn's iterator": connIt} {
		if it.Next() || it.First() || it.Valid() {
			t.Errorf("%s left open at DB.Close still moves; DB.Close closes the iterators left open", name)
		}
		if err := it.Error(); !errors.Is(err, driver.ErrClosed) {
			t.Errorf("Error() of %s after DB.Close = %v; want an error matching driver.ErrClosed", name, err)
		}
		if err := it.Close(); !errors.Is(err, driver.ErrClosed) {
			t.Errorf("Close of %s after DB.Close = %v; want an error matching driver.ErrClosed", name, err)
		}
	}
	if err := db.DB.Close(); !errors.Is(err, driver.ErrClosed) {
		t.Errorf("a second DB.Close = %v; want an error matching driver.ErrClosed", err)
	}
	if tx != nil && db.path != memoryPath {
		// The transaction left open was rolled back, not committed.
		db = s.reopen(t, db)
		checkGet(t, db, []byte("tx-key"), nil, "after DB.Close with a transaction open (Close rolls it back)")
		checkGet(t, db, key(3), []byte("v"), "after reopening")
		db.close(t)
	}

	// Close while another goroutine scans with an iterator.
	db = s.open(t)
	for i := range 200 {
		mustPut(t, db, key(i), []byte("v"))
	}
	it, err = db.NewIterator(bg, nil)
	if err != nil {
		t.Fatalf("NewIterator: %v", err)
	}
	scanned := make(chan struct{})
	ended := make(chan error, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for pass := 0; ; pass++ {
			select {
			case <-stop: // the case is over (and failed)
				return
			default:
			}
			n := 0
			for ok := it.First(); ok; ok = it.Next() {
				n++
			}
			if err := it.Error(); err != nil {
				ended <- err
				return
			}
			if n != 200 {
				ended <- fmt.Errorf("a full scan returned %d of 200 keys and no error", n)
				return
			}
			if pass == 0 {
				close(scanned)
			}
		}
	}()
	<-scanned
	db.close(t)
	select {
	case err := <-ended:
		if !errors.Is(err, driver.ErrClosed) {
			t.Errorf("an iterator scanning in another goroutine during DB.Close ended with %v; want an error "+
				"matching driver.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("an iterator scanning in another goroutine still scans 10s after DB.Close returned; DB.Close " +
			"must close the iterators left open")
	}
}

func testCloseConcurrent(t testing.TB, s *suite) {
	db := s.open(t)
	const n = 200
	keys := make([][]byte, n)
	for i := range n {
		keys[i] = key(i)
		mustPut(t, db, keys[i], fmt.Appendf(nil, "v%d", i))
	}
	want := func(i int) []byte { return fmt.Appendf(nil, "v%d", i) }
	var (
		wg      sync.WaitGroup
		started sync.WaitGroup
		stop    atomic.Bool // the case gave up on the workers
	)
	defer stop.Store(true)
	// Each worker loops until a call fails with ErrClosed; anything else is
	// reported.
	worker := func(name string, op func(i int) error) {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			err := op(i)
			if i == 10 {
				started.Done()
			}
			if errors.Is(err, driver.ErrClosed) {
				if i < 10 {
					started.Done()
				}
				return
			}
			if err != nil {
				t.Errorf("%s while DB.Close ran: %v; a call either completes correctly or fails with ErrClosed", name, err)
				if i < 10 {
					started.Done()
				}
				return
			}
		}
	}
	workers := map[string]func(i int) error{
		"Get": func(i int) error {
			v, err := db.Get(bg, keys[i%n])
			if err == nil && string(v) != string(want(i%n)) {
				return fmt.Errorf("Get(%s) = %s; want %s", q(keys[i%n]), q(v), q(want(i%n)))
			}
			return err
		},
		"MultiGet": func(i int) error {
			vals, err := db.MultiGet(bg, keys)
			if err != nil {
				return err
			}
			for j, v := range vals {
				if string(v) != string(want(j)) {
					return fmt.Errorf("MultiGet entry %d = %s; want %s", j, q(v), q(want(j)))
				}
			}
			return nil
		},
		"Put": func(i int) error {
			return db.Put(bg, fmt.Appendf(nil, "put%06d", i), []byte("v"))
		},
		"an iterator scan": func(i int) error {
			it, err := db.NewIterator(bg, &driver.IterOptions{UpperBound: []byte("key~")})
			if err != nil {
				return err
			}
			j := 0
			for ok := it.First(); ok; ok = it.Next() {
				k, v := it.Key(), it.Value()
				if (k == nil || v == nil) && !it.Valid() {
					// DB.Close closed the iterator after its move: its
					// Key and Value are gone, and its next move fails.
					continue
				}
				if string(k) != string(keys[j]) || string(v) != string(want(j)) {
					return fmt.Errorf("scan entry %d is %s=%s; want %s=%s", j, q(k), q(v), q(keys[j]), q(want(j)))
				}
				j++
			}
			err = it.Error()
			if cerr := it.Close(); err == nil && !errors.Is(cerr, driver.ErrClosed) {
				err = cerr
			}
			if err == nil && j != n {
				return fmt.Errorf("a scan ended after %d of %d keys with no error", j, n)
			}
			return err
		},
	}
	names := make([]string, 0, len(workers))
	for name := range workers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		for range 2 {
			wg.Add(1)
			started.Add(1)
			go worker(name, workers[name])
		}
	}
	started.Wait()
	closed := make(chan error, 1)
	db.closed = true
	go func() { closed <- db.DB.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("DB.Close while goroutines called the DB: %v; want nil", err)
		}
	case <-time.After(10 * time.Second):
		stop.Store(true)
		t.Fatalf("DB.Close did not return within 10s while goroutines called the DB; Close waits only for the " +
			"calls in flight, and calls that start after it must fail with ErrClosed")
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("goroutines calling the DB were still running 10s after DB.Close returned; every call after " +
			"Close must fail with ErrClosed")
	}
}

func testHeldSlices(t testing.TB, s *suite) {
	db := s.open(t)
	for i := range 100 {
		mustPut(t, db, key(i), fmt.Appendf(nil, "v%d", i))
	}
	it, err := db.NewIterator(bg, nil)
	if err != nil {
		t.Fatalf("NewIterator: %v", err)
	}
	if !it.First() {
		t.Fatalf("First found no key after 100 puts; Error: %v", it.Error())
	}
	k, v := it.Key(), it.Value()
	db.closed = true
	if err := db.DB.Close(); err != nil {
		t.Fatalf("DB.Close with an open iterator: %v", err)
	}
	// A second database, written to, may take over whatever memory the
	// first one released.
	other := s.open(t)
	for i := range 1000 {
		mustPut(t, other, fmt.Appendf(nil, "other%05d", i), bytes.Repeat([]byte{0xEE}, 64))
	}
	runtime.GC()
	if string(k) != string(key(0)) || string(v) != "v0" {
		t.Errorf("the key and value held across DB.Close read %s=%s; want %s=v0: the driver freed memory it "+
			"had handed out", q(k), q(v), q(key(0)))
	}
	if err := it.Close(); !errors.Is(err, driver.ErrClosed) {
		t.Errorf("Iterator.Close after DB.Close = %v; want an error matching ErrClosed", err)
	}
}

func testConnSession(t testing.TB, s *suite) {
	db := s.open(t)
	mustPut(t, db, key(1), []byte("v"))
	k := key(1)
	session := func(ro ioctx.ReadOptions) *driver.Conn {
		t.Helper()
		c, err := db.Conn(withRO(ro))
		if err != nil {
			t.Fatalf("DB.Conn: %v", err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	connGet := func(c *driver.Conn) readAPI {
		return readAPI{"Conn.Get", "Get", ioctx.ActivityGet, func(ctx context.Context) error {
			_, err := c.Get(ctx, k)
			return err
		}}
	}

	user := session(ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityUser})
	if p := user.ReadOptions().RateLimiterPriority; p != ioctx.PriorityUser {
		t.Errorf("a Conn made with a ctx carrying ReadOptions{RateLimiterPriority: PriorityUser} has default "+
			"priority %s; DB.Conn takes the ctx's ReadOptions as the session's defaults", p)
	}
	checkGet(t, user, k, []byte("v"), "through a Conn")

	// A session default activity limits the session to that API; a call's
	// own activity overrides the session's.
	mg := session(ioctx.ReadOptions{Activity: ioctx.ActivityMultiGet})
	if _, err := mg.MultiGet(bg, [][]byte{k}); err != nil {
		t.Errorf("Conn.MultiGet on a session whose default activity is MultiGet: %v", err)
	}
	checkActivity(t, connGet(mg), ioctx.ActivityMultiGet, bg, "as the session's default")
	checkActivity(t, connGet(mg), ioctx.ActivityGet, withRO(ioctx.ReadOptions{Activity: ioctx.ActivityGet}),
		"in the call's context, overriding the session's MultiGet")
	mg.SetReadOptions(ioctx.ReadOptions{Activity: ioctx.ActivityFlush})
	if got := mg.ReadOptions().Activity; got != ioctx.ActivityFlush {
		t.Errorf("Conn.ReadOptions().Activity after SetReadOptions(ReadOptions{Activity: Flush}) = %s", got)
	}
	checkActivity(t, connGet(mg), ioctx.ActivityFlush, bg, "set with SetReadOptions")
	plain := session(ioctx.ReadOptions{})
	checkActivity(t, connGet(plain), ioctx.ActivityCompaction,
		withRO(ioctx.ReadOptions{Activity: ioctx.ActivityCompaction}), "in the call's context")

	// Deadlines: the session's applies to every call, a call's to itself.
	past := ioctx.ReadOptions{Deadline: time.Now().Add(-time.Second)}
	if _, err := session(past).Get(bg, k); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Conn.Get on a session whose default ReadOptions.Deadline has passed = %v; want an error "+
			"matching context.DeadlineExceeded", err)
	}
	if _, err := plain.Get(withRO(past), k); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Conn.Get with a past ReadOptions.Deadline in the call's context = %v; want an error "+
			"matching context.DeadlineExceeded", err)
	}

	// Writes through a Conn are the DB's.
	mustPut(t, plain, key(2), []byte("via conn"))
	checkGet(t, db, key(2), []byte("via conn"), "after a Put through a Conn")

	// Conn.Close ends the session only.
	if err := plain.Close(); err != nil {
		t.Errorf("Conn.Close: %v; want nil", err)
	}
	if _, err := plain.Get(bg, k); !errors.Is(err, driver.ErrClosed) {
		t.Errorf("Conn.Get after Conn.Close = %v; want an error matching driver.ErrClosed", err)
	}
	if err := plain.Close(); !errors.Is(err, driver.ErrClosed) {
		t.Errorf("a second Conn.Close = %v; want an error matching driver.ErrClosed", err)
	}
	checkGet(t, db, k, []byte("v"), "after Conn.Close (the DB stays open)")
	checkGet(t, user, k, []byte("v"), "through another Conn after one was closed")

	// Charging: a session's default priority applies to its reads.
	params, unavailable := s.provide(coldReads(), statsLevel(statistics.LevelAll), chargingRate())
	if unavailable != "" {
		t.Logf("rate-limiter charging of sessions not checked: %s", unavailable)
		return
	}
	cdb, unsupported, err := s.tryOpenDSN(t, s.newDSN(), params)
	if unsupported != "" {
		t.Logf("rate-limiter charging of sessions not checked: %s", unsupported)
		return
	}
	if err != nil {
		t.Fatalf("%v", err)
	}
	st := cdb.Statistics()
	if st == nil {
		t.Logf("rate-limiter charging of sessions not checked: the driver reports no statistics")
		return
	}
	fillTables(t, cdb, 200, 100)
	charging, err := cdb.Conn(withRO(ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityUser}))
	if err != nil {
		t.Fatalf("DB.Conn: %v", err)
	}
	defer charging.Close()
	free, err := cdb.Conn(bg)
	if err != nil {
		t.Fatalf("DB.Conn: %v", err)
	}
	defer free.Close()
	for _, tc := range []struct {
		what   string
		call   func() error
		charge bool
	}{
		{"Conn.Get on a session with default priority User", func() error {
			_, err := charging.Get(bg, key(5))
			return err
		}, true},
		{"Conn.MultiGet on a session with default priority User", func() error {
			_, err := charging.MultiGet(bg, [][]byte{key(5), key(6)})
			return err
		}, true},
		{"Conn.Get on a session with default priority Total", func() error {
			_, err := free.Get(bg, key(5))
			return err
		}, false},
		{"Conn.Get with priority User in the call's context, on a session with default priority Total",
			func() error {
				_, err := free.Get(withRO(ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityUser}), key(5))
				return err
			}, true},
		{"DB.Get while a session with default priority User is open", func() error {
			_, err := cdb.Get(bg, key(5))
			return err
		}, false},
	} {
		n, b, err := charged(st, tc.call)
		switch {
		case err != nil:
			t.Errorf("%s: %v", tc.what, err)
		case tc.charge && (n == 0 || b == 0):
			t.Errorf("%s charged the rate limiter %d requests, %d bytes; want its IO (table reads, RPCs) charged",
				tc.what, n, b)
		case !tc.charge && (n != 0 || b != 0):
			t.Errorf("%s charged the rate limiter %d requests, %d bytes; want nothing charged", tc.what, n, b)
		}
	}
}
