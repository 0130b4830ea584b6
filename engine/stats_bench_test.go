package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/shaledb/shale/statistics"
)

// BenchmarkStatsOverheadPaired measures issue 15's statistics budget on a
// noisy machine: what the default level costs a Get miss (ruled out by the
// table's bloom filter) and a cached Get (block in the block cache) over
// statistics disabled. One database, one Statistics; each round times a
// block of 4,000 misses and a block of 4,000 cached hits at each level,
// switched with SetLevel, alternating which level runs first. It reports,
// per query kind, the median over the rounds of the default block's time
// relative to the disabled block of the same round (miss-%: +8 means 8%
// slower), the quartiles of that ratio as the spread, and each level's
// median ns per Get. Pairing the blocks round by round cancels the drift of
// other load.
func BenchmarkStatsOverheadPaired(b *testing.B) {
	st := statistics.New(statistics.DefaultLevel)
	db, keys := benchCachedDB(b, st)
	misses := make([][]byte, len(keys))
	for i := range misses {
		// Between two existing keys: inside the table's range, so the
		// bloom filter, not the bounds, rules it out.
		misses[i] = fmt.Appendf(nil, "key%08d!", i)
	}
	const block = 4000
	rng := rand.New(rand.NewPCG(1, 2))
	order := make([]int, block)
	for i := range order {
		order[i] = rng.IntN(len(keys))
	}
	ctx := context.Background()
	kinds := []struct {
		name string
		keys [][]byte
		miss bool
	}{{"miss", misses, true}, {"hit", keys, false}}
	levels := []statistics.Level{statistics.LevelDisableAll, statistics.DefaultLevel}
	run := func(keys [][]byte, miss bool) float64 {
		start := time.Now()
		for _, k := range order {
			_, err := db.Get(ctx, keys[k])
			if (err != nil) != miss {
				b.Fatalf("Get(%q): %v", keys[k], err)
			}
		}
		return float64(time.Since(start)) / block
	}
	ratios := make([][]float64, len(kinds))
	perGet := make([][2][]float64, len(kinds))
	round := 0
	for b.Loop() {
		round++
		for ki, k := range kinds {
			var took [2]float64
			for j := range levels {
				li := (j + round) % len(levels)
				st.SetLevel(levels[li])
				took[li] = run(k.keys, k.miss)
			}
			ratios[ki] = append(ratios[ki], took[1]/took[0])
			for li := range took {
				perGet[ki][li] = append(perGet[ki][li], took[li])
			}
		}
	}
	for ki, k := range kinds {
		r := ratios[ki]
		slices.Sort(r)
		n := len(r)
		b.ReportMetric(100*(r[n/2]-1), k.name+"-%")
		b.ReportMetric(100*(r[n/4]-1), k.name+"-q1-%")
		b.ReportMetric(100*(r[(3*n)/4]-1), k.name+"-q3-%")
		for li, l := range []string{"off", "default"} {
			g := perGet[ki][li]
			slices.Sort(g)
			b.ReportMetric(g[len(g)/2], k.name+"-"+l+"-ns/get")
		}
	}
}

// BenchmarkStatsGet is one query kind of BenchmarkStatsOverheadPaired at
// one level, in a plain loop, for CPU profiles (-cpuprofile) of where the
// statistics' time goes.
func BenchmarkStatsGet(b *testing.B) {
	st := statistics.New(statistics.DefaultLevel)
	db, keys := benchCachedDB(b, st)
	ctx := context.Background()
	misses := make([][]byte, len(keys))
	for i := range misses {
		misses[i] = fmt.Appendf(nil, "key%08d!", i)
	}
	for _, kind := range []string{"miss", "hit"} {
		for _, l := range []statistics.Level{statistics.LevelDisableAll, statistics.DefaultLevel} {
			b.Run(fmt.Sprintf("%s/level=%s", kind, l), func(b *testing.B) {
				st.SetLevel(l)
				rng := rand.New(rand.NewPCG(1, 2))
				src := keys
				if kind == "miss" {
					src = misses
				}
				for b.Loop() {
					key := src[rng.IntN(len(src))]
					_, err := db.Get(ctx, key)
					if (err != nil) != (kind == "miss") {
						b.Fatalf("Get(%q): %v", key, err)
					}
				}
			})
		}
	}
}
