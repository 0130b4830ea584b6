package cache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// scanValueLen is the value size of the scan policy tests: with one shard
// of scanEntries such values, the probation share is scanEntries/scanShare
// entries exactly.
const (
	scanValueLen = 1024
	scanEntries  = 64
	scanShareN   = scanEntries / scanShare
)

// keyRange is n keys of file f from the from'th on, in offset order, and
// the priority to load them with.
type keyRange struct {
	f       uint64
	from, n int
	pri     Priority
}

func (r keyRange) keys() []Key {
	keys := make([]Key, r.n)
	for i := range keys {
		keys[i] = Key{ID: 1, FileNum: r.f, Offset: uint64(r.from+i) * 4096}
	}
	return keys
}

// scanStep is one step of a policy case: load the keys with GetOrLoad of
// r.pri (want counts the hits), hit them with Get, or count how many are
// cached without touching their bits.
type scanStep struct {
	op string // "load", "get" or "cached"
	r  keyRange
	// want is the count load or cached must see (hits, cached keys).
	want int
}

func load(f uint64, from, n int, pri Priority, wantHits int) scanStep {
	return scanStep{op: "load", r: keyRange{f: f, from: from, n: n, pri: pri}, want: wantHits}
}

func get(f uint64, from, n int) scanStep {
	return scanStep{op: "get", r: keyRange{f: f, from: from, n: n}}
}

func cached(f uint64, from, n, want int) scanStep {
	return scanStep{op: "cached", r: keyRange{f: f, from: from, n: n}, want: want}
}

// TestScanPolicy pins where entries of each priority go and what they
// evict, on one shard of scanEntries entries (a probation share of
// scanShareN). File 1 is the point reads' working set, files 2 and 3 are
// scanned. Every case checks the invariants, the capacity among them, after
// every insert.
func TestScanPolicy(t *testing.T) {
	const N, P = scanEntries, scanShareN
	norm, scan := PriorityNormal, PriorityScan
	cases := []struct {
		name  string
		steps []scanStep
	}{{
		// The hot set leaves room for the probation share: a scan of four
		// times the cache recycles that room and evicts no hit entry.
		name: "scan with room for the share evicts no hit entry",
		steps: []scanStep{
			load(1, 0, N-P, norm, 0), get(1, 0, N-P),
			load(2, 0, 4*N, scan, 0),
			cached(1, 0, N-P, N-P),
			cached(2, 4*N-P, P, P),
		},
	}, {
		// A full hot cache: the scan takes the probation share from the
		// main ring (its CLOCK hand clears the bits on the way, as for any
		// insert), and no more.
		name: "scan of a full hot cache takes only the share",
		steps: []scanStep{
			load(1, 0, N, norm, 0), get(1, 0, N),
			load(2, 0, 4*N, scan, 0),
			cached(1, 0, N, N-P),
			cached(2, 0, 4*N, P),
		},
	}, {
		name: "range smaller than the cache scanned twice hits",
		steps: []scanStep{
			load(2, 0, N-2, scan, 0),
			load(2, 0, N-2, scan, N-2),
		},
	}, {
		name: "range within the share scanned twice hits in a full hot cache",
		steps: []scanStep{
			load(1, 0, N, norm, 0), get(1, 0, N),
			load(2, 0, P, scan, 0),
			load(2, 0, P, scan, P),
		},
	}, {
		// A scanned block hit again is kept like any other: promoted
		// when the probation hand reaches it, it survives the next scan.
		name: "scan entries hit again survive a later scan",
		steps: []scanStep{
			load(2, 0, N/4, scan, 0), get(2, 0, N/8),
			load(3, 0, 4*N, scan, 0),
			cached(2, 0, N/8, N/8),
			cached(2, N/8, N/8, 0),
		},
	}, {
		// Scanned blocks that filled an empty cache give way to point
		// reads first, down to the share.
		name: "point reads evict scan entries over the share first",
		steps: []scanStep{
			load(2, 0, N, scan, 0),
			load(1, 0, N-P, norm, 0),
			cached(1, 0, N-P, N-P),
			cached(2, N-P, P, P),
		},
	}, {
		// Point reads alone keep today's CLOCK: the entries hit since
		// they were inserted stay, the others go in insertion order.
		name: "point reads keep CLOCK order",
		steps: []scanStep{
			load(1, 0, N, norm, 0), get(1, 0, N/2),
			load(3, 0, N/2, norm, 0),
			cached(1, 0, N/2, N/2),
			cached(1, N/2, N/2, 0),
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newWithShards(N*charge(scanValueLen), 1)
			require.Equal(t, int64(P)*charge(scanValueLen), c.shards[0].scanCapacity)
			runScanSteps(t, c, tc.steps)
		})
	}
}

// runScanSteps runs a policy case's steps on c and checks that c is
// quiescent afterwards.
func runScanSteps(t *testing.T, c *Cache, steps []scanStep) {
	t.Helper()
	for i, st := range steps {
		what := fmt.Sprintf("step %d (%s of file %d [%d, %d))", i, st.op, st.r.f, st.r.from, st.r.from+st.r.n)
		switch st.op {
		case "load":
			require.Equal(t, st.want, loadKeys(t, c, st.r.keys(), st.r.pri), "hits of %s", what)
		case "get":
			for _, k := range st.r.keys() {
				h, ok := c.Get(k)
				require.True(t, ok, "%s: %s missed", what, k)
				h.Release()
			}
		case "cached":
			require.Equal(t, st.want, countCached(c, st.r.keys()), what)
		}
	}
	requireQuiescent(t, c)
}

// loadKeys calls GetOrLoadWithPriority for each key in order, releasing
// each handle at once, checks the invariants after each insert and returns
// the number of hits.
func loadKeys(t *testing.T, c *Cache, keys []Key, pri Priority) int {
	t.Helper()
	var hits int
	for _, k := range keys {
		h, hit, err := c.GetOrLoadWithPriority(context.Background(), k, pri, func() ([]byte, error) {
			return newValue(scanValueLen, k, 1), nil
		})
		require.NoError(t, err)
		_, err = checkValue(h.Value(), k)
		require.NoError(t, err)
		h.Release()
		if hit {
			hits++
		}
		require.NoError(t, checkInvariants(c))
	}
	return hits
}

// countCached returns how many of keys are indexed, without setting their
// CLOCK bits as Get would.
func countCached(c *Cache, keys []Key) int {
	var n int
	for _, k := range keys {
		s := c.shardFor(k)
		s.mu.RLock()
		if e := s.entries.find(hashKey(k)&s.mask, k); e != nil && e.state == stateIndexed {
			n++
		}
		s.mu.RUnlock()
	}
	return n
}

// TestScanLoadJoinedByPointRead checks that a point read waiting for a
// scan's load of the same block makes it a normal entry: it lands on the
// main ring, not on probation.
func TestScanLoadJoinedByPointRead(t *testing.T) {
	for _, tc := range []struct {
		name   string
		waiter Priority
		scan   bool
		high   bool
	}{
		{"scan waiter", PriorityScan, true, false},
		{"point-read waiter", PriorityNormal, false, false},
		{"high-priority waiter", PriorityHigh, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newWithShards(scanEntries*charge(scanValueLen), 1)
			k := Key{ID: 1, FileNum: 2, Offset: 0}
			release := make(chan struct{})
			loaded := make(chan Handle)
			go func() {
				h, _, err := c.GetOrLoadWithPriority(context.Background(), k, PriorityScan, func() ([]byte, error) {
					<-release
					return newValue(scanValueLen, k, 1), nil
				})
				if err != nil {
					panic(err)
				}
				loaded <- h
			}()
			waited := make(chan Handle)
			go func() {
				// Wait until the loader holds the slot, so this call waits.
				for flightWaiters(c, k) < 0 {
					runtime.Gosched()
				}
				h, _, err := c.GetOrLoadWithPriority(context.Background(), k, tc.waiter, func() ([]byte, error) {
					panic("the waiter loaded")
				})
				if err != nil {
					panic(err)
				}
				waited <- h
			}()
			for flightWaiters(c, k) < 1 {
				runtime.Gosched()
			}
			close(release)
			(<-loaded).Release()
			(<-waited).Release()
			s := c.shardFor(k)
			s.mu.RLock()
			e := s.entries.find(hashKey(k)&s.mask, k)
			require.NotNil(t, e)
			require.Equal(t, tc.scan, e.scan)
			require.Equal(t, tc.high, e.high)
			require.Equal(t, tc.high, e.inHigh)
			s.mu.RUnlock()
			requireQuiescent(t, c)
		})
	}
}

// TestScanCapacity mixes the three priorities, hits, replacements and file
// evictions over values of random sizes on several shards, checking the
// invariants (capacity, ring membership, probation charges) after every
// operation.
func TestScanCapacity(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	c := newWithShards(4*16*(2048+EntryOverhead), 4)
	for i := range scaled(20000) {
		k := Key{ID: 1, FileNum: uint64(rng.IntN(4)), Offset: uint64(rng.IntN(64)) * 4096}
		size := 32 + rng.IntN(4096)
		switch r := rng.IntN(100); {
		case r < 40:
			h, _, err := c.GetOrLoadWithPriority(context.Background(), k, Priority(rng.IntN(3)), func() ([]byte, error) {
				return makeValue(c.Alloc(size), k, uint64(i)), nil
			})
			require.NoError(t, err)
			h.Release()
		case r < 80:
			if h, ok := c.Get(k); ok {
				h.Release()
			}
		case r < 95:
			c.Set(k, makeValue(c.Alloc(size), k, uint64(i))).Release()
		default:
			c.EvictFile(k.ID, k.FileNum)
		}
		require.NoError(t, checkInvariants(c))
		require.LessOrEqual(t, c.Size(), c.Capacity())
	}
	requireQuiescent(t, c)
}
