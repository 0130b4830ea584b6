package cache

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/stretchr/testify/require"
)

// waitFor polls cond until it holds, failing the test after two minutes (a
// deadline far beyond any machine's slowness, not a measure of it).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

type loadResult struct {
	h   Handle
	hit bool
	err error
}

// startLoads starts n GetOrLoad calls of k with ctxs[i] (Background when
// ctxs is short) and load, and waits until one is loading and the other n-1
// are waiting on it.
func startLoads(t *testing.T, c *Cache, k Key, n int, ctxs []context.Context,
	load func() ([]byte, error)) []chan loadResult {
	t.Helper()
	results := make([]chan loadResult, n)
	for i := range n {
		ctx := context.Background()
		if i < len(ctxs) {
			ctx = ctxs[i]
		}
		results[i] = make(chan loadResult, 1)
		go func() {
			h, hit, err := c.GetOrLoad(ctx, k, load)
			results[i] <- loadResult{h, hit, err}
		}()
		if i == 0 {
			waitFor(t, "the loader", func() bool { return flightWaiters(c, k) >= 0 })
		}
	}
	waitFor(t, "the waiters", func() bool { return flightWaiters(c, k) == int32(n-1) })
	return results
}

func TestSingleFlight(t *testing.T) {
	const n = 8
	c := New(1 << 20)
	k := Key{1, 1, 4096}
	var calls atomic.Int32
	unblock := make(chan struct{})
	results := startLoads(t, c, k, n, nil, func() ([]byte, error) {
		calls.Add(1)
		<-unblock
		return makeValue(c.Alloc(1000), k, 1), nil
	})
	close(unblock)
	var handles []Handle
	for _, r := range results {
		res := <-r
		require.NoError(t, res.err)
		require.False(t, res.hit, "no caller found the block in the cache")
		ver, err := checkValue(res.h.Value(), k)
		require.NoError(t, err)
		require.Equal(t, uint64(1), ver)
		handles = append(handles, res.h)
	}
	require.Equal(t, int32(1), calls.Load(), "load must run once")
	require.Equal(t, 1, c.Len())

	// Every caller holds its own reference: after all but one release, the
	// value is still intact, even once evicted.
	for _, h := range handles[1:] {
		h.Release()
	}
	c.EvictFile(1, 1)
	_, err := checkValue(handles[0].Value(), k)
	require.NoError(t, err)
	handles[0].Release()

	// Once cached, GetOrLoad hits without loading.
	c.Set(k, newValue(100, k, 2)).Release()
	h, hit, err := c.GetOrLoad(context.Background(), k, func() ([]byte, error) {
		t.Fatal("load called on a hit")
		return nil, nil
	})
	require.NoError(t, err)
	require.True(t, hit)
	h.Release()
	requireQuiescent(t, c)
}

func TestSingleFlightError(t *testing.T) {
	const n = 5
	c := New(1 << 20)
	k := Key{1, 1, 0}
	errLoad := errors.New("read failed")
	var calls atomic.Int32
	unblock := make(chan struct{})
	results := startLoads(t, c, k, n, nil, func() ([]byte, error) {
		calls.Add(1)
		<-unblock
		return nil, errLoad
	})
	close(unblock)
	for _, r := range results {
		res := <-r
		require.ErrorIs(t, res.err, errLoad)
		require.False(t, res.h.Valid())
	}
	require.Equal(t, int32(1), calls.Load())
	require.Zero(t, c.Len(), "a failed load caches nothing")
	_, ok := c.Get(k)
	require.False(t, ok)

	// The next call loads again.
	h, hit, err := c.GetOrLoad(context.Background(), k, func() ([]byte, error) {
		calls.Add(1)
		return newValue(100, k, 3), nil
	})
	require.NoError(t, err)
	require.False(t, hit)
	require.Equal(t, int32(2), calls.Load())
	ver, err := checkValue(h.Value(), k)
	require.NoError(t, err)
	require.Equal(t, uint64(3), ver)
	h.Release()
	requireQuiescent(t, c)
}

// TestSingleFlightWaiterCancel cancels one waiter mid-load: it must return its
// context's error at once while the load goes on for the loader and the
// other waiter.
func TestSingleFlightWaiterCancel(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cancel func(ctx context.Context) (context.Context, func())
	}{
		{name: "cancel", cancel: func(ctx context.Context) (context.Context, func()) {
			return context.WithCancel(ctx)
		}},
		{name: "cancel with cause", cancel: func(ctx context.Context) (context.Context, func()) {
			ctx, cancel := context.WithCancelCause(ctx)
			return ctx, func() { cancel(errors.New("client went away")) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(1 << 20)
			k := Key{1, 1, 0}
			ctx, cancel := tc.cancel(context.Background())
			defer cancel()
			unblock := make(chan struct{})
			var calls atomic.Int32
			// Caller 0 loads; 1 waits with ctx; 2 waits without a deadline.
			results := startLoads(t, c, k, 3, []context.Context{context.Background(), ctx},
				func() ([]byte, error) {
					calls.Add(1)
					<-unblock
					return newValue(100, k, 1), nil
				})
			cancel()
			start := time.Now()
			select {
			case res := <-results[1]:
				require.ErrorIs(t, res.err, context.Canceled)
				require.ErrorIs(t, res.err, ctx.Err())
				require.False(t, res.h.Valid())
			case <-time.After(2 * time.Minute):
				t.Fatal("cancelled waiter did not return")
			}
			require.Less(t, time.Since(start), 2*time.Minute)
			waitFor(t, "the waiter to leave", func() bool { return flightWaiters(c, k) == 1 })

			close(unblock)
			for _, i := range []int{0, 2} {
				res := <-results[i]
				require.NoError(t, res.err)
				_, err := checkValue(res.h.Value(), k)
				require.NoError(t, err)
				res.h.Release()
			}
			require.Equal(t, int32(1), calls.Load())
			require.Equal(t, 1, c.Len())
			requireQuiescent(t, c) // the cancelled waiter holds no reference
		})
	}
}

// startBlockedLoad starts a GetOrLoad of k whose load blocks, and returns
// once it is loading; finish lets the load complete and waits for it.
func startBlockedLoad(t *testing.T, c *Cache, k Key) (finish func()) {
	t.Helper()
	unblock := make(chan struct{})
	loaded := make(chan struct{})
	go func() {
		defer close(loaded)
		h, _, err := c.GetOrLoad(context.Background(), k, func() ([]byte, error) {
			<-unblock
			return newValue(100, k, 1), nil
		})
		if err == nil {
			h.Release()
		}
	}()
	waitFor(t, "the loader", func() bool { return flightWaiters(c, k) >= 0 })
	return func() {
		close(unblock)
		<-loaded
	}
}

func TestSingleFlightWaiterDeadline(t *testing.T) {
	c := New(1 << 20)
	k := Key{1, 1, 0}
	finish := startBlockedLoad(t, c, k)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := c.GetOrLoad(ctx, k, func() ([]byte, error) {
		t.Error("a waiter must not load")
		return nil, nil
	})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, ctx.Err())
	require.Less(t, time.Since(start), 2*time.Minute)
	require.Equal(t, int32(0), flightWaiters(c, k))
	finish()
	require.Equal(t, 1, c.Len(), "the load went on without the waiter")
	requireQuiescent(t, c)
}

// TestSingleFlightWaiterDeadlineByValue: a waiter whose deadline is carried
// by value (GetOrLoadUntil; its ctx has none) stops waiting once the
// deadline passes, with a timeout error, and the load goes on for the
// others. The loader never finishes before the waiter has given up, so the
// test cannot pass by the load winning the race.
func TestSingleFlightWaiterDeadlineByValue(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   time.Duration
	}{
		{"passes while waiting", 20 * time.Millisecond},
		{"already passed", -time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(1 << 20)
			k := Key{1, 1, 0}
			finish := startBlockedLoad(t, c, k)
			_, _, err := c.GetOrLoadUntil(context.Background(), time.Now().Add(tc.in), k, PriorityNormal,
				func() ([]byte, error) {
					t.Error("a waiter must not load")
					return nil, nil
				})
			require.ErrorIs(t, err, base.ErrTimedOut)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.Equal(t, int32(0), flightWaiters(c, k))
			finish()
			require.Equal(t, 1, c.Len(), "the load went on without the waiter")

			// A hit under a passed deadline is still a hit: the deadline
			// bounds waiting, not what is already in memory.
			h, hit, err := c.GetOrLoadUntil(context.Background(), time.Now().Add(-time.Second), k, PriorityNormal,
				func() ([]byte, error) { t.Error("load on a hit"); return nil, nil })
			require.NoError(t, err)
			require.True(t, hit)
			h.Release()
			requireQuiescent(t, c)
		})
	}
}

// TestSingleFlightLoaderContextError: when the loader's own context ends and
// its load fails with that error, a waiter whose context is live loads the
// block itself rather than failing with someone else's cancellation.
func TestSingleFlightLoaderContextError(t *testing.T) {
	c := New(1 << 20)
	k := Key{1, 1, 0}
	unblock := make(chan struct{})
	var calls atomic.Int32
	results := startLoads(t, c, k, 2, nil, func() ([]byte, error) {
		if calls.Add(1) == 1 {
			<-unblock
			return nil, errors.Wrap(context.Canceled, "loader gave up")
		}
		return newValue(100, k, 2), nil
	})
	close(unblock)
	r0, r1 := <-results[0], <-results[1]
	// Which goroutine became the loader is up to the scheduler.
	if r0.err == nil {
		r0, r1 = r1, r0
	}
	require.ErrorIs(t, r0.err, context.Canceled)
	require.NoError(t, r1.err)
	require.False(t, r1.hit)
	ver, err := checkValue(r1.h.Value(), k)
	require.NoError(t, err)
	require.Equal(t, uint64(2), ver)
	r1.h.Release()
	require.Equal(t, int32(2), calls.Load())
	requireQuiescent(t, c)
}

func TestSingleFlightLoadPanics(t *testing.T) {
	c := New(1 << 20)
	k := Key{1, 1, 0}
	unblock := make(chan struct{})
	var calls atomic.Int32
	load := func() ([]byte, error) {
		calls.Add(1)
		<-unblock
		panic("load exploded")
	}
	loaderDone := make(chan any, 1)
	go func() {
		defer func() { loaderDone <- recover() }()
		_, _, _ = c.GetOrLoad(context.Background(), k, load)
	}()
	waitFor(t, "the loader", func() bool { return flightWaiters(c, k) >= 0 })
	waiterDone := make(chan error, 1)
	go func() {
		_, _, err := c.GetOrLoad(context.Background(), k, load)
		waiterDone <- err
	}()
	waitFor(t, "the waiter", func() bool { return flightWaiters(c, k) == 1 })
	close(unblock)
	require.Equal(t, "load exploded", <-loaderDone, "the panic continues in the loader")
	err := <-waiterDone
	require.ErrorContains(t, err, "panicked")
	require.Equal(t, int32(1), calls.Load())
	requireQuiescent(t, c)
}

// TestSingleFlightOversized: a loaded value too large to cache is shared by
// the waiters in a detached entry, freed when the last handle goes.
func TestSingleFlightOversized(t *testing.T) {
	c := newWithShards(4<<10, 4)
	k := Key{1, 1, 0}
	unblock := make(chan struct{})
	results := startLoads(t, c, k, 4, nil, func() ([]byte, error) {
		<-unblock
		return newValue(8<<10, k, 1), nil
	})
	close(unblock)
	var wg sync.WaitGroup
	for _, r := range results {
		res := <-r
		require.NoError(t, res.err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := checkValue(res.h.Value(), k); err != nil {
				t.Error(err)
			}
			res.h.Release()
		}()
	}
	wg.Wait()
	require.Zero(t, c.Len())
	requireQuiescent(t, c)
}

// TestSingleFlightSetDuringLoad: a Set of a key being loaded takes the key's
// index slot from the load, which inserts its own value when it finishes (so
// the load's value wins, as for any later insert); an oversized Set leaves
// the load alone. A load that lost its slot and fails leaves the cache as
// it is.
func TestSingleFlightSetDuringLoad(t *testing.T) {
	for _, tc := range []struct {
		name     string
		setLen   int    // length of the value Set during the load
		evict    bool   // EvictFile after the Set, so that a second load starts
		loadErr  bool   // the first load fails
		wantVer  uint64 // version cached at the end
		wantWait int32  // flightWaiters of the key after the Set
	}{
		{name: "set wins until the load ends", setLen: 100, wantVer: 1, wantWait: -1},
		{name: "oversized set leaves the load its slot", setLen: 8 << 10, wantVer: 1, wantWait: 1},
		{name: "displaced load fails", setLen: 100, loadErr: true, wantVer: 2, wantWait: -1},
		{name: "second load after eviction", setLen: 100, evict: true, wantVer: 3, wantWait: -1},
		{name: "second load after eviction, first fails", setLen: 100, evict: true, loadErr: true,
			wantVer: 3, wantWait: -1},
	} {
		for _, mask := range []uint64{^uint64(0), 0} {
			t.Run(fmt.Sprintf("%s/mask=%#x", tc.name, mask), func(t *testing.T) {
				c := newWithMask(4*4<<10, 4, mask)
				k := Key{1, 1, 0}
				// Other keys, to share the index chains when mask is 0.
				for i := range uint64(4) {
					c.Set(Key{2, 2, i}, newValue(64, Key{2, 2, i}, 0)).Release()
				}
				errLoad := errors.New("load failed")
				unblock1 := make(chan struct{})
				load1 := make(chan loadResult, 1)
				go func() {
					h, hit, err := c.GetOrLoad(context.Background(), k, func() ([]byte, error) {
						<-unblock1
						if tc.loadErr {
							return nil, errLoad
						}
						return newValue(100, k, 1), nil
					})
					load1 <- loadResult{h, hit, err}
				}()
				waitFor(t, "the first load", func() bool { return flightWaiters(c, k) == 0 })
				// A waiter joins the first load.
				waiter := make(chan loadResult, 1)
				go func() {
					h, hit, err := c.GetOrLoad(context.Background(), k, func() ([]byte, error) {
						return nil, errors.New("the waiter must not load")
					})
					waiter <- loadResult{h, hit, err}
				}()
				waitFor(t, "the waiter", func() bool { return flightWaiters(c, k) == 1 })

				c.Set(k, newValue(tc.setLen, k, 2)).Release()
				h, ok := c.Get(k)
				require.Equal(t, tc.setLen == 100, ok, "Get after the Set")
				if ok {
					ver, err := checkValue(h.Value(), k)
					require.NoError(t, err)
					require.Equal(t, uint64(2), ver)
					h.Release()
				}
				require.Equal(t, tc.wantWait, flightWaiters(c, k))

				var load2 chan loadResult
				unblock2 := make(chan struct{})
				if tc.evict {
					c.EvictFile(1, 1)
					load2 = make(chan loadResult, 1)
					go func() {
						h, hit, err := c.GetOrLoad(context.Background(), k, func() ([]byte, error) {
							<-unblock2
							return newValue(100, k, 3), nil
						})
						load2 <- loadResult{h, hit, err}
					}()
					waitFor(t, "the second load", func() bool { return flightWaiters(c, k) == 0 })
				}

				close(unblock1)
				for _, ch := range []chan loadResult{load1, waiter} {
					r := <-ch
					if tc.loadErr {
						require.ErrorIs(t, r.err, errLoad)
						continue
					}
					require.NoError(t, r.err)
					ver, err := checkValue(r.h.Value(), k)
					require.NoError(t, err)
					require.Equal(t, uint64(1), ver)
					r.h.Release()
				}
				require.NoError(t, checkInvariants(c))
				if tc.evict {
					close(unblock2)
					r := <-load2
					require.NoError(t, r.err)
					r.h.Release()
				}

				h, ok = c.Get(k)
				require.True(t, ok, "Get at the end")
				ver, err := checkValue(h.Value(), k)
				require.NoError(t, err)
				require.Equal(t, tc.wantVer, ver)
				h.Release()
				require.Equal(t, 5, c.Len())
				requireQuiescent(t, c)
			})
		}
	}
}
