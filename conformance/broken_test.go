package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/ioctx"
	"github.com/stretchr/testify/require"
)

// This file checks that the suite catches broken drivers: each wraps the
// model driver with one realistic bug, and running the case that targets
// the bug on a recorder (a testing.TB that records instead of failing, as
// testing/fstest's own tests do) must fail with a message that says what
// broke.

// recorder is a testing.TB that records failures, skips and logs. Methods
// it does not override (TempDir, Name, Context, ...) go to the real T it
// embeds. Fatal and Skip end the calling goroutine, as testing's do, so a
// case must run on a goroutine of its own (see runRecorded).
type recorder struct {
	testing.TB

	mu       sync.Mutex
	errors   []string
	logs     []string
	skipped  string
	failed   bool
	cleanups []func()
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Error(args ...any) { r.Errorf("%s", fmt.Sprint(args...)) }

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Fatal(args ...any) {
	r.Error(args...)
	runtime.Goexit()
}

func (r *recorder) Fail() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
}

func (r *recorder) FailNow() {
	r.Fail()
	runtime.Goexit()
}

func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

func (r *recorder) Skipf(format string, args ...any) {
	r.mu.Lock()
	r.skipped = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) Skip(args ...any) { r.Skipf("%s", fmt.Sprint(args...)) }
func (r *recorder) SkipNow()         { r.Skipf("SkipNow") }

func (r *recorder) Skipped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.skipped != ""
}

func (r *recorder) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

func (r *recorder) Log(args ...any) { r.Logf("%s", fmt.Sprint(args...)) }

func (r *recorder) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

// runOnGoroutine runs f on a goroutine of its own and waits for it, so that
// a Fatal or Skip in f ends only that goroutine.
func runOnGoroutine(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
}

// runRecorded runs case c against the driver registered as name on a
// recorder, then runs its cleanups (last first), and returns the recorder.
func runRecorded(t *testing.T, name string, c testCase, newDSN func(*testing.T) string) *recorder {
	r := &recorder{TB: t}
	s := &suite{driverName: name, newDSN: func() string { return newDSN(t) }}
	runOnGoroutine(func() { runCase(r, c, s) })
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		runOnGoroutine(r.cleanups[i])
	}
	return r
}

func caseNamed(t *testing.T, name string) testCase {
	i := slices.IndexFunc(cases, func(c testCase) bool { return c.name == name })
	require.GreaterOrEqual(t, i, 0, "no case %q", name)
	return cases[i]
}

// brokenDriver is the model driver with its connections wrapped by wrap.
type brokenDriver struct {
	model *modelDriver
	wrap  func(*modelConn) driver.DriverConn
}

func (d brokenDriver) Open(dsn string) (driver.DriverConn, error) {
	c, err := d.model.Open(dsn)
	if err != nil {
		return nil, err
	}
	return d.wrap(c.(*modelConn)), nil
}

func registerBroken(name string, wrap func(*modelConn) driver.DriverConn) string {
	driver.Register(name, brokenDriver{model: newModelDriver(), wrap: wrap})
	return name
}

// nilEmptyConn returns nil for a found empty value, from Get and MultiGet
// (so MultiGet reports it absent).
type nilEmptyConn struct{ *modelConn }

func (c nilEmptyConn) Get(ctx context.Context, req ioctx.ReadRequest, key []byte) ([]byte, error) {
	v, err := c.modelConn.Get(ctx, req, key)
	if err == nil && len(v) == 0 {
		return nil, nil
	}
	return v, err
}

func (c nilEmptyConn) MultiGet(ctx context.Context, req ioctx.ReadRequest, keys [][]byte) ([][]byte, error) {
	vals, err := c.modelConn.MultiGet(ctx, req, keys)
	for i, v := range vals {
		if len(v) == 0 {
			vals[i] = nil
		}
	}
	return vals, err
}

// sortedMultiGetConn looks the keys up in sorted order, for locality, and
// forgets to put the results back in the caller's order.
type sortedMultiGetConn struct{ *modelConn }

func (c sortedMultiGetConn) MultiGet(ctx context.Context, req ioctx.ReadRequest, keys [][]byte) ([][]byte, error) {
	sorted := slices.Clone(keys)
	slices.SortFunc(sorted, bytes.Compare)
	return c.modelConn.MultiGet(ctx, req, sorted)
}

// noUpperBoundConn ignores iterator upper bounds.
type noUpperBoundConn struct{ *modelConn }

func (c noUpperBoundConn) NewIterator(ctx context.Context, req ioctx.ReadRequest, o driver.IterOptions) (driver.Iter, error) {
	o.UpperBound = nil
	return c.modelConn.NewIterator(ctx, req, o)
}

// getViaMultiGetConn implements Get with its MultiGet, retagging the reads
// MultiGet: RocksDB #11444's bug the other way round.
type getViaMultiGetConn struct{ *modelConn }

func (c getViaMultiGetConn) Get(ctx context.Context, req ioctx.ReadRequest, key []byte) ([]byte, error) {
	req.IO.Activity = ioctx.ActivityMultiGet
	vals, err := c.modelConn.MultiGet(ctx, req, [][]byte{key})
	if err != nil {
		return nil, err
	}
	if vals[0] == nil {
		return nil, driver.ErrNotFound
	}
	return vals[0], nil
}

// lastWriterWinsConn's transactions never conflict: on a conflict, Commit
// writes the transaction's keys anyway.
type lastWriterWinsConn struct{ *modelConn }

func (c lastWriterWinsConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.DriverTx, error) {
	tx, err := c.modelConn.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return lastWriterWinsTx{tx.(*modelTx)}, nil
}

type lastWriterWinsTx struct{ *modelTx }

func (tx lastWriterWinsTx) Commit() error {
	err := tx.modelTx.Commit()
	if errors.Is(err, driver.ErrConflict) {
		ops := make([]driver.Op, 0, len(tx.writes))
		for _, w := range tx.writes {
			ops = append(ops, w)
		}
		return tx.c.apply(context.Background(), ops)
	}
	return err
}

// liveIterConn's iterators read the latest data at every move instead of a
// snapshot: each move re-reads the database and repositions by key.
type liveIterConn struct{ *modelConn }

func (c liveIterConn) NewIterator(ctx context.Context, req ioctx.ReadRequest, o driver.IterOptions) (driver.Iter, error) {
	if _, err := c.modelConn.NewIterator(ctx, req, o); err != nil {
		return nil, err
	}
	return &liveIter{c: c.modelConn, ctx: ctx, req: req, opts: o}, nil
}

type liveIter struct {
	c    *modelConn
	ctx  context.Context
	req  ioctx.ReadRequest
	opts driver.IterOptions
	cur  driver.Iter
	key  []byte
}

// fresh returns an iterator over the latest data.
func (it *liveIter) fresh() driver.Iter {
	cur, err := it.c.NewIterator(it.ctx, it.req, it.opts)
	if err != nil {
		panic(err)
	}
	it.cur = cur
	return cur
}

func (it *liveIter) track(ok bool) bool {
	it.key = nil
	if ok {
		it.key = bytes.Clone(it.cur.Key())
	}
	return ok
}

func (it *liveIter) First() bool          { return it.track(it.fresh().First()) }
func (it *liveIter) Last() bool           { return it.track(it.fresh().Last()) }
func (it *liveIter) SeekGE(k []byte) bool { return it.track(it.fresh().SeekGE(k)) }
func (it *liveIter) SeekLT(k []byte) bool { return it.track(it.fresh().SeekLT(k)) }
func (it *liveIter) Next() bool {
	return it.track(it.fresh().SeekGE(append(bytes.Clone(it.key), 0)))
}
func (it *liveIter) Prev() bool    { return it.track(it.fresh().SeekLT(it.key)) }
func (it *liveIter) Key() []byte   { return it.cur.Key() }
func (it *liveIter) Value() []byte { return it.cur.Value() }
func (it *liveIter) Error() error  { return nil }
func (it *liveIter) Close() error  { return nil }

// dropsPriorityConn's Get loses the read's rate-limiter priority on the way
// to its file reads, so they are never charged.
type dropsPriorityConn struct{ *modelConn }

func (c dropsPriorityConn) Get(ctx context.Context, req ioctx.ReadRequest, key []byte) ([]byte, error) {
	req.IO.RateLimiterPriority = ioctx.PriorityTotal
	return c.modelConn.Get(ctx, req, key)
}

// oneByOneConn applies a batch's writes one at a time, each visible before
// the next is made.
type oneByOneConn struct{ *modelConn }

func (c oneByOneConn) Write(ctx context.Context, _ ioctx.WriteOptions, b *driver.Batch) error {
	r := b.Reader()
	for op, ok := r.Next(); ok; op, ok = r.Next() {
		if err := c.modelConn.apply(ctx, []driver.Op{op}); err != nil {
			return err
		}
		runtime.Gosched()
	}
	return nil
}

var (
	brokenOneByOne      = registerBroken("conformance-broken-one-by-one", func(c *modelConn) driver.DriverConn { return oneByOneConn{c} })
	brokenDropsPriority = registerBroken("conformance-broken-drops-priority", func(c *modelConn) driver.DriverConn { return dropsPriorityConn{c} })
	brokenNilEmpty      = registerBroken("conformance-broken-nil-empty", func(c *modelConn) driver.DriverConn { return nilEmptyConn{c} })
	brokenSortedMulti   = registerBroken("conformance-broken-sorted-multiget", func(c *modelConn) driver.DriverConn { return sortedMultiGetConn{c} })
	brokenNoUpperBound  = registerBroken("conformance-broken-no-upper-bound", func(c *modelConn) driver.DriverConn { return noUpperBoundConn{c} })
	brokenMistagged     = registerBroken("conformance-broken-get-via-multiget", func(c *modelConn) driver.DriverConn { return getViaMultiGetConn{c} })
	brokenNoConflicts   = registerBroken("conformance-broken-no-conflicts", func(c *modelConn) driver.DriverConn { return lastWriterWinsConn{c} })
	brokenLiveIter      = registerBroken("conformance-broken-live-iterator", func(c *modelConn) driver.DriverConn { return liveIterConn{c} })
	brokenInclusive     = registerBroken("conformance-broken-inclusive-range", func(c *modelConn) driver.DriverConn { return inclusiveRangeConn{c} })
	brokenLiveSnapshot  = registerBroken("conformance-broken-live-snapshot", func(c *modelConn) driver.DriverConn { return liveSnapshotConn{c} })
	brokenBoundedRange  = registerBroken("conformance-broken-bounded-range", func(c *modelConn) driver.DriverConn { return boundedRangeConn{c} })
	brokenRecycledPin   = registerBroken("conformance-broken-recycled-pin", func(c *modelConn) driver.DriverConn {
		return recycledPinConn{c, new(sync.Mutex), new([]byte)}
	})
)

// inclusiveRangeConn's DeleteRange deletes its end key too.
type inclusiveRangeConn struct{ *modelConn }

func (c inclusiveRangeConn) DeleteRange(ctx context.Context, wo ioctx.WriteOptions, start, end []byte) error {
	if end != nil {
		end = append(slices.Clip(end), 0)
	}
	return c.modelConn.DeleteRange(ctx, wo, start, end)
}

// boundedRangeConn's DeleteRange, given a nil end, deletes nothing: what
// shale's engine did before a nil end meant "after every key".
type boundedRangeConn struct{ *modelConn }

func (c boundedRangeConn) DeleteRange(ctx context.Context, wo ioctx.WriteOptions, start, end []byte) error {
	if end == nil {
		return nil
	}
	return c.modelConn.DeleteRange(ctx, wo, start, end)
}

// recycledPinConn's GetPinned hands out one buffer it reuses for the next
// call: a value pinned earlier changes before its Close.
type recycledPinConn struct {
	*modelConn
	mu  *sync.Mutex
	buf *[]byte
}

func (c recycledPinConn) GetPinned(ctx context.Context, req ioctx.ReadRequest, key []byte) ([]byte, io.Closer, error) {
	v, err := c.modelConn.Get(ctx, req, key)
	if err != nil {
		return nil, nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cap(*c.buf) < len(v) {
		*c.buf = make([]byte, len(v), 2<<20)
	}
	*c.buf = append((*c.buf)[:0], v...)
	return *c.buf, nil, nil
}

// liveSnapshotConn's snapshots read the database as it is now.
type liveSnapshotConn struct{ *modelConn }

func (c liveSnapshotConn) NewSnapshot(ctx context.Context) (driver.DriverSnapshot, error) {
	return liveSnapshot{c.modelConn}, nil
}

type liveSnapshot struct{ c *modelConn }

func (s liveSnapshot) Get(ctx context.Context, req ioctx.ReadRequest, key []byte) ([]byte, error) {
	return s.c.Get(ctx, req, key)
}

func (s liveSnapshot) NewIterator(ctx context.Context, req ioctx.ReadRequest, o driver.IterOptions) (driver.Iter, error) {
	return s.c.NewIterator(ctx, req, o)
}

func (liveSnapshot) Close() error { return nil }

func TestBrokenDrivers(t *testing.T) {
	for _, tc := range []struct {
		driver string
		cases  []string
		// want are substrings that must all appear in one failure
		// message of each case.
		want []string
	}{
		{brokenOneByOne, []string{"BatchAtomicity"},
			[]string{"saw part of a batch: generations", "mixed", "a reader must see every write of a batch or none"}},
		{brokenNilEmpty, []string{"CRUD"},
			[]string{`Get("empty") returned a nil slice for an empty value`, "must be a non-nil empty slice"}},
		{brokenNilEmpty, []string{"MultiGet"},
			[]string{`MultiGet entry 5 (key "empty", an empty value) = nil; want a non-nil empty slice`}},
		{brokenSortedMulti, []string{"MultiGet"},
			[]string{`MultiGet entry 0 (key "c") = "va"; want "vc"`, `the value of key "a"`,
				"results must be in the caller's key order"}},
		{brokenNoUpperBound, []string{"IteratorBounds"},
			[]string{"forward scan with bounds", "got", "first extra entry"}},
		{brokenMistagged, []string{"StatisticsPerActivity"},
			[]string{"DB.Get read table files", "shale.file.read.get.micros did not grow", "activity Get"}},
		{brokenMistagged, []string{"StatisticsPerActivity"},
			[]string{"DB.Get recorded 1 samples in shale.file.read.multiget.micros", "must be tagged Get"}},
		{brokenNoConflicts, []string{"TxConflict"},
			[]string{`Commit of a transaction that wrote key "k", which another transaction wrote and committed ` +
				"after this one began, = <nil>; want an error matching driver.ErrConflict"}},
		{brokenNoConflicts, []string{"TxConflict"},
			[]string{`apply none of its writes): Get("only-b") = "from-b"; want an error matching driver.ErrNotFound`}},
		{brokenLiveIter, []string{"IteratorSnapshot"},
			[]string{"an iterator positioned before later writes, stepping on (it must not see them)"}},
		{brokenLiveIter, []string{"IteratorSnapshot"},
			[]string{"an iterator created before later writes saw them"}},
		{brokenDropsPriority, []string{"RateLimiterCharging"},
			[]string{"DB.Get with ReadOptions{RateLimiterPriority: PriorityUser} read table files but charged the " +
				"rate limiter 0 requests, 0 bytes"}},
		{brokenInclusive, []string{"DeleteRange"},
			[]string{`after DeleteRange("b", "c") (the end is exclusive): Get("c") failed`, `want "vc"`}},
		{brokenBoundedRange, []string{"DeleteRangeOpen"},
			[]string{`after DeleteRange("b", nil) (a nil end: every key from "b" on): Get("b") = "vb"`}},
		{brokenRecycledPin, []string{"Lookup"},
			[]string{"values pinned by GetPinned changed before their Close"}},
		{brokenLiveSnapshot, []string{"Snapshot"},
			[]string{"in a snapshot taken before later writes", `Get("key00005") = "new"; want "old"`}},
		{brokenDropsPriority, []string{"ConnSession"},
			[]string{"Conn.Get on a session with default priority User charged the rate limiter 0 requests, 0 bytes"}},
	} {
		for _, name := range tc.cases {
			t.Run(strings.TrimPrefix(tc.driver, "conformance-broken-")+"/"+name, func(t *testing.T) {
				r := runRecorded(t, tc.driver, caseNamed(t, name), func(t *testing.T) string { return t.TempDir() })
				require.True(t, r.Failed(), "case %s passed against %s (skipped: %q)", name, tc.driver, r.skipped)
				for _, msg := range r.errors {
					t.Logf("%s: %s", name, msg)
				}
				found := slices.ContainsFunc(r.errors, func(msg string) bool {
					for _, w := range tc.want {
						if !strings.Contains(msg, w) {
							return false
						}
					}
					return true
				})
				require.True(t, found, "no failure message contains all of %q; messages:\n%s",
					tc.want, strings.Join(r.errors, "\n"))
				// The case's explanation is logged with the failure.
				require.True(t, slices.ContainsFunc(r.logs, func(l string) bool {
					return strings.HasPrefix(l, "conformance: case "+name+" checks that ")
				}), "logs: %q", r.logs)
			})
		}
	}
}

// TestModelOnRecorder is the control for TestBrokenDrivers: the cases they
// fail pass against the unbroken model on the same recorder.
func TestModelOnRecorder(t *testing.T) {
	for _, name := range []string{"CRUD", "BatchAtomicity", "MultiGet", "IteratorBounds", "IteratorSnapshot", "StatisticsPerActivity",
		"TxConflict", "ContextCancel", "RateLimiterCharging", "ConnSession", "DeleteRange", "Snapshot", "Lookup",
		"DeleteRangeOpen"} {
		t.Run(name, func(t *testing.T) {
			r := runRecorded(t, modelDriverName, caseNamed(t, name), func(t *testing.T) string { return t.TempDir() })
			require.False(t, r.Failed(), "errors: %s", strings.Join(r.errors, "\n"))
			require.False(t, r.Skipped(), "skipped: %s", r.skipped)
		})
	}
}
