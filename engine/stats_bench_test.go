package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
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
// relative to the disabled block of the same round, in the thread's CPU
// time (miss-%: +8 means 8% slower), the quartiles of that ratio as the
// spread, the median ratio in wall time, each level's median CPU ns per
// Get, and each level's 10th percentile of CPU ns per Get with their ratio
// (miss-p10-%). Pairing the blocks round by round cancels the drift of
// other load; SHALE_STATS_BLOCK sets the block size.
func BenchmarkStatsOverheadPaired(b *testing.B) {
	st := statistics.New(statistics.DefaultLevel)
	db, keys := benchCachedDB(b, st)
	misses := make([][]byte, len(keys))
	for i := range misses {
		// Between two existing keys: inside the table's range, so the
		// bloom filter, not the bounds, rules it out.
		misses[i] = fmt.Appendf(nil, "key%08d!", i)
	}
	block := 4000
	if v, err := strconv.Atoi(os.Getenv("SHALE_STATS_BLOCK")); err == nil && v > 0 {
		block = v // SHALE_STATS_BLOCK sets the block size
	}
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
	// The blocks are timed in the thread's CPU time (see threadCPU), so
	// that time the thread spends descheduled on the shared cores does not
	// count; wall time is reported too.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if _, ok := threadCPU(); !ok {
		b.Log("no thread CPU clock: timing blocks in wall time")
	}
	run := func(keys [][]byte, miss bool) (cpu, wall float64) {
		c0, _ := threadCPU()
		start := time.Now()
		for _, k := range order {
			_, err := db.Get(ctx, keys[k])
			if (err != nil) != miss {
				b.Fatalf("Get(%q): %v", keys[k], err)
			}
		}
		wall = float64(time.Since(start)) / float64(block)
		c1, _ := threadCPU()
		return float64(c1-c0) / float64(block), wall
	}
	type series struct{ ratio, wallRatio []float64 }
	res := make([]series, len(kinds))
	perGet := make([][2][]float64, len(kinds))
	round := 0
	for b.Loop() {
		round++
		for ki, k := range kinds {
			var cpu, wall [2]float64
			for j := range levels {
				li := (j + round) % len(levels)
				st.SetLevel(levels[li])
				cpu[li], wall[li] = run(k.keys, k.miss)
			}
			res[ki].ratio = append(res[ki].ratio, cpu[1]/cpu[0])
			res[ki].wallRatio = append(res[ki].wallRatio, wall[1]/wall[0])
			for li := range cpu {
				perGet[ki][li] = append(perGet[ki][li], cpu[li])
			}
		}
	}
	pct := func(r []float64, q float64) float64 { return 100 * (r[int(q*float64(len(r)-1))] - 1) }
	for ki, k := range kinds {
		r := res[ki].ratio
		slices.Sort(r)
		b.ReportMetric(pct(r, 0.5), k.name+"-%")
		b.ReportMetric(pct(r, 0.25), k.name+"-q1-%")
		b.ReportMetric(pct(r, 0.75), k.name+"-q3-%")
		w := res[ki].wallRatio
		slices.Sort(w)
		b.ReportMetric(pct(w, 0.5), k.name+"-wall-%")
		var p10 [2]float64
		for li, l := range []string{"off", "default"} {
			g := perGet[ki][li]
			slices.Sort(g)
			b.ReportMetric(g[len(g)/2], k.name+"-"+l+"-cpu-ns/get")
			p10[li] = g[len(g)/10]
			b.ReportMetric(p10[li], k.name+"-"+l+"-p10-ns/get")
		}
		// Other load only adds time to a block, so the fastest tenth of
		// each level's blocks is the least disturbed: the ratio of their
		// bounds is steadier than the median ratio when the machine is busy.
		b.ReportMetric(100*(p10[1]/p10[0]-1), k.name+"-p10-%")
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
