package etcd

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shale/driver"
)

// The chaos test's bounds. Each call has a context deadline of chaosCall,
// shorter than request_timeout, so every timeout is the call's own; a call
// returning more than chaosDial+chaosRequest+chaosMargin after its deadline
// hangs.
const (
	chaosEvents  = 8
	chaosCall    = 2 * time.Second
	chaosDial    = 1 * time.Second
	chaosRequest = 3 * time.Second
	chaosMargin  = 5 * time.Second
	// chaosLimit ends the workload even if the events take longer than
	// they should; chaosWorkerOps bounds each worker's calls.
	chaosLimit     = 40 * time.Second
	chaosWorkerOps = 50_000
)

// chaosWrite is one write of the workload: the keys it puts (each written
// once in the whole test, with its own value) and how it ended.
type chaosWrite struct {
	op    string
	keys  []string
	class string // "" when acknowledged
}

// chaosLog collects what the workers saw.
type chaosLog struct {
	mu          sync.Mutex
	ops         int
	acked       []string // keys of acknowledged writes, in order
	writes      []chaosWrite
	classes     map[string]int
	unexpected  []string
	maxLatency  time.Duration
	maxOvershot time.Duration
	overshotBy  string // the call that returned furthest past its deadline
	readsOK     int
}

// classify returns the class of a call's error: "outcome unknown",
// "unavailable" (split into "not applied" for writes that say so), or
// "context" (the call's own deadline); "" for an error no call may return.
func classify(ctx context.Context, err error, write bool) string {
	switch {
	case errors.Is(err, ErrOutcomeUnknown):
		return "outcome unknown"
	case errors.Is(err, ErrUnavailable) && write && strings.Contains(err.Error(), "not applied"):
		return "unavailable, not applied"
	case errors.Is(err, ErrUnavailable):
		return "unavailable"
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return "context"
	}
	return ""
}

// call runs f with a context expiring after chaosCall and records its
// latency, how far past its deadline it returned, and its error's class.
// A transaction's Commit takes no context (the façade's): it is bounded by
// request_timeout alone, so a BeginTx-Put-Commit call may return past the
// deadline of the context it began with.
func (l *chaosLog) call(name string, write bool, f func(ctx context.Context) error) (class string, err error) {
	start := time.Now()
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(chaosCall))
	defer cancel()
	err = f(ctx)
	end := time.Now()
	if err != nil {
		class = classify(ctx, err, write)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops++
	l.maxLatency = max(l.maxLatency, end.Sub(start))
	if over := end.Sub(start.Add(chaosCall)); over > l.maxOvershot {
		l.maxOvershot, l.overshotBy = over, name
	}
	if err != nil {
		if class == "" {
			class = "unexpected"
			l.unexpected = append(l.unexpected, fmt.Sprintf("%s: %v", name, err))
		}
		l.classes[name+": "+class]++
	}
	return class, err
}

// TestChaos runs writers and readers through the façade over a private
// 3-member cluster while members are killed and restarted, the leader
// among them, quorum is lost and regained, the whole cluster is stopped and
// started, and leadership is moved. It
// then checks, on the healthy cluster, that every acknowledged write is
// there, that every failed write not of unknown outcome is not, that
// every error was ErrUnavailable, ErrOutcomeUnknown or the call's
// context's, that no read missed an acknowledged write, and that no call
// returned long after its deadline. It waits for events (a member ready, a
// leader elected or moved) by polling, not for fixed times.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos test runs for about 20s; skipped with -short")
	}
	c := privateCluster(t)
	dsn := c.dsn(t, fmt.Sprintf("dial_timeout=%v&request_timeout=%v", chaosDial, chaosRequest))
	db := openDSN(t, dsn)
	if err := db.Ping(bg); err != nil {
		t.Fatal(err)
	}
	log := &chaosLog{classes: make(map[string]int)}
	stop := make(chan struct{})
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop) }) }
	// A failing test stops the workers too.
	defer halt()
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	var wg sync.WaitGroup
	const writers, readers = 3, 2
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for n := 0; n < chaosWorkerOps && !stopped(); n++ {
				key := func(i int) string { return fmt.Sprintf("w%d-%06d-%d", w, n, i) }
				var cw chaosWrite
				var f func(ctx context.Context) error
				switch r := rng.IntN(10); {
				case r < 6:
					cw = chaosWrite{op: "Put", keys: []string{key(0)}}
					f = func(ctx context.Context) error { return db.Put(ctx, []byte(key(0)), []byte(key(0))) }
				case r < 8:
					cw = chaosWrite{op: "Write", keys: []string{key(0), key(1)}}
					f = func(ctx context.Context) error {
						var b driver.Batch
						b.Put([]byte(key(0)), []byte(key(0)))
						b.Put([]byte(key(1)), []byte(key(1)))
						return db.Write(ctx, &b)
					}
				default:
					cw = chaosWrite{op: "Commit", keys: []string{key(0)}}
					f = func(ctx context.Context) error {
						tx, err := db.BeginTx(ctx, nil)
						if err != nil {
							return err
						}
						if err := tx.Put(ctx, []byte(key(0)), []byte(key(0))); err != nil {
							return errors.Join(err, tx.Rollback())
						}
						return tx.Commit()
					}
				}
				class, err := log.call(cw.op, true, f)
				cw.class = class
				log.mu.Lock()
				log.writes = append(log.writes, cw)
				if err == nil {
					log.acked = append(log.acked, cw.keys...)
				}
				log.mu.Unlock()
			}
		}()
	}
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(100+r), 2))
			for n := 0; n < chaosWorkerOps && !stopped(); n++ {
				log.mu.Lock()
				acked := log.acked
				log.mu.Unlock()
				if len(acked) == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				// Keys acknowledged before the read began: a linearizable
				// read must see each.
				keys := make([][]byte, 1+rng.IntN(4))
				for i := range keys {
					keys[i] = []byte(acked[rng.IntN(len(acked))])
				}
				var got [][]byte
				op := "Get"
				if len(keys) > 1 {
					op = "MultiGet"
				}
				_, err := log.call(op, false, func(ctx context.Context) error {
					var err error
					if op == "Get" {
						var v []byte
						v, err = db.Get(ctx, keys[0])
						got = [][]byte{v}
					} else {
						got, err = db.MultiGet(ctx, keys)
					}
					return err
				})
				if err != nil {
					continue
				}
				log.mu.Lock()
				log.readsOK++
				for i, k := range keys {
					if string(got[i]) != string(k) {
						log.unexpected = append(log.unexpected,
							fmt.Sprintf("%s of acknowledged key %s read %q", op, k, got[i]))
					}
				}
				log.mu.Unlock()
			}
		}()
	}

	// The chaos: one event at a time, each undone (members restarted, a
	// leader elected) before the next. chaosLimit stops the workers even
	// if the events overrun.
	limit := time.AfterFunc(chaosLimit, halt)
	var kills, restarts, moves, leaderChanges int
	var stopTimes []time.Duration
	rng := rand.New(rand.NewPCG(7, 7))
	start := time.Now()
	kill := func(i int) {
		t0 := time.Now()
		c.stopMember(i)
		stopTimes = append(stopTimes, time.Since(t0))
		kills++
	}
	events := []string{"kill follower", "move leader", "lose quorum", "kill leader", "stop all"}
	for e := 0; e < chaosEvents && !stopped(); e++ {
		// Let the workload run against the healthy cluster between
		// events.
		time.Sleep(300 * time.Millisecond)
		before := c.waitAnyLeader(t)
		event := events[e%len(events)]
		var down []int
		switch event {
		case "kill follower":
			f := (before + 1 + rng.IntN(2)) % 3
			kill(f)
			down = []int{f}
		case "kill leader":
			kill(before)
			down = []int{before}
		case "lose quorum":
			a := rng.IntN(3)
			kill(a)
			kill((a + 1) % 3)
			down = []int{a, (a + 1) % 3}
		case "stop all":
			// No member reachable: calls fail at once, writes as not
			// applied, until the members are back.
			for i := range c.members {
				kill(i)
			}
			down = []int{0, 1, 2}
		case "move leader":
			to := (before + 1 + rng.IntN(2)) % 3
			lm, tm := c.members[before].etcd.Server, c.members[to].etcd.Server
			ctx, cancel := context.WithTimeout(bg, 10*time.Second)
			err := lm.MoveLeader(ctx, uint64(lm.MemberID()), uint64(tm.MemberID()))
			cancel()
			if err != nil {
				t.Logf("MoveLeader from %d to %d: %v", before, to, err)
			} else {
				moves++
			}
		}
		// The workload runs against the damaged cluster for a while.
		time.Sleep(500 * time.Millisecond)
		if len(down) > 0 {
			ms := make([]*testMember, 0, len(down))
			for _, i := range down {
				cfg := *c.members[i].cfg
				cfg.ClusterState = "existing"
				c.members[i].cfg = &cfg
				ms = append(ms, c.members[i])
			}
			if err := c.startMembers(ms); err != nil {
				t.Fatalf("restarting members %v after %q: %v", down, event, err)
			}
			restarts += len(down)
		}
		after := c.waitAnyLeader(t)
		for i := range c.members {
			c.waitLeader(t, i)
		}
		if after != before {
			leaderChanges++
		}
		t.Logf("event %d %q: leader %d -> %d, %v since start", e, event, before, after, time.Since(start).Round(time.Millisecond))
	}
	// Some calls against the healthy cluster, then stop.
	time.Sleep(300 * time.Millisecond)
	limit.Stop()
	halt()
	wg.Wait()
	took := time.Since(start)

	// Afterwards, on the healthy cluster, with a DB of its own: every
	// acknowledged write is there, and every write that failed as not
	// applied (or refused) is not.
	check := openDSN(t, dsn)
	var all []string
	for _, w := range log.writes {
		all = append(all, w.keys...)
	}
	found := make(map[string]bool, len(all))
	for i := 0; i < len(all); i += 256 {
		chunk := all[i:min(i+256, len(all))]
		keys := make([][]byte, len(chunk))
		for j, k := range chunk {
			keys[j] = []byte(k)
		}
		var vals [][]byte
		err := retryUnavailable(func() error {
			ctx, cancel := context.WithTimeout(bg, 10*time.Second)
			defer cancel()
			var err error
			vals, err = check.MultiGet(ctx, keys)
			return err
		})
		if err != nil {
			t.Fatalf("reading the written keys back from the healthy cluster: %v", err)
		}
		for j, v := range vals {
			if v != nil {
				found[chunk[j]] = true
				if string(v) != chunk[j] {
					t.Errorf("key %s holds %q; want its own name", chunk[j], v)
				}
			}
		}
	}
	present := func(key string) bool { return found[key] }
	var acked, unknownPresent, unknownAbsent, failedAbsent int
	for _, w := range log.writes {
		var in []bool
		for _, k := range w.keys {
			in = append(in, present(k))
		}
		all, none := !slices.Contains(in, false), !slices.Contains(in, true)
		switch {
		case !all && !none:
			t.Errorf("%s of %v is partly applied (%v): a write applies entirely or not at all", w.op, w.keys, in)
		case w.class == "":
			acked++
			if !all {
				t.Errorf("acknowledged %s of %v is missing", w.op, w.keys)
			}
		case w.class == "outcome unknown":
			if all {
				unknownPresent++
			} else {
				unknownAbsent++
			}
		default:
			// Refused, not applied, or its context ended before it was
			// sent: not of unknown outcome, so it must not be there.
			if all {
				t.Errorf("%s of %v failed (%s), not of unknown outcome, but was applied", w.op, w.keys, w.class)
			} else {
				failedAbsent++
			}
		}
	}
	for _, u := range log.unexpected {
		t.Errorf("unexpected: %s", u)
	}
	if over := log.maxOvershot; over > chaosDial+chaosRequest+chaosMargin {
		t.Errorf("a call returned %v after its deadline; want at most dial_timeout+request_timeout+%v", over,
			chaosMargin)
	}

	var classes []string
	for k, n := range log.classes {
		classes = append(classes, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(classes)
	slices.Sort(stopTimes)
	t.Logf("chaos: %v, %d calls (%d writes, %d reads that succeeded); %d acknowledged writes, all present; "+
		"%d failed writes not of unknown outcome, all absent; %d of unknown outcome (%d present, %d absent)",
		took.Round(time.Millisecond), log.ops, len(log.writes), log.readsOK, acked, failedAbsent,
		unknownPresent+unknownAbsent, unknownPresent, unknownAbsent)
	t.Logf("chaos: errors by class: %s", strings.Join(classes, ", "))
	t.Logf("chaos: %d kills, %d restarts, %d leadership moves, %d leader changes; max latency %v, "+
		"max return past the deadline %v (%s); a kill (member Close) took %v to %v",
		kills, restarts, moves, leaderChanges, log.maxLatency.Round(time.Millisecond),
		log.maxOvershot.Round(time.Millisecond), log.overshotBy, stopTimes[0].Round(time.Millisecond),
		stopTimes[len(stopTimes)-1].Round(time.Millisecond))
	if acked == 0 || log.readsOK == 0 {
		t.Errorf("the workload made no progress: %d acknowledged writes, %d reads", acked, log.readsOK)
	}
}

// waitAnyLeader waits until a running member leads, and returns its index.
func (c *testCluster) waitAnyLeader(t testing.TB) int {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if i := c.leaderIndex(); i >= 0 {
			return i
		}
		if time.Now().After(deadline) {
			t.Fatal("no member leads after 2 minutes")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
