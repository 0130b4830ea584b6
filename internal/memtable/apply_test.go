package memtable

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/batch"
	"github.com/stretchr/testify/require"
)

// TestApplySorted applies batches large enough to be inserted in key order
// (applySorted) and checks the memtable against a model: every entry, in
// order both ways, each key's newest version, and the range tombstones.
func TestApplySorted(t *testing.T) {
	const n = 3 * sortedApplyMin
	for _, tc := range []struct {
		name string
		// keys returns the batch's user keys, in batch order.
		keys func(rng *rand.Rand) []string
		// existing entries go in first with Add, so the batch's keys land
		// between them.
		existing int
		deletes  bool // every 5th record is a Delete
		// rangeDels is how many range deletion records the batch holds.
		rangeDels int
	}{
		{name: "sorted", keys: func(*rand.Rand) []string { return seqKeys(n, 1) }},
		{name: "reverse", keys: func(*rand.Rand) []string { k := seqKeys(n, 1); slices.Reverse(k); return k }},
		{name: "random", keys: func(rng *rand.Rand) []string { return randKeys(rng, n, 1<<30) }},
		{name: "random-into-existing", keys: func(rng *rand.Rand) []string { return randKeys(rng, n, 1<<30) }, existing: 2 * n},
		{name: "sorted-into-existing", keys: func(*rand.Rand) []string { return seqKeys(n, 3) }, existing: n},
		// Few distinct keys: a key set many times in the batch, whose
		// later records must sort first (they win).
		{name: "duplicates", keys: func(rng *rand.Rand) []string { return randKeys(rng, n, 50) }, deletes: true},
		{name: "duplicates-into-existing", keys: func(rng *rand.Rand) []string { return randKeys(rng, n, 50) }, existing: 200, deletes: true},
		// Keys shorter than the 8-byte prefix, and keys sharing it, so
		// that equal prefixes fall back to the full comparison.
		{name: "short-and-shared-prefix", keys: func(rng *rand.Rand) []string {
			out := make([]string, n)
			for i := range out {
				switch rng.IntN(3) {
				case 0:
					out[i] = strconv.Itoa(rng.IntN(1000))
				case 1:
					out[i] = "prefix00" + strconv.Itoa(rng.IntN(1000))
				default:
					out[i] = "prefix0" + string([]byte{0, byte(rng.IntN(4))})
				}
			}
			return out
		}, deletes: true},
		{name: "range-deletions", keys: func(rng *rand.Rand) []string { return randKeys(rng, n, 1<<30) }, rangeDels: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 6))
			m := New(64 << 20)
			var model []entry
			for i := range tc.existing {
				e := entry{fmt.Sprintf("k%010d", rng.IntN(1<<30)), base.SeqNum(i + 1), base.KindSet, "old"}
				mustAdd(t, m, e)
				model = append(model, e)
			}
			seq := base.SeqNum(tc.existing + 1)
			b := batch.New()
			var tombstones int
			for i, k := range tc.keys(rng) {
				s := seq + base.SeqNum(b.Count())
				if tc.rangeDels > 0 && i%(n/tc.rangeDels) == 0 {
					b.DeleteRange([]byte(k), []byte(k+"~"))
					tombstones++
					s++
				}
				e := entry{k, s, base.KindSet, strconv.Itoa(i)}
				if tc.deletes && i%5 == 0 {
					e.kind, e.value = base.KindDelete, ""
					b.Delete([]byte(k))
				} else {
					b.Set([]byte(k), []byte(e.value))
				}
				model = append(model, e)
			}
			require.GreaterOrEqual(t, int(b.Count()), sortedApplyMin, "the batch takes the sorted path")
			require.NoError(t, m.Apply(b, seq))
			sortEntries(model)
			require.Equal(t, len(model), m.Count())
			require.Equal(t, model, scanBoth(t, m.NewIter(nil, nil)))
			for _, e := range model {
				want, _ := modelGet(model, e.key, base.MaxSeqNum)
				v, kind, found := m.Get([]byte(e.key), base.MaxSeqNum)
				require.True(t, found, "%s", e.key)
				require.Equal(t, want.kind, kind, "%s", e.key)
				require.Equal(t, want.value, string(v), "%s", e.key)
			}
			require.Equal(t, tombstones, m.NumRangeDeletions())

			// Applying it again reuses its sequence numbers.
			err := m.Apply(b, seq)
			require.True(t, errors.Is(err, ErrRecordExists), "%v", err)
		})
	}
}

// seqKeys returns n ascending keys, step apart.
func seqKeys(n, step int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("k%010d", i*step)
	}
	return out
}

// randKeys returns n keys drawn from space distinct ones.
func randKeys(rng *rand.Rand, n, space int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("k%010d", rng.IntN(space))
	}
	return out
}

// TestApplySortedConcurrent runs writers applying large batches (inserted in
// key order from a splice hint) and single Adds into the same key range, and
// readers scanning and getting at once. Readers must always see entries in
// order; afterwards no insert may be lost and every prev link must be exact.
func TestApplySortedConcurrent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		keys    int
		batches int // per writer
		yield   bool
	}{
		{"many-keys", 1 << 20, 4, false},
		{"few-keys", 300, 4, false},
		{"few-keys-yield", 300, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const writers = 3
			m := New(64 << 20)
			m.yield = tc.yield
			var lastSeq atomic.Uint64
			seqs := func(n int) base.SeqNum { return base.SeqNum(lastSeq.Add(uint64(n)) - uint64(n) + 1) }
			key := func(rng *rand.Rand) string { return fmt.Sprintf("key%07d", rng.IntN(tc.keys)) }
			written := make([][]entry, writers+1)
			var done atomic.Bool
			var wg, readers sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(w), 8))
					for range tc.batches {
						n := sortedApplyMin + rng.IntN(sortedApplyMin)
						seq := seqs(n)
						b := batch.New()
						for i := range n {
							e := entry{key(rng), seq + base.SeqNum(i), base.KindSet, strconv.Itoa(int(seq) + i)}
							b.Set([]byte(e.key), []byte(e.value))
							written[w] = append(written[w], e)
						}
						if err := m.Apply(b, seq); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			// One writer of single entries, racing the batches' links.
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(99, 8))
				for range 2000 {
					seq := seqs(1)
					e := entry{key(rng), seq, base.KindSet, strconv.Itoa(int(seq))}
					if err := m.Add(e.seq, e.kind, []byte(e.key), []byte(e.value)); err != nil {
						t.Error(err)
						return
					}
					written[writers] = append(written[writers], e)
				}
			})
			for r := range 2 {
				readers.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(r), 98))
					for !done.Load() {
						checkOrdered(t, m, rng, key(rng))
						checkGets(t, m, rng, key)
					}
				})
			}
			wg.Wait()
			done.Store(true)
			readers.Wait()
			if t.Failed() {
				return
			}
			var model []entry
			for _, es := range written {
				model = append(model, es...)
			}
			sortEntries(model)
			require.Equal(t, len(model), m.Count(), "lost inserts")
			require.Equal(t, model, scanBoth(t, m.NewIter(nil, nil)))
		})
	}
}

func TestKeyPrefix(t *testing.T) {
	keys := []string{"", "\x00", "\x00\x00", "a", "a\x00", "a\x00\x01", "ab", "abcdefgh", "abcdefgh\x00", "abcdefghi", "abcdefgi", "b", "\xff\xff\xff\xff\xff\xff\xff\xff\xff"}
	for _, a := range keys {
		for _, b := range keys {
			pa, pb := keyPrefix([]byte(a)), keyPrefix([]byte(b))
			if pa < pb {
				require.Less(t, a, b, "prefix %x < %x", pa, pb)
			}
			if a < b {
				require.LessOrEqual(t, pa, pb, "%q < %q", a, b)
			}
		}
	}
}
