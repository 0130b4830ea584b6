package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/ioctx"
)

// BenchmarkFacadeRead is a program's point reads through the façade on the
// engine, on cached hits: Get (a copy of the value), Has and ValueSize (no
// copy: the engine's ValueSizer), GetPinned (the engine's PinnedGetter:
// the value and a Closer). With the default off-heap block cache a pinned
// value is copied to the Go heap (recycled up to 64 KiB, allocated beyond);
// with the cache on the Go heap it is not copied at all.
func BenchmarkFacadeRead(b *testing.B) {
	ctx := context.Background()
	ops := []struct {
		name string
		read func(db *driver.DB, key []byte) error
	}{
		{"Get", func(db *driver.DB, key []byte) error { _, err := db.Get(ctx, key); return err }},
		{"Has", func(db *driver.DB, key []byte) error { _, err := db.Has(ctx, key); return err }},
		{"ValueSize", func(db *driver.DB, key []byte) error { _, err := db.ValueSize(ctx, key); return err }},
		{"GetPinned", func(db *driver.DB, key []byte) error {
			_, c, err := db.GetPinned(ctx, key)
			if err == nil {
				err = c.Close()
			}
			return err
		}},
	}
	for _, op := range ops {
		b.Run("op="+op.name, func(b *testing.B) {
			for _, size := range []int{256, 256 << 10} {
				b.Run(fmt.Sprintf("value_size=%d", size), func(b *testing.B) {
					for _, cache := range []string{"off_heap", "go_heap"} {
						b.Run("cache="+cache, func(b *testing.B) {
							db, keys := openLookupBench(b, size, cache == "go_heap")
							b.ReportAllocs()
							i := 0
							for b.Loop() {
								if err := op.read(db, keys[i%len(keys)]); err != nil {
									b.Fatal(err)
								}
								i += 7
							}
						})
					}
				})
			}
		})
	}
}

// BenchmarkFacadeCost is the façade's cost per call: the same cached Get
// of a 256-byte value through driver.DB.Get (resolving the read options
// from the context, entering the DB, calling the conn) and through the
// conn's Get directly with a request resolved once, on one database. The
// two paths alternate in chunks of 1000 calls, so that the machine's drift
// hits both alike, each going first in every other chunk; an op is one
// call of each. It reports each path's time
// per call (facade-ns/call, conn-ns/call) and their difference
// (facade-cost-ns/call); allocs/op counts both calls, one copy each.
func BenchmarkFacadeCost(b *testing.B) {
	ctx := context.Background()
	c := &connector{dir: b.TempDir(), opts: &Options{BlockCacheSize: 64 << 20}}
	db := driver.OpenDB(c)
	defer func() { _ = db.Close() }()
	const n = 1000
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key%08d", i)
		if err := db.Put(ctx, keys[i], make([]byte, 256)); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	dc, err := c.Connect(ctx)
	if err != nil {
		b.Fatal(err)
	}
	cn := dc.(*conn)
	req, err := ioctx.ResolveRead(ctx, nil, "Get", ioctx.ActivityGet)
	if err != nil {
		b.Fatal(err)
	}
	for _, k := range keys { // warm the cache
		if _, err := cn.Get(ctx, req, k); err != nil {
			b.Fatal(err)
		}
	}
	const chunk = 1000
	var facade, direct time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	viaFacade := func(done, m int) time.Duration {
		t0 := time.Now()
		for j := range m {
			if _, err := db.Get(ctx, keys[(done+j)*7%n]); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(t0)
	}
	viaConn := func(done, m int) time.Duration {
		t0 := time.Now()
		for j := range m {
			if _, err := cn.Get(ctx, req, keys[(done+j)*7%n]); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(t0)
	}
	for done := 0; done < b.N; done += chunk {
		m := min(chunk, b.N-done)
		// Each path goes first in every other chunk: the second one
		// reads keys the first just brought into the CPU's caches.
		if done/chunk%2 == 0 {
			facade += viaFacade(done, m)
			direct += viaConn(done, m)
		} else {
			direct += viaConn(done, m)
			facade += viaFacade(done, m)
		}
	}
	b.ReportMetric(float64(facade.Nanoseconds())/float64(b.N), "facade-ns/call")
	b.ReportMetric(float64(direct.Nanoseconds())/float64(b.N), "conn-ns/call")
	b.ReportMetric(float64((facade-direct).Nanoseconds())/float64(b.N), "facade-cost-ns/call")
}
