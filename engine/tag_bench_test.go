package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
)

// benchCachedDB opens a database whose every block is in the block cache:
// 20,000 keys of 100-byte values, flushed, then each read once.
func benchCachedDB(b *testing.B, st *statistics.Statistics) (*database, [][]byte) {
	b.Helper()
	db, err := openDatabase("/db", &Options{FS: vfs.NewMem(), BlockCacheSize: 64 << 20, Statistics: st})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	ctx := context.Background()
	keys := make([][]byte, 20000)
	value := make([]byte, 100)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key%08d", i)
		if err := db.Put(ctx, keys[i], value); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	for _, k := range keys {
		if _, err := db.Get(ctx, k); err != nil {
			b.Fatal(err)
		}
	}
	return db, keys
}

// BenchmarkCachedGetTagged measures what tags and a per-request sink cost a
// Get whose block is cached: at the default level and at LevelAll, without
// and with a tag, without and with a PerfContext. The cases share one
// database and run one after the other, so -count=N interleaves them; the
// budget of issue 13 compares level=all/tag=one with level=default/tag=none.
func BenchmarkCachedGetTagged(b *testing.B) {
	tag, ok := ioctx.LookupTag("bench-tenant")
	if !ok {
		tag = ioctx.MustRegisterTag("bench-tenant", ioctx.TagOptions{})
	}
	st := statistics.New(statistics.DefaultLevel)
	db, keys := benchCachedDB(b, st)
	perf := &ioctx.PerfContext{}
	for _, bc := range []struct {
		name  string
		level statistics.Level
		ro    ioctx.ReadOptions
	}{
		{"level=default/tag=none", statistics.DefaultLevel, ioctx.ReadOptions{}},
		{"level=default/tag=one", statistics.DefaultLevel, ioctx.ReadOptions{Tag: tag}},
		{"level=all/tag=none", statistics.LevelAll, ioctx.ReadOptions{}},
		{"level=all/tag=one", statistics.LevelAll, ioctx.ReadOptions{Tag: tag}},
		{"level=default/perf=on", statistics.DefaultLevel, ioctx.ReadOptions{Perf: perf}},
		{"level=all/tag=one/perf=on", statistics.LevelAll, ioctx.ReadOptions{Tag: tag, Perf: perf}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			st.SetLevel(bc.level)
			ctx := ioctx.WithReadOptions(context.Background(), bc.ro)
			rng := rand.New(rand.NewPCG(1, 2))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := db.Get(ctx, keys[rng.IntN(len(keys))]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	c := perf.Counts()
	if c.TablesConsulted > 0 && c.BlockCacheHits == 0 {
		b.Fatalf("the sink saw no cache hit: %s", c)
	}
}

// BenchmarkCachedGetTagBudget checks issue 13's budget on a noisy machine:
// it alternates blocks of 20,000 cached Gets between the cases (default
// level, no tag; LevelAll, no tag; LevelAll with one tag; default level with
// a PerfContext) many times, and reports for each case the median, over the
// rounds, of its block's time relative to the base case's block of the same
// round, as a percentage (all_tag_one-%: +3 means 3% slower). Pairing the
// blocks round by round cancels the drift of other load, and each round
// starts with a different case so none always runs first.
func BenchmarkCachedGetTagBudget(b *testing.B) {
	tag, ok := ioctx.LookupTag("bench-tenant")
	if !ok {
		tag = ioctx.MustRegisterTag("bench-tenant", ioctx.TagOptions{})
	}
	st := statistics.New(statistics.DefaultLevel)
	db, keys := benchCachedDB(b, st)
	cases := []struct {
		name  string
		level statistics.Level
		ctx   context.Context
	}{
		{"default", statistics.DefaultLevel, context.Background()},
		{"all_tag_none", statistics.LevelAll, context.Background()},
		{"all_tag_one", statistics.LevelAll, ioctx.WithReadOptions(context.Background(), ioctx.ReadOptions{Tag: tag})},
		{"default_perf", statistics.DefaultLevel, ioctx.WithReadOptions(context.Background(), ioctx.ReadOptions{Perf: &ioctx.PerfContext{}})},
	}
	const block = 20000
	rng := rand.New(rand.NewPCG(1, 2))
	order := make([]int, block)
	for i := range order {
		order[i] = rng.IntN(len(keys))
	}
	ratios := make([][]float64, len(cases))
	round := 0
	for b.Loop() {
		var took [8]float64
		round++
		for j := range cases {
			i := (j + round) % len(cases)
			c := cases[i]
			st.SetLevel(c.level)
			start := time.Now()
			for _, k := range order {
				if _, err := db.Get(c.ctx, keys[k]); err != nil {
					b.Fatal(err)
				}
			}
			took[i] = float64(time.Since(start))
		}
		for i := range cases {
			ratios[i] = append(ratios[i], took[i]/took[0])
		}
	}
	for i, c := range cases[1:] {
		r := ratios[i+1]
		slices.Sort(r)
		b.ReportMetric(100*(r[len(r)/2]-1), c.name+"-%")
	}
}
