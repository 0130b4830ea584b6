package ratelimit

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/shaledb/shale/ioctx"
	"github.com/stretchr/testify/require"
)

// charged lists the charged priorities, Low to User.
var charged = []ioctx.Priority{ioctx.PriorityLow, ioctx.PriorityMid, ioctx.PriorityHigh, ioctx.PriorityUser}

// waitFor is how long a test waits for something that should happen in
// milliseconds before it declares a hang.
const waitFor = 5 * time.Second

// coins returns a fairness coin that answers highLast to the first toss of
// every refill and midAfterLow to the second (the limiter tosses twice per
// refill, High's coin first). It is only called under Generic.mu.
func coins(highLast, midAfterLow bool) func(int) bool {
	var n int
	return func(int) bool {
		n++
		if n%2 == 1 {
			return highLast
		}
		return midAfterLow
	}
}

// slowLimiter returns a limiter whose refill is an hour away after its first
// one, with that first refill (3600 bytes) already spent at User, so that
// every further request queues and only forceRefill moves the queues on.
func slowLimiter(t *testing.T, fairness int) *Generic {
	t.Helper()
	g := NewGeneric(1, time.Hour, fairness, ModeAll)
	require.Equal(t, int64(3600), g.SingleBurstBytes())
	require.NoError(t, g.Request(context.Background(), 3600, ioctx.PriorityUser, nil, OpRead))
	return g
}

// forceRefill makes the next refill due now and wakes the waiter that would
// perform it, as if the refill period had passed.
func forceRefill(g *Generic) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.mu.nextRefill = g.now()
	if r := g.mu.refillWaiter; r != nil {
		r.wake()
	} else {
		g.wakeDutyLocked()
	}
}

type result struct {
	pri ioctx.Priority
	err error
}

// goRequest starts a Request in a goroutine and reports its result on res.
func goRequest(ctx context.Context, g *Generic, bytes int64, pri ioctx.Priority, res chan<- result) {
	go func() {
		err := g.Request(ctx, bytes, pri, nil, OpRead)
		res <- result{pri, err}
	}()
}

// waitPending waits until n requests are queued at pri.
func waitPending(t *testing.T, g *Generic, pri ioctx.Priority, n int64) {
	t.Helper()
	require.Eventually(t, func() bool { return g.TotalPendingRequests(pri) == n }, waitFor, 100*time.Microsecond,
		"want %d pending at %s, have %d", n, pri, g.TotalPendingRequests(pri))
}

// receive returns the next result, failing the test if none comes in time.
func receive(t *testing.T, res <-chan result) result {
	t.Helper()
	select {
	case r := <-res:
		return r
	case <-time.After(waitFor):
		t.Fatal("a request did not return: hang")
	}
	return result{}
}

// noResult checks that no request returns within d.
func noResult(t *testing.T, res <-chan result, d time.Duration) {
	t.Helper()
	select {
	case r := <-res:
		t.Fatalf("request at %s returned early: %v", r.pri, r.err)
	case <-time.After(d):
	}
}

// checkNoLeak waits until the number of goroutines is back to base. It polls
// by hand: require.Eventually runs its condition on a goroutine of its own.
func checkNoLeak(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines: %d, want at most %d\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(time.Millisecond)
	}
}

// queueFake queues a request of bytes at pri without a goroutine behind it,
// for tests that drive refillAndGrantLocked directly.
func queueFake(g *Generic, pri ioctx.Priority, bytes int64) *request {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := getRequest(bytes, pri)
	g.mu.queues[pri].pushBack(r)
	return r
}

// refillNow runs one refill and grant.
func refillNow(g *Generic) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.refillAndGrantLocked(g.now())
}

// signalled reports whether r has a wake-up token, consuming it.
func signalled(r *request) bool {
	select {
	case <-r.signal:
		return true
	default:
		return false
	}
}

// refillWaiter returns the request holding the refill-wait duty, or nil.
func refillWaiter(g *Generic) *request {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.mu.refillWaiter
}

// waitRemaining waits until the front request at pri has want bytes left to
// be granted.
func waitRemaining(t *testing.T, g *Generic, pri ioctx.Priority, want int64) {
	t.Helper()
	require.Eventually(t, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		r := g.mu.queues[pri].front()
		return r != nil && r.remaining == want
	}, waitFor, 100*time.Microsecond, "want a front at %s with %d bytes left", pri, want)
}
