package memtable

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/batch"
	"github.com/stretchr/testify/require"
)

// TestConcurrent runs writers (Add and Apply) and readers (scans both ways,
// seeks, Gets) at once. Readers must always see entries in order and Gets
// must never see a version newer than asked for; afterwards no insert may be
// lost and every prev link must be exact.
func TestConcurrent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		keys    int // distinct user keys: fewer means more contention
		writers int
		perW    int
		yield   bool // yield in the middle of inserts
		// descending hands out sequence numbers from high to low, so that
		// each version of a key goes in just after the one added before
		// it: the case where an insert races with the prev-link update of
		// its predecessor's insert.
		descending bool
	}{
		{"one-key", 1, 4, 1000, false, false},
		{"few-keys", 16, 4, 1000, false, false},
		{"many-keys", 5000, 4, 1000, false, false},
		{"one-key-descending", 1, 4, 1000, false, true},
		{"one-key-descending-yield", 1, 4, 300, true, true},
		{"few-keys-descending-yield", 16, 4, 300, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() {
				tc.perW /= 5
			}
			m := New(16 << 20)
			m.yield = tc.yield
			var done atomic.Bool
			var writers, readers sync.WaitGroup
			written := make([][]entry, tc.writers)
			key := func(rng *rand.Rand) string { return fmt.Sprintf("key%05d", rng.IntN(tc.keys)) }

			// Writers take sequence numbers from one counter, as the engine's
			// write path does, so neighbouring entries come from different
			// writers and inserts race for the same links.
			var lastSeq atomic.Uint64
			seqs := func(n int) base.SeqNum {
				c := lastSeq.Add(uint64(n))
				if tc.descending {
					return base.SeqNum(1<<40 - c)
				}
				return base.SeqNum(c - uint64(n) + 1)
			}
			// A key after all the others, so that inserts at the end of
			// the versions of a key have a successor whose prev link moves.
			sentinel := entry{"zzz", 1 << 41, base.KindSet, "0"}
			mustAdd(t, m, sentinel)
			for w := range tc.writers {
				writers.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(w), 7))
					for len(written[w]) < tc.perW {
						if rng.IntN(8) == 0 && tc.perW-len(written[w]) >= 4 {
							seq := seqs(4)
							b := batch.New()
							var es []entry
							for i := range 4 {
								e := entry{key(rng), seq + base.SeqNum(i), base.KindSet, strconv.Itoa(int(seq) + i)}
								b.Set([]byte(e.key), []byte(e.value))
								es = append(es, e)
							}
							if err := m.Apply(b, seq); err != nil {
								t.Error(err)
								return
							}
							written[w] = append(written[w], es...)
							continue
						}
						seq := seqs(1)
						e := entry{key(rng), seq, base.KindSet, strconv.Itoa(int(seq))}
						if rng.IntN(4) == 0 {
							e.kind, e.value = base.KindDelete, ""
						}
						if err := m.Add(e.seq, e.kind, []byte(e.key), []byte(e.value)); err != nil {
							t.Error(err)
							return
						}
						written[w] = append(written[w], e)
						if rng.IntN(64) == 0 {
							runtime.Gosched()
						}
					}
				})
			}

			for r := range 2 {
				readers.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(r), 99))
					for !done.Load() {
						checkOrdered(t, m, rng, key(rng))
						checkGets(t, m, rng, key)
					}
				})
			}
			writers.Wait()
			done.Store(true)
			readers.Wait()
			if t.Failed() {
				return
			}

			model := []entry{sentinel}
			for _, es := range written {
				model = append(model, es...)
			}
			sortEntries(model)
			require.Equal(t, tc.writers*tc.perW+1, len(model))
			require.Equal(t, len(model), m.Count(), "lost inserts")
			// scanBoth checks Prev against Next, so every prev link is exact.
			require.Equal(t, model, scanBoth(t, m.NewIter(nil, nil)))
		})
	}
}

// checkOrdered scans part of the memtable forward and backward and fails
// unless entries come strictly in order each way.
func checkOrdered(t *testing.T, m *MemTable, rng *rand.Rand, from string) {
	it := m.NewIter(nil, nil)
	defer it.Close()
	var prev base.InternalKey
	n := 0
	for kv := it.SeekGE([]byte(from)); kv != nil && n < 200; kv = it.Next() {
		if n > 0 && base.CompareInternal(prev, kv.K) >= 0 {
			t.Errorf("forward: %s then %s", prev, kv.K)
			return
		}
		prev = kv.K.Clone()
		n++
	}
	n = 0
	start := it.SeekLT([]byte(from))
	if rng.IntN(4) == 0 {
		start = it.Last()
	}
	for kv := start; kv != nil && n < 200; kv = it.Prev() {
		if n > 0 && base.CompareInternal(prev, kv.K) <= 0 {
			t.Errorf("backward: %s then %s", prev, kv.K)
			return
		}
		prev = kv.K.Clone()
		n++
	}
}

// checkGets fails if Get returns a version above the requested seqnum or
// for another key. Values are their seqnum in decimal.
func checkGets(t *testing.T, m *MemTable, rng *rand.Rand, key func(*rand.Rand) string) {
	for range 20 {
		k := key(rng)
		seq := base.SeqNum(rng.IntN(10000))
		v, kind, found := m.Get([]byte(k), seq)
		if !found || kind == base.KindDelete {
			continue
		}
		got, err := strconv.Atoi(string(v))
		if err != nil || base.SeqNum(got) > seq {
			t.Errorf("Get(%s, %d) returned the value %q", k, seq, v)
			return
		}
	}
}
