package readpath

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIteratorRecyclingAgainstModel runs several Iterators at once, over two
// random LSMs (one without a block cache, so blocks live in the table
// iterators' own buffers), stepping them in turn and closing and creating
// them at random, so that each new one takes the level, merging and table
// iterators (and readahead buffers) the closed ones gave back: each must
// still match the model at every step. The key and value each Iterator
// stood at when it closed are kept to the end and must not change: recycled
// memory is never memory a caller was handed.
func TestIteratorRecyclingAgainstModel(t *testing.T) {
	for seed := range seeds(6) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 41))
			cached := defaultLSMConfig()
			uncached := defaultLSMConfig()
			uncached.cacheSize = 0
			dbs := []*lsm{buildLSM(t, rng, cached), buildLSM(t, rng, uncached)}
			keySpace := cached.keySpace

			type live struct {
				db *lsm
				it *Iterator
				m  *iterModel
			}
			type held struct{ k, v, wantK, wantV []byte }
			var helds []held
			open := func() live {
				db := dbs[rng.IntN(len(dbs))]
				lower, upper := randomBound(rng, keySpace), randomBound(rng, keySpace)
				if lower != nil && upper != nil && string(lower) > string(upper) {
					lower, upper = upper, lower
				}
				seq := db.randomSeq(rng)
				env := readEnv()
				env.FillCache = rng.IntN(4) != 0
				env.AsyncIO = rng.IntN(2) == 0
				keys, values := db.model.visible(seq, lower, upper)
				return live{db: db, m: &iterModel{keys: keys, values: values, lower: lower, upper: upper, none: true},
					it: NewIterator(context.Background(), db.view, env, seq, IterOptions{LowerBound: lower, UpperBound: upper})}
			}
			its := []live{open(), open(), open()}
			for step := range 1500 {
				j := rng.IntN(len(its))
				l := &its[j]
				if rng.IntN(25) == 0 {
					if l.it.Valid() {
						k, v := l.it.Key(), l.it.Value()
						helds = append(helds, held{k, v, bytes.Clone(k), bytes.Clone(v)})
					}
					require.NoError(t, l.it.Close())
					*l = open()
					continue
				}
				var ok bool
				switch r := rng.IntN(8); {
				case r == 0:
					ok = l.it.First()
					l.m.seekGE(nil)
				case r == 1:
					ok = l.it.Last()
					l.m.seekLT([]byte("\xff"))
				case r == 2:
					k := l.db.randomKey(rng, keySpace)
					ok = l.it.SeekGE(k)
					l.m.seekGE(k)
				case r == 3:
					k := l.db.randomKey(rng, keySpace)
					ok = l.it.SeekLT(k)
					l.m.seekLT(k)
				case r < 6:
					ok = l.it.Next()
					l.m.next()
				default:
					ok = l.it.Prev()
					l.m.prev()
				}
				require.NoError(t, l.it.Error())
				require.Equal(t, l.m.valid(), ok, "step %d", step)
				if ok {
					require.Equal(t, l.m.keys[l.m.pos], string(l.it.Key()), "step %d", step)
					require.Equal(t, string(l.m.values[l.m.pos]), string(l.it.Value()), "step %d", step)
				}
			}
			for _, l := range its {
				require.NoError(t, l.it.Close())
			}
			for i, h := range helds {
				require.Equal(t, h.wantK, h.k, "held key %d", i)
				require.Equal(t, h.wantV, h.v, "held value %d", i)
			}
		})
	}
}
