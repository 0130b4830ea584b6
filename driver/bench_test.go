package driver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/shaledb/shale/ioctx"
)

// The benchmarks measure the façade's own cost, over drivers that do almost
// nothing: fixedConn returns a preallocated value, sliceIter walks a
// preallocated slice.

func BenchmarkGet(b *testing.B) {
	value := []byte("value")
	drv := &fixedConn{value: value}
	db := openFake(b, drv)
	key := []byte("key")
	roCtx := ioctx.WithReadOptions(context.Background(), ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityUser})
	req, err := ioctx.ResolveRead(roCtx, nil, "Get", ioctx.ActivityGet)
	if err != nil {
		b.Fatal(err)
	}
	deadlineCtx, cancel := context.WithTimeout(roCtx, time.Hour)
	defer cancel()
	conn, err := db.Conn(roCtx)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		ctx  context.Context
		get  func(context.Context, []byte) ([]byte, error)
	}{
		{"path=driver", roCtx, func(ctx context.Context, k []byte) ([]byte, error) { return drv.Get(ctx, req, k) }},
		{"path=db/ctx=background", context.Background(), db.Get},
		{"path=db/ctx=read-options", roCtx, db.Get},
		{"path=db/ctx=deadline", deadlineCtx, db.Get},
		{"path=conn/ctx=read-options", roCtx, conn.Get},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.get(bc.ctx, key); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGetParallel shows the cost of the shared in-flight counter when
// every core calls at once.
func BenchmarkGetParallel(b *testing.B) {
	db := openFake(b, &fixedConn{value: []byte("value")})
	ctx := ioctx.WithReadOptions(context.Background(), ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityUser})
	b.Run("path=db", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			key := []byte("key")
			for pb.Next() {
				if _, err := db.Get(ctx, key); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

func BenchmarkReadOptions(b *testing.B) {
	ctx := ioctx.WithReadOptions(context.Background(), ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityUser})
	defaults := &ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityLow, DontFillCache: true}
	for _, bc := range []struct {
		name     string
		defaults *ioctx.ReadOptions
	}{{"holder=db", nil}, {"holder=conn", defaults}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ioctx.ResolveRead(ctx, bc.defaults, "Get", ioctx.ActivityGet); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// multiConn adds a batched MultiGet to fixedConn.
type multiConn struct {
	fixedConn
	vals [][]byte
}

func (c *multiConn) MultiGet(context.Context, ioctx.ReadRequest, [][]byte) ([][]byte, error) {
	return c.vals, nil
}

func BenchmarkMultiGet(b *testing.B) {
	for _, n := range []int{1, 16, 128} {
		keys := make([][]byte, n)
		vals := make([][]byte, n)
		for i := range keys {
			keys[i] = fmt.Appendf(nil, "key%04d", i)
			vals[i] = []byte("value")
		}
		for _, bc := range []struct {
			name string
			conn DriverConn
		}{
			{"path=native", &multiConn{fixedConn{value: []byte("value")}, vals}},
			{"path=fallback", &fixedConn{value: []byte("value")}},
		} {
			b.Run(fmt.Sprintf("keys=%d/%s", n, bc.name), func(b *testing.B) {
				db := openFake(b, bc.conn)
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					if _, err := db.MultiGet(ctx, keys); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// sliceIter is an Iter over preallocated keys.
type sliceIter struct {
	keys [][]byte
	pos  int
}

func (it *sliceIter) at(i int) bool        { it.pos = i; return i >= 0 && i < len(it.keys) }
func (it *sliceIter) First() bool          { return it.at(0) }
func (it *sliceIter) Last() bool           { return it.at(len(it.keys) - 1) }
func (it *sliceIter) SeekGE(k []byte) bool { return it.at(0) }
func (it *sliceIter) SeekLT(k []byte) bool { return it.at(len(it.keys) - 1) }
func (it *sliceIter) Next() bool           { return it.at(it.pos + 1) }
func (it *sliceIter) Prev() bool           { return it.at(it.pos - 1) }
func (it *sliceIter) Key() []byte          { return it.keys[it.pos] }
func (it *sliceIter) Value() []byte        { return it.keys[it.pos] }
func (it *sliceIter) Error() error         { return nil }
func (it *sliceIter) Close() error         { return nil }

type iterConn struct {
	fixedConn
	keys [][]byte
}

func (c *iterConn) NewIterator(context.Context, ioctx.ReadRequest, IterOptions) (Iter, error) {
	return &sliceIter{keys: c.keys}, nil
}

func BenchmarkIteratorNext(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key%08d", rng.Uint32())
	}
	conn := &iterConn{keys: keys}
	db := openFake(b, conn)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.Run("path=driver", func(b *testing.B) {
		it := &sliceIter{keys: keys}
		b.ReportAllocs()
		for b.Loop() {
			if !it.Next() {
				it.First()
			}
			_ = it.Key()
		}
	})
	b.Run("path=db", func(b *testing.B) {
		it, err := db.NewIterator(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer it.Close()
		it.First()
		b.ReportAllocs()
		for b.Loop() {
			if !it.Next() {
				it.First()
			}
			_ = it.Key()
		}
	})
}

func BenchmarkBatchPut(b *testing.B) {
	for _, size := range []int{16, 256, 4096} {
		b.Run(fmt.Sprintf("value=%dB", size), func(b *testing.B) {
			key, value := []byte("key-0000000001"), make([]byte, size)
			var batch Batch
			b.ReportAllocs()
			b.SetBytes(int64(len(key) + size))
			for b.Loop() {
				batch.Put(key, value)
				if batch.Len() == 1000 {
					batch.Reset()
				}
			}
		})
	}
}

// BenchmarkBatchMillion builds a batch of a million puts (16-byte keys,
// 32-byte values) and reads it back: the issue-12 target size. B/op is the
// memory a million-op batch costs to build.
func BenchmarkBatchMillion(b *testing.B) {
	key, value := make([]byte, 0, 16), make([]byte, 32)
	b.ReportAllocs()
	for b.Loop() {
		var batch Batch
		for i := range 1_000_000 {
			key = strconv.AppendInt(append(key[:0], "key-"...), 10_000_000_000+int64(i), 10)
			batch.Put(key, value)
		}
		n := 0
		r := batch.Reader()
		for op, ok := r.Next(); ok; op, ok = r.Next() {
			n += len(op.Key)
		}
		if n != 1_000_000*15 {
			b.Fatalf("read back %d key bytes", n)
		}
	}
}
