package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/vfs"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
)

// benchCachedDB opens a database whose every block is in the block cache:
// 20,000 keys of 100-byte values, flushed, then each read once.
func benchCachedDB(b *testing.B, st *statistics.Statistics) (*DB, [][]byte) {
	b.Helper()
	db, err := Open("/db", &Options{FS: vfs.NewMem(), BlockCacheSize: 64 << 20, Statistics: st})
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
