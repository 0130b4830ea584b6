package engine

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/compact"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/stretchr/testify/require"
)

func TestManualSplits(t *testing.T) {
	file := func(lo, hi string, size uint64) *manifest.FileMetadata {
		return &manifest.FileMetadata{Size: size,
			Smallest: base.MakeInternalKey([]byte(lo), 1, base.KindSet),
			Largest:  base.MakeInternalKey([]byte(hi), 1, base.KindSet)}
	}
	a, b, c, d := file("a", "b", 10), file("c", "d", 10), file("e", "f", 10), file("g", "h", 10)
	big := file("c", "d", 100)
	for _, tc := range []struct {
		name  string
		files []*manifest.FileMetadata
		n     int
		want  [][2]string
	}{
		{"none", nil, 2, nil},
		{"one table", []*manifest.FileMetadata{a}, 4, [][2]string{{"a", "b"}}},
		{"one run", []*manifest.FileMetadata{a, b, c}, 1, [][2]string{{"a", "f"}}},
		{"halves", []*manifest.FileMetadata{a, b, c, d}, 2, [][2]string{{"a", "d"}, {"e", "h"}}},
		{"more runs than tables", []*manifest.FileMetadata{a, b}, 4, [][2]string{{"a", "b"}, {"c", "d"}}},
		// A large table closes its run at once; every run keeps a table.
		{"skewed", []*manifest.FileMetadata{a, big, c, d}, 2, [][2]string{{"a", "d"}, {"e", "h"}}},
		{"skewed first", []*manifest.FileMetadata{big, a, c}, 3, [][2]string{{"c", "d"}, {"a", "b"}, {"e", "f"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got [][2]string
			for _, r := range manualSplits(tc.files, tc.n) {
				got = append(got, [2]string{string(r[0]), string(r[1])})
			}
			require.Equal(t, tc.want, got)
		})
	}
}

// TestCompactParallel: a full Compact, which compacts disjoint ranges of a
// level at once, leaves the same contents (under a snapshot and range
// deletions too) in one level, and does run several compactions of one
// level.
func TestCompactParallel(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, tc := range []struct {
		name       string
		start, end []byte
	}{
		{"everything", nil, nil},
		{"a range", key(500), key(2500)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, _ := openTestDB(t, nil)
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(7, 8))
			m := model{}
			for i := range 6000 {
				k := key(rng.IntN(3000))
				switch {
				case i%50 == 49:
					require.NoError(t, db.Delete(ctx, k))
					delete(m, string(k))
				default:
					v := value(rng, 100)
					require.NoError(t, db.Put(ctx, k, v))
					m[string(k)] = string(v)
				}
				if i == 3000 {
					require.NoError(t, db.DeleteRange(ctx, key(1000), key(1100)))
					for j := 1000; j < 1100; j++ {
						delete(m, string(key(j)))
					}
				}
			}
			snapModel := m.clone()
			snap, err := db.NewSnapshot()
			require.NoError(t, err)
			defer func() { _ = snap.Close() }()
			for range 1000 {
				k := key(rng.IntN(3000))
				v := value(rng, 100)
				require.NoError(t, db.Put(ctx, k, v))
				m[string(k)] = string(v)
			}
			require.NoError(t, db.Flush(ctx))

			var mu sync.Mutex
			perLevel := map[int]int{}
			hook := func(_ *database, c *compact.Compaction) {
				if c.Manual {
					mu.Lock()
					perLevel[c.Level]++
					mu.Unlock()
				}
			}
			compactionStartHook.Store(&hook)
			defer compactionStartHook.Store(nil)
			require.NoError(t, db.Compact(ctx, tc.start, tc.end))
			compactionStartHook.Store(nil)

			several := false
			for level, n := range perLevel {
				several = several || level > 0 && n > 1
			}
			require.True(t, several, "manual compactions per level: %v", perLevel)
			if tc.start == nil {
				v := mustReadState(t, db)
				nonEmpty := 0
				for _, files := range v.current.Levels {
					if len(files) > 0 {
						nonEmpty++
					}
				}
				v.unref()
				require.Equal(t, 1, nonEmpty, "levels with tables after a full Compact")
			}
			// Every key the workload could write, present or not, and at the
			// snapshot too.
			for _, c := range []struct {
				get  func(context.Context, []byte) ([]byte, error)
				want model
			}{{db.Get, m}, {snap.Get, snapModel}} {
				for j := range 3000 {
					k := key(j)
					got, err := c.get(ctx, k)
					want, ok := c.want[string(k)]
					if !ok {
						require.True(t, errors.Is(err, base.ErrNotFound), "key %d: %v", j, err)
						continue
					}
					require.NoError(t, err, "key %d", j)
					require.Equal(t, want, string(got), "key %d", j)
				}
			}
		})
	}
}
