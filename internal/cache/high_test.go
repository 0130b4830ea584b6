package cache

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHighPriorityPolicy pins where PriorityHigh entries (index and filter
// blocks) go and what evicts them, on one shard of scanEntries entries with
// the default pool ratio (a high share of N/2 entries) or the ratio a case
// gives. File 4 holds the high-priority blocks, file 1 the point reads'
// data blocks, file 2 is scanned. The invariants, the high ring within its
// share among them, are checked after every insert.
func TestHighPriorityPolicy(t *testing.T) {
	const N, P, H = scanEntries, scanShareN, scanEntries / 2
	norm, scan, high := PriorityNormal, PriorityScan, PriorityHigh
	cases := []struct {
		name  string
		ratio float64 // -1: New's default
		steps []scanStep
	}{{
		// Never hit, they still outlive four cache sizes of data blocks.
		name:  "high entries within their share outlive data blocks",
		ratio: -1,
		steps: []scanStep{
			load(4, 0, H, high, 0),
			load(1, 0, 4*N, norm, 0),
			cached(4, 0, H, H),
			cached(1, 4*N-(N-H), N-H, N-H),
		},
	}, {
		// 3N/4 high entries in a cache holding N/4 data blocks: the
		// oldest N/4 are demoted behind the main hand, so the data blocks
		// go first, then the demoted ones, and the share stays.
		name:  "overflow is demoted oldest first and competes as the newest data",
		ratio: -1,
		steps: []scanStep{
			load(1, 0, N/4, norm, 0),
			load(4, 0, 3*N/4, high, 0),
			load(1, N/4, N/4, norm, 0),
			cached(1, 0, N/4, 0),
			cached(4, 0, 3*N/4, 3*N/4),
			load(1, N/2, N/4, norm, 0),
			cached(4, 0, N/4, 0),
			cached(4, N/4, N/2, N/2),
			cached(1, N/4, N/2, N/2),
		},
	}, {
		// Demoted entries hit again go back to the high ring when the
		// main hand reaches them, pushing out the ring's unhit ones, and
		// then outlive any amount of data.
		name:  "hit demoted entries return to the high ring",
		ratio: -1,
		steps: []scanStep{
			load(1, 0, N/4, norm, 0),
			load(4, 0, 3*N/4, high, 0),
			get(4, 0, N/4),
			load(1, N/4, 4*N, norm, 0),
			cached(4, 0, N/4, N/4),
			cached(4, N/4, N/4, 0),
			cached(4, N/2, N/4, N/4),
			cached(1, N/4+4*N-N/2, N/2, N/2),
		},
	}, {
		// A scan recycles its probation share and the free room; neither
		// the high entries nor the hit data blocks go.
		name:  "scan with room leaves high entries and hit data",
		ratio: -1,
		steps: []scanStep{
			load(4, 0, H, high, 0),
			load(1, 0, N/4, norm, 0), get(1, 0, N/4),
			load(2, 0, 4*N, scan, 0),
			cached(4, 0, H, H),
			cached(1, 0, N/4, N/4),
			cached(2, 4*N-N/4, N/4, N/4),
		},
	}, {
		// In a full cache the scan takes its share from the data blocks,
		// not from the high ring.
		name:  "scan of a full cache takes its share from data, not high entries",
		ratio: -1,
		steps: []scanStep{
			load(4, 0, H, high, 0),
			load(1, 0, N-H, norm, 0), get(1, 0, N-H),
			load(2, 0, 4*N, scan, 0),
			cached(4, 0, H, H),
			cached(1, 0, N-H, N-H-P),
			cached(2, 4*N-P, P, P),
		},
	}, {
		// With nothing else left, high entries are evicted in CLOCK
		// order: hit ones stay.
		name:  "high entries alone keep CLOCK order",
		ratio: 1,
		steps: []scanStep{
			load(4, 0, N, high, 0), get(4, 0, N/2),
			load(4, N, N/2, high, 0),
			cached(4, 0, N/2, N/2),
			cached(4, N/2, N/2, 0),
			cached(4, N, N/2, N/2),
		},
	}, {
		// Ratio 0: no pool, high entries are data blocks at once.
		name:  "ratio 0 makes high entries normal",
		ratio: 0,
		steps: []scanStep{
			load(4, 0, N/2, high, 0),
			load(1, 0, N, norm, 0),
			cached(4, 0, N/2, 0),
			cached(1, 0, N, N),
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			capacity := N * charge(scanValueLen)
			var c *Cache
			if tc.ratio < 0 {
				c = newWithShards(capacity, 1)
			} else {
				c = newCache(capacity, 1, ^uint64(0), Options{HighPriorityPoolRatio: tc.ratio})
			}
			want := int64(float64(N)*DefaultHighPriorityPoolRatio) * charge(scanValueLen)
			if tc.ratio >= 0 {
				want = int64(float64(N)*tc.ratio) * charge(scanValueLen)
			}
			require.Equal(t, want, c.shards[0].highCapacity)
			runScanSteps(t, c, tc.steps)
		})
	}
}

// TestHighPriorityOptions checks that NewWithOptions clamps the ratio and
// that New uses the default.
func TestHighPriorityOptions(t *testing.T) {
	const capacity = 64 << 20
	for _, tc := range []struct {
		ratio float64
		share float64
	}{{-1, 0}, {0, 0}, {0.25, 0.25}, {1, 1}, {2, 1}} {
		c := NewWithOptions(capacity, Options{HighPriorityPoolRatio: tc.ratio})
		s := &c.shards[0]
		require.Equal(t, int64(float64(s.capacity)*tc.share), s.highCapacity, "ratio %v", tc.ratio)
	}
	c := New(capacity)
	require.Equal(t, int64(float64(c.shards[0].capacity)*DefaultHighPriorityPoolRatio), c.shards[0].highCapacity)
	require.Equal(t, "high", PriorityHigh.String())
}
